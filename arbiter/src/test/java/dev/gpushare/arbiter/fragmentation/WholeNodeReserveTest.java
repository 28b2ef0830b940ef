package dev.gpushare.arbiter.fragmentation;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * {@link Policies#FGD_RESERVE} keeps the node that the trace's rare 8-GPU pods need whole while
 * such pods are still expected, and never fails a pod for it.
 */
class WholeNodeReserveTest {
  /** 2,000 CPU-only pods, 30 one-GPU pods and 10 eight-GPU pods of 120 cores. */
  private static final List<PodSpec> TRACE = trace(10);

  private static List<PodSpec> trace(int eightGpuPods) {
    List<PodSpec> pods = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      pods.add(PodSpec.of(4_000, 0, 0, 0));
    }
    for (int i = 0; i < 30; i++) {
      pods.add(PodSpec.of(4_000, 0, 1, 1000));
    }
    for (int i = 0; i < eightGpuPods; i++) {
      pods.add(PodSpec.of(120_000, 0, 8, 1000));
    }
    return pods;
  }

  /** An 8-GPU node of 128 cores, and a 2-GPU node of {@code smallCpu}. */
  private static List<NodeState> nodes(int smallCpu) {
    return List.of(
        new NodeState("eight", 128_000, 1_000_000, "G3", 8),
        new NodeState("two", smallCpu, 1_000_000, "T4", 2));
  }

  private static Optional<Assignment> choose(Policies policy, List<NodeState> nodes, PodSpec pod) {
    return policy.create(new Cluster(nodes), TRACE, 1).choose(pod);
  }

  @Test
  void everyMultiGpuCountOfTheTraceIsKeptFor() {
    Cluster cluster = new Cluster(nodes(128_000));
    assertArrayEquals(new int[] {8}, new WholeNodeReserve(cluster, TRACE, 13_000).counts());
    List<PodSpec> mixed = new ArrayList<>(TRACE);
    mixed.add(PodSpec.of(32_000, 0, 4, 1000));
    mixed.add(PodSpec.of(16_000, 0, 2, 1000));
    assertArrayEquals(new int[] {2, 4, 8}, new WholeNodeReserve(cluster, mixed, 13_000).counts());
    assertArrayEquals(
        new int[0], new WholeNodeReserve(cluster, TRACE.subList(0, 2030), 13_000).counts());
  }

  @Test
  void aCpuHeavyPodGoesWhereItLeavesTheEightGpuNodeWhole() {
    PodSpec cpuHeavy = PodSpec.of(100_000, 0, 0, 0);
    // Without the reserve the capacity-aware FGD takes the 8-GPU node's CPU (the sample that
    // shows the test can fail); with it the pod goes to the 2-GPU node.
    assertEquals(0, choose(Policies.FGD_CAPACITY, nodes(128_000), cpuHeavy).orElseThrow().node());
    assertEquals(1, choose(Policies.FGD_RESERVE, nodes(128_000), cpuHeavy).orElseThrow().node());
  }

  @Test
  void theReserveNeverFailsAPodThatFitsSomewhere() {
    // The 2-GPU node has too little CPU: the 8-GPU node is the only fit and takes the pod.
    PodSpec cpuHeavy = PodSpec.of(100_000, 0, 0, 0);
    assertEquals(0, choose(Policies.FGD_RESERVE, nodes(64_000), cpuHeavy).orElseThrow().node());
  }

  @Test
  void onceTheExpectedEightGpuPodsHaveArrivedTheNodeIsFreeToUse() {
    Cluster cluster = new Cluster(nodes(128_000));
    PlacementPolicy policy = Policies.FGD_RESERVE.create(cluster, TRACE, 1);
    // About 1.2 eight-GPU pods are expected in all: 10 of the trace's 2,040 pods, times the ~241
    // arrivals that the stop (130 % of 10 GPUs) allows with the mean pod asking 54 thousandths.
    // Two have been seen (asked for, not placed): none is expected any more.
    PodSpec eight = PodSpec.of(120_000, 0, 8, 1000);
    assertEquals(0, policy.choose(eight).orElseThrow().node());
    assertEquals(0, policy.choose(eight).orElseThrow().node());
    assertEquals(0, policy.choose(PodSpec.of(100_000, 0, 0, 0)).orElseThrow().node());
  }
}
