package dev.gpushare.gpu;

import java.util.List;

/**
 * Where GPUs come from: the devices of this node and their health. The simulated backend serves the
 * embedded default and tests; the NVML backend (JavaCPP) serves real GPU-HPN nodes. Callers see
 * only plain records.
 */
public interface GpuBackend {

  /** A short name for logs and the API ({@code simulated}, {@code nvml}). */
  String name();

  /** The node's devices, ordered by index. */
  List<GpuDevice> devices();

  /** Whether the device can take work now. */
  boolean healthy(String uuid);

  /**
   * One telemetry sample of every device, ordered by index: memory, utilisation, processes, health
   * and MIG mode. Blocking (the NVML backend calls into the driver): run it on a dedicated blocking
   * dispatcher, never on an actor's thread.
   */
  List<GpuSample> sample();
}
