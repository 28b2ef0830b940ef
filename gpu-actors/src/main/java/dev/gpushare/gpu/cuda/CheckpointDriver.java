package dev.gpushare.gpu.cuda;

import java.time.Duration;

/**
 * What the CUDA driver's checkpoint API does for one process (driver API since CUDA 12.8: {@code
 * cuCheckpointProcessGetState}, {@code Lock}, {@code Checkpoint}, {@code Restore}, {@code Unlock}).
 * The seam between the member's {@link Checkpointer} and the driver: {@link CudaDriver} is the real
 * one, tests and the simulated GPU backend have their own.
 *
 * <p>A process goes RUNNING → (lock) LOCKED → (checkpoint) CHECKPOINTED: its GPU memory is copied
 * to host memory and the GPU is released; (restore) → LOCKED on the GPU it had; (unlock) → RUNNING.
 * While LOCKED or CHECKPOINTED, the process's CUDA calls block; its CPU code runs on. Every call
 * throws {@link CudaException} when the driver refuses.
 */
public interface CheckpointDriver {

  /** A process's checkpoint state, as {@code CUprocessState}. */
  enum ProcessState {
    RUNNING,
    LOCKED,
    CHECKPOINTED,
    FAILED
  }

  /** The state of process {@code pid}; throws when the driver does not know it (no CUDA, gone). */
  ProcessState state(int pid);

  /**
   * Locks {@code pid}: waits up to {@code timeout} for its CUDA work in flight to finish and blocks
   * further calls.
   */
  void lock(int pid, Duration timeout);

  /** Copies the locked process's GPU memory to host memory and releases the GPU. */
  void checkpoint(int pid);

  /** Brings a checkpointed process's GPU memory back (on the GPU it had); it stays locked. */
  void restore(int pid);

  /** Lets a locked (restored) process run its CUDA calls again. */
  void unlock(int pid);

  /**
   * Whether a restore can place the process on another GPU than the one it was checkpointed on.
   * CUDA 12.9's {@code CUcheckpointRestoreArgs} has no field for it: false.
   */
  boolean restoresOnAnotherGpu();

  /** For logs: the driver and its version. */
  String describe();
}
