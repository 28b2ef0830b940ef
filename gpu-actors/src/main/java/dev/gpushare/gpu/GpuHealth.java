package dev.gpushare.gpu;

import java.util.Objects;
import java.util.Optional;

/**
 * Whether a GPU can take work, and if not, why: for example {@code "GPU is lost
 * (NVML_ERROR_GPU_IS_LOST)"} or {@code "Xid 79 reported (GPU has fallen off the bus)"}.
 *
 * @param healthy whether the device can take work now
 * @param reason why it cannot; empty when healthy (and may be empty when a backend knows no reason)
 */
public record GpuHealth(boolean healthy, Optional<String> reason) {

  /** A healthy device. */
  public static final GpuHealth HEALTHY = new GpuHealth(true, Optional.empty());

  public GpuHealth {
    Objects.requireNonNull(reason, "reason");
  }

  /** An unhealthy device, for {@code reason}. */
  public static GpuHealth unhealthy(String reason) {
    return new GpuHealth(false, Optional.of(reason));
  }
}
