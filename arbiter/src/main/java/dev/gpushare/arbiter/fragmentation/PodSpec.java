package dev.gpushare.arbiter.fragmentation;

import java.util.List;
import java.util.TreeSet;

/**
 * What a pod asks of a node, as placement sees it: CPU in milli-cores, memory in MiB, {@code
 * numGpu} GPUs (0–8) with {@code gpuMilli} thousandths of each (a fraction of one GPU when {@code
 * numGpu == 1}, whole GPUs otherwise), and the GPU models it accepts (empty: any). Two pods with
 * equal requests are equal specs: a spec is also a pod <em>class</em> of the target workload.
 */
public record PodSpec(int cpuMilli, long memoryMib, int numGpu, int gpuMilli, List<String> models) {

  /** Thousandths of one GPU: a whole GPU. */
  public static final int MILLI = 1000;

  /** The most GPUs one pod may ask for (the largest nodes have eight). */
  public static final int MAX_GPUS = 8;

  public PodSpec {
    if (cpuMilli < 0) {
      throw new IllegalArgumentException("cpu milli " + cpuMilli + ": expected 0 or more");
    }
    if (memoryMib < 0) {
      throw new IllegalArgumentException("memory MiB " + memoryMib + ": expected 0 or more");
    }
    if (numGpu < 0 || numGpu > MAX_GPUS) {
      throw new IllegalArgumentException("num_gpu " + numGpu + ": expected 0 to " + MAX_GPUS);
    }
    if (numGpu == 0 && gpuMilli != 0) {
      throw new IllegalArgumentException(
          "gpu_milli " + gpuMilli + " with num_gpu 0: a pod without GPUs asks for 0 gpu_milli");
    }
    if (numGpu == 1 && (gpuMilli < 1 || gpuMilli > MILLI)) {
      throw new IllegalArgumentException(
          "gpu_milli " + gpuMilli + " with num_gpu 1: expected 1 to " + MILLI);
    }
    if (numGpu > 1 && gpuMilli != MILLI) {
      throw new IllegalArgumentException(
          "gpu_milli "
              + gpuMilli
              + " with num_gpu "
              + numGpu
              + ": pods with more than one GPU take whole GPUs (gpu_milli "
              + MILLI
              + ")");
    }
    TreeSet<String> sorted = new TreeSet<>();
    for (String model : models) {
      if (model == null || model.isBlank()) {
        throw new IllegalArgumentException("GPU model: empty name in " + models);
      }
      sorted.add(model.strip());
    }
    models = List.copyOf(sorted);
  }

  /** A pod that accepts any GPU model. */
  public static PodSpec of(int cpuMilli, long memoryMib, int numGpu, int gpuMilli) {
    return new PodSpec(cpuMilli, memoryMib, numGpu, gpuMilli, List.of());
  }

  /** GPU demand in thousandths of a GPU: {@code numGpu × gpuMilli}. */
  public long gpuDemandMilli() {
    return (long) numGpu * gpuMilli;
  }

  /** Whether the pod asks for a fraction of one GPU. */
  public boolean isShare() {
    return numGpu == 1 && gpuMilli < MILLI;
  }

  /** Whether the pod may run on a GPU of {@code model}. */
  public boolean allows(String model) {
    return models.isEmpty() || models.contains(model);
  }

  /** The same requests without memory (pod classes that ignore memory). */
  public PodSpec withoutMemory() {
    return memoryMib == 0 ? this : new PodSpec(cpuMilli, 0, numGpu, gpuMilli, models);
  }

  @Override
  public String toString() {
    return "cpu "
        + cpuMilli
        + "m, memory "
        + memoryMib
        + " MiB, "
        + numGpu
        + " x "
        + gpuMilli
        + "m GPU"
        + (models.isEmpty() ? "" : " (" + String.join("|", models) + ")");
  }
}
