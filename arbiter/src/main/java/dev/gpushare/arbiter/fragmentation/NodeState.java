package dev.gpushare.arbiter.fragmentation;

import java.util.Arrays;

/**
 * One node of the cluster model: its capacity (CPU milli-cores, memory MiB, GPU model, number of
 * GPUs) and what is still free, per GPU in thousandths (0–1000). Changed only through {@link
 * Cluster#place}, which keeps the node's version for the policies' caches.
 */
public final class NodeState {
  private final String name;
  private final int cpuCapacity;
  private final long memoryCapacity;
  private final String model;
  private int cpuFree;
  private long memoryFree;
  private final int[] gpuFree;

  /** An empty node: everything free. */
  public NodeState(String name, int cpuMilli, long memoryMib, String model, int gpus) {
    this(name, cpuMilli, memoryMib, model, cpuMilli, memoryMib, full(gpus));
  }

  /** A node in a given state (tests, snapshots). */
  public NodeState(
      String name,
      int cpuCapacity,
      long memoryCapacity,
      String model,
      int cpuFree,
      long memoryFree,
      int[] gpuFree) {
    if (cpuCapacity < 0 || cpuFree < 0 || cpuFree > cpuCapacity) {
      throw new IllegalArgumentException(
          name + ": cpu free " + cpuFree + " of " + cpuCapacity + " milli");
    }
    if (memoryCapacity < 0 || memoryFree < 0 || memoryFree > memoryCapacity) {
      throw new IllegalArgumentException(
          name + ": memory free " + memoryFree + " of " + memoryCapacity + " MiB");
    }
    if (gpuFree.length > PodSpec.MAX_GPUS) {
      throw new IllegalArgumentException(
          name + ": " + gpuFree.length + " GPUs, at most " + PodSpec.MAX_GPUS);
    }
    for (int free : gpuFree) {
      if (free < 0 || free > PodSpec.MILLI) {
        throw new IllegalArgumentException(
            name + ": GPU free " + free + ", expected 0 to " + PodSpec.MILLI);
      }
    }
    this.name = name;
    this.cpuCapacity = cpuCapacity;
    this.memoryCapacity = memoryCapacity;
    this.model = model == null ? "" : model;
    this.cpuFree = cpuFree;
    this.memoryFree = memoryFree;
    this.gpuFree = gpuFree.clone();
  }

  private static int[] full(int gpus) {
    if (gpus < 0) {
      throw new IllegalArgumentException(gpus + " GPUs");
    }
    int[] free = new int[gpus];
    Arrays.fill(free, PodSpec.MILLI);
    return free;
  }

  public String name() {
    return name;
  }

  public int cpuCapacity() {
    return cpuCapacity;
  }

  public long memoryCapacity() {
    return memoryCapacity;
  }

  public String model() {
    return model;
  }

  public int cpuFree() {
    return cpuFree;
  }

  public long memoryFree() {
    return memoryFree;
  }

  public int gpuCount() {
    return gpuFree.length;
  }

  public int gpuFree(int gpu) {
    return gpuFree[gpu];
  }

  public int[] gpuFreeCopy() {
    return gpuFree.clone();
  }

  /** Free GPU thousandths over all GPUs. */
  public int gpuFreeTotal() {
    int total = 0;
    for (int free : gpuFree) {
      total += free;
    }
    return total;
  }

  /** Copies {@link #gpuFree} into {@code into} (at least {@link #gpuCount} long). */
  void gpuFreeInto(int[] into) {
    System.arraycopy(gpuFree, 0, into, 0, gpuFree.length);
  }

  public NodeState copy() {
    return new NodeState(
        name, cpuCapacity, memoryCapacity, model, cpuFree, memoryFree, gpuFree.clone());
  }

  /** Takes {@code pod}'s requests, its GPU share from each GPU in {@code gpus}. */
  void allocate(PodSpec pod, int[] gpus) {
    if (!Fit.fitsOn(this, pod, gpus)) {
      throw new IllegalArgumentException(
          name + " cannot take " + pod + " on GPUs " + Arrays.toString(gpus) + ": " + this);
    }
    cpuFree -= pod.cpuMilli();
    memoryFree -= pod.memoryMib();
    for (int gpu : gpus) {
      gpuFree[gpu] -= pod.gpuMilli();
    }
  }

  @Override
  public String toString() {
    return name
        + "("
        + (model.isEmpty() ? "no GPU model" : model)
        + ", cpu "
        + cpuFree
        + "/"
        + cpuCapacity
        + "m, memory "
        + memoryFree
        + "/"
        + memoryCapacity
        + " MiB, GPU free "
        + Arrays.toString(gpuFree)
        + ")";
  }
}
