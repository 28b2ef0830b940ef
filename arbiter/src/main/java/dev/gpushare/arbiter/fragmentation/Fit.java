package dev.gpushare.arbiter.fragmentation;

/**
 * The fit rule of the trace's protocol: a pod fits a node when the node has enough free CPU and
 * memory and, for a pod with GPUs, accepts the node's GPU model and has {@code numGpu} GPUs each
 * with at least {@code gpuMilli} free (whole, untouched GPUs when {@code numGpu > 1}, since those
 * pods ask for 1000 of each). A pod without GPUs needs only CPU and memory.
 */
public final class Fit {
  private Fit() {}

  public static boolean fits(NodeState node, PodSpec pod) {
    if (node.cpuFree() < pod.cpuMilli() || node.memoryFree() < pod.memoryMib()) {
      return false;
    }
    if (pod.numGpu() == 0) {
      return true;
    }
    if (!pod.allows(node.model())) {
      return false;
    }
    return gpusWithRoom(node, pod.gpuMilli()) >= pod.numGpu();
  }

  /** How many of the node's GPUs have at least {@code milli} free. */
  public static int gpusWithRoom(NodeState node, int milli) {
    int count = 0;
    for (int gpu = 0; gpu < node.gpuCount(); gpu++) {
      if (node.gpuFree(gpu) >= milli) {
        count++;
      }
    }
    return count;
  }

  /** Whether {@code pod} fits {@code node} on exactly the GPUs {@code gpus}. */
  public static boolean fitsOn(NodeState node, PodSpec pod, int[] gpus) {
    if (!fits(node, pod) || gpus.length != pod.numGpu()) {
      return false;
    }
    for (int i = 0; i < gpus.length; i++) {
      int gpu = gpus[i];
      if (gpu < 0 || gpu >= node.gpuCount() || node.gpuFree(gpu) < pod.gpuMilli()) {
        return false;
      }
      for (int j = 0; j < i; j++) {
        if (gpus[j] == gpu) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * The GPUs a pod of whole GPUs takes: the {@code count} lowest-indexed untouched ones, as the
   * paper's simulator allocates them; {@code null} when there are fewer.
   */
  public static int[] lowestFreeGpus(NodeState node, int count) {
    int[] chosen = new int[count];
    int found = 0;
    for (int gpu = 0; gpu < node.gpuCount() && found < count; gpu++) {
      if (node.gpuFree(gpu) == PodSpec.MILLI) {
        chosen[found++] = gpu;
      }
    }
    return found == count ? chosen : null;
  }

  /**
   * Best fit inside the node for a share of one GPU: the GPU with the least free room that still
   * holds {@code milli}, ties to the lowest index; -1 when none has room.
   */
  public static int tightestGpu(NodeState node, int milli) {
    int best = -1;
    for (int gpu = 0; gpu < node.gpuCount(); gpu++) {
      int free = node.gpuFree(gpu);
      if (free >= milli && (best < 0 || free < node.gpuFree(best))) {
        best = gpu;
      }
    }
    return best;
  }
}
