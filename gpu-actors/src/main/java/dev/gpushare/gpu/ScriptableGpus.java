package dev.gpushare.gpu;

import java.util.List;

/**
 * GPUs whose workload is told rather than measured: a backend that offers this ({@link
 * GpuBackend#scriptable()}) reports in its samples whatever processes it was last told each device
 * runs. The stand-in for a workload in the embedded mode and in tests; real devices do not offer
 * it.
 */
public interface ScriptableGpus {

  /**
   * Scripts what device {@code index} runs from now on (replacing what was scripted): its
   * processes, each of a pod. An empty list makes the device idle again.
   *
   * @throws IllegalArgumentException for an index the backend has no device of
   */
  void script(int index, List<GpuProcess> running);
}
