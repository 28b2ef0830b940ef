package dev.gpushare.arbiter.fragmentation;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.function.Consumer;

/**
 * Replays a trace on a cluster with one policy, following the paper's protocol (the trace's README,
 * Weng et al. ATC'23 §6.1):
 *
 * <ol>
 *   <li>the trace's pods arrive in {@code creation_time} order (file order among equal times) and
 *       are never deleted ({@link Order#CREATION_TIME});
 *   <li>when the list runs out, pods are drawn from it (in file order) uniformly at random ({@link
 *       Random} with the seed) and arrive, until the arrived GPU demand reaches {@value
 *       #STOP_PERCENT} % of the cluster's GPU capacity: the first pod that would take it past that
 *       ends the replay without arriving (the same rule ends a trace that alone asks for more);
 *   <li>each arriving pod is placed by the policy or, when it fits nowhere, counted as failed and
 *       skipped (not queued); its demand counts as arrived either way.
 * </ol>
 *
 * <p>The allocation ratio at X % is measured as the paper's analysis does: the mean allocation over
 * the arrivals after which the arrived demand rounds to X % (lies in [X − 0.5, X + 0.5) %); when no
 * arrival lands there, the allocation after the last arrival below X + 0.5 % (at 130 %: the end).
 * The draws depend on the seed only, so every policy sees the same arrivals for a seed.
 *
 * <p>Failed pods are also counted by GPU count ({@link GpuBucket}) at each of {@link
 * #FAILURE_CHECKPOINTS}: the failures among the arrivals up to and including the first one that
 * takes the arrived demand to X % of the capacity or more (all of them when it never gets there).
 *
 * <p>{@link Order#SHUFFLED} is what the paper's artifact actually does: its pods carry {@code
 * creation_time} as plain seconds, which its RFC 3339 parser rejects, so its {@code --shuffle-pod}
 * order (pods sorted by name, then shuffled with the seed) stands. It reproduces the published
 * figures; see BENCHMARKS.
 */
public final class Replay {
  private Replay() {}

  /** Where arrivals stop, in percent of the cluster's GPU capacity. */
  public static final int STOP_PERCENT = 130;

  /** The arrived-demand percentages at which the allocation ratio is reported. */
  public static final List<Integer> CHECKPOINTS = List.of(90, 100, 110, 120, 130);

  /** The arrived-demand percentages at which failed pods are counted by {@link GpuBucket}. */
  public static final List<Integer> FAILURE_CHECKPOINTS = List.of(90, 100);

  /** Pods by the GPUs they ask for, for the failure counts. */
  public enum GpuBucket {
    /** {@code num_gpu == 0}. */
    CPU_ONLY("0gpu"),
    /** A fraction of one GPU: {@code num_gpu == 1}, {@code gpu_milli < 1000}. */
    FRACTIONAL("frac"),
    /** One whole GPU. */
    ONE("1gpu"),
    TWO("2gpu"),
    FOUR("4gpu"),
    EIGHT("8gpu"),
    /** 3, 5, 6 or 7 GPUs. */
    OTHER("other");

    private final String key;

    GpuBucket(String key) {
      this.key = key;
    }

    /** The short name in reports and CSV columns: 0gpu, frac, 1gpu, 2gpu, 4gpu, 8gpu, other. */
    public String key() {
      return key;
    }

    public static GpuBucket of(PodSpec spec) {
      return switch (spec.numGpu()) {
        case 0 -> CPU_ONLY;
        case 1 -> spec.gpuMilli() < PodSpec.MILLI ? FRACTIONAL : ONE;
        case 2 -> TWO;
        case 4 -> FOUR;
        case 8 -> EIGHT;
        default -> OTHER;
      };
    }
  }

  /** The order in which the trace's own pods arrive. */
  public enum Order {
    /** By {@code creation_time}, file order among equal times: the trace's README. */
    CREATION_TIME,
    /** Sorted by name, then shuffled with the seed: what the paper's artifact runs. */
    SHUFFLED
  }

  /** A pod of the trace. */
  public record TracePod(String name, PodSpec spec, long creationTime) {}

  /**
   * One arrival: the pod, whether it was drawn (not from the list in order), where it went (empty
   * when it failed), and the arrived and allocated GPU thousandths after it.
   */
  public record Arrival(
      int sequence,
      TracePod pod,
      boolean drawn,
      Optional<Assignment> assignment,
      long arrivedMilli,
      long allocatedMilli) {}

  /**
   * What one replay measured.
   *
   * @param allocationPercentAt allocation ratio in percent at each of {@link #CHECKPOINTS}
   * @param failedByBucketAt failed pods at each of {@link #FAILURE_CHECKPOINTS} (first index) by
   *     {@link GpuBucket} ordinal (second index)
   * @param fragmentationMilli cluster fragmentation at the end, by the paper's measure
   * @param schedulingNanos time spent choosing and placing
   */
  public record Result(
      long seed,
      int totalGpus,
      double[] allocationPercentAt,
      int arrived,
      int fromTrace,
      int drawn,
      int failed,
      int[][] failedByBucketAt,
      long arrivedMilli,
      long allocatedMilli,
      double fragmentationMilli,
      long schedulingNanos) {

    /**
     * Pods of {@code bucket} that failed by the time the arrived demand reached {@code checkpoint}
     * % (one of {@link #FAILURE_CHECKPOINTS}).
     */
    public int failedAt(int checkpoint, GpuBucket bucket) {
      int i = FAILURE_CHECKPOINTS.indexOf(checkpoint);
      if (i < 0) {
        throw new IllegalArgumentException(checkpoint + " is not one of " + FAILURE_CHECKPOINTS);
      }
      return failedByBucketAt[i][bucket.ordinal()];
    }

    public double arrivedPercent() {
      return 100.0 * arrivedMilli / (totalGpus * (double) PodSpec.MILLI);
    }

    public double allocationPercent() {
      return 100.0 * allocatedMilli / (totalGpus * (double) PodSpec.MILLI);
    }

    /** The allocation ratio in percent at {@code checkpoint} (one of {@link #CHECKPOINTS}). */
    public double allocationPercentAt(int checkpoint) {
      int i = CHECKPOINTS.indexOf(checkpoint);
      if (i < 0) {
        throw new IllegalArgumentException(checkpoint + " is not one of " + CHECKPOINTS);
      }
      return allocationPercentAt[i];
    }

    /** GPUs (whole and in parts) left unallocated at the end. */
    public double unallocatedGpus() {
      return totalGpus - allocatedMilli / (double) PodSpec.MILLI;
    }

    /** Fragmentation at the end as a share of the free GPU capacity, in percent. */
    public double fragmentationPercentOfFree() {
      double free = totalGpus * (double) PodSpec.MILLI - allocatedMilli;
      return free <= 0 ? 0 : 100.0 * fragmentationMilli / free;
    }

    public double podsPerSecond() {
      return schedulingNanos <= 0 ? 0 : arrived * 1e9 / schedulingNanos;
    }
  }

  /** Replays in {@code creation_time} order without watching the arrivals. */
  public static Result run(
      List<NodeState> nodes, List<TracePod> pods, PlacementPolicy.Factory policy, long seed) {
    return run(nodes, pods, policy, seed, Order.CREATION_TIME, arrival -> {});
  }

  /** Replays, telling {@code listener} of every arrival. */
  public static Result run(
      List<NodeState> nodes,
      List<TracePod> pods,
      PlacementPolicy.Factory policy,
      long seed,
      Order order,
      Consumer<Arrival> listener) {
    Cluster cluster = new Cluster(nodes);
    if (cluster.totalGpus() == 0) {
      throw new IllegalArgumentException("the cluster has no GPU: nothing to measure");
    }
    Random draws = new Random(seed);
    List<TracePod> ordered = new ArrayList<>(pods);
    if (order == Order.CREATION_TIME) {
      ordered.sort(Comparator.comparingLong(TracePod::creationTime)); // stable: file order on ties
    } else {
      ordered.sort(Comparator.comparing(TracePod::name));
      Collections.shuffle(ordered, draws);
    }
    List<PodSpec> specs = pods.stream().map(TracePod::spec).toList();
    PlacementPolicy placement = policy.create(cluster, specs, seed);
    FragmentationMeasure report = FragmentationMeasure.paper(specs);

    long capacity = cluster.capacityGpuMilli();
    long stop = capacity * STOP_PERCENT / 100;
    boolean anyDemand = specs.stream().anyMatch(p -> p.gpuDemandMilli() > 0);
    Checkpoints checkpoints = new Checkpoints(capacity);

    long arrivedMilli = 0;
    int arrived = 0;
    int fromTrace = 0;
    int drawn = 0;
    int failed = 0;
    long nanos = 0;
    int next = 0;
    int[] failedByBucket = new int[GpuBucket.values().length];
    int[][] failedByBucketAt = new int[FAILURE_CHECKPOINTS.size()][];
    long[] failureThresholds = new long[FAILURE_CHECKPOINTS.size()];
    for (int i = 0; i < failureThresholds.length; i++) {
      failureThresholds[i] = capacity * FAILURE_CHECKPOINTS.get(i); // compared with arrived × 100
    }
    while (true) {
      TracePod pod;
      boolean isDraw = next >= ordered.size();
      if (!isDraw) {
        pod = ordered.get(next++);
      } else if (anyDemand) {
        pod = pods.get(draws.nextInt(pods.size()));
      } else {
        break; // a list without GPU demand never reaches the stop; it is replayed once
      }
      long demand = pod.spec().gpuDemandMilli();
      if (arrivedMilli + demand > stop) {
        break;
      }
      arrivedMilli += demand;
      arrived++;
      if (isDraw) {
        drawn++;
      } else {
        fromTrace++;
      }
      long started = System.nanoTime();
      Optional<Assignment> assignment = placement.choose(pod.spec());
      assignment.ifPresent(a -> cluster.place(pod.spec(), a));
      nanos += System.nanoTime() - started;
      if (assignment.isEmpty()) {
        failed++;
        failedByBucket[GpuBucket.of(pod.spec()).ordinal()]++;
      }
      for (int i = 0; i < failureThresholds.length; i++) {
        if (failedByBucketAt[i] == null && arrivedMilli * 100 >= failureThresholds[i]) {
          failedByBucketAt[i] = failedByBucket.clone();
        }
      }
      checkpoints.observe(arrivedMilli, cluster.allocatedGpuMilli());
      listener.accept(
          new Arrival(arrived, pod, isDraw, assignment, arrivedMilli, cluster.allocatedGpuMilli()));
    }
    for (int i = 0; i < failedByBucketAt.length; i++) {
      if (failedByBucketAt[i] == null) {
        failedByBucketAt[i] = failedByBucket.clone(); // never reached: all the failures
      }
    }
    return new Result(
        seed,
        cluster.totalGpus(),
        checkpoints.values(),
        arrived,
        fromTrace,
        drawn,
        failed,
        failedByBucketAt,
        arrivedMilli,
        cluster.allocatedGpuMilli(),
        cluster.fragmentationMilli(report),
        nanos);
  }

  /** The allocation at each checkpoint, measured as {@link Replay} says. */
  static final class Checkpoints {
    private final long capacity;
    private final double[] sum = new double[CHECKPOINTS.size()];
    private final int[] count = new int[CHECKPOINTS.size()];
    private final double[] lastBelow = new double[CHECKPOINTS.size()];

    Checkpoints(long capacity) {
      this.capacity = capacity;
    }

    void observe(long arrivedMilli, long allocatedMilli) {
      double arrived = 100.0 * arrivedMilli / capacity;
      double allocated = 100.0 * allocatedMilli / capacity;
      for (int i = 0; i < CHECKPOINTS.size(); i++) {
        int x = CHECKPOINTS.get(i);
        if (arrived < x + 0.5) {
          lastBelow[i] = allocated;
          if (arrived >= x - 0.5) {
            sum[i] += allocated;
            count[i]++;
          }
        }
      }
    }

    double[] values() {
      double[] out = new double[CHECKPOINTS.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = count[i] > 0 ? sum[i] / count[i] : lastBelow[i];
      }
      return out;
    }
  }
}
