package dev.gpushare.arbiter.fragmentation;

import java.util.List;
import java.util.Optional;

/**
 * Chooses the node and GPUs for one pod of a {@link Cluster} it was created for. A policy may cache
 * per node; the replay changes the cluster only through {@link Cluster#place}.
 */
public interface PlacementPolicy {

  /** Where {@code pod} goes; empty when it fits nowhere. */
  Optional<Assignment> choose(PodSpec pod);

  /** Creates a policy for one replay. */
  @FunctionalInterface
  interface Factory {
    /**
     * @param cluster the cluster the policy places on
     * @param tracePods the trace's pod list (the policy may estimate its target workload from it)
     * @param seed the replay's seed (random tie-breaks)
     */
    PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed);
  }
}
