package dev.gpushare.arbiter.fragmentation;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/**
 * A policy that scores every node that fits and takes the best, as the Kubernetes scheduler
 * framework does in the paper's simulator. Equal scores go to the node that comes first in a random
 * order of the nodes drawn once per replay from the seed: the artifact renames its nodes with a
 * seeded random prefix, and only a fixed order reproduces its published figures (a fresh random
 * draw per decision spreads pods and costs FGD 5 points of allocation, see BENCHMARKS).
 *
 * <p>Scores are cached per pod class and node and recomputed only for nodes that took a pod since,
 * so a decision costs one cache look-up for most of the 10^3 nodes.
 */
abstract class NodeScoringPolicy implements PlacementPolicy {

  /** What {@link #score} answers for one node. */
  static final class Score {
    /** Higher is better; {@code Double.NEGATIVE_INFINITY} when the pod does not fit. */
    double value;

    /** The GPU for a share pod; -1 for none or for whole GPUs (the lowest-indexed free ones). */
    int gpu;
  }

  final Cluster cluster;
  private final int[] rank;
  private final Map<PodSpec, Integer> classIds = new HashMap<>();
  private int[][] stamp = new int[0][];
  private double[][] value = new double[0][];
  private int[][] gpu = new int[0][];
  private final Score scratch = new Score();
  private WholeNodeReserve reserve;

  NodeScoringPolicy(Cluster cluster, long seed) {
    this.cluster = cluster;
    this.rank = randomOrder(cluster.size(), new Random(seed * 0x9E3779B97F4A7C15L + 1));
  }

  /**
   * Scores {@code pod} on node {@code index}; leaves {@code out.value} at -∞ if it does not fit.
   */
  abstract void score(int index, NodeState node, PodSpec pod, Score out);

  /** Keep whole nodes for the multi-GPU pods still to come ({@link WholeNodeReserve}). */
  final NodeScoringPolicy reserving(WholeNodeReserve reserve) {
    this.reserve = reserve;
    return this;
  }

  @Override
  public final Optional<Assignment> choose(PodSpec pod) {
    if (reserve != null) {
      reserve.arriving(pod);
    }
    int id = classId(pod);
    int[] stamps = stamp[id];
    double[] values = value[id];
    int[] gpus = gpu[id];
    int best = -1;
    int bestSparing = -1;
    for (int n = 0; n < cluster.size(); n++) {
      int version = cluster.version(n) + 1;
      if (stamps[n] != version) {
        scratch.value = Double.NEGATIVE_INFINITY;
        scratch.gpu = -1;
        score(n, cluster.node(n), pod, scratch);
        values[n] = scratch.value;
        gpus[n] = scratch.gpu;
        stamps[n] = version;
      }
      double v = values[n];
      if (v == Double.NEGATIVE_INFINITY) {
        continue;
      }
      if (best < 0 || v > values[best] || (v == values[best] && rank[n] < rank[best])) {
        best = n;
      }
      if (reserve != null
          && (bestSparing < 0
              || v > values[bestSparing]
              || (v == values[bestSparing] && rank[n] < rank[bestSparing]))
          && reserve.spares(n, pod, gpus[n])) {
        bestSparing = n;
      }
    }
    if (best < 0) {
      return Optional.empty();
    }
    if (bestSparing >= 0 && values[bestSparing] >= values[best] - WholeNodeReserve.SLACK) {
      best = bestSparing;
    }
    int[] taken;
    if (pod.numGpu() == 0) {
      taken = new int[0];
    } else if (pod.isShare()) {
      taken = new int[] {gpus[best]};
    } else {
      taken = Fit.lowestFreeGpus(cluster.node(best), pod.numGpu());
    }
    return Optional.of(new Assignment(best, taken));
  }

  private static int[] randomOrder(int n, Random random) {
    int[] rank = new int[n];
    for (int i = 0; i < n; i++) {
      rank[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = rank[i];
      rank[i] = rank[j];
      rank[j] = t;
    }
    return rank;
  }

  private int classId(PodSpec pod) {
    Integer id = classIds.get(pod);
    if (id != null) {
      return id;
    }
    int next = classIds.size();
    classIds.put(pod, next);
    stamp = Arrays.copyOf(stamp, next + 1);
    value = Arrays.copyOf(value, next + 1);
    gpu = Arrays.copyOf(gpu, next + 1);
    stamp[next] = new int[cluster.size()];
    value[next] = new double[cluster.size()];
    gpu[next] = new int[cluster.size()];
    return next;
  }
}
