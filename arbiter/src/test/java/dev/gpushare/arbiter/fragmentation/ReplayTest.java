package dev.gpushare.arbiter.fragmentation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.fragmentation.Replay.Arrival;
import dev.gpushare.arbiter.fragmentation.Replay.TracePod;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The protocol of the paper's replay on clusters of a few GPUs. */
class ReplayTest {

  private static List<NodeState> gpus(int nodes, int gpusEach) {
    List<NodeState> list = new ArrayList<>();
    for (int i = 0; i < nodes; i++) {
      list.add(new NodeState("node-" + i, 64_000, 256_000, "T4", gpusEach));
    }
    return list;
  }

  private static TracePod pod(String name, long created, int numGpu, int gpuMilli) {
    return new TracePod(name, PodSpec.of(1000, 1000, numGpu, gpuMilli), created);
  }

  private static List<Arrival> arrivals(
      List<NodeState> nodes, List<TracePod> pods, Policies policy, long seed, Replay.Order order) {
    List<Arrival> seen = new ArrayList<>();
    Replay.run(nodes, pods, policy.factory(), seed, order, seen::add);
    return seen;
  }

  @Test
  void the_trace_arrives_in_creation_order_and_a_pod_that_fits_nowhere_is_skipped() {
    // Two GPUs (2000 thousandths, the stop at 2600). By creation time: b (600), a (whole GPU),
    // c (whole GPU: 600 + 1000 + 1000 = 2600 arrive, but only 400 is left: it fails), d (no GPU).
    List<TracePod> pods =
        List.of(
            pod("a", 20, 1, 1000), pod("b", 10, 1, 600), pod("c", 30, 1, 1000), pod("d", 40, 0, 0));
    for (Policies policy : Policies.values()) {
      List<Arrival> seen = arrivals(gpus(2, 1), pods, policy, 7, Replay.Order.CREATION_TIME);
      assertEquals(
          List.of("b", "a", "c", "d"),
          seen.subList(0, 4).stream().map(x -> x.pod().name()).toList());
      assertTrue(seen.get(2).assignment().isEmpty(), "c fits nowhere");
      assertEquals(2600, seen.get(2).arrivedMilli(), "a failed pod's demand has arrived");
      assertEquals(1600, seen.get(3).allocatedMilli());
      // The arrived demand is at 130 %: every pod drawn after asks for no GPU (any other would
      // pass 130 % and ends the replay).
      for (Arrival drawn : seen.subList(4, seen.size())) {
        assertTrue(drawn.drawn());
        assertEquals("d", drawn.pod().name());
      }
    }
  }

  @Test
  void draws_continue_until_the_next_pod_would_pass_130_percent() {
    // One node of 4 GPUs (4000, the stop at 5200) and one pod of 500: 10 arrive (5000), the 11th
    // would make 5500. 8 fit, the 9th and 10th fail.
    List<TracePod> pods = List.of(pod("half", 0, 1, 500));
    Replay.Result result = Replay.run(gpus(1, 4), pods, Policies.FGD.factory(), 3);
    assertEquals(10, result.arrived());
    assertEquals(1, result.fromTrace());
    assertEquals(9, result.drawn());
    assertEquals(2, result.failed());
    assertEquals(5000, result.arrivedMilli());
    assertEquals(125.0, result.arrivedPercent(), 1e-9);
    assertEquals(100.0, result.allocationPercent(), 1e-9);
    assertEquals(0.0, result.unallocatedGpus(), 1e-9);
    // Arrived after each pod: 12.5, 25, …, 100 (8th), 112.5, 125 %.
    // At 90: no arrival within [89.5, 90.5): the allocation after the last one below 90.5 (87.5).
    // At 100: the 8th arrival is at 100: 100. At 110 and 130: none within, the last below: 100.
    assertEquals(87.5, result.allocationPercentAt(90), 1e-9);
    assertEquals(100.0, result.allocationPercentAt(100), 1e-9);
    assertEquals(100.0, result.allocationPercentAt(110), 1e-9);
    assertEquals(100.0, result.allocationPercentAt(130), 1e-9);
  }

  @Test
  void failed_pods_are_counted_by_gpu_count_when_the_arrived_demand_reaches_90_and_100_percent() {
    // 8 GPUs (8000). By creation time: a (4 GPUs, 50 %) fills node-0; b (CPU only, more CPU than
    // a node) fails; c (half a GPU, 56.25 %), d (2 GPUs, 81.25 %) and e (1 GPU, 93.75 %: the first
    // arrival at 90 % or more) fill node-1 but half a GPU; f (1 GPU, 106.25 %: the first at 100 %
    // or more) fails.
    List<TracePod> pods =
        List.of(
            pod("a", 1, 4, 1000),
            new TracePod("b", PodSpec.of(100_000, 1000, 0, 0), 2),
            pod("c", 3, 1, 500),
            pod("d", 4, 2, 1000),
            pod("e", 5, 1, 1000),
            pod("f", 6, 1, 1000));
    for (Policies policy : Policies.values()) {
      Replay.Result result = Replay.run(gpus(2, 4), pods, policy.factory(), 5);
      for (Replay.GpuBucket bucket : Replay.GpuBucket.values()) {
        assertEquals(
            bucket == Replay.GpuBucket.CPU_ONLY ? 1 : 0,
            result.failedAt(90, bucket),
            policy + " at 90: " + bucket);
        int at100 = bucket == Replay.GpuBucket.CPU_ONLY || bucket == Replay.GpuBucket.ONE ? 1 : 0;
        assertEquals(at100, result.failedAt(100, bucket), policy + " at 100: " + bucket);
      }
      assertTrue(result.failed() >= 2);
    }
  }

  @Test
  void pods_fall_in_buckets_by_gpu_count() {
    assertEquals(Replay.GpuBucket.CPU_ONLY, Replay.GpuBucket.of(PodSpec.of(1, 1, 0, 0)));
    assertEquals(Replay.GpuBucket.FRACTIONAL, Replay.GpuBucket.of(PodSpec.of(1, 1, 1, 999)));
    assertEquals(Replay.GpuBucket.ONE, Replay.GpuBucket.of(PodSpec.of(1, 1, 1, 1000)));
    assertEquals(Replay.GpuBucket.TWO, Replay.GpuBucket.of(PodSpec.of(1, 1, 2, 1000)));
    assertEquals(Replay.GpuBucket.FOUR, Replay.GpuBucket.of(PodSpec.of(1, 1, 4, 1000)));
    assertEquals(Replay.GpuBucket.EIGHT, Replay.GpuBucket.of(PodSpec.of(1, 1, 8, 1000)));
    for (int n : new int[] {3, 5, 6, 7}) {
      assertEquals(Replay.GpuBucket.OTHER, Replay.GpuBucket.of(PodSpec.of(1, 1, n, 1000)));
    }
  }

  @Test
  void the_allocation_at_a_checkpoint_is_the_mean_over_the_arrivals_that_round_to_it() {
    // 10 GPUs, pods of 10 thousandths: 0.1 % each. The arrivals landing in [89.5, 90.5) % are the
    // 895th to the 904th, all placed: the mean allocation is 89.95 %.
    List<NodeState> nodes = gpus(10, 1);
    List<TracePod> pods = List.of(new TracePod("p", PodSpec.of(10, 0, 1, 10), 0));
    Replay.Result result = Replay.run(nodes, pods, Policies.BEST_FIT.factory(), 1);
    assertEquals(89.95, result.allocationPercentAt(90), 1e-9);
    assertEquals(1300, result.arrived());
    assertEquals(300, result.failed());
  }

  @Test
  void a_seed_gives_the_same_arrivals_and_placements_every_time_and_to_every_policy() {
    List<TracePod> pods = new ArrayList<>();
    int[] shares = {1000, 500, 250, 750, 1000, 300};
    for (int i = 0; i < shares.length; i++) {
      pods.add(pod("p" + i, i, 1, shares[i]));
    }
    pods.add(pod("two", 9, 2, 1000));
    List<NodeState> nodes = gpus(3, 2);
    for (Replay.Order order : Replay.Order.values()) {
      List<Arrival> first = arrivals(nodes, pods, Policies.FGD_CAPACITY, 5, order);
      List<Arrival> again = arrivals(nodes, pods, Policies.FGD_CAPACITY, 5, order);
      assertEquals(describe(first), describe(again));
      List<Arrival> other = arrivals(nodes, pods, Policies.BEST_FIT, 5, order);
      assertEquals(names(first), names(other), "the arrivals do not depend on the policy");
      assertNotEquals(names(first), names(arrivals(nodes, pods, Policies.FGD, 6, order)));
    }
  }

  @Test
  void shuffled_order_is_a_seeded_permutation_of_the_trace() {
    List<TracePod> pods = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      pods.add(pod(String.format("p%02d", i), i, 0, 0));
    }
    pods.add(pod("gpu", 99, 1, 1000)); // the stop needs demand
    List<Arrival> shuffled = arrivals(gpus(4, 2), pods, Policies.FGD, 1, Replay.Order.SHUFFLED);
    List<String> firstTwentyOne = names(shuffled).subList(0, 21);
    assertEquals(
        pods.stream().map(TracePod::name).sorted().toList(),
        firstTwentyOne.stream().sorted().toList());
    assertNotEquals(pods.stream().map(TracePod::name).toList(), firstTwentyOne);
    assertFalse(shuffled.get(0).drawn());
  }

  private static List<String> names(List<Arrival> arrivals) {
    return arrivals.stream().map(a -> a.pod().name()).toList();
  }

  private static List<String> describe(List<Arrival> arrivals) {
    return arrivals.stream()
        .map(a -> a.pod().name() + "@" + a.assignment().map(Assignment::toString).orElse("failed"))
        .toList();
  }
}
