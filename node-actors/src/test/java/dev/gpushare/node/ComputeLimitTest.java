package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.ComputeLimitView;
import dev.gpushare.node.api.Views.PodView;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.DataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compute limit (issue 26) over the real runtime: the pod view's {@code computeLimit} under
 * each setting of the member ({@code compute-limit = auto} without MPS, with MPS, {@code off}), the
 * library's report taken, shown in the view and the metrics, checked value by value, refused for an
 * unknown pod and one that shares no GPU, and dropped with its pod. Three runtimes, one per
 * setting; time is a manual clock.
 */
class ComputeLimitTest {
  @TempDir static Path snapshots;
  static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

  /** The library runtime's clock; each runtime has its own. */
  static final ManualClock CLOCK = new ManualClock(START);

  static final ManualClock MPS_CLOCK = new ManualClock(START);
  static final ManualClock OFF_CLOCK = new ManualClock(START);
  static final String MPS = "/run/gpushare/mps";

  static ActorTestKit libraryKit;
  static ActorTestKit mpsKit;
  static ActorTestKit offKit;

  /** {@code compute-limit = auto}, no MPS: the library limits. */
  static GpuShareService library;

  /** {@code compute-limit = auto}, {@code mps-root} set: MPS limits. */
  static GpuShareService mps;

  /** {@code compute-limit = off} (and no MPS): nothing limits. */
  static GpuShareService off;

  @BeforeAll
  static void start() throws Exception {
    libraryKit = ActorTestKit.create("compute-library", TestSystems.config(dir("library")));
    mpsKit = ActorTestKit.create("compute-mps", TestSystems.config(dir("mps")));
    offKit = ActorTestKit.create("compute-off", TestSystems.config(dir("off")));
    library = start(libraryKit, settings(Optional.empty(), GpuSettings.ComputeLimit.AUTO), CLOCK);
    mps = start(mpsKit, settings(Optional.of(MPS), GpuSettings.ComputeLimit.AUTO), MPS_CLOCK);
    off = start(offKit, settings(Optional.empty(), GpuSettings.ComputeLimit.OFF), OFF_CLOCK);
    for (GpuShareService s : List.of(library, mps, off)) {
      await(s.putNode(GpuShareServiceTest.node("c1", 2, null)));
    }
  }

  static Path dir(String name) throws Exception {
    return Files.createDirectories(snapshots.resolve(name));
  }

  static GpuSettings settings(Optional<String> mpsRoot, GpuSettings.ComputeLimit computeLimit) {
    return new GpuSettings(
        GpuBackends.Mode.SIMULATED,
        Duration.ofSeconds(5),
        IdleSettings.OFF,
        true,
        mpsRoot,
        GpuSettings.Checkpoints.DEFAULT,
        computeLimit);
  }

  static GpuShareService start(ActorTestKit kit, GpuSettings gpu, ManualClock clock)
      throws Exception {
    return await(
        GpuShareRuntime.start(
            kit.system(),
            new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10), gpu),
            clock));
  }

  @AfterAll
  static void stop() {
    for (ActorTestKit kit : new ActorTestKit[] {libraryKit, mpsKit, offKit}) {
      if (kit != null) {
        kit.shutdownTestKit();
      }
    }
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static ServiceException refused(Kind kind, Supplier<CompletionStage<?>> call) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(call.get()));
    ServiceException refusal = assertInstanceOf(ServiceException.class, e.getCause());
    assertEquals(kind, refusal.kind(), refusal::getMessage);
    return refusal;
  }

  /** A share-pool pod of node c1 with core and memory limit {@code limit} (request 10). */
  static PodView create(GpuShareService service, String name, int limit) throws Exception {
    return await(service.createPod(GpuShareServiceTest.pod("c1", name, 10, limit)));
  }

  /** A pod of node c1 that shares no GPU (CPU only). */
  static PodManifest cpuPod(String name) {
    return new PodManifest(
        "default",
        name,
        null,
        "c1",
        Map.of(),
        Map.of(),
        List.of(
            new PodManifest.ContainerResources("main", Map.of("cpu", "1"), Map.of("cpu", "1"))));
  }

  static ComputeLimitView unreported(ComputeLimitMode mode, Integer aim) {
    return new ComputeLimitView(mode, aim, 0.0, null, null);
  }

  // ---- the view under each setting ----

  @Test
  void withoutMpsTheLibraryLimitsAndAimsAtTheCoreLimit() throws Exception {
    PodView created = create(library, "lib-a", 30);
    ComputeLimitView expected = unreported(ComputeLimitMode.LIBRARY, 30);
    assertEquals(expected, created.computeLimit(), "the create's answer");
    assertEquals(expected, await(library.pod("default", "lib-a")).computeLimit());
    PodView running = await(library.demand("default", "lib-a"));
    assertEquals(PodState.RUNNING, running.state());
    assertEquals(expected, running.computeLimit(), "Running: through the telemetry path too");
    PodView listed =
        await(library.pods(Optional.of("c1"))).stream()
            .filter(p -> p.name().equals("lib-a"))
            .findFirst()
            .orElseThrow();
    assertEquals(expected, listed.computeLimit(), "in the list");
    assertEquals(
        unreported(ComputeLimitMode.LIBRARY, 100), create(library, "lib-full", 100).computeLimit());
  }

  @Test
  void underMpsMpsLimitsAndTheViewHasNoAim() throws Exception {
    assertEquals(unreported(ComputeLimitMode.MPS, null), create(mps, "mps-a", 30).computeLimit());
    assertEquals(
        unreported(ComputeLimitMode.MPS, null),
        await(mps.demand("default", "mps-a")).computeLimit());
  }

  @Test
  void offMeansNothingLimitsAndTheViewHasNoAim() throws Exception {
    assertEquals(unreported(ComputeLimitMode.OFF, null), create(off, "off-a", 30).computeLimit());
    assertEquals(
        unreported(ComputeLimitMode.OFF, null),
        await(off.demand("default", "off-a")).computeLimit());
  }

  @Test
  void aPodThatSharesNoGpuHasNoComputeLimit() throws Exception {
    PodView cpu = await(library.createPod(cpuPod("cpu-view")));
    assertNull(cpu.limits());
    assertNull(cpu.computeLimit());
    assertNull(await(library.pod("default", "cpu-view")).computeLimit());
  }

  @Test
  void theModeFollowsTheSettings() {
    assertEquals(
        ComputeLimitMode.LIBRARY,
        settings(Optional.empty(), GpuSettings.ComputeLimit.AUTO).computeLimitMode());
    assertEquals(
        ComputeLimitMode.MPS,
        settings(Optional.of(MPS), GpuSettings.ComputeLimit.AUTO).computeLimitMode());
    assertEquals(
        ComputeLimitMode.OFF,
        settings(Optional.of(MPS), GpuSettings.ComputeLimit.OFF).computeLimitMode());
    assertEquals(
        ComputeLimitMode.OFF,
        settings(Optional.empty(), GpuSettings.ComputeLimit.OFF).computeLimitMode());
    assertEquals(GpuSettings.ComputeLimit.AUTO, GpuSettings.DEFAULT.computeLimit());
    assertEquals(ComputeLimitMode.LIBRARY, GpuSettings.DEFAULT.computeLimitMode());
  }

  // ---- reports ----

  @Test
  void aReportIsShownInTheViewAndTheMetricsAndReplacesThePrevious() throws Exception {
    create(library, "rep-a", 30);
    create(library, "rep-quiet", 40);
    await(library.demand("default", "rep-a"));
    Instant first = CLOCK.now();
    PodView answered =
        await(library.reportCompute("default", "rep-a", new ComputeReport(30, 29.4, 12.5)));
    ComputeLimitView shown = new ComputeLimitView(ComputeLimitMode.LIBRARY, 30, 12.5, 29.4, first);
    assertEquals(shown, answered.computeLimit(), "the answer shows the report");
    assertEquals(PodState.RUNNING, answered.state());
    assertEquals(shown, await(library.pod("default", "rep-a")).computeLimit());

    MetricSnapshots m = await(library.scrapeMetrics());
    Labels a = Labels.of("namespace", "default", "node", "c1", "pod", "rep-a");
    assertEquals(30.0, gauge(m, "gpushare_pod_compute_aim_percent", a));
    assertEquals(29.4, gauge(m, "gpushare_pod_compute_measured_percent", a));
    assertEquals(12.5, counter(m, "gpushare_pod_compute_held_seconds", a));
    Labels quiet = Labels.of("namespace", "default", "node", "c1", "pod", "rep-quiet");
    assertNull(point(m, "gpushare_pod_compute_aim_percent", quiet), "no report, no series");
    assertNull(point(m, "gpushare_pod_compute_held_seconds", quiet));
    assertEquals(
        unreported(ComputeLimitMode.LIBRARY, 40),
        await(library.pod("default", "rep-quiet")).computeLimit());

    await(library.advance(Duration.ofSeconds(5)));
    PodView again =
        await(library.reportCompute("default", "rep-a", new ComputeReport(30, 31, 14.25)));
    ComputeLimitView replaced =
        new ComputeLimitView(ComputeLimitMode.LIBRARY, 30, 14.25, 31.0, first.plusSeconds(5));
    assertEquals(replaced, again.computeLimit(), "each report replaces the previous one");
    assertEquals(replaced, await(library.pod("default", "rep-a")).computeLimit());
    MetricSnapshots later = await(library.scrapeMetrics());
    assertEquals(31.0, gauge(later, "gpushare_pod_compute_measured_percent", a));
    assertEquals(14.25, counter(later, "gpushare_pod_compute_held_seconds", a));
  }

  @Test
  void aReportUnderMpsOrOffIsShownWithoutAnAim() throws Exception {
    create(mps, "rep-mps", 30);
    PodView m = await(mps.reportCompute("default", "rep-mps", new ComputeReport(30, 50, 0)));
    assertEquals(ComputeLimitMode.MPS, m.computeLimit().mode());
    assertNull(m.computeLimit().aimPercent());
    assertEquals(50.0, m.computeLimit().measuredPercent());
    assertEquals(MPS_CLOCK.now(), m.computeLimit().reportedAt());
    MetricSnapshots metrics = await(mps.scrapeMetrics());
    Labels labels = Labels.of("namespace", "default", "node", "c1", "pod", "rep-mps");
    assertNull(point(metrics, "gpushare_pod_compute_aim_percent", labels), "no aim: MPS limits");
    assertEquals(50.0, gauge(metrics, "gpushare_pod_compute_measured_percent", labels));
    assertEquals(0.0, counter(metrics, "gpushare_pod_compute_held_seconds", labels));

    create(off, "rep-off", 30);
    PodView o = await(off.reportCompute("default", "rep-off", new ComputeReport(100, 80, 0)));
    assertEquals(
        new ComputeLimitView(ComputeLimitMode.OFF, null, 0.0, 80.0, OFF_CLOCK.now()),
        o.computeLimit());
  }

  @Test
  void valuesOutOfRangeAreRefusedFieldByFieldAndNothingIsKept() throws Exception {
    create(library, "bad-a", 30);
    ServiceException e =
        refused(
            Kind.INVALID,
            () ->
                library.reportCompute(
                    "default", "bad-a", new ComputeReport(-1, 100.5, Double.NaN)));
    assertEquals(
        List.of("aimPercent", "measuredPercent", "heldSeconds"),
        e.errors().stream().map(FieldError::field).toList());
    FieldError aim = e.errors().get(0);
    assertEquals("-1", aim.value());
    assertEquals(
        "aimPercent: '-1' given; expected a number from 0 to 100 (percent of one GPU)",
        aim.message());
    assertEquals("100.5", e.errors().get(1).value());
    assertTrue(e.errors().get(2).message().contains("at least 0"), e.errors().get(2).message());
    assertEquals(
        "heldSeconds",
        refused(
                Kind.INVALID,
                () -> library.reportCompute("default", "bad-a", new ComputeReport(30, 30, -0.5)))
            .field());
    assertEquals(
        "measuredPercent",
        refused(
                Kind.INVALID,
                () ->
                    library.reportCompute(
                        "default", "bad-a", new ComputeReport(30, Double.POSITIVE_INFINITY, 1)))
            .field());
    assertEquals(
        unreported(ComputeLimitMode.LIBRARY, 30),
        await(library.pod("default", "bad-a")).computeLimit(),
        "a refused report is not kept");
    // the bounds themselves are good
    assertEquals(
        100.0,
        await(library.reportCompute("default", "bad-a", new ComputeReport(0, 100, 0)))
            .computeLimit()
            .measuredPercent());
  }

  @Test
  void anUnknownPodIsNotFoundAndAPodThatSharesNoGpuAConflict() throws Exception {
    ServiceException unknown =
        refused(
            Kind.NOT_FOUND,
            () -> library.reportCompute("default", "nobody", new ComputeReport(30, 30, 1)));
    assertEquals("pod default/nobody not found", unknown.getMessage());
    refused(
        Kind.NOT_FOUND,
        () -> library.reportCompute("default", "Not_A_Name", new ComputeReport(30, 30, 1)));

    await(library.createPod(cpuPod("cpu-rep")));
    ServiceException cpu =
        refused(
            Kind.CONFLICT,
            () -> library.reportCompute("default", "cpu-rep", new ComputeReport(30, 30, 1)));
    assertEquals("metadata.name", cpu.field());
    assertTrue(cpu.getMessage().contains("shares no GPU"), cpu.getMessage());
  }

  @Test
  void aDeletedPodsReportIsDropped() throws Exception {
    DefaultGpuShareService service = (DefaultGpuShareService) library;
    create(library, "del-a", 30);
    int before = service.computeReports();
    await(library.reportCompute("default", "del-a", new ComputeReport(30, 20, 3)));
    assertEquals(before + 1, service.computeReports());
    await(library.deletePod("default", "del-a"));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (service.computeReports() > before && System.nanoTime() < deadline) {
      Thread.sleep(10); // the deletion is heard through the change topic
    }
    assertEquals(before, service.computeReports(), "dropped with its pod");
    refused(
        Kind.NOT_FOUND,
        () -> library.reportCompute("default", "del-a", new ComputeReport(30, 20, 3)));
    // a new pod of the same name starts with no report
    assertEquals(
        unreported(ComputeLimitMode.LIBRARY, 50), create(library, "del-a", 50).computeLimit());
    MetricSnapshots m = await(library.scrapeMetrics());
    assertNull(
        point(
            m,
            "gpushare_pod_compute_held_seconds",
            Labels.of("namespace", "default", "node", "c1", "pod", "del-a")));
  }

  // ---- metric snapshots ----

  static DataPointSnapshot point(MetricSnapshots m, String name, Labels labels) {
    for (MetricSnapshot s : m) {
      if (s.getMetadata().getName().equals(name)) {
        for (DataPointSnapshot p : s.getDataPoints()) {
          if (p.getLabels().equals(labels)) {
            return p;
          }
        }
      }
    }
    return null;
  }

  static double gauge(MetricSnapshots m, String name, Labels labels) {
    DataPointSnapshot p = point(m, name, labels);
    assertInstanceOf(GaugeSnapshot.GaugeDataPointSnapshot.class, p, name + labels);
    return ((GaugeSnapshot.GaugeDataPointSnapshot) p).getValue();
  }

  static double counter(MetricSnapshots m, String name, Labels labels) {
    DataPointSnapshot p = point(m, name, labels);
    assertInstanceOf(CounterSnapshot.CounterDataPointSnapshot.class, p, name + labels);
    return ((CounterSnapshot.CounterDataPointSnapshot) p).getValue();
  }
}
