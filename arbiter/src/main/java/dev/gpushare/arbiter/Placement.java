package dev.gpushare.arbiter;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Where a share goes inside one node.
 *
 * <p><b>The arbiter's rule</b> ({@link #bestFit}; SPEC §5 "Placement", §6 pinning): best fit —
 * among the GPUs it fits, the one that would have the least free room left (core plus memory
 * percent), ties broken by the lowest device index. Keeping whole GPUs free serves pods whose limit
 * is 100. The share-pool arbiter and static pinning ({@link ShareBook}) use this rule by default:
 * SPEC §5 fixes both the criterion and the tie-break (design), and its reference example and tests
 * are stated in those terms.
 *
 * <p><b>The fragmentation-aware choice</b> ({@link #leastFragmenting}; issue 7, SPEC §8 "score:
 * fragmentation-aware"): the GPU whose taking increases the node's fragmentation least, measured as
 * in Weng et al. (ATC'23) and {@code dev.gpushare.arbiter.fragmentation.FragmentationMeasure} but
 * per GPU in two dimensions: a GPU's free compute is fragment for a share class that does not fit
 * it (core <em>or</em> memory), in thousandths of a GPU ({@code core percent × 10}), weighted by
 * the class's popularity. Equal increments fall back to best fit, then to the lowest index. It
 * differs from best fit when the tightest GPU would leave a remainder no common share can use
 * (FragmentationAwarePlacementTest: a 50/50 share beside GPUs holding nothing, 30 and 60 goes to
 * the empty GPU, where best fit takes the 30 one); that is why the arbiter uses it only when asked
 * ({@link GpuChoice#LEAST_FRAGMENTING}, {@code gpushare.placement = least-fragmenting}): it changes
 * placements SPEC §5 defines. The scheduler extender's score uses the same measure on the GPU the
 * arbiter would pick; the trace replay's cluster-wide policies use it on whole nodes.
 */
public final class Placement {
  private Placement() {}

  public static OptionalInt bestFit(List<GpuLoad> gpus, Share share) {
    return gpus.stream()
        .filter(g -> g.fits(share))
        .min(
            Comparator.comparingInt((GpuLoad g) -> g.roomLeftAfter(share))
                .thenComparingInt(GpuLoad::index))
        .map(g -> OptionalInt.of(g.index()))
        .orElse(OptionalInt.empty());
  }

  /**
   * The fragmentation-aware choice against the node's own mix: the shares held on its GPUs and
   * {@code share} itself, each counted once per pod.
   */
  public static OptionalInt leastFragmenting(List<GpuLoad> gpus, Share share) {
    Map<Share, Integer> mix = new LinkedHashMap<>();
    for (GpuLoad gpu : gpus) {
      for (Share held : gpu.held().values()) {
        mix.merge(held, 1, Integer::sum);
      }
    }
    mix.merge(share, 1, Integer::sum);
    return leastFragmenting(gpus, share, mix);
  }

  /**
   * The fragmentation-aware choice against {@code workload} (share classes and how many pods of
   * each are expected, any positive scale): among the GPUs {@code share} fits, the one after whose
   * taking {@link #fragmentation} is least; then best fit; then the lowest index.
   */
  public static OptionalInt leastFragmenting(
      List<GpuLoad> gpus, Share share, Map<Share, Integer> workload) {
    int best = -1;
    long bestFragment = 0;
    int bestRoom = 0;
    for (int i = 0; i < gpus.size(); i++) {
      GpuLoad gpu = gpus.get(i);
      if (!gpu.fits(share)) {
        continue;
      }
      // Scaled by the workload's size, in whole numbers: equal nodes compare equal.
      long fragment = 0;
      for (int j = 0; j < gpus.size(); j++) {
        Share used = gpus.get(j).used();
        fragment += unfitMilli(gpus.get(j), i == j ? used.plus(share) : used, workload);
      }
      int room = gpu.roomLeftAfter(share);
      if (best < 0
          || fragment < bestFragment
          || (fragment == bestFragment
              && (room < bestRoom || (room == bestRoom && gpu.index() < gpus.get(best).index())))) {
        best = i;
        bestFragment = fragment;
        bestRoom = room;
      }
    }
    return best < 0 ? OptionalInt.empty() : OptionalInt.of(gpus.get(best).index());
  }

  /**
   * The node's fragmentation against {@code workload}, in thousandths of a GPU: for each healthy
   * GPU and each share class, the GPU's free compute ({@code (100 − core used) × 10}) when the
   * class does not fit beside what the GPU holds, weighted by the class's share of the workload.
   * Unhealthy GPUs take nothing and count for nothing.
   */
  public static double fragmentation(List<GpuLoad> gpus, Map<Share, Integer> workload) {
    long pods = workload.values().stream().mapToLong(n -> Math.max(0, n)).sum();
    if (pods == 0) {
      return 0;
    }
    long fragment = 0;
    for (GpuLoad gpu : gpus) {
      fragment += unfitMilli(gpu, gpu.used(), workload);
    }
    return fragment / (double) pods;
  }

  /** Free thousandths of {@code gpu} (holding {@code used}) times the pods that do not fit it. */
  private static long unfitMilli(GpuLoad gpu, Share used, Map<Share, Integer> workload) {
    if (!gpu.healthy()) {
      return 0;
    }
    int freeMilli = Math.max(0, 100 - used.core()) * 10;
    if (freeMilli == 0) {
      return 0;
    }
    long unfit = 0;
    for (Map.Entry<Share, Integer> entry : workload.entrySet()) {
      if (!entry.getKey().fitsBeside(used)) {
        unfit += Math.max(0, entry.getValue());
      }
    }
    return freeMilli * unfit;
  }
}
