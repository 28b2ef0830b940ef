package dev.gpushare.arbiter.fragmentation;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * Keeps enough nodes whole for the multi-GPU pods still to come. The paper's measure cuts the
 * target workload at 95 % popularity, which drops most 2-, 4- and 8-GPU classes: nothing then stops
 * a CPU-heavy or fractional pod from taking the last free GPU or the CPU of one of the few nodes
 * that a large multi-GPU pod fits (an 8-GPU pod of 120 cores fits only nodes with 8 GPUs and 120
 * free cores), and such pods fail while the cluster is far from full.
 *
 * <p>For each GPU count {@code k > 1} that pods of the trace ask for in classes the measure leaves
 * out, a node <em>hosts</em> {@code k} while it has {@code k} wholly free GPUs and the CPU and
 * memory of the largest such pod. The {@code k}-GPU pods still to come are estimated from the
 * arrival mix: the share of such pods in the trace times the arrivals that the arrival stop allows
 * (the stop over the mean GPU demand of a pod), less the {@code k}-GPU pods seen so far. A
 * placement that would make a node stop hosting {@code k} while no more nodes host {@code k} than
 * such pods are still expected is not <em>sparing</em>: the policy takes it only when no sparing
 * node fits, so the reserve never makes a pod fail.
 *
 * <p>What was chosen on which traces: BENCHMARKS, "The project's policy".
 */
final class WholeNodeReserve {
  /**
   * How many points of the node score (FGD's 0–100) keeping a host may cost: about 120 GPU
   * thousandths more fragmentation near a neutral placement. Chosen on the multi-GPU variants
   * (BENCHMARKS).
   */
  static final double SLACK = 3;

  private final Cluster cluster;
  private final int[] counts; // the GPU counts k > 1 kept for
  private final int[] cpu;
  private final long[] memory;
  private final double[] expected; // k-GPU pods in all, from the arrival mix
  private final int[] seen;
  private final int[] nodeStamp;
  private final boolean[][] hosts; // [node][i]
  private final int[] hosting;

  /**
   * @param tracePods the pod list arrivals are drawn from
   * @param stopMilli the arrived GPU demand at which arrivals stop (the replay's 130 % of capacity)
   */
  WholeNodeReserve(Cluster cluster, List<PodSpec> tracePods, long stopMilli) {
    this.cluster = cluster;
    int[] left = new int[PodSpec.MAX_GPUS + 1];
    int[] maxCpu = new int[PodSpec.MAX_GPUS + 1];
    long[] maxMemory = new long[PodSpec.MAX_GPUS + 1];
    long demand = 0;
    for (PodSpec p : tracePods) {
      demand += p.gpuDemandMilli();
      int k = p.numGpu();
      if (k > 1) {
        left[k]++;
        maxCpu[k] = Math.max(maxCpu[k], p.cpuMilli());
        maxMemory[k] = Math.max(maxMemory[k], p.memoryMib());
      }
    }
    double meanDemand = tracePods.isEmpty() ? 0 : demand / (double) tracePods.size();
    double arrivals = meanDemand == 0 ? 0 : stopMilli / meanDemand;
    counts = IntStream.rangeClosed(2, PodSpec.MAX_GPUS).filter(k -> left[k] > 0).toArray();
    int size = counts.length;
    cpu = new int[size];
    memory = new long[size];
    expected = new double[size];
    for (int i = 0; i < size; i++) {
      int k = counts[i];
      cpu[i] = maxCpu[k];
      memory[i] = maxMemory[k];
      expected[i] = left[k] / (double) tracePods.size() * arrivals;
    }
    seen = new int[size];
    nodeStamp = new int[cluster.size()];
    Arrays.fill(nodeStamp, -1);
    hosts = new boolean[cluster.size()][size];
    hosting = new int[size];
  }

  /** The GPU counts kept for (for tests and reports). */
  int[] counts() {
    return counts.clone();
  }

  /** Before {@code pod} is placed: count it and bring the hosts up to date. */
  void arriving(PodSpec pod) {
    for (int i = 0; i < counts.length; i++) {
      if (pod.numGpu() == counts[i]) {
        seen[i]++;
      }
    }
    if (counts.length == 0) {
      return;
    }
    for (int n = 0; n < cluster.size(); n++) {
      int version = cluster.version(n);
      if (nodeStamp[n] == version) {
        continue;
      }
      NodeState node = cluster.node(n);
      int whole = whole(node);
      boolean[] flags = hosts[n];
      for (int i = 0; i < counts.length; i++) {
        boolean now = fits(i, node.cpuFree(), node.memoryFree(), whole);
        if (nodeStamp[n] < 0 ? now : now != flags[i]) {
          hosting[i] += now ? 1 : -1;
        }
        flags[i] = now;
      }
      nodeStamp[n] = version;
    }
  }

  /**
   * Whether placing {@code pod} on node {@code n} (on GPU {@code gpu} for a share pod) leaves every
   * reserve that is still needed.
   */
  boolean spares(int n, PodSpec pod, int gpu) {
    if (counts.length == 0) {
      return true;
    }
    NodeState node = cluster.node(n);
    int wholeTaken;
    if (pod.numGpu() == 0) {
      wholeTaken = 0;
    } else if (pod.isShare()) {
      wholeTaken = gpu >= 0 && node.gpuFree(gpu) == PodSpec.MILLI ? 1 : 0;
    } else {
      wholeTaken = pod.numGpu();
    }
    int whole = whole(node) - wholeTaken;
    int cpuAfter = node.cpuFree() - pod.cpuMilli();
    long memoryAfter = node.memoryFree() - pod.memoryMib();
    boolean[] flags = hosts[n];
    for (int i = 0; i < counts.length; i++) {
      if (flags[i]
          && hosting[i] <= expected[i] - seen[i]
          && !fits(i, cpuAfter, memoryAfter, whole)) {
        return false;
      }
    }
    return true;
  }

  private boolean fits(int i, int cpuFree, long memoryFree, int whole) {
    return whole >= counts[i] && cpuFree >= cpu[i] && memoryFree >= memory[i];
  }

  private static int whole(NodeState node) {
    int whole = 0;
    for (int g = 0; g < node.gpuCount(); g++) {
      if (node.gpuFree(g) == PodSpec.MILLI) {
        whole++;
      }
    }
    return whole;
  }
}
