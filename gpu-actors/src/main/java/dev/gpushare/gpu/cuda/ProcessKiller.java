package dev.gpushare.gpu.cuda;

/**
 * Kills a process: the {@link Checkpointer}'s last resort when a process would otherwise stay
 * locked (or checkpointed) forever, and what it does to a pod whose restore it gives up on. The
 * real one is {@link #forcibly()}; tests record the calls.
 */
@FunctionalInterface
public interface ProcessKiller {

  /** Kills process {@code pid}; a process that is already gone is no error. */
  void kill(int pid);

  /**
   * {@code SIGKILL} through {@link ProcessHandle#destroyForcibly()}; nothing when {@code pid} is
   * gone.
   */
  static ProcessKiller forcibly() {
    return pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
  }
}
