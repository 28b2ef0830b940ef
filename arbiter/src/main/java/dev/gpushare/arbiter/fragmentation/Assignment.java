package dev.gpushare.arbiter.fragmentation;

import java.util.Arrays;

/** A placement decision: the node (its index in the {@link Cluster}) and the GPUs taken on it. */
public record Assignment(int node, int[] gpus) {
  public Assignment {
    gpus = gpus.clone();
  }

  @Override
  public int[] gpus() {
    return gpus.clone();
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Assignment that && node == that.node && Arrays.equals(gpus, that.gpus);
  }

  @Override
  public int hashCode() {
    return 31 * node + Arrays.hashCode(gpus);
  }

  @Override
  public String toString() {
    return "node " + node + " GPUs " + Arrays.toString(gpus);
  }
}
