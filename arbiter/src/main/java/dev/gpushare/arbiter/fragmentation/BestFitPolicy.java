package dev.gpushare.arbiter.fragmentation;

/**
 * The paper's best-fit baseline (artifact {@code BestFitScore}): the node whose free resources
 * after placement are least, as {@code 0.5 × CPU left / 128 cores + 0.5 × GPU left / 8 GPUs}; the
 * score {@code (1 − that) × 100} is truncated to an integer as the scheduler framework keeps it, so
 * nearly equal nodes tie ({@link NodeScoringPolicy}). Inside the node a share pod takes the GPU
 * with the least free room that holds it (lowest index on ties); whole-GPU pods take the
 * lowest-indexed free GPUs.
 */
final class BestFitPolicy extends NodeScoringPolicy {
  /** The artifact's normalisation: the largest node's CPU (milli) and GPU (thousandths). */
  static final double MAX_SPEC_CPU = 128_000;

  static final double MAX_SPEC_GPU = 8_000;

  BestFitPolicy(Cluster cluster, long seed) {
    super(cluster, seed);
  }

  @Override
  void score(int index, NodeState node, PodSpec pod, Score out) {
    if (!Fit.fits(node, pod)) {
      return;
    }
    double left =
        0.5 * (node.cpuFree() - pod.cpuMilli()) / MAX_SPEC_CPU
            + 0.5 * (node.gpuFreeTotal() - pod.gpuDemandMilli()) / MAX_SPEC_GPU;
    out.value = (long) ((1.0 - left) * 100);
    out.gpu = pod.isShare() ? Fit.tightestGpu(node, pod.gpuMilli()) : -1;
  }
}
