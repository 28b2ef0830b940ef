package dev.gpushare.arbiter.fragmentation;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The paper's fragmentation of a node (Weng et al., ATC'23, §3.2; artifact {@code
 * NodeGpuShareFragAmountScore}): the expected GPU thousandths of the node that a pod drawn from the
 * target workload could not use. For each pod class, weighted by its popularity:
 *
 * <ul>
 *   <li>a class without GPUs cannot use any GPU: all free GPU capacity is fragment;
 *   <li>a class that cannot be placed on the node — a GPU model it does not accept, not enough free
 *       CPU (and memory, when the measure is {@code memoryAware}), or fewer than {@code numGpu}
 *       GPUs with {@code gpuMilli} free — cannot use any of it either: all free GPU capacity is
 *       fragment;
 *   <li>a class that can be placed cannot use the GPUs whose free part is smaller than its share:
 *       their free thousandths are fragment, the rest is not.
 * </ul>
 *
 * <p>The paper's artifact checks CPU only (its node model has no memory); a {@code memoryAware}
 * measure also counts memory (for classes that carry it, {@link TargetWorkload.Options}).
 *
 * <p><b>Capacity term</b> (this project's extension, 0 in the paper): the paper asks whether
 * <em>one</em> pod of the class still fits, so a node with eight free GPUs and CPU for one pod
 * counts as unfragmented. With {@code capacityWeight > 0}, for a class that fits, the part of its
 * usable GPU capacity (the free thousandths of the GPUs with room) that the node's free CPU (and
 * memory) cannot accompany — beyond {@code ⌊cpu free / cpu of the class⌋ × numGpu × gpuMilli} —
 * counts as fragment too, times {@code capacityWeight}.
 */
public final class FragmentationMeasure {
  private final int size;
  private final int[] cpu;
  private final long[] memory;
  private final int[] numGpu;
  private final int[] gpuMilli;
  private final double[] popularity;
  private final List<List<String>> models;
  private final boolean memoryAware;
  private final double capacityWeight;
  private final Map<String, boolean[]> allowedByModel = new HashMap<>();

  /** The paper's measure against {@code workload}. */
  public FragmentationMeasure(TargetWorkload workload) {
    this(workload, false, 0);
  }

  public FragmentationMeasure(TargetWorkload workload, boolean memoryAware, double capacityWeight) {
    if (!(capacityWeight >= 0)) {
      throw new IllegalArgumentException("capacity weight " + capacityWeight + ": expected >= 0");
    }
    List<TargetWorkload.PodClass> classes = workload.classes();
    this.size = classes.size();
    this.cpu = new int[size];
    this.memory = new long[size];
    this.numGpu = new int[size];
    this.gpuMilli = new int[size];
    this.popularity = new double[size];
    this.models = classes.stream().map(c -> c.spec().models()).toList();
    for (int i = 0; i < size; i++) {
      PodSpec spec = classes.get(i).spec();
      cpu[i] = spec.cpuMilli();
      memory[i] = spec.memoryMib();
      numGpu[i] = spec.numGpu();
      gpuMilli[i] = spec.gpuMilli();
      popularity[i] = classes.get(i).popularity();
    }
    this.memoryAware = memoryAware;
    this.capacityWeight = capacityWeight;
  }

  /** The paper's measure for the classes of {@code pods} (the artifact's settings). */
  public static FragmentationMeasure paper(List<PodSpec> pods) {
    return new FragmentationMeasure(TargetWorkload.of(pods, TargetWorkload.Options.PAPER));
  }

  /** Expected unusable GPU thousandths of {@code node}. */
  public double of(NodeState node) {
    int[] free = node.gpuFreeCopy();
    return of(node.model(), node.cpuFree(), node.memoryFree(), free, free.length);
  }

  /**
   * Expected unusable GPU thousandths of a node of {@code model} with {@code cpuFree}, {@code
   * memoryFree} and the first {@code gpus} entries of {@code gpuFree} free.
   */
  public double of(String model, int cpuFree, long memoryFree, int[] gpuFree, int gpus) {
    int total = 0;
    for (int g = 0; g < gpus; g++) {
      total += gpuFree[g];
    }
    if (total == 0) {
      return 0;
    }
    boolean[] allowed = allowed(model);
    double fragment = 0;
    for (int c = 0; c < size; c++) {
      int milli = gpuMilli[c];
      if (milli == 0
          || !allowed[c]
          || cpuFree < cpu[c]
          || (memoryAware && memoryFree < memory[c])) {
        fragment += popularity[c] * total;
        continue;
      }
      int withRoom = 0;
      int tooSmall = 0;
      for (int g = 0; g < gpus; g++) {
        int free = gpuFree[g];
        if (free >= milli) {
          withRoom++;
        } else {
          tooSmall += free;
        }
      }
      if (withRoom < numGpu[c]) {
        fragment += popularity[c] * total;
      } else if (capacityWeight == 0) {
        fragment += popularity[c] * tooSmall;
      } else {
        fragment +=
            popularity[c]
                * (tooSmall + capacityWeight * unbacked(c, total - tooSmall, cpuFree, memoryFree));
      }
    }
    return fragment;
  }

  /** The part of {@code usable} GPU thousandths that the free CPU (and memory) cannot accompany. */
  private double unbacked(int c, int usable, int cpuFree, long memoryFree) {
    long pods = cpu[c] == 0 ? Long.MAX_VALUE : cpuFree / cpu[c];
    if (memoryAware && memory[c] > 0) {
      pods = Math.min(pods, memoryFree / memory[c]);
    }
    if (pods >= usable) {
      return 0; // each pod takes at least one thousandth: CPU is not the limit
    }
    long backed = pods * numGpu[c] * (long) gpuMilli[c];
    return backed >= usable ? 0 : usable - backed;
  }

  private boolean[] allowed(String model) {
    boolean[] allowed = allowedByModel.get(model);
    if (allowed == null) {
      allowed = new boolean[size];
      for (int c = 0; c < size; c++) {
        allowed[c] = models.get(c).isEmpty() || models.get(c).contains(model);
      }
      allowedByModel.put(model, allowed);
    }
    return allowed;
  }
}
