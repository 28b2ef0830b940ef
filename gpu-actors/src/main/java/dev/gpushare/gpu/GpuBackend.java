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
   * Where this backend reads a process's cgroup: the node's {@code /proc} as this process sees the
   * host's ({@code gpushare.gpu.host-proc}); NVML names processes by their host PIDs.
   */
  default ProcessPods processes() {
    return SYSTEM_PROCESSES;
  }

  /**
   * The UID of the pod a process on the node belongs to, if it is a pod's: from {@code <host
   * proc>/<pid>/cgroup} ({@link #processes()}) on a real node; the simulated backend knows its
   * scripted processes' pods.
   */
  default Optional<String> podUidOf(long pid) {
    return processes().podOf(pid).map(PodCgroup::podUid);
  }

  /**
   * How the process with host PID {@code pid} knows itself (its PID in its own namespace and its
   * start time), from {@link #processes()}; the simulated backend's scripted processes have none.
   */
  default Optional<ProcessPods.Identity> identityOf(long pid) {
    return processes().identity(pid);
  }

  /**
   * Ends a process that uses a GPU (SIGKILL), for {@code gpushare.gpu.ungranted-processes = kill}:
   * answers whether it was signalled. On a real node the member sees the GPUs' processes by their
   * host PIDs; it signals one only where that PID names the same process in its own PID namespace
   * (the same pod and container in both {@code /proc}s: the member shares the host's PID namespace,
   * {@code hostPID: true}), never a process of its own namespace that happens to have the number.
   * Without it, or without the permission, nothing is signalled and this answers false. The
   * simulated backend removes the process from its script.
   */
  default boolean kill(long pid) {
    Optional<PodCgroup> host = processes().podOf(pid);
    if (host.isEmpty() || !host.equals(SYSTEM_PROCESSES.podOf(pid))) {
      return false;
    }
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
