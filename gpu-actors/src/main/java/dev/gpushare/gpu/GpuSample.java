package dev.gpushare.gpu;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * One telemetry sample of one GPU, as {@link GpuBackend#sample()} takes it. Plain values only.
 *
 * @param index the device's index on the node (as in {@link GpuDevice#index()})
 * @param uuid the device's UUID
 * @param memoryUsedMiB device memory in use, in MiB
 * @param memoryTotalMiB total device memory, in MiB
 * @param utilizationPercent percent of the last sampling period during which a kernel ran; empty
 *     when the device does not report it (for example with MIG enabled)
 * @param processes the compute processes on the device (empty when there are none, or when the
 *     driver does not list them: see {@code processesListed})
 * @param health whether the device can take work, and why not
 * @param migEnabled whether MIG mode is enabled; empty when the device or driver does not support
 *     MIG
 * @param processesListed whether the driver listed the compute processes: when false, an empty
 *     {@code processes} says nothing about what runs on the device (so no pod on it can be judged
 *     idle)
 */
public record GpuSample(
    int index,
    String uuid,
    long memoryUsedMiB,
    long memoryTotalMiB,
    OptionalInt utilizationPercent,
    List<GpuProcessSample> processes,
    GpuHealth health,
    Optional<Boolean> migEnabled,
    boolean processesListed) {
  public GpuSample {
    Objects.requireNonNull(uuid, "uuid");
    Objects.requireNonNull(utilizationPercent, "utilizationPercent");
    processes = List.copyOf(processes);
    Objects.requireNonNull(health, "health");
    Objects.requireNonNull(migEnabled, "migEnabled");
  }

  /** A sample whose process list the driver gave. */
  public GpuSample(
      int index,
      String uuid,
      long memoryUsedMiB,
      long memoryTotalMiB,
      OptionalInt utilizationPercent,
      List<GpuProcessSample> processes,
      GpuHealth health,
      Optional<Boolean> migEnabled) {
    this(
        index,
        uuid,
        memoryUsedMiB,
        memoryTotalMiB,
        utilizationPercent,
        processes,
        health,
        migEnabled,
        true);
  }
}
