package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.gpushare.arbiter.ShareRequestRules;
import io.fabric8.kubernetes.api.model.Node;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** 409 re-reads, 429/5xx back off and retry, other 4xx are dropped until the next change. */
class KubeWriterFailureTest extends KubeWriterNodeFixture {
  static final String GET = "GET /api/v1/nodes/" + NODE;
  static final String PUT = "PUT /api/v1/nodes/" + NODE + "/status";

  Node node() {
    return api.other.nodes().withName(NODE).get();
  }

  @Test
  void aConflictIsReadAgainAndWrittenOverTheNewerObject() throws Exception {
    AtomicBoolean once = new AtomicBoolean();
    // between the writer's read and its write, someone labels the node: a newer resourceVersion
    service.onNodeRead =
        n -> {
          if (once.compareAndSet(false, true)) {
            api.other
                .nodes()
                .withName(NODE)
                .edit(
                    x -> {
                      x.getMetadata().getLabels().put("team", "vision");
                      return x;
                    });
          }
        };
    startAndFlush();

    assertEquals(
        List.of(
            GET + " → 200",
            GET + " → 200", // the other client's edit: read…
            "PATCH /api/v1/nodes/" + NODE + " → 202", // …and label (the mock answers 202)
            PUT + " → 409",
            GET + " → 200",
            PUT + " → 200"),
        api.exchanges(),
        "the writer's read, the label edit, the refused write, the new read, the write");
    Node node = node();
    assertEquals("vision", node.getMetadata().getLabels().get("team"));
    assertEquals("1600", text(node.getStatus().getAllocatable(), ShareRequestRules.CORE));
  }

  @Test
  void serverErrorsAndThrottlingAreRetriedWithBackoff() throws Exception {
    api.failNext("PUT", "/api/v1/nodes/" + NODE + "/status", 503, 2);
    api.failNext("GET", "/api/v1/nodes/" + NODE, 429, 1);
    api.failNext("PUT", "/api/v1/nodes/" + NODE + "/status", 500, 1);
    startAndFlush();

    assertEquals(
        List.of(
            GET + " → 200",
            PUT + " → 503",
            GET + " → 200",
            PUT + " → 503",
            GET + " → 429",
            GET + " → 200",
            PUT + " → 500",
            GET + " → 200",
            PUT + " → 200"),
        api.exchanges(),
        "each retry starts from a fresh read");
    assertEquals("1600", text(node().getStatus().getCapacity(), ShareRequestRules.CORE));
  }

  @Test
  void anInvalidWriteIsDroppedUntilTheNextChange() throws Exception {
    api.failNext("PUT", "/api/v1/nodes/" + NODE + "/status", 422, 1);
    startAndFlush();
    assertEquals(List.of(GET + " → 200", PUT + " → 422"), api.exchanges());
    assertNull(text(node().getStatus().getCapacity(), ShareRequestRules.CORE));

    service.nodeChanged(NODE);
    writer.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertEquals("1600", text(node().getStatus().getCapacity(), ShareRequestRules.CORE));
  }
}
