package dev.gpushare.gpu;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A scriptable stand-in for a GPU-HPN node's GPUs: {@code count} devices of one model, with UUIDs
 * derived from the node name and index (stable across restarts, like real UUIDs), and health that
 * tests or the admin API can change. Thread-safe.
 */
public final class SimulatedGpuBackend implements GpuBackend {
  private final String node;
  private final String model;
  private final long memoryMiB;
  private volatile int count;
  private final Set<String> unhealthy = ConcurrentHashMap.newKeySet();

  public SimulatedGpuBackend(String node, int count, String model, long memoryMiB) {
    if (count < 0) {
      throw new IllegalArgumentException("GPU count " + count + " for node " + node + " is < 0");
    }
    this.node = node;
    this.count = count;
    this.model = model;
    this.memoryMiB = memoryMiB;
  }

  /** The UUID the simulated device {@code index} of {@code node} reports. */
  public static String uuidOf(String node, int index) {
    return "GPU-" + UUID.nameUUIDFromBytes((node + "/" + index).getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public String name() {
    return "simulated";
  }

  @Override
  public List<GpuDevice> devices() {
    List<GpuDevice> devices = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      devices.add(new GpuDevice(i, uuidOf(node, i), model, memoryMiB));
    }
    return devices;
  }

  @Override
  public boolean healthy(String uuid) {
    return !unhealthy.contains(uuid);
  }

  /**
   * A minimal sample: every device idle (0 MiB used, utilisation 0, no processes), MIG disabled,
   * and healthy unless {@link #setHealthy} said otherwise.
   */
  @Override
  public List<GpuSample> sample() {
    List<GpuSample> samples = new ArrayList<>();
    for (GpuDevice d : devices()) {
      GpuHealth health =
          healthy(d.uuid())
              ? GpuHealth.HEALTHY
              : GpuHealth.unhealthy("marked unhealthy (simulated)");
      samples.add(
          new GpuSample(
              d.index(),
              d.uuid(),
              0,
              d.memoryMiB(),
              OptionalInt.of(0),
              List.of(),
              health,
              Optional.of(false)));
    }
    return samples;
  }

  /** Simulates a device failing ({@code false}) or coming back ({@code true}). */
  public void setHealthy(int index, boolean healthy) {
    if (healthy) {
      unhealthy.remove(uuidOf(node, index));
    } else {
      unhealthy.add(uuidOf(node, index));
    }
  }

  /** Simulates devices being added or removed (a node replaced with another shape). */
  public void resize(int newCount) {
    if (newCount < 0) {
      throw new IllegalArgumentException("GPU count " + newCount + " is < 0");
    }
    this.count = newCount;
  }
}
