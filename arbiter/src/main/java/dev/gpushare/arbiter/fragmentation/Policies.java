package dev.gpushare.arbiter.fragmentation;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/** The placement policies a replay can run, by name. */
public enum Policies {
  /** The paper's Fragmentation Gradient Descent, as its artifact scores it. */
  FGD("fgd", "FGD") {
    @Override
    public PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed) {
      return fgd(cluster, tracePods, FgdPolicy.Config.PAPER, seed);
    }
  },
  /** The paper's best-fit baseline. */
  BEST_FIT("bestfit", "BestFit") {
    @Override
    public PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed) {
      return new BestFitPolicy(cluster, seed);
    }
  },
  /**
   * This project's policy: FGD with the capacity term of {@link FragmentationMeasure} (weight 0.5),
   * which also counts the GPU capacity a node's free CPU can no longer accompany.
   */
  FGD_CAPACITY("fgd-capacity", "FGD-Capacity") {
    @Override
    public PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed) {
      return fgd(cluster, tracePods, FgdPolicy.Config.CAPACITY, seed);
    }
  },
  /**
   * This project's policy, the default of the replay: the capacity-aware measure at weight 0.1
   * ({@link FgdPolicy.Config#RESERVE}; less where pods name GPU models, {@link
   * FgdPolicy.Config#forModelConstraints}), and whole nodes kept for the multi-GPU pods still to
   * come ({@link WholeNodeReserve}): a placement that would take the last of the nodes such a pod
   * needs goes elsewhere when any other node fits.
   */
  FGD_RESERVE("fgd-reserve", "FGD-Reserve") {
    @Override
    public PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed) {
      FgdPolicy.Config config = FgdPolicy.Config.RESERVE.forModelConstraints(tracePods);
      FgdPolicy policy = fgd(cluster, tracePods, config, seed);
      policy.reserving(
          new WholeNodeReserve(
              cluster, tracePods, cluster.capacityGpuMilli() * Replay.STOP_PERCENT / 100));
      return policy;
    }
  };

  private final String key;
  private final String label;

  Policies(String key, String label) {
    this.key = key;
    this.label = label;
  }

  /** The name on the command line. */
  public String key() {
    return key;
  }

  /** The name in reports (the reference results' spelling for the paper's policies). */
  public String label() {
    return label;
  }

  public abstract PlacementPolicy create(Cluster cluster, List<PodSpec> tracePods, long seed);

  /**
   * The fragmentation measure of this project's policy ({@link #FGD_RESERVE}) against {@code
   * workload}: what the scheduler extender scores nodes with, so that every place that scores a
   * placement uses the one policy. Where the workload has only one-GPU share classes without CPU
   * (the extender's view of sharing pods), its capacity term and reserve are zero by construction
   * and it equals FGD's measure.
   */
  public static FragmentationMeasure projectMeasure(TargetWorkload workload) {
    FgdPolicy.Config config = FgdPolicy.Config.RESERVE;
    return new FragmentationMeasure(workload, config.memoryAware(), config.capacityWeight());
  }

  public PlacementPolicy.Factory factory() {
    return this::create;
  }

  public static Optional<Policies> byKey(String key) {
    String k = key.strip().toLowerCase(Locale.ROOT);
    return Arrays.stream(values()).filter(p -> p.key.equals(k)).findFirst();
  }

  /** The accepted names, comma-separated. */
  public static String keys() {
    return Arrays.stream(values()).map(Policies::key).collect(Collectors.joining(", "));
  }

  static FgdPolicy fgd(
      Cluster cluster, List<PodSpec> tracePods, FgdPolicy.Config config, long seed) {
    FragmentationMeasure measure =
        new FragmentationMeasure(
            TargetWorkload.of(tracePods, config.workload()),
            config.memoryAware(),
            config.capacityWeight());
    return new FgdPolicy(cluster, measure, seed);
  }
}
