package dev.gpushare.gpu;

import java.util.OptionalInt;

/**
 * A compute process on a GPU, with the pod it belongs to: what a backend that can be scripted
 * ({@link ScriptableGpus}) is told to run, and what its next samples report.
 *
 * @param pid the process ID on the node
 * @param podUid the UID of the pod it belongs to (what {@code /proc/<pid>/cgroup} tells on a real
 *     node)
 * @param usedMemoryMiB the device memory it uses
 * @param smUtilizationPercent its SM utilisation of the whole GPU; empty: the driver does not
 *     report it
 */
public record GpuProcess(
    long pid, String podUid, long usedMemoryMiB, OptionalInt smUtilizationPercent) {}
