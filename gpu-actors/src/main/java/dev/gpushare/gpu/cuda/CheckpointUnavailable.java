package dev.gpushare.gpu.cuda;

/**
 * The CUDA driver's checkpoint API cannot be used on this machine: why, and what would make it
 * usable. Pods that asked for {@code checkpoint} fall back to the signal contract.
 */
public final class CheckpointUnavailable extends Exception {
  private static final long serialVersionUID = 1L;

  public CheckpointUnavailable(String message, Throwable cause) {
    super(message, cause);
  }
}
