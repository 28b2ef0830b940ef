package dev.gpushare.arbiter;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The enforcement contract (deploy/mps/README.md): the environment a granted share-pool workload
 * exports before it starts GPU work. {@code CUDA_VISIBLE_DEVICES} is enforced by the driver; the
 * thread percentage and the pinned memory limit only by an MPS control daemon for the GPU, whose
 * pipe and log directories are given when the node runs MPS.
 */
public final class WorkloadEnv {
  private WorkloadEnv() {}

  /**
   * The variables for a pod holding {@code limits} of the GPU {@code uuid} with {@code
   * gpuMemoryMiB}, in a stable order; {@code mpsRoot} is the node's MPS directory (one {@code
   * <uuid>/pipe} and {@code <uuid>/log} per GPU), empty when the node runs no MPS.
   */
  public static Map<String, String> of(
      String uuid, Share limits, long gpuMemoryMiB, Optional<String> mpsRoot) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("CUDA_VISIBLE_DEVICES", uuid);
    env.put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", Integer.toString(limits.core()));
    env.put(
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
        uuid + "=" + UsageRules.memoryLimitMiB(limits.memory(), gpuMemoryMiB) + "M");
    mpsRoot.ifPresent(
        root -> {
          String dir = root.endsWith("/") ? root + uuid : root + "/" + uuid;
          env.put("CUDA_MPS_PIPE_DIRECTORY", dir + "/pipe");
          env.put("CUDA_MPS_LOG_DIRECTORY", dir + "/log");
        });
    return env;
  }
}
