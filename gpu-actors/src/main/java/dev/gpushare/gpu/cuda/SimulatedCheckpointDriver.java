package dev.gpushare.gpu.cuda;

import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import dev.gpushare.gpu.ScriptableGpus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The checkpoint driver of a simulated node (the embedded default and tests): a process's state
 * moves as the CUDA driver's does, and a checkpoint takes the process off its scripted GPU (its
 * memory is free in the next samples) until the restore puts it back on the same GPU — refused with
 * {@code CUDA_ERROR_OUT_OF_MEMORY} while the GPU lacks the room. Thread-safe.
 */
public final class SimulatedCheckpointDriver implements CheckpointDriver {
  /** {@code CUDA_ERROR_INVALID_VALUE}: what the driver answers for a pid without CUDA. */
  static final int INVALID_VALUE = 1;

  /** {@code CUDA_ERROR_ILLEGAL_STATE}. */
  static final int ILLEGAL_STATE = 401;

  private final GpuBackend backend;
  private final ScriptableGpus script;
  private final Set<Integer> locked = new HashSet<>();
  private final Map<Integer, Parked> checkpointed = new HashMap<>();

  private record Parked(int gpu, GpuProcess process) {}

  /**
   * @throws IllegalArgumentException when {@code backend} cannot be scripted (a real one)
   */
  public SimulatedCheckpointDriver(GpuBackend backend) {
    this.backend = backend;
    this.script =
        backend
            .scriptable()
            .orElseThrow(
                () -> new IllegalArgumentException(backend.name() + " is not a simulated backend"));
  }

  @Override
  public synchronized ProcessState state(int pid) {
    if (checkpointed.containsKey(pid)) {
      return ProcessState.CHECKPOINTED;
    }
    if (locked.contains(pid)) {
      return ProcessState.LOCKED;
    }
    if (find(pid) != null) {
      return ProcessState.RUNNING;
    }
    throw new CudaException(
        "cuCheckpointProcessGetState", pid, INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE");
  }

  @Override
  public synchronized void lock(int pid, Duration timeout) {
    require("cuCheckpointProcessLock", pid, ProcessState.RUNNING);
    locked.add(pid);
  }

  @Override
  public synchronized void checkpoint(int pid) {
    require("cuCheckpointProcessCheckpoint", pid, ProcessState.LOCKED);
    Found f = find(pid);
    if (f == null) {
      throw new CudaException(
          "cuCheckpointProcessCheckpoint", pid, INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE");
    }
    List<GpuProcess> rest = new ArrayList<>(processesOf(f.sample()));
    rest.removeIf(p -> p.pid() == pid);
    script.script(f.sample().index(), rest);
    locked.remove(pid);
    checkpointed.put(pid, new Parked(f.sample().index(), f.process()));
  }

  @Override
  public synchronized void restore(int pid) {
    require("cuCheckpointProcessRestore", pid, ProcessState.CHECKPOINTED);
    Parked parked = checkpointed.get(pid);
    GpuSample gpu =
        backend.sample().stream().filter(g -> g.index() == parked.gpu()).findFirst().orElse(null);
    if (gpu == null
        || gpu.memoryUsedMiB() + parked.process().usedMemoryMiB() > gpu.memoryTotalMiB()) {
      throw new CudaException(
          "cuCheckpointProcessRestore",
          pid,
          CudaException.OUT_OF_MEMORY,
          "CUDA_ERROR_OUT_OF_MEMORY");
    }
    List<GpuProcess> now = new ArrayList<>(processesOf(gpu));
    now.add(parked.process());
    script.script(parked.gpu(), now);
    checkpointed.remove(pid);
    locked.add(pid);
  }

  @Override
  public synchronized void unlock(int pid) {
    require("cuCheckpointProcessUnlock", pid, ProcessState.LOCKED);
    locked.remove(pid);
  }

  @Override
  public boolean restoresOnAnotherGpu() {
    return false;
  }

  @Override
  public String describe() {
    return "simulated CUDA checkpoints on " + backend.name();
  }

  private void require(String call, int pid, ProcessState wanted) {
    ProcessState state = state(pid);
    if (state != wanted) {
      throw new CudaException(call, pid, ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE");
    }
  }

  private record Found(GpuSample sample, GpuProcess process) {}

  private Found find(int pid) {
    for (GpuSample g : backend.sample()) {
      for (GpuProcessSample p : g.processes()) {
        if (p.pid() == pid) {
          return new Found(
              g,
              new GpuProcess(
                  p.pid(),
                  backend.podUidOf(p.pid()).orElse(null),
                  p.usedMemoryMiB(),
                  p.smUtilizationPercent()));
        }
      }
    }
    return null;
  }

  private List<GpuProcess> processesOf(GpuSample g) {
    List<GpuProcess> list = new ArrayList<>();
    for (GpuProcessSample p : g.processes()) {
      list.add(
          new GpuProcess(
              p.pid(),
              backend.podUidOf(p.pid()).orElse(null),
              p.usedMemoryMiB(),
              p.smUtilizationPercent()));
    }
    return list;
  }
}
