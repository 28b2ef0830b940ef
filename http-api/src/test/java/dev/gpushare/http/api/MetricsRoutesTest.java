package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.Views.CheckpointView;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.ComputeLimitView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.QueueEntryView;
import dev.gpushare.node.api.Views.ShareView;
import dev.gpushare.node.api.Views.UsageView;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class MetricsRoutesTest {

  static String text(GpuShareMetrics metrics, List<NodeView> nodes, List<PodView> pods) {
    return new String(
        MetricsRoutes.render(metrics.scrape(nodes, pods, true)), StandardCharsets.UTF_8);
  }

  static String text(List<NodeView> nodes, List<PodView> pods) {
    return text(new GpuShareMetrics(), nodes, pods);
  }

  @Test
  void theContentTypeIsTheTextFormat004() {
    assertEquals(
        "text/plain; version=0.0.4; charset=UTF-8", MetricsRoutes.PROMETHEUS_TEXT.toString());
  }

  @Test
  void exposesQueueGpuAndPodGaugesUnderTheirDocumentedNames() {
    String text =
        text(
            List.of(FakeGpuShareService.node("node-1", Map.of(), Map.of())),
            List.of(
                FakeGpuShareService.pod("default", "a", "node-1", "Running"),
                FakeGpuShareService.pod("default", "b", "node-1", "Ready"),
                FakeGpuShareService.pod("default", "c", "node-1", "Ready")));
    ExpositionText m = ExpositionText.parse(text);
    assertTrue(
        text.contains(
            "# HELP gpushare_queue_length Pods waiting in the node's ready queue.\n"
                + "# TYPE gpushare_queue_length gauge\n"
                + "gpushare_queue_length{node=\"node-1\"} 1.0\n"),
        text);
    assertEquals("gauge", m.types.get("gpushare_gpu_core_in_use_percent"));
    assertEquals(
        50,
        m.value("gpushare_gpu_core_in_use_percent", "node", "node-1", "gpu", "0", "uuid", "GPU-0"));
    assertEquals(
        0,
        m.value("gpushare_gpu_core_in_use_percent", "node", "node-1", "gpu", "1", "uuid", "GPU-1"));
    assertEquals(
        50,
        m.value(
            "gpushare_gpu_memory_in_use_percent", "node", "node-1", "gpu", "0", "uuid", "GPU-0"));
    assertEquals(
        1, m.value("gpushare_gpu_shares_in_use", "node", "node-1", "gpu", "0", "uuid", "GPU-0"));
    assertEquals(1, m.value("gpushare_gpu_healthy", "node", "node-1", "gpu", "0", "uuid", "GPU-0"));
    assertEquals(0, m.value("gpushare_gpu_healthy", "node", "node-1", "gpu", "1", "uuid", "GPU-1"));
    // Every state, zeros included, so that series do not come and go.
    assertEquals(0, m.value("gpushare_pods", "node", "node-1", "state", "Pending"));
    assertEquals(0, m.value("gpushare_pods", "node", "node-1", "state", "Hibernation"));
    assertEquals(2, m.value("gpushare_pods", "node", "node-1", "state", "Ready"));
    assertEquals(1, m.value("gpushare_pods", "node", "node-1", "state", "Running"));

    String[] a = {"namespace", "default", "pod", "a", "node", "node-1"};
    String[] b = {"namespace", "default", "pod", "b", "node", "node-1"};
    assertEquals(1, m.value("gpushare_pod_state", with(a, "state", "Running")));
    assertEquals(0, m.value("gpushare_pod_state", with(a, "state", "Ready")));
    assertEquals(1, m.value("gpushare_pod_state", with(b, "state", "Ready")));
    assertEquals(4, m.find("gpushare_pod_state", "pod", "b").size());
    assertEquals(1, m.value("gpushare_pod_queue_position", b));
    assertEquals(3, m.value("gpushare_pod_waiting_seconds", b));
    assertFalse(m.has("gpushare_pod_queue_position", a));
    assertEquals(100, m.value("gpushare_pod_core_limit_percent", a));
    assertEquals(100, m.value("gpushare_pod_memory_limit_percent", b));
    assertEquals("gauge", m.types.get("gpushare_pod_device_info"));
    assertEquals(1, m.value("gpushare_pod_device_info", with(a, "gpu", "1", "uuid", "GPU-1")));
    assertTrue(m.find("gpushare_pod_device_info", "pod", "b").isEmpty());
    // A family without samples is not written: no pod has telemetry yet.
    assertFalse(m.types.containsKey("gpushare_pod_gpu_memory_used_mib"));
    assertTrue(m.find("gpushare_pod_gpu_memory_used_mib").isEmpty());
  }

  @Test
  void equalInputGivesEqualText() {
    List<NodeView> nodes = List.of(FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    List<PodView> pods =
        List.of(
            FakeGpuShareService.pod("default", "b", "node-1", "Ready"),
            FakeGpuShareService.pod("default", "a", "node-1", "Running"));
    assertEquals(text(nodes, pods), text(nodes, List.of(pods.get(1), pods.get(0))));
  }

  @Test
  void aRunningPodsTelemetryIsExposedAbsoluteAndRelativeToItsLimit() {
    PodView running = FakeGpuShareService.pod("default", "a", "node-1", "Running");
    PodView used =
        new PodView(
            running.namespace(),
            running.name(),
            running.uid(),
            running.node(),
            running.policy(),
            running.state(),
            running.requests(),
            running.limits(),
            running.gpu(),
            null,
            null,
            12L,
            List.of(),
            List.of(),
            new UsageView(2048, 81559, 30, 30, 1),
            null,
            null);
    PodView unreported =
        new PodView(
            "default",
            "b",
            "uid-b",
            "node-1",
            SharePolicy.SHARE_POOL,
            PodState.RUNNING,
            null,
            null,
            new GpuRef(0, "GPU-0"),
            null,
            null,
            1L,
            List.of(),
            List.of(),
            new UsageView(0, 40779, null, null, -1),
            null,
            null);
    ExpositionText m = ExpositionText.parse(text(List.of(), List.of(unreported, used)));
    String[] a = {
      "namespace", "default", "pod", "a", "node", "node-1", "gpu", "1", "uuid", "GPU-1"
    };
    String[] b = {
      "namespace", "default", "pod", "b", "node", "node-1", "gpu", "0", "uuid", "GPU-0"
    };
    assertEquals(2048, m.value("gpushare_pod_gpu_memory_used_mib", a));
    assertEquals(0, m.value("gpushare_pod_gpu_memory_used_mib", b));
    assertEquals(81559, m.value("gpushare_pod_gpu_memory_limit_mib", a));
    assertEquals(30, m.value("gpushare_pod_gpu_utilization_percent", with(a, "kind", "absolute")));
    assertEquals(30, m.value("gpushare_pod_gpu_utilization_percent", with(a, "kind", "relative")));
    assertTrue(m.find("gpushare_pod_gpu_utilization_percent", "pod", "b").isEmpty());
    assertEquals(
        12,
        m.value(
            "gpushare_pod_running_seconds", "namespace", "default", "pod", "a", "node", "node-1"));
  }

  @Test
  void aComputeLimitersReportIsExposedAndPodsWithoutOneHaveNoSeries() {
    Instant at = Instant.parse("2026-01-01T00:00:05Z");
    PodView reported =
        FakeGpuShareService.pod("default", "a", "node-1", "Running")
            .withComputeLimit(new ComputeLimitView(ComputeLimitMode.LIBRARY, 30, 12.5, 29.4, at));
    PodView underMps =
        FakeGpuShareService.pod("default", "m", "node-1", "Running")
            .withComputeLimit(new ComputeLimitView(ComputeLimitMode.MPS, null, 0.0, 55.0, at));
    PodView unreported =
        FakeGpuShareService.pod("default", "b", "node-1", "Running")
            .withComputeLimit(new ComputeLimitView(ComputeLimitMode.LIBRARY, 40, 0.0, null, null));
    String text = text(List.of(), List.of(unreported, reported, underMps));
    assertTrue(
        text.contains(
            "# HELP gpushare_pod_compute_aim_percent The utilisation the pod's compute limiter"
                + " aims at, percent of one GPU: its core limit (pods whose library reported, on"
                + " nodes where the library limits).\n"
                + "# TYPE gpushare_pod_compute_aim_percent gauge\n"
                + "gpushare_pod_compute_aim_percent{namespace=\"default\",node=\"node-1\","
                + "pod=\"a\"} 30.0\n"),
        text);
    assertTrue(
        text.contains(
            "# TYPE gpushare_pod_compute_measured_percent gauge\n"
                + "gpushare_pod_compute_measured_percent{namespace=\"default\",node=\"node-1\","
                + "pod=\"a\"} 29.4\n"
                + "gpushare_pod_compute_measured_percent{namespace=\"default\",node=\"node-1\","
                + "pod=\"m\"} 55.0\n"),
        text);
    assertTrue(
        text.contains(
            "# TYPE gpushare_pod_compute_held_seconds_total counter\n"
                + "gpushare_pod_compute_held_seconds_total{namespace=\"default\",node=\"node-1\","
                + "pod=\"a\"} 12.5\n"
                + "gpushare_pod_compute_held_seconds_total{namespace=\"default\",node=\"node-1\","
                + "pod=\"m\"} 0.0\n"),
        text);
    ExpositionText m = ExpositionText.parse(text);
    assertEquals("counter", m.types.get("gpushare_pod_compute_held_seconds_total"));
    assertTrue(
        m.helps
            .get("gpushare_pod_compute_held_seconds_total")
            .startsWith("Seconds the pod's kernel"),
        m.helps.toString());
    assertTrue(m.find("gpushare_pod_compute_aim_percent", "pod", "m").isEmpty(), "MPS: no aim");
    for (String family :
        List.of(
            "gpushare_pod_compute_aim_percent",
            "gpushare_pod_compute_measured_percent",
            "gpushare_pod_compute_held_seconds_total")) {
      assertTrue(m.find(family, "pod", "b").isEmpty(), family + ": no report, no series");
    }
    // no pod reported: the families are not written at all
    String none = text(List.of(), List.of(unreported));
    assertFalse(none.contains("gpushare_pod_compute_"), none);
  }

  @Test
  void labelValuesAreEscaped() {
    String text =
        text(List.of(), List.of(FakeGpuShareService.pod("default", "a", "we\"ird\\", "Ready")));
    assertTrue(text.contains("gpushare_pods{node=\"we\\\"ird\\\\\",state=\"Ready\"} 1.0\n"), text);
    assertEquals(
        1,
        ExpositionText.parse(text).value("gpushare_pods", "node", "we\"ird\\", "state", "Ready"));
  }

  @Test
  void eventMetricsComeFromTheRegistry() {
    GpuShareMetrics metrics = new GpuShareMetrics();
    metrics.decided("node-1", "grant");
    metrics.decided("node-1", "grant");
    metrics.roundEnded("node-1", Duration.ofMillis(3));
    PodKey old = new PodKey("default", "old", "u1");
    PodKey fresh = new PodKey("default", "new", "u2");
    metrics.preempted("node-1", fresh, List.of(old));
    metrics.journalFailed("node-1", "persist", new RuntimeException("disk full"));
    metrics.kubernetesWriterStarted();
    metrics.kubernetesWrite("pod");
    metrics.kubernetesWrite("pod");
    metrics.kubernetesWriteError("pod", "retry");
    ExpositionText m = ExpositionText.parse(text(metrics, List.of(), List.of()));

    assertEquals("counter", m.types.get("gpushare_decisions_total"));
    assertEquals(2, m.value("gpushare_decisions_total", "node", "node-1", "kind", "grant"));
    assertEquals(0, m.value("gpushare_decisions_total", "node", "node-1", "kind", "preempt"));
    assertEquals("histogram", m.types.get("gpushare_decision_duration_seconds"));
    assertEquals(1, m.value("gpushare_decision_duration_seconds_count", "node", "node-1"));
    assertEquals(
        1, m.value("gpushare_decision_duration_seconds_bucket", "node", "node-1", "le", "0.005"));
    assertEquals(
        0, m.value("gpushare_decision_duration_seconds_bucket", "node", "node-1", "le", "0.0025"));
    assertEquals(
        1, m.value("gpushare_decision_duration_seconds_bucket", "node", "node-1", "le", "+Inf"));
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
    assertEquals(
        1,
        m.value("gpushare_journal_errors_total", "entity", "NodeArbiter", "operation", "persist"));
    assertEquals(
        0,
        m.value("gpushare_journal_errors_total", "entity", "NodeArbiter", "operation", "recovery"));
    assertEquals(
        1, m.value("gpushare_kubernetes_write_errors_total", "kind", "pod", "reason", "retry"));
    assertEquals(
        0, m.value("gpushare_kubernetes_write_errors_total", "kind", "node", "reason", "rejected"));
    assertEquals(2, m.value("gpushare_kubernetes_writes_total", "kind", "pod"));
    assertEquals(0, m.value("gpushare_kubernetes_writes_total", "kind", "event"));
    assertTrue(m.find("gpushare_decisions_total_created").isEmpty());

    // A deleted pod's preemption series go with it.
    metrics.podRemoved("node-1", old);
    m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertTrue(m.find("gpushare_pod_preemptions_total", "pod", "old").isEmpty());
    assertEquals(1, m.find("gpushare_pod_preemptions_total", "pod", "new").size());
  }

  @Test
  void kubernetesSeriesAppearWithTheWriterJournalSeriesAtOnce() {
    GpuShareMetrics metrics = new GpuShareMetrics();
    ExpositionText m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertTrue(m.find("gpushare_kubernetes_writes_total").isEmpty());
    assertTrue(m.find("gpushare_kubernetes_write_errors_total").isEmpty());
    assertTrue(m.find("gpushare_kubernetes_writer_backlog").isEmpty());
    for (String operation : GpuShareMetrics.JOURNAL_OPERATIONS) {
      assertEquals(
          0,
          m.value(
              "gpushare_journal_errors_total", "entity", "NodeArbiter", "operation", operation));
    }
    metrics.kubernetesWriterStarted();
    m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertEquals(3, m.find("gpushare_kubernetes_writes_total").size());
    assertEquals(12, m.find("gpushare_kubernetes_write_errors_total").size());
    assertEquals(0, m.value("gpushare_kubernetes_writer_backlog"));
    metrics.kubernetesWriterBacklog(7);
    metrics.kubernetesWriterStarted(); // a second writer on this member (after a fail-over)
    m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertEquals(0, m.value("gpushare_kubernetes_writer_backlog"));
  }

  @Test
  void theQueueHeadsWaitAndTheGpusItFitsByTheArbitersRule() {
    // GPU 0 empty, GPU 1 holds 50/50, GPU 2 is empty but unhealthy.
    List<GpuView> gpus =
        List.of(
            new GpuView(0, "GPU-0", "H800", 81559, Health.HEALTHY, new ShareView(0, 0), List.of()),
            new GpuView(
                1, "GPU-1", "H800", 81559, Health.HEALTHY, new ShareView(50, 50), List.of("x/y")),
            new GpuView(
                2, "GPU-2", "H800", 81559, Health.UNHEALTHY, new ShareView(0, 0), List.of()));
    NodeView half =
        node("half", gpus, new QueueEntryView("default/h", 1, 42, new ShareView(50, 50)));
    NodeView whole =
        node("whole", gpus, new QueueEntryView("default/w", 1, 7, new ShareView(100, 100)));
    NodeView memory =
        node("memory", gpus, new QueueEntryView("default/m", 1, 9, new ShareView(10, 60)));
    NodeView held =
        node("held", gpus, new QueueEntryView("default/c", 1, 5, new ShareView(50, 50)));
    NodeView empty = node("empty", gpus, null);
    // The head of node held had its CUDA state checkpointed on GPU 1: it waits for that GPU.
    PodView checkpointed =
        new PodView(
            "default",
            "c",
            "uid-c",
            "held",
            SharePolicy.SHARE_POOL,
            PodState.READY,
            new ShareView(50, 50),
            new ShareView(50, 50),
            null,
            1,
            5L,
            null,
            List.of(),
            List.of(),
            null,
            null,
            new CheckpointView("held", 1, 1024, Instant.parse("2026-01-01T00:00:00Z")));
    ExpositionText m =
        ExpositionText.parse(
            text(List.of(half, whole, memory, held, empty), List.of(checkpointed)));
    assertEquals(42, m.value("gpushare_queue_head_waiting_seconds", "node", "half"));
    assertEquals(2, m.value("gpushare_queue_head_fitting_gpus", "node", "half"));
    assertEquals(1, m.value("gpushare_queue_head_fitting_gpus", "node", "whole"));
    assertEquals(1, m.value("gpushare_queue_head_fitting_gpus", "node", "memory"));
    assertEquals(1, m.value("gpushare_queue_head_fitting_gpus", "node", "held"));
    assertEquals(0, m.value("gpushare_queue_head_waiting_seconds", "node", "empty"));
    assertEquals(0, m.value("gpushare_queue_head_fitting_gpus", "node", "empty"));
    assertEquals(0, m.value("gpushare_queue_length", "node", "empty"));

    // Checkpointed on GPU 1, which holds 50/50: a 100/100 head would fit GPU 0 but not GPU 1.
    PodView wholeCheckpointed =
        new PodView(
            "default",
            "w",
            "uid-w",
            "whole",
            SharePolicy.SHARE_POOL,
            PodState.READY,
            new ShareView(100, 100),
            new ShareView(100, 100),
            null,
            1,
            7L,
            null,
            List.of(),
            List.of(),
            null,
            null,
            new CheckpointView("held", 1, 1024, Instant.parse("2026-01-01T00:00:00Z")));
    m = ExpositionText.parse(text(List.of(whole), List.of(wholeCheckpointed)));
    assertEquals(0, m.value("gpushare_queue_head_fitting_gpus", "node", "whole"));
  }

  @Test
  void theMembersReadinessAndDataDirectory() {
    GpuShareMetrics metrics = new GpuShareMetrics();
    ExpositionText m =
        ExpositionText.parse(
            new String(
                MetricsRoutes.render(metrics.scrape(List.of(), List.of(), false)),
                StandardCharsets.UTF_8));
    assertEquals(0, m.value("gpushare_member_ready"));
    // No data directory given: none of its series.
    assertTrue(m.find("gpushare_data_directory_available_bytes").isEmpty());

    metrics.dataDirectory(
        () -> Optional.of(new GpuShareMetrics.DiskSpace(3_000_000, 64_000_000)), 16_777_216);
    m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertEquals(1, m.value("gpushare_member_ready"));
    assertEquals(3_000_000, m.value("gpushare_data_directory_available_bytes"));
    assertEquals(64_000_000, m.value("gpushare_data_directory_size_bytes"));
    assertEquals(16_777_216, m.value("gpushare_data_directory_min_free_bytes"));

    // No minimum (the PostgreSQL journal, or min-free-space = 0); a file system that cannot be
    // read.
    metrics.dataDirectory(Optional::empty, 0);
    m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertTrue(m.find("gpushare_data_directory_available_bytes").isEmpty());
    assertTrue(m.find("gpushare_data_directory_size_bytes").isEmpty());
    assertTrue(m.find("gpushare_data_directory_min_free_bytes").isEmpty());
  }

  @Test
  void httpRequestsHaveBoundedLabels() {
    GpuShareMetrics metrics = new GpuShareMetrics();
    metrics.httpRequest("GET", "/metrics", 200, Duration.ofMillis(2));
    metrics.httpRequest("BREW", "other", 501, Duration.ofMillis(1));
    ExpositionText m = ExpositionText.parse(text(metrics, List.of(), List.of()));
    assertEquals(
        1,
        m.value(
            "gpushare_http_requests_total", "method", "GET", "route", "/metrics", "code", "200"));
    assertEquals(
        1,
        m.value(
            "gpushare_http_requests_total", "method", "other", "route", "other", "code", "501"));
    assertEquals(
        1,
        m.value(
            "gpushare_http_request_duration_seconds_bucket",
            "method",
            "GET",
            "route",
            "/metrics",
            "le",
            "0.0025"));
    assertEquals(
        0,
        m.value(
            "gpushare_http_request_duration_seconds_bucket",
            "method",
            "GET",
            "route",
            "/metrics",
            "le",
            "0.001"));
  }

  private static NodeView node(String name, List<GpuView> gpus, QueueEntryView head) {
    return new NodeView(
        name,
        Map.of(),
        Map.of(),
        SharePolicy.SHARE_POOL,
        QosConfig.DEFAULT,
        new NodeStatus(Map.of(), Map.of(), List.of()),
        gpus,
        head == null ? List.of() : List.of(head),
        List.of());
  }

  @Test
  void eachRuntimeHasARegistryOfItsOwn() {
    GpuShareMetrics one = new GpuShareMetrics();
    GpuShareMetrics two = new GpuShareMetrics();
    one.decided("n", "grant");
    ExpositionText m = ExpositionText.parse(text(two, List.of(), List.of()));
    assertTrue(m.find("gpushare_decisions_total").isEmpty());
  }

  static String[] with(String[] base, String... more) {
    String[] all = new String[base.length + more.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(more, 0, all, base.length, more.length);
    return all;
  }
}
