package dev.gpushare.arbiter.fragmentation;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The workload fragmentation is measured against (Weng et al., ATC'23, §3): the pod classes of a
 * pod list with their popularity. A class is a pod's requests (CPU, GPUs, GPU share, accepted
 * models, and memory when {@link Options#memoryInClass}). The paper's artifact keeps the most
 * popular classes until they cover {@link Options#popularityThreshold} of the pods (95 %) and
 * renormalises their popularity to sum to 1.
 */
public final class TargetWorkload {

  /** How a class's popularity is counted. */
  public enum Weighting {
    /** Pods of the class over all pods: the paper. */
    COUNT,
    /**
     * GPU demand of the class's pods over all GPU demand: classes that ask for more GPU weigh more,
     * classes without GPUs weigh nothing.
     */
    GPU_DEMAND,
    /** Pods of the class times the GPUs each asks for (at least 1): multi-GPU pods weigh more. */
    GPUS
  }

  /**
   * @param memoryInClass whether memory is part of a class (the paper's artifact leaves it out)
   * @param popularityThreshold the share of the weight the kept classes cover, in (0, 1]
   * @param weighting how popularity is counted
   */
  public record Options(boolean memoryInClass, double popularityThreshold, Weighting weighting) {
    /** The paper's artifact: CPU, GPU and model only, the most popular classes up to 95 %. */
    public static final Options PAPER = new Options(false, 0.95, Weighting.COUNT);

    public Options {
      if (!(popularityThreshold > 0 && popularityThreshold <= 1)) {
        throw new IllegalArgumentException(
            "popularity threshold " + popularityThreshold + ": expected more than 0, at most 1");
      }
    }
  }

  /** One pod class and its popularity (the popularities of a workload sum to 1). */
  public record PodClass(PodSpec spec, double popularity) {}

  private final List<PodClass> classes;

  private TargetWorkload(List<PodClass> classes) {
    this.classes = List.copyOf(classes);
  }

  /** Classes given directly; their weights are normalised to sum to 1. */
  public static TargetWorkload ofWeights(Map<PodSpec, Double> weights) {
    double total = weights.values().stream().mapToDouble(Double::doubleValue).sum();
    List<PodClass> classes = new ArrayList<>();
    if (total > 0) {
      weights.forEach(
          (spec, weight) -> {
            if (weight < 0) {
              throw new IllegalArgumentException(spec + ": negative weight " + weight);
            }
            if (weight > 0) {
              classes.add(new PodClass(spec, weight / total));
            }
          });
    }
    return new TargetWorkload(classes);
  }

  /** The workload of a pod list, as {@code options} say. */
  public static TargetWorkload of(List<PodSpec> pods, Options options) {
    Map<PodSpec, Double> weight = new LinkedHashMap<>();
    double total = 0;
    for (PodSpec pod : pods) {
      PodSpec key = options.memoryInClass() ? pod : pod.withoutMemory();
      double w =
          switch (options.weighting()) {
            case COUNT -> 1;
            case GPU_DEMAND -> pod.gpuDemandMilli() / (double) PodSpec.MILLI;
            case GPUS -> Math.max(1, pod.numGpu());
          };
      if (w > 0) {
        weight.merge(key, w, Double::sum);
        total += w;
      }
    }
    List<Map.Entry<PodSpec, Double>> sorted = new ArrayList<>(weight.entrySet());
    // Most popular first; equal popularity in the artifact's order (larger requests first).
    sorted.sort(
        Comparator.comparing((Map.Entry<PodSpec, Double> e) -> e.getValue())
            .thenComparing(Map.Entry::getKey, TargetWorkload::compareRequests)
            .reversed());
    Map<PodSpec, Double> kept = new LinkedHashMap<>();
    double covered = 0;
    double wanted = options.popularityThreshold() * total;
    for (Map.Entry<PodSpec, Double> entry : sorted) {
      if (covered >= wanted && options.popularityThreshold() < 1) {
        break;
      }
      kept.put(entry.getKey(), entry.getValue());
      covered += entry.getValue();
    }
    return ofWeights(kept);
  }

  private static int compareRequests(PodSpec a, PodSpec b) {
    int c = Integer.compare(a.cpuMilli(), b.cpuMilli());
    if (c == 0) {
      c = Integer.compare(a.gpuMilli(), b.gpuMilli());
    }
    if (c == 0) {
      c = Integer.compare(a.numGpu(), b.numGpu());
    }
    if (c == 0) {
      c = String.join("|", a.models()).compareTo(String.join("|", b.models()));
    }
    if (c == 0) {
      c = Long.compare(a.memoryMib(), b.memoryMib());
    }
    return c;
  }

  public List<PodClass> classes() {
    return classes;
  }

  @Override
  public String toString() {
    return classes.size() + " pod classes";
  }
}
