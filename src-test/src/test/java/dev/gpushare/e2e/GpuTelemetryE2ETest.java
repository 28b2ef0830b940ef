package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.events;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * ISSUE 5 end to end through the server process, without a GPU: the simulated GPUs are scripted
 * over HTTP ({@code PUT /v1/nodes/{node}/gpus/{index}/processes}), the manual clock is advanced
 * over HTTP, and what telemetry does shows in the pod view, its Events and /metrics.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GpuTelemetryE2ETest {
  private ServerProcess server;
  private Api api;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    Path conf = dir.resolve("gpushare.conf");
    Files.writeString(
        conf,
        """
        gpushare.gpu {
          backend = simulated
          telemetry-interval = 100ms
          idle-release-after = 10m
          idle-release-grace = 60s
          mps-root = "/run/gpushare/mps"
        }
        """);
    server =
        ServerProcess.start(
            "GpuTelemetryE2ETest",
            dir.resolve("data"),
            List.of(),
            Map.of(),
            "--config",
            conf.toString());
    api = server.api();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  private JsonNode awaitPod(String name, String what, Predicate<JsonNode> condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    JsonNode last = null;
    while (System.nanoTime() < deadline) {
      last = api.pod(name);
      if (condition.test(last)) {
        return last;
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    fail(name + ": not within 30 s: " + what + "; last " + last);
    return null;
  }

  private void script(String node, int gpu, String processesJson) {
    Api.Resp r =
        api.put(
            "/v1/nodes/" + node + "/gpus/" + gpu + "/processes",
            "{\"processes\":" + processesJson + "}",
            "application/json");
    assertEquals(200, r.status(), () -> "script: " + r);
  }

  @Test
  void scriptedWorkShowsInTheViewAndMetricsAndAnIdlePodIsReleasedAfterBeingAsked() {
    String node = Manifests.unique("tel");
    api.putNode(node, 2, "share-pool", null);
    api.createPod(sharePod(node + "-a", node, 20, 50));
    api.createPod(sharePod(node + "-b", node, 20, 50));
    JsonNode a = api.demand(node + "-a");
    JsonNode b = api.demand(node + "-b");
    assertEquals("Running", a.path("state").asText());
    String uuid = a.path("gpu").path("uuid").asText();
    JsonNode env = a.path("workload").path("env");
    assertEquals(uuid, env.path("CUDA_VISIBLE_DEVICES").asText());
    assertEquals("50", env.path("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").asText());
    assertEquals(uuid + "=40779M", env.path("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT").asText());
    assertEquals(
        "/run/gpushare/mps/" + uuid + "/pipe", env.path("CUDA_MPS_PIPE_DIRECTORY").asText());

    // a works: 25 % of the whole GPU is 50 % of its limit.
    script(
        node,
        a.path("gpu").path("index").asInt(),
        "[{\"pid\":4242,\"podUid\":\""
            + a.path("uid").asText()
            + "\",\"usedMemoryMiB\":8192,\"smUtilizationPercent\":25}]");
    JsonNode used =
        awaitPod(node + "-a", "usage", p -> p.path("usage").path("processes").asInt() == 1);
    assertEquals(8192, used.path("usage").path("memoryUsedMiB").asLong());
    assertEquals(25, used.path("usage").path("absoluteUtilization").asInt());
    assertEquals(50, used.path("usage").path("relativeUtilization").asInt());
    String metrics = api.get("/metrics").body();
    assertTrue(
        metrics.contains(
            // The Prometheus client writes labels sorted by name, values as doubles.
            "gpushare_pod_gpu_utilization_percent{gpu=\""
                + a.path("gpu").path("index").asInt()
                + "\",kind=\"relative\",namespace=\"default\",node=\""
                + node
                + "\",pod=\""
                + node
                + "-a\",uuid=\""
                + uuid
                + "\"} 50.0\n"),
        metrics);

    // b does nothing: asked to hibernate after 10 minutes, released a minute later; a stays.
    awaitPod(node + "-b", "sampled idle", p -> p.path("usage").path("processes").asInt(-9) == 0);
    api.advance(600);
    JsonNode asked = awaitPod(node + "-b", "asked", p -> !events(p, "GPUShareIdle").isEmpty());
    assertEquals("Running", asked.path("state").asText());
    api.advance(60);
    JsonNode released =
        awaitPod(
            node + "-b",
            "released, with its Event (recorded right after the decision)",
            p ->
                p.path("state").asText().equals("Hibernation")
                    && !events(p, "GPUShareIdleReleased").isEmpty());
    assertEquals(1, events(released, "GPUShareIdleReleased").size(), () -> "" + released);
    assertEquals("Running", api.pod(node + "-a").path("state").asText());

    // The journal says why: the arbiter's Released event carries the reason.
    JsonNode journal =
        Api.ok(
            api.get(
                "/v1/journal/events?persistenceId="
                    + Api.enc("NodeArbiter|" + node)
                    + "&fromSequenceNr=1&limit=500"));
    assertTrue(
        journal.toString().contains("\"reason\":\"idle\""),
        () -> "a Released event with reason idle: " + journal);

    // A bad script names the field and changes nothing.
    Api.Resp bad =
        api.put(
            "/v1/nodes/" + node + "/gpus/0/processes",
            "{\"processes\":[{\"pid\":-1,\"podUid\":\"x\",\"usedMemoryMiB\":1}]}",
            "application/json");
    assertEquals(422, bad.status(), () -> "" + bad);
    assertTrue(bad.body().contains("processes[0].pid"), bad.body());
    assertEquals(
        8192, api.pod(node + "-a").path("usage").path("memoryUsedMiB").asLong(), "unchanged");
  }
}
