package dev.gpushare.gpu;

import dev.gpushare.arbiter.JsonSerializable;

/**
 * One GPU as a backend reports it: its real index on the node, UUID, model and total memory.
 *
 * @param memoryMiB total device memory in MiB
 */
public record GpuDevice(int index, String uuid, String model, long memoryMiB)
    implements JsonSerializable {}
