package dev.gpushare.node;

import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The GPU side of a member ({@code gpushare.gpu} in the launcher's config): which backend serves
 * the node it runs on, how often telemetry is sampled, what telemetry may do to a Running pod, and
 * whether the node runs MPS.
 *
 * @param backend {@code gpu.backend}: NVML, simulated, or NVML when it loads (auto)
 * @param telemetryInterval how often every device of the member's node(s) is sampled
 * @param idle idle release (off, or after how long, with the grace after the request to hibernate)
 * @param enforceMemory whether memory used over a pod's memory limit revokes its share
 * @param mpsRoot the node's MPS directory (one control daemon per GPU under {@code <root>/<uuid>}),
 *     empty when the node runs no MPS
 */
public record GpuSettings(
    GpuBackends.Mode backend,
    Duration telemetryInterval,
    IdleSettings idle,
    boolean enforceMemory,
    Optional<String> mpsRoot) {

  public static final Duration DEFAULT_TELEMETRY_INTERVAL = Duration.ofSeconds(5);

  /** The defaults: auto backend, a sample every 5 s, no idle release, memory enforced, no MPS. */
  public static final GpuSettings DEFAULT =
      new GpuSettings(
          GpuBackends.Mode.AUTO,
          DEFAULT_TELEMETRY_INTERVAL,
          IdleSettings.OFF,
          true,
          Optional.empty());

  public GpuSettings {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(idle, "idle");
    Objects.requireNonNull(mpsRoot, "mpsRoot");
    if (telemetryInterval.isNegative() || telemetryInterval.isZero()) {
      throw new IllegalArgumentException("telemetry interval " + telemetryInterval + ": want > 0");
    }
  }
}
