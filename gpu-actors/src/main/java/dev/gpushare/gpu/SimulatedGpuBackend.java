package dev.gpushare.gpu;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A scriptable stand-in for a GPU-HPN node's GPUs: {@code count} devices of one model, with UUIDs
 * derived from the node name and index (stable across restarts, like real UUIDs), and health that
 * tests can change, and processes that can be scripted ({@link ScriptableGpus}). Thread-safe. Made
 * through {@link GpuBackends#simulated}: nothing outside this package names it.
 */
final class SimulatedGpuBackend implements GpuBackend, ScriptableGpus {
  private final String node;
  private final String model;
  private final long memoryMiB;
  private volatile int count;
  private final Set<String> unhealthy = ConcurrentHashMap.newKeySet();
  private final Map<Integer, List<GpuProcess>> processes = new ConcurrentHashMap<>();

  SimulatedGpuBackend(String node, int count, String model, long memoryMiB) {
    if (count < 0) {
      throw new IllegalArgumentException("GPU count " + count + " for node " + node + " is < 0");
    }
    this.node = node;
    this.count = count;
    this.model = model;
    this.memoryMiB = memoryMiB;
  }

  /** The UUID the simulated device {@code index} of {@code node} reports. */
  static String uuidOf(String node, int index) {
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

  @Override
  public Optional<ScriptableGpus> scriptable() {
    return Optional.of(this);
  }

  /**
   * Every device as scripted ({@link #script}): memory used is the sum of its processes' memory,
   * utilisation the sum of their SM utilisation (at most 100); unscripted devices are idle with no
   * processes. MIG disabled; healthy unless {@link #setHealthy} said otherwise.
   */
  @Override
  public List<GpuSample> sample() {
    List<GpuSample> samples = new ArrayList<>();
    for (GpuDevice d : devices()) {
      GpuHealth health =
          healthy(d.uuid())
              ? GpuHealth.HEALTHY
              : GpuHealth.unhealthy("marked unhealthy (simulated)");
      List<GpuProcess> scripted = processes.getOrDefault(d.index(), List.of());
      long used = 0;
      int sm = 0;
      List<GpuProcessSample> listed = new ArrayList<>();
      for (GpuProcess p : scripted) {
        used += p.usedMemoryMiB();
        sm += p.smUtilizationPercent().orElse(0);
        listed.add(new GpuProcessSample(p.pid(), p.usedMemoryMiB(), p.smUtilizationPercent()));
      }
      samples.add(
          new GpuSample(
              d.index(),
              d.uuid(),
              used,
              d.memoryMiB(),
              OptionalInt.of(Math.min(100, sm)),
              listed,
              health,
              Optional.of(false)));
    }
    return samples;
  }

  @Override
  public void script(int index, List<GpuProcess> running) {
    if (index < 0 || index >= count) {
      throw new IllegalArgumentException(
          "GPU index " + index + " of node " + node + ": want 0.." + (count - 1));
    }
    processes.put(index, List.copyOf(running));
  }

  @Override
  public Optional<dev.gpushare.gpu.proc.ProcessPods.Identity> identityOf(long pid) {
    return Optional.empty(); // scripted processes are no processes of this machine
  }

  @Override
  public Optional<String> podUidOf(long pid) {
    for (List<GpuProcess> list : processes.values()) {
      for (GpuProcess p : list) {
        if (p.pid() == pid) {
          return Optional.of(p.podUid());
        }
      }
    }
    return Optional.empty();
  }

  /** A scripted process ends: it leaves its device's script (false: no such process). */
  @Override
  public boolean kill(long pid) {
    boolean found = false;
    for (Map.Entry<Integer, List<GpuProcess>> e : processes.entrySet()) {
      List<GpuProcess> left = e.getValue().stream().filter(p -> p.pid() != pid).toList();
      if (left.size() != e.getValue().size()) {
        found = processes.replace(e.getKey(), e.getValue(), left) || found;
      }
    }
    return found;
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
