package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.PodView;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GPU telemetry put to work (ISSUE 5 point 4) over the real runtime with the scriptable simulated
 * backend: usage in the pod view, the workload's environment, memory over the limit revoking the
 * share, idle release after a request to hibernate. Time is a manual clock; sampling runs every 50
 * ms of real time, and every wait is bounded.
 */
class GpuTelemetryTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  static final String MPS = "/run/gpushare/mps";

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("telemetry-test", TestSystems.config(snapshots));
    GpuSettings gpu =
        new GpuSettings(
            GpuBackends.Mode.SIMULATED,
            Duration.ofMillis(50),
            new IdleSettings(Optional.of(Duration.ofMinutes(10)), Duration.ofSeconds(60)),
            true,
            Optional.of(MPS));
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10), gpu),
                clock));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static PodView awaitPod(String name, String what, Predicate<PodView> condition) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    PodView last = null;
    while (System.nanoTime() < deadline) {
      last = await(service.pod("default", name));
      if (condition.test(last)) {
        return last;
      }
      Thread.sleep(20);
    }
    fail("pod " + name + ": not within 20 s: " + what + "; last " + last);
    return null;
  }

  static boolean hasEvent(PodView p, String reason) {
    return p.events().stream().anyMatch(e -> e.reason().equals(reason));
  }

  static long countEvents(PodView p, String reason) {
    return p.events().stream().filter(e -> e.reason().equals(reason)).count();
  }

  static PodView running(String node, String name, int limit) throws Exception {
    await(service.createPod(GpuShareServiceTest.pod(node, name, limit, limit)));
    PodView p = await(service.demand("default", name));
    assertEquals(PodState.RUNNING, p.state(), () -> name + " runs");
    return p;
  }

  static void script(String node, int gpu, GpuProcess... processes) throws Exception {
    await(service.scriptGpu(node, gpu, List.of(processes)));
  }

  @Test
  void aRunningPodShowsItsUseRelativeToItsLimitAndWhatItsWorkloadExports() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("t-use", 2, null)));
    PodView a = running("t-use", "use-a", 50);
    assertNotNull(a.workload(), "a Running share-pool pod has its workload's environment");
    String uuid = a.gpu().uuid();
    assertEquals(
        Map.of(
            "CUDA_VISIBLE_DEVICES", uuid,
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", uuid + "=40779M",
            "CUDA_MPS_PIPE_DIRECTORY", MPS + "/" + uuid + "/pipe",
            "CUDA_MPS_LOG_DIRECTORY", MPS + "/" + uuid + "/log"),
        a.workload().env());

    script(
        "t-use",
        a.gpu().index(),
        new GpuProcess(101, a.uid(), 6000, OptionalInt.of(15)),
        new GpuProcess(102, a.uid(), 4000, OptionalInt.of(5)),
        new GpuProcess(900, "someone-else", 1000, OptionalInt.of(30)));
    PodView used =
        awaitPod("use-a", "usage sampled", p -> p.usage() != null && p.usage().processes() == 2);
    assertEquals(10000, used.usage().memoryUsedMiB());
    assertEquals(40779, used.usage().memoryLimitMiB());
    assertEquals(20, used.usage().absoluteUtilization());
    assertEquals(40, used.usage().relativeUtilization(), "denominator = the core limit (SPEC §7)");
    assertEquals(PodState.RUNNING, used.state());
    // the host PIDs the pod's compute limiter matches NVML's samples against: its own only
    Views.PodProcessesView procs = await(service.processes("default", "use-a"));
    assertEquals(List.of(101L, 102L), procs.hostPids());
    assertEquals(20, procs.smPercent());
    assertEquals(a.gpu(), procs.gpu());

    PodView asleep = await(service.release("default", "use-a"));
    assertEquals(PodState.HIBERNATION, asleep.state());
    assertNull(asleep.workload(), "no GPU, nothing to export");
    assertNull(asleep.usage());
    Views.PodProcessesView none = await(service.processes("default", "use-a"));
    assertEquals(List.of(), none.hostPids(), "no GPU, no processes on it");
    assertNull(none.gpu());
    assertThrows(
        ExecutionException.class,
        () -> await(service.processes("default", "no-such-pod")),
        "NOT_FOUND for an unknown pod");
  }

  @Test
  void memoryOverTheLimitRevokesTheShareWithAWarningEvent() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("t-mem", 1, null)));
    PodView m = running("t-mem", "mem-a", 50);
    script("t-mem", 0, new GpuProcess(201, m.uid(), 40779, OptionalInt.of(40)));
    awaitPod(
        "mem-a",
        "usage at the limit sampled",
        p -> p.usage() != null && p.usage().memoryUsedMiB() == 40779);
    script("t-mem", 0, new GpuProcess(201, m.uid(), 40780, OptionalInt.of(40)));
    // The decision is durable first; the pod's record gets its Event right after (off the path).
    PodView revoked =
        awaitPod(
            "mem-a",
            "revoked, with its Event",
            p -> p.state() == PodState.HIBERNATION && hasEvent(p, PodNotes.MEMORY_EXCEEDED));
    EventView e =
        revoked.events().stream()
            .filter(x -> x.reason().equals(PodNotes.MEMORY_EXCEEDED))
            .findFirst()
            .orElseThrow();
    assertEquals("Warning", e.type());
    assertEquals(
        "GPU memory used 40780 MiB exceeds the pod's limit of 40779 MiB (50 % of 81559 MiB);"
            + " the share is revoked.",
        e.message());
    assertEquals(0, await(service.node("t-mem")).gpus().get(0).inUse().core(), "share freed");
    // The pod may demand again: it gets the GPU back (and is judged afresh).
    script("t-mem", 0);
    assertEquals(PodState.RUNNING, await(service.demand("default", "mem-a")).state());
  }

  @Test
  void anIdlePodIsAskedToHibernateAndReleasedAfterTheGraceUnlessItWorks() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("t-idle", 2, null)));
    PodView lazy = running("t-idle", "idle-lazy", 50);
    PodView busy = running("t-idle", "idle-busy", 50);
    script("t-idle", busy.gpu().index(), new GpuProcess(301, busy.uid(), 100, OptionalInt.of(25)));
    awaitPod("idle-busy", "working", p -> p.usage() != null && p.usage().processes() == 1);

    await(service.advance(Duration.ofMinutes(10)));
    PodView asked = awaitPod("idle-lazy", "asked to hibernate", p -> hasEvent(p, PodNotes.IDLE));
    assertEquals(PodState.RUNNING, asked.state(), "asked, not yet released");
    assertTrue(
        asked.events().stream()
            .anyMatch(
                x ->
                    x.reason().equals(PodNotes.IDLE)
                        && x.type().equals("Normal")
                        && x.message()
                            .endsWith("it is released in 60 s unless the pod uses the GPU.")));

    await(service.advance(Duration.ofSeconds(60)));
    PodView released =
        awaitPod(
            "idle-lazy",
            "released, with its Event",
            p -> p.state() == PodState.HIBERNATION && hasEvent(p, PodNotes.IDLE_RELEASED));
    assertTrue(hasEvent(released, PodNotes.IDLE_RELEASED), () -> "event: " + released.events());
    PodView stillBusy = await(service.pod("default", "idle-busy"));
    assertEquals(PodState.RUNNING, stillBusy.state(), "a working pod is never released");
    assertEquals(0, countEvents(stillBusy, PodNotes.IDLE));

    // The busy pod stops working: its idle time starts now, not at its grant.
    script("t-idle", busy.gpu().index());
    awaitPod("idle-busy", "idle sampled", p -> p.usage() != null && p.usage().processes() == 0);
    await(service.advance(Duration.ofMinutes(9)));
    await(service.advance(Duration.ofMinutes(1)));
    awaitPod("idle-busy", "asked after 10 idle minutes", p -> hasEvent(p, PodNotes.IDLE));
    // It works again within the grace: not released, and a later idle stretch counts anew.
    script("t-idle", busy.gpu().index(), new GpuProcess(302, busy.uid(), 100, OptionalInt.of(10)));
    awaitPod("idle-busy", "working again", p -> p.usage() != null && p.usage().processes() == 1);
    await(service.advance(Duration.ofSeconds(120)));
    script("t-idle", busy.gpu().index());
    awaitPod("idle-busy", "idle again", p -> p.usage() != null && p.usage().processes() == 0);
    await(service.advance(Duration.ofMinutes(10)));
    PodView again =
        awaitPod("idle-busy", "asked a second time", p -> countEvents(p, PodNotes.IDLE) == 2);
    assertEquals(
        PodState.RUNNING, again.state(), "never released while it worked within the grace");
  }

  /**
   * The series of gpushare_pod_ungranted_gpu_processes on this member: "namespace/pod@node/gpu" →
   * value.
   */
  static Map<String, Double> ungrantedSeries(GpuShareService service) {
    Map<String, Double> out = new java.util.TreeMap<>();
    for (MetricSnapshot m : service.metrics().registry().scrape()) {
      if (m.getMetadata().getName().equals("gpushare_pod_ungranted_gpu_processes")) {
        for (var d : ((GaugeSnapshot) m).getDataPoints()) {
          var l = d.getLabels();
          out.put(
              l.get("namespace") + "/" + l.get("pod") + "@" + l.get("node") + "/" + l.get("gpu"),
              d.getValue());
        }
      }
    }
    return out;
  }

  /**
   * One more telemetry round of {@code node} after this call: {@code pod}'s own process on its GPU
   * is scripted anew with {@code memoryMiB}, and its view shows it.
   */
  static void round(String node, PodView pod, long pid, long memoryMiB) throws Exception {
    script(node, pod.gpu().index(), new GpuProcess(pid, pod.uid(), memoryMiB, OptionalInt.of(5)));
    awaitPod(
        pod.name(),
        "a round with " + memoryMiB + " MiB",
        p -> p.usage() != null && p.usage().memoryUsedMiB() == memoryMiB);
  }

  @Test
  void aPodsProcessOnAGpuItDoesNotHoldIsToldOnceWithAWarningEventAndTheMetric() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("t-ungr", 2, null)));
    PodView a = running("t-ungr", "ungr-a", 50);
    PodView b = await(service.createPod(GpuShareServiceTest.pod("t-ungr", "ungr-b", 50, 50)));
    assertEquals(PodState.HIBERNATION, b.state());
    int other = 1 - a.gpu().index();
    // a static binary of each pod on the GPU neither holds: no grant, so LD_PRELOAD never ran
    script(
        "t-ungr",
        other,
        new GpuProcess(401, a.uid(), 500, OptionalInt.of(10)),
        new GpuProcess(402, b.uid(), 700, OptionalInt.of(10)),
        new GpuProcess(403, b.uid(), 100, OptionalInt.of(0)));
    round("t-ungr", a, 400, 101); // seen in this round,
    round("t-ungr", a, 400, 102); // and this one's sighting is recorded: less than 90 s so far
    assertTrue(
        !hasEvent(await(service.pod("default", "ungr-b")), PodNotes.UNGRANTED_USE),
        "a stop sequence may still be under way: not yet told");
    assertTrue(ungrantedSeries(service).isEmpty(), ungrantedSeries(service)::toString);

    await(service.advance(Duration.ofSeconds(90)));
    PodView told =
        awaitPod("ungr-b", "told of its ungranted use", p -> hasEvent(p, PodNotes.UNGRANTED_USE));
    EventView e =
        told.events().stream()
            .filter(x -> x.reason().equals(PodNotes.UNGRANTED_USE))
            .findFirst()
            .orElseThrow();
    assertEquals("Warning", e.type());
    String uuid = await(service.node("t-ungr")).gpus().get(other).uuid();
    assertEquals(
        "processes 402, 403 use GPU "
            + other
            + " ("
            + uuid
            + ") without a grant (the pod holds no GPU): run the workload through"
            + " libgpushare.so (LD_PRELOAD; a static or musl binary ignores it) or `gpushare run`,"
            + " so that it uses a GPU only while granted.",
        e.message());
    PodView aTold = awaitPod("ungr-a", "told too", p -> hasEvent(p, PodNotes.UNGRANTED_USE));
    assertTrue(
        aTold.events().stream()
            .anyMatch(
                x ->
                    x.message()
                        .startsWith(
                            "process 401 use GPU "
                                + other
                                + " ("
                                + uuid
                                + ") without a grant (the pod holds GPU "
                                + a.gpu().index()
                                + ")")),
        aTold.events()::toString);
    assertEquals(PodState.RUNNING, aTold.state(), "reported, nothing else done");
    assertEquals(
        Map.of(
            "default/ungr-a@t-ungr/" + other, 1.0,
            "default/ungr-b@t-ungr/" + other, 2.0),
        ungrantedSeries(service));

    // once per episode: more rounds, no second Event
    round("t-ungr", a, 400, 103);
    round("t-ungr", a, 400, 104);
    assertEquals(1, countEvents(await(service.pod("default", "ungr-b")), PodNotes.UNGRANTED_USE));
    assertTrue(
        await(service.pod("default", "ungr-b")).events().stream()
            .noneMatch(x -> x.reason().equals(PodNotes.UNGRANTED_KILLED)),
        "report only: nothing killed");

    // the episode ends: the series go, a later use is a new episode, told again after 90 s
    script("t-ungr", other);
    round("t-ungr", a, 400, 105);
    assertTrue(ungrantedSeries(service).isEmpty(), ungrantedSeries(service)::toString);
    script("t-ungr", other, new GpuProcess(404, b.uid(), 100, OptionalInt.of(0)));
    round("t-ungr", a, 400, 106);
    round("t-ungr", a, 400, 107);
    await(service.advance(Duration.ofSeconds(90)));
    awaitPod("ungr-b", "told again", p -> countEvents(p, PodNotes.UNGRANTED_USE) == 2);
    script("t-ungr", other);
    await(service.release("default", "ungr-a"));
  }

  @Test
  void scriptingRefusesWhatIsNotThereWithTheFieldNamed() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("t-bad", 1, null)));
    ExecutionException noGpu =
        assertThrows(
            ExecutionException.class, () -> await(service.scriptGpu("t-bad", 3, List.of())));
    ServiceException e = (ServiceException) noGpu.getCause();
    assertEquals(ServiceException.Kind.NOT_FOUND, e.kind());
    assertTrue(e.getMessage().contains("has no GPU 3"), e.getMessage());
    ExecutionException bad =
        assertThrows(
            ExecutionException.class,
            () ->
                await(
                    service.scriptGpu(
                        "t-bad", 0, List.of(new GpuProcess(0, " ", -1, OptionalInt.of(101))))));
    ServiceException invalid = (ServiceException) bad.getCause();
    assertEquals(ServiceException.Kind.INVALID, invalid.kind());
    assertEquals(
        List.of(
            "processes[0].pid",
            "processes[0].podUid",
            "processes[0].usedMemoryMiB",
            "processes[0].smUtilizationPercent"),
        invalid.errors().stream().map(f -> f.field()).toList());
  }
}
