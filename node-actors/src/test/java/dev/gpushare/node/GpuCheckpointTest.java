package dev.gpushare.node;

import static dev.gpushare.node.GpuTelemetryTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code gpushare.dev/preemption: checkpoint} over the real runtime with the simulated backend and
 * its checkpoint driver: the member follows the arbiter's book, checkpoints a preempted pod's
 * processes (their memory leaves the GPU), the pod is Ready with its state held, and on its next
 * grant on the same GPU the member restores them; the bound on host memory falls back to the signal
 * contract. Sampling runs every 50 ms of real time; every wait is bounded.
 */
class GpuCheckpointTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  static final String QOS = "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":60}";

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("checkpoint-test", TestSystems.config(snapshots));
    GpuSettings gpu =
        new GpuSettings(
            GpuBackends.Mode.SIMULATED,
            Duration.ofMillis(50),
            IdleSettings.OFF,
            true,
            Optional.empty(),
            new GpuSettings.Checkpoints(true, 8L << 30, Duration.ofSeconds(10)));
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

  static PodManifest checkpointPod(String node, String name, int limit) {
    PodManifest p = GpuShareServiceTest.pod(node, name, 10, limit);
    Map<String, String> annotations = new HashMap<>(p.annotations());
    annotations.put("gpushare.dev/preemption", "checkpoint");
    return new PodManifest(
        p.namespace(), p.name(), p.uid(), p.nodeName(), p.labels(), annotations, p.containers());
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

  @Test
  void aPreemptedPodIsCheckpointedQueuedAndRestoredOnItsGpuWithoutASignal() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("ck", 2, QOS)));
    await(service.createPod(checkpointPod("ck", "old", 100)));
    await(service.createPod(GpuShareServiceTest.pod("ck", "other", 10, 100)));
    await(service.createPod(GpuShareServiceTest.pod("ck", "new", 10, 100)));
    PodView old = await(service.demand("default", "old"));
    assertEquals(0, old.gpu().index());
    await(
        service.scriptGpu(
            "ck", 0, List.of(new GpuProcess(4242, old.uid(), 2048, OptionalInt.of(50)))));
    await(service.advance(Duration.ofMinutes(1)));
    assertEquals(PodState.RUNNING, await(service.demand("default", "other")).state());
    assertEquals(PodState.READY, await(service.demand("default", "new")).state());
    await(service.advance(Duration.ofMinutes(60)));

    PodView held =
        awaitPod(
            "old",
            "checkpointed and queued",
            p -> p.checkpoint() != null && p.checkpoint().phase().equals("held"));
    assertEquals(PodState.READY, held.state());
    assertEquals(0, held.checkpoint().gpu());
    assertEquals(2048L << 20, held.checkpoint().bytes());
    assertTrue(
        held.events().stream().anyMatch(e -> e.reason().equals("GPUShareCheckpointed")),
        held.events().toString());
    assertTrue(held.events().stream().anyMatch(e -> e.reason().equals("GPUSharePreempted")));
    assertEquals(PodState.RUNNING, await(service.pod("default", "new")).state());
    assertEquals(0, await(service.pod("default", "new")).gpu().index());

    await(service.release("default", "other")); // GPU 1 frees: old's state is on GPU 0
    assertEquals(PodState.READY, await(service.pod("default", "old")).state());
    await(service.release("default", "new"));
    PodView back =
        awaitPod(
            "old",
            "restored and sampled",
            p ->
                p.state() == PodState.RUNNING
                    && p.checkpoint() == null
                    && p.usage() != null
                    && p.usage().processes() == 1);
    assertEquals(0, back.gpu().index());
    assertEquals(2048, back.usage().memoryUsedMiB(), "the same process, back on GPU 0");
    assertTrue(
        back.conditions().stream().anyMatch(c -> c.reason().equals("GPUShareRestored")),
        back.conditions().toString());
  }

  @Test
  void aCheckpointBeyondTheHostMemoryBoundFallsBackToTheSignalContract() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("big", 1, QOS)));
    await(service.createPod(checkpointPod("big", "huge", 100)));
    await(service.createPod(GpuShareServiceTest.pod("big", "next", 10, 100)));
    PodView huge = await(service.demand("default", "huge"));
    await(
        service.scriptGpu(
            "big", 0, List.of(new GpuProcess(5151, huge.uid(), 9 * 1024, OptionalInt.of(10)))));
    await(service.demand("default", "next"));
    await(service.advance(Duration.ofMinutes(61)));
    PodView failed =
        awaitPod(
            "huge",
            "refused",
            p -> p.events().stream().anyMatch(e -> e.reason().equals("GPUShareCheckpointFailed")));
    assertEquals(PodState.READY, failed.state());
    assertNull(failed.checkpoint());
    assertTrue(
        failed.events().stream()
            .anyMatch(
                e ->
                    e.message()
                        .contains("above gpushare.gpu.checkpoint-host-memory-limit (8192 MiB)")),
        failed.events().toString());
    assertEquals(PodState.RUNNING, await(service.pod("default", "next")).state());
  }
}
