package dev.gpushare.gpu;

import dev.gpushare.gpu.proc.PodCgroup;
import dev.gpushare.gpu.proc.ProcessPods;
import java.util.List;
import java.util.Optional;

/**
 * Where GPUs come from: the devices of this node and their health. The simulated backend serves the
 * embedded default and tests ({@link GpuBackends#simulated}); the NVML backend (JavaCPP) serves
 * real GPU-HPN nodes. Callers see only plain records and this interface.
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

  /**
   * The UID of the pod a process on the node belongs to, if it is a pod's: from {@code
   * /proc/<pid>/cgroup} ({@link ProcessPods}) on a real node; the simulated backend knows its
   * scripted processes' pods.
   */
  default Optional<String> podUidOf(long pid) {
    return SYSTEM_PROCESSES.podOf(pid).map(PodCgroup::podUid);
  }

  /**
   * Ends a process that uses a GPU (SIGKILL), for {@code gpushare.gpu.ungranted-processes = kill}:
   * answers whether it was signalled. On a real node the member sees the GPUs' processes by their
   * host PIDs, so it needs the host's PID namespace ({@code hostPID: true}) to signal them; without
   * it, or without the permission, nothing is signalled and this answers false. The simulated
   * backend removes the process from its script.
   */
  default boolean kill(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::destroyForcibly).orElse(false);
  }

  /**
   * The way to tell these GPUs what they run, when they can be told (a simulated backend's); empty
   * for real devices, whose samples are measured and whose health is the driver's word.
   */
  default Optional<ScriptableGpus> scriptable() {
    return Optional.empty();
  }

  /** The node's own {@code /proc}. */
  ProcessPods SYSTEM_PROCESSES = new ProcessPods();
}
