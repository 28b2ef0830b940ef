package dev.gpushare.node;

import static dev.gpushare.node.GpuShareServiceTest.await;
import static dev.gpushare.node.GpuShareServiceTest.node;
import static dev.gpushare.node.GpuShareServiceTest.pod;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.node.api.GpuShareService;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code gpushare.placement = least-fragmenting}: the arbiters pick a grant's GPU with the
 * fragmentation-aware measure, and the service says so (the scheduler extender scores with it).
 * GpuShareServiceTest runs the default, SPEC §5's best fit.
 */
class PlacementSettingTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "placement-test",
            TestSystems.config(snapshots, "gpushare.placement = least-fragmenting"));
    service = TestSystems.startRuntime(kit, clock);
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void aThirdSmallShareOpensTheEmptyGpuWhereBestFitWouldFillTheFirst() throws Exception {
    assertEquals(GpuChoice.LEAST_FRAGMENTING, service.gpuChoice());
    await(service.putNode(node("lf", 2, null)));
    for (String p : List.of("a", "b", "c")) {
      await(service.createPod(pod("lf", p, 10, 30)));
    }
    assertEquals(0, await(service.demand("default", "a")).gpu().index());
    assertEquals(0, await(service.demand("default", "b")).gpu().index(), "tightest on a tie");
    // Best fit would put c on GPU 0 (90 %), leaving 10 % no pod of the node can use; with the
    // node's 30 % pods as the mix, GPU 0 keeps 40 % for one more of them.
    assertEquals(1, await(service.demand("default", "c")).gpu().index());
  }
}
