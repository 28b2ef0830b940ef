package dev.gpushare.arbiter.fragmentation;

import java.util.ArrayList;
import java.util.List;

/**
 * The nodes a replay places pods on. Every placement bumps the node's version, so policies can
 * cache what they computed for a node until it changes.
 */
public final class Cluster {
  private final List<NodeState> nodes;
  private final int[] versions;
  private final int totalGpus;
  private long allocatedGpuMilli;

  /** A cluster of copies of {@code nodes} (the originals are left as they are). */
  public Cluster(List<NodeState> nodes) {
    this.nodes = new ArrayList<>(nodes.size());
    int gpus = 0;
    for (NodeState node : nodes) {
      this.nodes.add(node.copy());
      gpus += node.gpuCount();
    }
    this.versions = new int[nodes.size()];
    this.totalGpus = gpus;
  }

  public int size() {
    return nodes.size();
  }

  /** The node's current state; read it, change it only through {@link #place}. */
  public NodeState node(int index) {
    return nodes.get(index);
  }

  /** How many placements node {@code index} has taken. */
  public int version(int index) {
    return versions[index];
  }

  public int totalGpus() {
    return totalGpus;
  }

  public long capacityGpuMilli() {
    return (long) totalGpus * PodSpec.MILLI;
  }

  public long allocatedGpuMilli() {
    return allocatedGpuMilli;
  }

  /** Allocated GPU thousandths over the cluster's GPU capacity, in percent. */
  public double allocationPercent() {
    return totalGpus == 0 ? 0 : 100.0 * allocatedGpuMilli / capacityGpuMilli();
  }

  public void place(PodSpec pod, Assignment assignment) {
    nodes.get(assignment.node()).allocate(pod, assignment.gpus());
    versions[assignment.node()]++;
    allocatedGpuMilli += pod.gpuDemandMilli();
  }

  /** Total fragmentation of the cluster under {@code measure}, in GPU thousandths. */
  public double fragmentationMilli(FragmentationMeasure measure) {
    double total = 0;
    for (NodeState node : nodes) {
      total += measure.of(node);
    }
    return total;
  }

  /** Free GPU thousandths over the cluster. */
  public long freeGpuMilli() {
    return capacityGpuMilli() - allocatedGpuMilli;
  }
}
