package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The service over real sharded, persistent actors (in-memory journal). */
class GpuShareServiceTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("service-test", TestSystems.config(snapshots));
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
                clock));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
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

  @Test
  void reference_example() throws Exception {
    await(service.putNode(node("ref", 2, null)));
    await(service.createPod(pod("ref", "a", 50, 50)));
    await(service.createPod(pod("ref", "b", 50, 50)));
    await(service.createPod(pod("ref", "c", 50, 100)));
    PodView d = await(service.createPod(pod("ref", "d", 50, 100)));
    assertEquals(PodState.HIBERNATION, d.state());
    assertEquals(0, await(service.demand("default", "a")).gpu().index());
    assertEquals(1, await(service.demand("default", "c")).gpu().index());
    assertEquals(1, await(service.demand("default", "d")).queuePosition());
    PodView b = await(service.demand("default", "b"));
    assertEquals(PodState.READY, b.state());
    assertEquals(2, b.queuePosition());
    PodView c = await(service.release("default", "c"));
    assertEquals(PodState.HIBERNATION, c.state());
    assertEquals(1, await(service.pod("default", "d")).gpu().index());
    PodView b2 = await(service.pod("default", "b"));
    assertEquals(PodState.RUNNING, b2.state());
    assertEquals(0, b2.gpu().index());
    assertNull(b2.queuePosition());
    var view = await(service.node("ref"));
    assertEquals(100, view.gpus().get(0).inUse().core());
    assertEquals(List.of("default/a", "default/b"), view.gpus().get(0).pods());
    assertEquals(
        1,
        await(service.pods(Optional.of("ref"))).stream().filter(p -> p.name().equals("c")).count());
  }

  @Test
  void preemption_with_manual_clock() throws Exception {
    await(
        service.putNode(node("pre", 1, "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":60}")));
    await(service.createPod(pod("pre", "old", 10, 100)));
    await(service.createPod(pod("pre", "new", 10, 100)));
    assertEquals(PodState.RUNNING, await(service.demand("default", "old")).state());
    assertEquals(PodState.READY, await(service.demand("default", "new")).state());
    await(service.advance(Duration.ofMinutes(60)));
    assertEquals(PodState.RUNNING, await(service.pod("default", "old")).state());
    await(service.advance(Duration.ofSeconds(1)));
    PodView old = await(service.pod("default", "old"));
    PodView fresh = await(service.pod("default", "new"));
    assertEquals(PodState.READY, old.state());
    assertEquals(PodState.RUNNING, fresh.state());
    assertEquals("GPU is preempted by new.", old.events().get(0).message());
    assertEquals("GPUSharePreempted", old.events().get(0).reason());
    assertEquals("GPU is preempted from old.", fresh.events().get(0).message());
    assertTrue(
        old.conditions().stream().anyMatch(c -> c.type().equals("Interruption.GPUShareReclaim")));
  }

  @Test
  void an_unhealthy_gpu_takes_no_shares_and_its_return_grants_the_waiting_head() throws Exception {
    await(service.putNode(node("sick", 2, null)));
    var node = await(service.setGpuHealth("sick", 1, false));
    assertEquals("100", node.status().capacity().get("alibabacloud.com/gpu-core.percentage"));
    assertEquals(Health.UNHEALTHY, node.gpus().get(1).health());
    await(service.createPod(pod("sick", "s1", 10, 100)));
    await(service.createPod(pod("sick", "s2", 10, 100)));
    assertEquals(0, await(service.demand("default", "s1")).gpu().index());
    assertEquals(PodState.READY, await(service.demand("default", "s2")).state());
    node = await(service.setGpuHealth("sick", 1, true));
    assertEquals("200", node.status().capacity().get("alibabacloud.com/gpu-core.percentage"));
    PodView s2 = await(service.pod("default", "s2"));
    assertEquals(PodState.RUNNING, s2.state());
    assertEquals(1, s2.gpu().index());
  }

  @Test
  void a_gpu_count_in_any_whole_quantity_notation_registers_that_many_gpus() throws Exception {
    for (String count : List.of("2.0", "+2", "2e0")) {
      String name = "notation-" + (count.hashCode() & 0xffff);
      NodeManifest m =
          new NodeManifest(
              name,
              Map.of("alibabacloud.com/gpu-share-policy", "share-pool"),
              Map.of(),
              Map.of("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", count),
              Map.of());
      var node = await(service.putNode(m)).node();
      assertEquals(2, node.gpus().size(), count);
      assertEquals(
          "200", node.status().capacity().get("alibabacloud.com/gpu-core.percentage"), count);
    }
  }

  @Test
  void reserving_more_ephemeral_storage_than_the_node_has_is_an_invalid_qos_config()
      throws Exception {
    NodeManifest m =
        new NodeManifest(
            "small-disk",
            Map.of("alibabacloud.com/gpu-share-policy", "share-pool"),
            Map.of(
                "alibabacloud.com/gpu-share-qos-config",
                "{\"reservedEphemeralStorage\": \"100Ti\"}"),
            Map.of(
                "cpu", "32", "memory", "256Gi", "ephemeral-storage", "6Ti", "nvidia.com/gpu", "1"),
            Map.of());
    var node = await(service.putNode(m)).node();
    var valid =
        node.status().conditions().stream()
            .filter(c -> c.type().equals("GPUSharePolicyValid"))
            .findFirst()
            .orElseThrow();
    assertEquals("False", valid.status());
    assertEquals("InvalidQoSConfig", valid.reason());
    assertTrue(valid.message().contains("reservedEphemeralStorage is \"100Ti\""), valid.message());
    assertTrue(
        valid.message().contains("status.capacity[ephemeral-storage] = 6Ti"), valid.message());
    // the default config (nothing reserved) stays in force: allocatable is not driven to 0
    assertEquals("0", node.qos().reservedEphemeralStorage());
    assertEquals("6Ti", node.status().allocatable().get("ephemeral-storage"));

    // within capacity it is valid again, and withheld
    var fixed =
        await(
            service.patchNode(
                "small-disk",
                Map.of(),
                Map.of(
                    "alibabacloud.com/gpu-share-qos-config",
                    "{\"reservedEphemeralStorage\": \"1.5Ti\"}")));
    assertEquals("4608Gi", fixed.status().allocatable().get("ephemeral-storage"));
    assertEquals(
        "Valid",
        fixed.status().conditions().stream()
            .filter(c -> c.type().equals("GPUSharePolicyValid"))
            .findFirst()
            .orElseThrow()
            .reason());
  }

  /**
   * Found by the adversarial suite: {@code DELETE /v1/namespaces/a%7Cb/pods/p/demand} waited the
   * whole ask timeout and answered 503, because {@code |} is reserved in entity ids.
   */
  @Test
  void aNameNoPodCanHaveIsNotFoundAtOnce() throws Exception {
    for (String[] ref :
        List.of(
            new String[] {"a|b", "p"},
            new String[] {"default", "a|b"},
            new String[] {"default", "x".repeat(254)},
            new String[] {"x".repeat(64), "p"},
            new String[] {"UPPER", "p"})) {
      long start = System.nanoTime();
      for (CompletionStage<PodView> call :
          List.of(
              service.pod(ref[0], ref[1]),
              service.demand(ref[0], ref[1]),
              service.release(ref[0], ref[1]),
              service.deletePod(ref[0], ref[1]))) {
        ExecutionException e =
            assertThrows(
                ExecutionException.class,
                () -> call.toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertEquals(
            ServiceException.Kind.NOT_FOUND,
            ((ServiceException) e.getCause()).kind(),
            () -> String.join("/", ref));
      }
      assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), String.join("/", ref));
    }
  }
}
