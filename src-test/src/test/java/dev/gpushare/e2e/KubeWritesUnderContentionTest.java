package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.KubernetesModeTest.POLICY;
import static dev.gpushare.e2e.KubernetesModeTest.RECLAIM;
import static dev.gpushare.e2e.KubernetesModeTest.VALID;
import static dev.gpushare.e2e.KubernetesModeTest.assertDevice;
import static dev.gpushare.e2e.KubernetesModeTest.assertNodeCondition;
import static dev.gpushare.e2e.KubernetesModeTest.assertPercentageText;
import static dev.gpushare.e2e.KubernetesModeTest.assertPodCondition;
import static dev.gpushare.e2e.KubernetesModeTest.awaitArbiterPod;
import static dev.gpushare.e2e.KubernetesModeTest.eventually;
import static dev.gpushare.e2e.KubernetesModeTest.sharePodYaml;
import static dev.gpushare.e2e.KubernetesModeTest.smallNode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The member's writes against a real API server that refuses some of them (issue 33, item 6): a
 * second writer — a kubelet posting node-status heartbeats and pod status as fast as it can, with
 * strategic-merge patches as the real kubelet does — keeps changing the very node and pods the
 * member writes; the member's patches carry no resourceVersion, so they never meet 409 (the API
 * server's metrics show none); and the API server admits one mutating request at a time ({@code
 * --max-mutating-requests-inflight=1}, priority and fairness off), so the member's writes meet 429
 * Too Many Requests with a Retry-After: its own write-error metric shows it was refused and
 * retried. Nothing is lost: node status and conditions, the device annotations and the preemption
 * conditions end as the arbiter decided, and the kubelet's own heartbeat and pod status survive
 * beside them.
 */
class KubeWritesUnderContentionTest {

  private static final String NODE = "contended";
  private static final String NS = KubernetesModeTest.NS;

  @Test
  void conflictsAndThrottlingLoseNoWriteOfEitherWriter(@TempDir Path dir) throws Exception {
    KubeControlPlane.Options tight =
        KubeControlPlane.Options.apiServerOnly()
            .withApiServerFlags(
                "--enable-priority-and-fairness=false", "--max-mutating-requests-inflight=1");
    try (KubernetesModeTest.Cluster c =
            KubernetesModeTest.Cluster.start(
                () -> RealKubeApiServer.start(tight),
                "KubeWritesUnderContentionTest",
                dir,
                "kubelet",
                kube ->
                    retryRefused(
                        () ->
                            kube.createNode(
                                smallNode(
                                    NODE,
                                    2,
                                    "share-pool",
                                    "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}"))));
        Kubelet kubelet = new Kubelet(c.kube)) {
      RealKubeApiServer real = (RealKubeApiServer) c.kube;
      Map<String, Double> before = requestCounts(real);
      kubelet.start();

      // Sharing on while the kubelet posts heartbeats: percentages and conditions written anyway.
      eventually(
          c,
          "node " + NODE + " shows sharing on beside the kubelet's heartbeats",
          () -> {
            var x = c.kube.node(NODE);
            assertPercentageText(x, "200");
            assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
            assertNodeCondition(x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
          });

      // Pods, granted: device annotations; then a preemption: pod conditions (status updates
      // locked on the resourceVersion the kubelet keeps moving). Four pods of limit 50 fill both
      // GPUs; late (request 50, limit 100) fits the node by requests and waits for a whole GPU.
      List<String> pods = List.of("w1", "w2", "w3", "w4");
      for (String p : pods) {
        retryRefused(() -> c.kube.create(sharePodYaml(p, NODE, 25, 50)));
        retryRefused(() -> c.kube.kubeletRuns(p));
        kubelet.pods.add(p);
        awaitArbiterPod(c, p);
      }
      retryRefused(() -> c.kube.create(sharePodYaml("late", NODE, 50, 100)));
      retryRefused(() -> c.kube.kubeletRuns("late"));
      kubelet.pods.add("late");
      awaitArbiterPod(c, "late");
      assertRunningOn(c.api.demand("w1"), 0);
      assertRunningOn(c.api.demand("w2"), 0);
      assertRunningOn(c.api.demand("w3"), 1);
      assertRunningOn(c.api.demand("w4"), 1);
      assertReady(c.api.demand("late"), 1);
      c.api.advance(3601); // every holder is over its 60 minutes: GPU 0's two make room for late
      var late = c.api.pod("late");
      assertRunningOn(late, late.path("gpu").path("index").asInt());
      int lateGpu = late.path("gpu").path("index").asInt();
      String lateUuid = late.path("gpu").path("uuid").asText();

      eventually(
          c,
          "every decision written despite 409s and 429s",
          () -> {
            for (String p : pods) {
              var view = c.api.pod(p);
              if (view.path("state").asText().equals("Running")) {
                assertDevice(
                    c.kube.pod(p),
                    view.path("gpu").path("index").asText(),
                    view.path("gpu").path("uuid").asText());
              } else {
                // preempted (by late, or by a pod that late's arrival moved): the condition says
                // what the arbiter's last preemption of this pod says
                assertDevice(c.kube.pod(p), null, null);
                var preempted = Checks.events(view, "GPUSharePreempted");
                assertTrue(!preempted.isEmpty(), () -> p + " is Ready: preempted: " + view);
                assertPodCondition(
                    c.kube.pod(p),
                    RECLAIM,
                    "True",
                    "GPUSharePreempted",
                    preempted.get(preempted.size() - 1).path("message").asText());
              }
            }
            assertDevice(c.kube.pod("late"), Integer.toString(lateGpu), lateUuid);
          });
      kubelet.stopAndJoin();

      // The kubelet's own writes survived the member's: its last heartbeat and pod status.
      var node = c.kube.node(NODE);
      NodeCondition ready =
          node.getStatus().getConditions().stream()
              .filter(x -> x.getType().equals("Ready"))
              .findFirst()
              .orElseThrow();
      assertEquals(
          kubelet.lastHeartbeat.get(),
          ready.getLastHeartbeatTime(),
          "the kubelet's last heartbeat is the stored one");
      assertPercentageText(node, "200");
      for (String p : kubelet.pods) {
        var pod = c.kube.pod(p);
        assertEquals(
            kubelet.lastPodStatus.get(),
            pod.getStatus().getStartTime(),
            () -> "the kubelet's last pod status write for " + p);
      }

      // The contention was real, and the member itself met it: its own count of refused writes
      // (429 with Retry-After: retried with back-off, and every write above landed after all),
      // beside the API server's own count of what it refused. The member's patches carry no
      // resourceVersion, so the kubelet's writes never make them conflict.
      Map<String, Double> after = requestCounts(real);
      double throttled = sum(after, "429") - sum(before, "429");
      double conflicts =
          delta(before, after, "409", "nodes", "status", "PATCH")
              + delta(before, after, "409", "pods", "status", "PATCH");
      double memberRetries = memberWriteErrors(c.api.get("/metrics").body(), "retry");
      System.out.printf(
          "KubeWritesUnderContentionTest: %d heartbeats; 429 %.0f (the member's own refused"
              + " writes: %.0f); 409 on status PATCH %.0f%n",
          kubelet.heartbeats.get(), throttled, memberRetries, conflicts);
      assertTrue(
          memberRetries > 0,
          () -> "the member's own writes were refused (429) and retried: " + after);
      assertEquals(0, conflicts, "status patches without resourceVersion never conflict");
      assertTrue(kubelet.heartbeats.get() > 20, () -> "heartbeats: " + kubelet.heartbeats);
    }
  }

  // ---------------------------------------------------------------- the second writer

  /**
   * A kubelet that patches its node's Ready heartbeat and its pods' status (strategic merge, no
   * resourceVersion: it never meets 409 itself, but moves the resourceVersion under the member).
   */
  private static final class Kubelet implements AutoCloseable {
    final KubeApiServer kube;
    final List<String> pods = new java.util.concurrent.CopyOnWriteArrayList<>();
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicLong heartbeats = new AtomicLong();
    final AtomicReference<String> lastHeartbeat = new AtomicReference<>();
    final AtomicReference<String> lastPodStatus = new AtomicReference<>();
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    private Thread thread;

    Kubelet(KubeApiServer kube) {
      this.kube = kube;
    }

    void start() {
      thread = new Thread(this::run, "second-writer-kubelet");
      thread.setDaemon(true);
      thread.start();
    }

    private void run() {
      Instant t = Instant.parse("2026-01-01T00:00:00Z");
      try {
        while (!stop.get()) {
          t = t.plus(1, ChronoUnit.SECONDS);
          String ts = t.toString();
          String heartbeat =
              "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
                  + "\"reason\":\"KubeletReady\",\"message\":\"kubelet is posting ready status\","
                  + "\"lastHeartbeatTime\":\""
                  + ts
                  + "\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}";
          if (patched(
              () ->
                  kube.kubectl
                      .nodes()
                      .withName(NODE)
                      .subresource("status")
                      .patch(PatchContext.of(PatchType.STRATEGIC_MERGE), heartbeat))) {
            heartbeats.incrementAndGet();
            lastHeartbeat.set(ts);
          }
          String podStatus = "{\"status\":{\"startTime\":\"" + ts + "\"}}";
          boolean all = !pods.isEmpty();
          for (String p : pods) {
            all &=
                patched(
                    () ->
                        kube.kubectl
                            .pods()
                            .inNamespace(NS)
                            .withName(p)
                            .subresource("status")
                            .patch(PatchContext.of(PatchType.STRATEGIC_MERGE), podStatus));
          }
          if (all) {
            lastPodStatus.set(ts);
          }
          Thread.sleep(5);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException | Error e) {
        failure.set(e);
      }
    }

    /** One patch; false when the API server throttled it (429), which a kubelet just retries. */
    private static boolean patched(Runnable patch) {
      try {
        patch.run();
        return true;
      } catch (KubernetesClientException e) {
        if (e.getCode() == 429) {
          return false;
        }
        throw e;
      }
    }

    void stopAndJoin() throws InterruptedException {
      stop.set(true);
      if (thread != null) {
        thread.join(30_000);
      }
      if (failure.get() != null) {
        throw new AssertionError("the second writer failed", failure.get());
      }
    }

    @Override
    public void close() throws InterruptedException {
      stop.set(true);
      if (thread != null) {
        thread.join(30_000);
      }
    }
  }

  // ---------------------------------------------------------------- helpers

  private interface Call {
    void run() throws Exception;
  }

  /**
   * A test's own write, retried while the API server answers 429 (as kubectl's client does) or 409
   * (a GET-modify-PUT that met another writer, redone).
   */
  private static void retryRefused(Call call) {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      try {
        call.run();
        return;
      } catch (KubernetesClientException e) {
        if ((e.getCode() != 429 && e.getCode() != 409) || System.nanoTime() > deadline) {
          throw e;
        }
      } catch (Exception e) {
        throw new AssertionError(e);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  private static final Pattern REQUEST_TOTAL =
      Pattern.compile("^apiserver_request_total\\{([^}]*)\\} (\\S+)$", Pattern.MULTILINE);

  /** {@code apiserver_request_total}, by its label set, from the API server's /metrics. */
  /** The member's {@code gpushare_kubernetes_write_errors_total} of {@code reason}, all kinds. */
  static double memberWriteErrors(String metrics, String reason) {
    double total = 0;
    Matcher m =
        Pattern.compile(
                "^gpushare_kubernetes_write_errors_total\\{kind=\"[a-z]+\",reason=\""
                    + reason
                    + "\"\\} ([0-9.eE+]+)$",
                Pattern.MULTILINE)
            .matcher(metrics);
    while (m.find()) {
      total += Double.parseDouble(m.group(1));
    }
    return total;
  }

  private static Map<String, Double> requestCounts(RealKubeApiServer real) {
    String metrics = real.plane().kubectl().run("get", "--raw", "/metrics").ok().out();
    Map<String, Double> out = new java.util.TreeMap<>();
    Matcher m = REQUEST_TOTAL.matcher(metrics);
    while (m.find()) {
      out.put(m.group(1), Double.parseDouble(m.group(2)));
    }
    return out;
  }

  private static double delta(
      Map<String, Double> before,
      Map<String, Double> after,
      String code,
      String resource,
      String subresource,
      String verb) {
    double total = 0;
    for (var e : after.entrySet()) {
      String labels = e.getKey();
      if (labels.contains("code=\"" + code + "\"")
          && labels.contains("resource=\"" + resource + "\"")
          && labels.contains("subresource=\"" + subresource + "\"")
          && labels.contains("verb=\"" + verb + "\"")) {
        total += e.getValue() - before.getOrDefault(labels, 0.0);
      }
    }
    return total;
  }

  private static double sum(Map<String, Double> counts, String code) {
    List<Double> values = new ArrayList<>();
    counts.forEach(
        (labels, v) -> {
          if (labels.contains("code=\"" + code + "\"")) {
            values.add(v);
          }
        });
    return values.stream().mapToDouble(Double::doubleValue).sum();
  }
}
