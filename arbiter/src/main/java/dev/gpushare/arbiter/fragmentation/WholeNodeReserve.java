package dev.gpushare.arbiter.fragmentation;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Keeps enough nodes whole for the multi-GPU pods still to come. The paper's measure cuts the
 * target workload at 95 % popularity, which drops the 2-, 4- and 8-GPU classes: nothing stops a
 * CPU-heavy or fractional pod from taking the last free GPU or the CPU of a node that an 8-GPU pod
 * needed, and such pods then fail while the cluster is far from full.
 *
 * <p>For each GPU count {@code k > 1} that the trace's pods ask for and that no class of the
 * measured workload has (a class the measure keeps is protected by the measure itself), a node
 * <em>hosts</em> {@code k} when it has {@code k} wholly free GPUs and the CPU and memory of the
 * largest {@code k}-GPU pod of the trace. The number of {@code k}-GPU pods still to come is
 * estimated from the arrival mix: their share of the trace's pods times the arrivals that the
 * arrival stop allows (the stop over the mean GPU demand of a pod), less those seen so far. A
 * placement that would make a node stop hosting {@code k} while no more nodes host {@code k} than
 * pods are still expected is not <em>sparing</em>: the policy takes it only when no sparing node
 * fits, so the reserve never makes a pod fail.
 *
 * <p>Selection (BENCHMARKS, placement): the largest pod's CPU rather than the median was chosen on
 * the {@code default} trace (with the median, four 120-core 8-GPU pods still failed before 90 %
 * arrived); leaving out the counts the measure keeps was chosen on a synthetic multi-GPU variant;
 * the reserve size is the expectation itself, not tuned.
 */
final class WholeNodeReserve {
  private final Cluster cluster;
  private final int[] counts; // GPU counts k > 1 with pods in the trace
  private final int[] cpu;
  private final long[] memory;
  private final double[] share; // of all pods
  private final double expectedArrivals;
  private final int[] seen;
  private final int[][] hostsStamp;
  private final boolean[][] hosts;
  private final int[] hosting;

  /**
   * @param tracePods the pod list arrivals are drawn from: the GPU counts, their share and size
   * @param measured the classes the policy's fragmentation measure counts
   * @param stopMilli the arrived GPU demand at which arrivals stop (the replay's 130 % of capacity)
   */
  WholeNodeReserve(
      Cluster cluster, List<PodSpec> tracePods, TargetWorkload measured, long stopMilli) {
    this.cluster = cluster;
    List<Integer> ks = new ArrayList<>();
    for (int k = 2; k <= PodSpec.MAX_GPUS; k++) {
      final int kk = k;
      boolean measuredAlready = measured.classes().stream().anyMatch(c -> c.spec().numGpu() == kk);
      if (tracePods.stream().anyMatch(p -> p.numGpu() == kk) && !measuredAlready) {
        ks.add(k);
      }
    }
    counts = ks.stream().mapToInt(Integer::intValue).toArray();
    cpu = new int[counts.length];
    memory = new long[counts.length];
    share = new double[counts.length];
    long demand = 0;
    for (PodSpec p : tracePods) {
      demand += p.gpuDemandMilli();
    }
    for (int i = 0; i < counts.length; i++) {
      int k = counts[i];
      int[] cpus =
          tracePods.stream()
              .filter(p -> p.numGpu() == k)
              .mapToInt(PodSpec::cpuMilli)
              .sorted()
              .toArray();
      long[] mems =
          tracePods.stream()
              .filter(p -> p.numGpu() == k)
              .mapToLong(PodSpec::memoryMib)
              .sorted()
              .toArray();
      cpu[i] = cpus[cpus.length - 1];
      memory[i] = mems[mems.length - 1];
      share[i] = cpus.length / (double) tracePods.size();
    }
    double meanDemand = tracePods.isEmpty() ? 0 : demand / (double) tracePods.size();
    expectedArrivals = meanDemand == 0 ? 0 : stopMilli / meanDemand;
    seen = new int[counts.length];
    hostsStamp = new int[counts.length][cluster.size()];
    hosts = new boolean[counts.length][cluster.size()];
    hosting = new int[counts.length];
    for (int i = 0; i < counts.length; i++) {
      Arrays.fill(hostsStamp[i], -1);
    }
  }

  /** The GPU counts kept for, largest last (for tests and reports). */
  int[] counts() {
    return counts.clone();
  }

  /** Before {@code pod} is placed: count it and bring the hosts up to date. */
  void arriving(PodSpec pod) {
    for (int i = 0; i < counts.length; i++) {
      if (pod.numGpu() == counts[i]) {
        seen[i]++;
      }
      int count = 0;
      for (int n = 0; n < cluster.size(); n++) {
        int version = cluster.version(n);
        if (hostsStamp[i][n] != version) {
          hosts[i][n] = hosts(i, cluster.node(n), 0, 0, 0);
          hostsStamp[i][n] = version;
        }
        if (hosts[i][n]) {
          count++;
        }
      }
      hosting[i] = count;
    }
  }

  /**
   * Whether placing {@code pod} on node {@code n} (on GPU {@code gpu} for a share pod) leaves every
   * reserve that is still needed.
   */
  boolean spares(int n, PodSpec pod, int gpu) {
    NodeState node = cluster.node(n);
    for (int i = 0; i < counts.length; i++) {
      if (pod.numGpu() >= counts[i] || !hosts[i][n]) {
        continue;
      }
      double expected = share[i] * expectedArrivals - seen[i];
      if (hosting[i] > expected) {
        continue;
      }
      int wholeTaken;
      if (pod.numGpu() == 0) {
        wholeTaken = 0;
      } else if (pod.isShare()) {
        wholeTaken = gpu >= 0 && node.gpuFree(gpu) == PodSpec.MILLI ? 1 : 0;
      } else {
        wholeTaken = pod.numGpu();
      }
      if (!hosts(i, node, wholeTaken, pod.cpuMilli(), pod.memoryMib())) {
        return false;
      }
    }
    return true;
  }

  private boolean hosts(int i, NodeState node, int wholeTaken, int cpuTaken, long memoryTaken) {
    if (node.cpuFree() - cpuTaken < cpu[i] || node.memoryFree() - memoryTaken < memory[i]) {
      return false;
    }
    int whole = -wholeTaken;
    for (int g = 0; g < node.gpuCount(); g++) {
      if (node.gpuFree(g) == PodSpec.MILLI) {
        whole++;
      }
    }
    return whole >= counts[i];
  }
}
