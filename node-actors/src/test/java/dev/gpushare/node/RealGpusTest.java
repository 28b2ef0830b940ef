package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.gpu.GpuHealth;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A member that runs on a node with a real backend (a stand-in for NVML here, same interface): the
 * node's GPUs are the hardware's (real index and UUID, not the ones derived from its capacity, even
 * when the manifest is registered again), the driver's health reaches the node, and processes are
 * attributed to pods through the backend.
 */
class RealGpusTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static final FakeHardware hardware = new FakeHardware();

  /** Two GPUs whose indices are 0 and 1 but whose UUIDs are the hardware's. */
  static final class FakeHardware implements GpuBackend {
    final ConcurrentHashMap<Integer, String> unhealthy = new ConcurrentHashMap<>();
    volatile List<GpuProcessSample> onGpu0 = List.of();
    final ConcurrentHashMap<Long, String> podOfPid = new ConcurrentHashMap<>();

    @Override
    public String name() {
      return "nvml";
    }

    @Override
    public List<GpuDevice> devices() {
      return List.of(
          new GpuDevice(0, "GPU-aaaaaaaa-1111-2222-3333-444444444444", "NVIDIA H200", 143771),
          new GpuDevice(1, "GPU-bbbbbbbb-1111-2222-3333-444444444444", "NVIDIA H200", 143771));
    }

    @Override
    public boolean healthy(String uuid) {
      return true;
    }

    @Override
    public List<GpuSample> sample() {
      List<GpuSample> out = new ArrayList<>();
      for (GpuDevice d : devices()) {
        String why = unhealthy.get(d.index());
        out.add(
            new GpuSample(
                d.index(),
                d.uuid(),
                0,
                d.memoryMiB(),
                OptionalInt.of(0),
                d.index() == 0 ? onGpu0 : List.of(),
                why == null ? GpuHealth.HEALTHY : GpuHealth.unhealthy(why),
                Optional.of(false)));
      }
      return out;
    }

    @Override
    public Optional<String> podUidOf(long pid) {
      return Optional.ofNullable(podOfPid.get(pid));
    }
  }

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "real-gpus-test",
            ConfigFactory.parseString("pekko.cluster.roles = [\"node:hw\"]")
                .withFallback(TestSystems.config(snapshots)));
    GpuSettings gpu =
        new GpuSettings(
            GpuBackends.Mode.NVML, Duration.ofMillis(50), IdleSettings.OFF, true, Optional.empty());
    service =
        GpuShareServiceTest.await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10), gpu),
                new ManualClock(Instant.parse("2026-01-01T00:00:00Z")),
                Optional.of(hardware)));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static NodeView awaitNode(String what, Predicate<NodeView> condition) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    NodeView last = null;
    while (System.nanoTime() < deadline) {
      last = await(service.node("hw"));
      if (condition.test(last)) {
        return last;
      }
      Thread.sleep(20);
    }
    fail("node hw: not within 20 s: " + what + "; last " + last);
    return null;
  }

  @Test
  void theNodesGpusAreTheHardwaresWithTheirHealthAndTheirProcessesPods() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("hw", 2, null)));
    List<String> real = hardware.devices().stream().map(GpuDevice::uuid).toList();
    NodeView adopted =
        awaitNode(
            "the hardware's UUIDs",
            n -> n.gpus().stream().map(g -> g.uuid()).toList().equals(real));
    assertEquals("NVIDIA H200", adopted.gpus().get(0).model());
    assertEquals(143771, adopted.gpus().get(1).memoryMiB());

    // The manifest registered again (as the Kubernetes sync does): the real devices stay.
    await(service.putNode(GpuShareServiceTest.node("hw", 2, null)));
    assertEquals(real, await(service.node("hw")).gpus().stream().map(g -> g.uuid()).toList());

    // A pod granted a share is reported with the real index and UUID; its processes are its.
    await(service.createPod(GpuShareServiceTest.pod("hw", "hw-a", 50, 50)));
    PodView a = await(service.demand("default", "hw-a"));
    assertEquals(real.get(a.gpu().index()), a.gpu().uuid());
    hardware.podOfPid.put(77L, a.uid());
    hardware.onGpu0 = List.of(new GpuProcessSample(77, 2048, OptionalInt.of(12)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    PodView used = a;
    while (System.nanoTime() < deadline
        && (used.usage() == null || used.usage().processes() != 1)) {
      Thread.sleep(20);
      used = await(service.pod("default", "hw-a"));
    }
    assertEquals(2048, used.usage().memoryUsedMiB(), () -> "usage of hw-a: " + a);
    assertEquals(24, used.usage().relativeUtilization());

    // The driver says GPU 1 is lost: the node stops counting it, and counts it again after.
    hardware.unhealthy.put(1, "GPU is lost (NVML_ERROR_GPU_IS_LOST)");
    // The GPU's health and the node's capacity are updated one after the other: wait for both.
    awaitNode(
        "GPU 1 unhealthy and out of the capacity",
        n ->
            n.gpus().get(1).health() == Health.UNHEALTHY
                && "100".equals(n.status().capacity().get("alibabacloud.com/gpu-core.percentage")));
    hardware.unhealthy.remove(1);
    awaitNode("GPU 1 healthy again", n -> n.gpus().get(1).health() != Health.UNHEALTHY);
  }
}
