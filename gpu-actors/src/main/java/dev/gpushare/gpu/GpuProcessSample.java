package dev.gpushare.gpu;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * One process running on a GPU at the time of a {@link GpuSample}.
 *
 * @param pid the process id as the driver reports it (the host's PID namespace, not the pod's)
 * @param usedMemoryMiB device memory the process holds, in MiB; 0 when the driver does not report
 *     it
 * @param smUtilizationPercent the process's share of the streaming multiprocessors over the last
 *     sampling period, in percent; empty when the driver gives no per-process utilisation (not
 *     supported, no permission, or no sample for this process yet)
 */
public record GpuProcessSample(long pid, long usedMemoryMiB, OptionalInt smUtilizationPercent) {
  public GpuProcessSample {
    Objects.requireNonNull(smUtilizationPercent, "smUtilizationPercent");
  }
}
