package dev.gpushare.gpu;

/**
 * The GPU backend that the configuration asked for ({@code gpu.backend = nvml}) cannot be used on
 * this machine. The message says why (the missing library, or the NVML error) and what to install
 * or mount; {@link #reason()} is the short why alone.
 */
public final class GpuBackendUnavailable extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String reason;

  /**
   * @param reason the short why, for example {@code "libnvidia-ml.so.1 not found: ..."}
   * @param message the full message: the why and what to do about it
   * @param cause what failed
   */
  public GpuBackendUnavailable(String reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  /** The short why, without the advice: for one log line. */
  public String reason() {
    return reason;
  }
}
