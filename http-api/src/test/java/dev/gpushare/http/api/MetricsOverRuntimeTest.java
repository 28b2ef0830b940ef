package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The metrics of a real runtime (sharded, persistent actors over the in-memory journal, a manual
 * clock): the reference example and a duration-based preemption, then the exposition text that
 * {@code GET /metrics} writes, parsed.
 */
class MetricsOverRuntimeTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static final ManualClock CLOCK = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("metrics-test", config(snapshots));
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
                CLOCK));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  static Config config(Path snapshots) {
    return ConfigFactory.parseString(
            "pekko.loglevel = WARNING\n"
                + "pekko.persistence.journal.plugin = \"pekko.persistence.journal.inmem\"\n"
                + "pekko.persistence.journal.inmem.test-serialization = on\n"
                + "pekko.persistence.snapshot-store.plugin ="
                + " \"pekko.persistence.snapshot-store.local\"\n"
                + "pekko.persistence.snapshot-store.local.dir = \""
                + snapshots.toString().replace("\\", "/")
                + "\"\n"
                + "pekko.actor.serialization-bindings {\n"
                + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                + "}\n")
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load());
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** A scrape as GET /metrics writes it, parsed. */
  static ExpositionText scrape() throws Exception {
    String text =
        new String(MetricsRoutes.render(await(service.scrapeMetrics())), StandardCharsets.UTF_8);
    return ExpositionText.parse(text);
  }

  static NodeManifest node(String name, int gpus, String qos) {
    Map<String, String> annotations =
        qos == null ? Map.of() : Map.of("alibabacloud.com/gpu-share-qos-config", qos);
    return new NodeManifest(
        name,
        Map.of("alibabacloud.com/gpu-share-policy", "share-pool"),
        annotations,
        Map.of("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", Integer.toString(gpus)),
        Map.of());
  }

  static PodManifest pod(String node, String name, int request, int limit) {
    return new PodManifest(
        "default",
        name,
        null,
        node,
        Map.of(
            "alibabacloud.com/compute-class", "gpu-hpn",
            "alibabacloud.com/gpu-share-policy", "share-pool"),
        Map.of(),
        List.of(
            new PodManifest.ContainerResources(
                "main",
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(request),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(request)),
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(limit),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(limit)))));
  }

  static String[] pod(String name, String node, String... more) {
    return MetricsRoutesTest.with(
        new String[] {"namespace", "default", "pod", name, "node", node}, more);
  }

  @Test
  void theReferenceExampleAndAPreemptionAsPrometheusSeesThem() throws Exception {
    // The reference example: a and c run, d and b wait in that order.
    await(service.putNode(node("ref", 2, null)));
    await(service.createPod(pod("ref", "a", 50, 50)));
    await(service.createPod(pod("ref", "b", 50, 50)));
    await(service.createPod(pod("ref", "c", 50, 100)));
    await(service.createPod(pod("ref", "d", 50, 100)));
    await(service.demand("default", "a"));
    await(service.demand("default", "c"));
    await(service.demand("default", "d"));
    await(service.demand("default", "b"));
    await(service.advance(Duration.ofSeconds(30)));

    ExpositionText m = scrape();
    assertEquals(2, m.value("gpushare_queue_length", "node", "ref"));
    assertEquals(1, m.value("gpushare_pod_queue_position", pod("d", "ref")));
    assertEquals(2, m.value("gpushare_pod_queue_position", pod("b", "ref")));
    assertEquals(30, m.value("gpushare_pod_waiting_seconds", pod("d", "ref")));
    assertEquals(1, m.value("gpushare_pod_state", pod("b", "ref", "state", "Ready")));
    assertEquals(0, m.value("gpushare_pod_state", pod("b", "ref", "state", "Running")));
    assertEquals(1, m.value("gpushare_pod_state", pod("a", "ref", "state", "Running")));
    assertEquals(30, m.value("gpushare_pod_running_seconds", pod("a", "ref")));
    assertEquals(2, m.value("gpushare_pods", "node", "ref", "state", "Ready"));
    assertEquals(2, m.value("gpushare_pods", "node", "ref", "state", "Running"));
    assertEquals(
        1,
        m.value(
            "gpushare_pod_device_info", pod("c", "ref", "gpu", "1", "uuid", uuidOf(m, "c", "1"))));
    assertEquals(100, m.value("gpushare_pod_core_limit_percent", pod("c", "ref")));
    // a and c were granted at once (one decision each); d and b entered the queue.
    assertEquals(2, m.value("gpushare_decisions_total", "node", "ref", "kind", "enqueue"));
    assertEquals(2, m.value("gpushare_decisions_total", "node", "ref", "kind", "grant"));

    // c releases: d takes GPU 1, b joins a on GPU 0.
    await(service.release("default", "c"));
    m = scrape();
    assertEquals(0, m.value("gpushare_queue_length", "node", "ref"));
    assertTrue(m.find("gpushare_pod_queue_position", "node", "ref").isEmpty());
    String gpu0 = uuidOf(m, "a", "0");
    assertEquals(2, m.value("gpushare_gpu_shares_in_use", "node", "ref", "gpu", "0", "uuid", gpu0));
    assertEquals(
        100, m.value("gpushare_gpu_core_in_use_percent", "node", "ref", "gpu", "0", "uuid", gpu0));
    assertEquals(1, m.value("gpushare_pod_device_info", pod("b", "ref", "gpu", "0", "uuid", gpu0)));
    assertEquals(1, m.value("gpushare_pod_state", pod("c", "ref", "state", "Hibernation")));
    double grants = m.value("gpushare_decisions_total", "node", "ref", "kind", "grant");
    assertTrue(grants >= 3, "grants: " + grants);
    assertEquals(4, grants);
    assertEquals(1, m.value("gpushare_decisions_total", "node", "ref", "kind", "release"));
    assertEquals(0, m.value("gpushare_decisions_total", "node", "ref", "kind", "preempt"));
    double decisions =
        m.find("gpushare_decisions_total", "node", "ref").stream()
            .mapToDouble(ExpositionText.Sample::value)
            .sum();
    double rounds = m.value("gpushare_decision_duration_seconds_count", "node", "ref");
    assertTrue(rounds >= decisions, rounds + " rounds, " + decisions + " decisions");
    assertEquals(
        rounds, m.value("gpushare_decision_duration_seconds_bucket", "node", "ref", "le", "+Inf"));
    assertTrue(m.value("gpushare_decision_duration_seconds_sum", "node", "ref") > 0);

    // A duration-based preemption on a one-GPU node.
    await(
        service.putNode(node("pre", 1, "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":60}")));
    await(service.createPod(pod("pre", "old", 10, 100)));
    await(service.createPod(pod("pre", "new", 10, 100)));
    await(service.demand("default", "old"));
    await(service.demand("default", "new"));
    m = scrape();
    assertEquals(1, m.value("gpushare_queue_length", "node", "pre"));
    assertEquals(1, m.value("gpushare_pod_queue_position", pod("new", "pre")));
    await(service.advance(Duration.ofMinutes(60).plusSeconds(1)));

    m = scrape();
    assertEquals(1, m.value("gpushare_decisions_total", "node", "pre", "kind", "preempt"));
    assertEquals(2, m.value("gpushare_decisions_total", "node", "pre", "kind", "grant"));
    assertEquals(
        1,
        m.value(
            "gpushare_pod_preemptions_total",
            "namespace",
            "default",
            "pod",
            "old",
            "role",
            "victim"));
    assertEquals(
        1,
        m.value(
            "gpushare_pod_preemptions_total",
            "namespace",
            "default",
            "pod",
            "new",
            "role",
            "preemptor"));
    assertTrue(m.find("gpushare_pod_preemptions_total", "pod", "a").isEmpty());
    // The victim waits again, at the head of the queue; the preemptor runs.
    assertEquals(1, m.value("gpushare_queue_length", "node", "pre"));
    assertEquals(1, m.value("gpushare_pod_queue_position", pod("old", "pre")));
    assertEquals(1, m.value("gpushare_pod_state", pod("old", "pre", "state", "Ready")));
    assertEquals(1, m.value("gpushare_pod_state", pod("new", "pre", "state", "Running")));
    assertEquals(0, m.value("gpushare_pod_running_seconds", pod("new", "pre")));
    assertEquals(
        0,
        m.value("gpushare_journal_errors_total", "entity", "NodeArbiter", "operation", "persist"));

    // A deleted pod's series go: its state at once, its preemption counters with it.
    await(service.deletePod("default", "old"));
    m = scrape();
    assertTrue(m.find("gpushare_pod_state", "pod", "old").isEmpty());
    assertTrue(m.find("gpushare_pod_preemptions_total", "pod", "old").isEmpty());
    assertEquals(0, m.value("gpushare_queue_length", "node", "pre"));
  }

  /** The UUID in the device series of {@code pod} on GPU {@code index}. */
  private static String uuidOf(ExpositionText m, String pod, String index) {
    List<ExpositionText.Sample> found =
        m.find("gpushare_pod_device_info", "pod", pod, "gpu", index);
    assertEquals(1, found.size(), pod + " on GPU " + index);
    return found.get(0).labels().get("uuid");
  }
}
