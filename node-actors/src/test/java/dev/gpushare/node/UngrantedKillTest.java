package dev.gpushare.node;

import static dev.gpushare.node.GpuTelemetryTest.countEvents;
import static dev.gpushare.node.GpuTelemetryTest.hasEvent;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code gpushare.gpu.ungranted-processes = kill}: a pod's process on a GPU the pod does not hold,
 * seen for 90 s, is killed through the backend (the simulated one drops it from its script) with a
 * Warning Event saying so; the pod's own processes on its own GPU are left alone.
 */
class UngrantedKillTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("ungranted-kill-test", TestSystems.config(snapshots));
    GpuSettings gpu =
        new GpuSettings(
            GpuBackends.Mode.SIMULATED,
            Duration.ofMillis(50),
            IdleSettings.OFF,
            true,
            Optional.empty(),
            GpuSettings.Checkpoints.DEFAULT,
            GpuSettings.ComputeLimit.AUTO,
            UsageRules.UngrantedAction.KILL);
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

  /** One more telemetry round: {@code pod}'s own process scripted anew, and seen. */
  static void round(PodView pod, long memoryMiB) throws Exception {
    await(
        service.scriptGpu(
            "k",
            pod.gpu().index(),
            List.of(new GpuProcess(500, pod.uid(), memoryMiB, OptionalInt.of(5)))));
    awaitPod(
        pod.name(),
        "a round with " + memoryMiB + " MiB",
        p -> p.usage() != null && p.usage().memoryUsedMiB() == memoryMiB);
  }

  @Test
  void anUngrantedProcessIsKilledWithAnEventAndTheGrantedOnesAreLeftAlone() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("k", 2, null)));
    await(service.createPod(GpuShareServiceTest.pod("k", "k-run", 50, 50)));
    PodView run = await(service.demand("default", "k-run"));
    assertEquals(PodState.RUNNING, run.state());
    PodView idle = await(service.createPod(GpuShareServiceTest.pod("k", "k-static", 50, 50)));
    int other = 1 - run.gpu().index();
    await(
        service.scriptGpu(
            "k", other, List.of(new GpuProcess(501, idle.uid(), 300, OptionalInt.of(20)))));
    round(run, 101);
    round(run, 102);
    await(service.advance(Duration.ofSeconds(90)));
    PodView killed =
        awaitPod("k-static", "killed, with its Event", p -> hasEvent(p, PodNotes.UNGRANTED_KILLED));
    EventView e =
        killed.events().stream()
            .filter(x -> x.reason().equals(PodNotes.UNGRANTED_KILLED))
            .findFirst()
            .orElseThrow();
    assertEquals("Warning", e.type());
    assertTrue(
        e.message()
            .startsWith(
                "process 501 used GPU "
                    + other
                    + " ("
                    + await(service.node("k")).gpus().get(other).uuid()
                    + ") without a grant (the pod holds no GPU) and was killed (SIGKILL): run the"
                    + " workload through libgpushare.so"),
        e.message());
    // gone from the GPU: later rounds find nothing to tell or kill
    round(run, 103);
    round(run, 104);
    assertEquals(
        1, countEvents(await(service.pod("default", "k-static")), PodNotes.UNGRANTED_KILLED));
    assertEquals(0, countEvents(await(service.pod("default", "k-static")), PodNotes.UNGRANTED_USE));
    assertEquals(0, countEvents(await(service.pod("default", "k-run")), PodNotes.UNGRANTED_KILLED));
    assertEquals(PodState.RUNNING, await(service.pod("default", "k-run")).state());
    assertTrue(GpuTelemetryTest.ungrantedSeries(service).isEmpty());
  }
}
