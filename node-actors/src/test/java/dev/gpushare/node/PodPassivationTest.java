package dev.gpushare.node;

import static dev.gpushare.node.GpuShareServiceTest.await;
import static dev.gpushare.node.GpuShareServiceTest.node;
import static dev.gpushare.node.GpuShareServiceTest.pod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.sharding.ShardRegion.CurrentShardRegionState;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Idle pods cost no actors ({@code gpushare.passivate-idle-pods-after}): a pod's actor and its
 * name's index entry stop when nobody has asked about the pod for that long, the node's arbiter,
 * node and GPU actors stay, and the next request recovers the pod with everything it had.
 */
class PodPassivationTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "passivation-test",
            TestSystems.config(snapshots, "gpushare.passivate-idle-pods-after = 300ms"));
    service = TestSystems.startRuntime(kit, clock);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void anIdlePodStopsAndComesBackWithItsHistory() throws Exception {
    await(service.putNode(node("pz", 1, null)));
    await(service.createPod(pod("pz", "a", 50, 60)));
    await(service.createPod(pod("pz", "b", 50, 60)));
    assertEquals(PodState.RUNNING, await(service.demand("default", "a")).state());
    assertEquals(PodState.READY, await(service.demand("default", "b")).state());
    clock.advance(Duration.ofSeconds(7));
    assertEquals(PodState.HIBERNATION, await(service.release("default", "a")).state());
    PodView before = await(service.pod("default", "b"));
    assertEquals(PodState.RUNNING, before.state(), "b got the GPU that a released");

    awaitGone(Entities.POD, "pz:default/a/");
    awaitGone(Entities.POD, "pz:default/b/");
    awaitGone(Entities.POD_INDEX, "default/a");
    assertTrue(live(Entities.ARBITER).contains("pz"), "the node's arbiter stays");
    assertTrue(live(Entities.NODE).contains("pz"), "the node's actor stays");
    assertFalse(live(Entities.GPU).isEmpty(), "the GPU actors stay");

    PodView after = await(service.pod("default", "b"));
    assertEquals(before, after, "recovered from the journal with everything it had");
    PodView a = await(service.demand("default", "a"));
    assertEquals(PodState.READY, a.state(), "a recovered pod is decided for as before");
    assertEquals(1, a.queuePosition());
    assertEquals(PodState.HIBERNATION, await(service.release("default", "b")).state());
    PodView granted = await(service.pod("default", "a"));
    assertEquals(PodState.RUNNING, granted.state());
    assertEquals(0, granted.gpu().index());
  }

  private static void awaitGone(EntityTypeKey<?> type, String idPrefix) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    Set<String> ids = live(type);
    while (ids.stream().anyMatch(id -> id.startsWith(idPrefix))) {
      assertTrue(System.nanoTime() < deadline, () -> type.name() + " " + idPrefix + " still alive");
      Thread.sleep(100);
      ids = live(type);
    }
  }

  private static Set<String> live(EntityTypeKey<?> type) {
    TestProbe<CurrentShardRegionState> probe = kit.createTestProbe();
    ClusterSharding.get(kit.system())
        .shardState()
        .tell(new GetShardRegionState(type, probe.getRef()));
    return probe.receiveMessage(Duration.ofSeconds(10)).getShards().stream()
        .flatMap(s -> s.getEntityIds().stream())
        .collect(Collectors.toSet());
  }
}
