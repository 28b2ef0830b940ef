package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import org.junit.jupiter.api.Test;

/**
 * Writes are counted in {@code gpushare_kubernetes_writes_total{kind}}, failed ones in {@code
 * gpushare_kubernetes_write_errors_total{kind,reason}}.
 */
class KubeWriterMetricsTest extends KubeWriterNodeFixture {

  double errors(String kind, String reason) {
    for (MetricSnapshot m : service.metrics.registry().scrape()) {
      if (m.getMetadata().getName().equals("gpushare_kubernetes_write_errors")) {
        for (CounterDataPointSnapshot p : ((CounterSnapshot) m).getDataPoints()) {
          if (kind.equals(p.getLabels().get("kind"))
              && reason.equals(p.getLabels().get("reason"))) {
            return p.getValue();
          }
        }
      }
    }
    throw new AssertionError("no series " + kind + "/" + reason);
  }

  /** {@code gpushare_kubernetes_writes_total{kind}}, or -1 when there is no such series. */
  double writes(String kind) {
    for (MetricSnapshot m : service.metrics.registry().scrape()) {
      if (m.getMetadata().getName().equals("gpushare_kubernetes_writes")) {
        for (CounterDataPointSnapshot p : ((CounterSnapshot) m).getDataPoints()) {
          if (kind.equals(p.getLabels().get("kind"))) {
            return p.getValue();
          }
        }
      }
    }
    return -1;
  }

  @Test
  void writeSeriesStartAtZeroWithTheWriterAndCountEveryAttempt() throws Exception {
    // No writer yet: no Kubernetes series at all.
    assertEquals(-1, writes("node"));
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 503, 2);
    startAndFlush();
    // Every kind and reason is there from the writer's start, zeros included.
    assertEquals(0, writes("event"));
    assertEquals(0, errors("event", "error"));
    assertEquals(0, errors("pod", "rejected"));
    // Two status writes failed and were retried, the third went through: three attempts at least
    // (plus the own-allocatable patch of a virtual node, if any); reads are not writes.
    assertEquals(2, errors("node", "retry"));
    double nodeWrites = writes("node");
    assertTrue(nodeWrites >= 3, "node writes " + nodeWrites);
  }

  @Test
  void serverErrorsOnWritesCountAsRetries() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 503, 2);
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 500, 1);
    startAndFlush();
    assertEquals(3, errors("node", "retry"));
    assertEquals(0, errors("node", "rejected"));
    assertEquals(0, errors("pod", "retry"));
  }

  @Test
  void anInvalidWriteCountsAsRejected() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 422, 1);
    startAndFlush();
    assertEquals(1, errors("node", "rejected"));
    assertEquals(0, errors("node", "retry"));
  }

  @Test
  void aConflictOnAStatusWriteCountsAndIsTheOnlyReason() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 409, 1);
    startAndFlush();
    assertEquals(1, errors("node", "conflict"));
    assertEquals(1, writer.readsSent(), "the 409 is the one read");
  }
}
