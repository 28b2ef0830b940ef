package dev.gpushare.gpu.nvml;

import java.util.Map;
import java.util.Optional;

/**
 * Which Xid errors (the driver's error reports, delivered by NVML as {@code
 * nvmlEventTypeXidCriticalError} events) take a GPU out of service. Deliberately short: the Xids
 * that NVIDIA's documentation says need a GPU reset, a node reboot or a field diagnosis. Other Xids
 * (for example 13, 31, 43, 45: an application's fault, a killed process) leave the GPU healthy.
 * Once reported, a critical Xid keeps the device unhealthy for the life of the {@link NvmlBackend}
 * (a reset or reboot restarts this process anyway).
 */
final class Xid {
  private static final Map<Long, String> CRITICAL =
      Map.of(
          48L, "double-bit ECC error",
          62L, "internal micro-controller halt",
          63L, "ECC page retirement or row remapping event",
          64L, "ECC page retirement or row remapping failure",
          74L, "NVLink error",
          79L, "GPU has fallen off the bus",
          92L, "high single-bit ECC error rate",
          94L, "contained ECC error",
          95L, "uncontained ECC error");

  private Xid() {}

  /** {@code "Xid 79 reported (GPU has fallen off the bus)"} for a critical Xid, else empty. */
  static Optional<String> unhealthyReason(long xid) {
    String what = CRITICAL.get(xid);
    return what == null ? Optional.empty() : Optional.of("Xid " + xid + " reported (" + what + ")");
  }
}
