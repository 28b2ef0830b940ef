package dev.gpushare.node;

import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.node.api.Views;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The GPU side of a member ({@code gpushare.gpu} in the launcher's config): which backend serves
 * the node it runs on, how often telemetry is sampled, what telemetry may do to a Running pod,
 * whether the node runs MPS, and whether {@code libgpushare.so} keeps pods at their core limit.
 *
 * @param backend {@code gpu.backend}: NVML, simulated, or NVML when it loads (auto)
 * @param telemetryInterval how often every device of the member's node(s) is sampled
 * @param idle idle release (off, or after how long, with the grace after the request to hibernate)
 * @param enforceMemory whether memory used over a pod's memory limit revokes its share
 * @param mpsRoot the node's MPS directory (one control daemon per GPU under {@code <root>/<uuid>}),
 *     empty when the node runs no MPS
 * @param checkpoints whether and how far the member checkpoints pods instead of signalling them
 * @param computeLimit {@code gpu.compute-limit}: whether the pod-side library keeps a pod's compute
 *     at or under its core limit ({@link #computeLimitMode()})
 * @param ungrantedProcesses {@code gpu.ungranted-processes}: what the member does about a pod's
 *     process on a GPU the pod does not hold (report: an Event and a metric; kill: SIGKILL too)
 * @param hostProc {@code gpu.host-proc}: where the member sees the host's {@code /proc}, whose
 *     {@code <pid>/cgroup} names the pod of a process NVML reports by its host PID ({@code /proc}
 *     when the member shares the host's PID namespace; deploy/ mounts it at {@code /host/proc})
 */
public record GpuSettings(
    GpuBackends.Mode backend,
    Duration telemetryInterval,
    IdleSettings idle,
    boolean enforceMemory,
    Optional<String> mpsRoot,
    Checkpoints checkpoints,
    ComputeLimit computeLimit,
    UsageRules.UngrantedAction ungrantedProcesses,
    Path hostProc) {

  /** The host's {@code /proc} as a member in the host's PID namespace sees it. */
  public static final Path HOST_PROC = Path.of("/proc");

  /** Settings that see the host's processes in {@code /proc} ({@link #HOST_PROC}). */
  public GpuSettings(
      GpuBackends.Mode backend,
      Duration telemetryInterval,
      IdleSettings idle,
      boolean enforceMemory,
      Optional<String> mpsRoot,
      Checkpoints checkpoints,
      ComputeLimit computeLimit,
      UsageRules.UngrantedAction ungrantedProcesses) {
    this(
        backend,
        telemetryInterval,
        idle,
        enforceMemory,
        mpsRoot,
        checkpoints,
        computeLimit,
        ungrantedProcesses,
        HOST_PROC);
  }

  /** Settings that report ungranted GPU use (the default) and never kill it. */
  public GpuSettings(
      GpuBackends.Mode backend,
      Duration telemetryInterval,
      IdleSettings idle,
      boolean enforceMemory,
      Optional<String> mpsRoot,
      Checkpoints checkpoints,
      ComputeLimit computeLimit) {
    this(
        backend,
        telemetryInterval,
        idle,
        enforceMemory,
        mpsRoot,
        checkpoints,
        computeLimit,
        UsageRules.UngrantedAction.REPORT);
  }

  /**
   * {@code gpushare.gpu.compute-limit}: {@code auto} (the default) lets {@code libgpushare.so} keep
   * a pod's compute at or under its core limit when the node runs no MPS (under MPS, MPS does);
   * {@code off} leaves compute unlimited by the library.
   */
  public enum ComputeLimit {
    AUTO("auto"),
    OFF("off");

    private final String configValue;

    ComputeLimit(String configValue) {
      this.configValue = configValue;
    }

    /** The value as the configuration writes it. */
    public String configValue() {
      return configValue;
    }

    /** The setting written {@code value} (any case), or empty. */
    public static Optional<ComputeLimit> parse(String value) {
      for (ComputeLimit c : values()) {
        if (c.configValue.equalsIgnoreCase(value)) {
          return Optional.of(c);
        }
      }
      return Optional.empty();
    }
  }

  /**
   * Who keeps a pod's compute at its core limit on this member's node, as the pod view shows it:
   * {@code off} when {@link #computeLimit()} is off, else {@code mps} when the node runs MPS
   * ({@link #mpsRoot()}), else {@code library}.
   */
  public Views.ComputeLimitMode computeLimitMode() {
    if (computeLimit == ComputeLimit.OFF) {
      return Views.ComputeLimitMode.OFF;
    }
    return mpsRoot.isPresent() ? Views.ComputeLimitMode.MPS : Views.ComputeLimitMode.LIBRARY;
  }

  /** Settings with the compute limit {@code auto}. */
  public GpuSettings(
      GpuBackends.Mode backend,
      Duration telemetryInterval,
      IdleSettings idle,
      boolean enforceMemory,
      Optional<String> mpsRoot,
      Checkpoints checkpoints) {
    this(backend, telemetryInterval, idle, enforceMemory, mpsRoot, checkpoints, ComputeLimit.AUTO);
  }

  /**
   * The node-level switch for {@code gpushare.dev/preemption: checkpoint} (issue 16).
   *
   * @param enabled whether the member checkpoints pods that ask for it ({@code off}: every pod gets
   *     the signal contract)
   * @param hostMemoryLimitBytes host memory all checkpoints of the node may hold; a checkpoint that
   *     would go beyond it is not taken (the signal contract applies)
   * @param lockTimeout how long the driver may wait for a process's CUDA work in flight
   */
  public record Checkpoints(boolean enabled, long hostMemoryLimitBytes, Duration lockTimeout) {
    /** On, 64 GiB, 10 s. */
    public static final Checkpoints DEFAULT =
        new Checkpoints(true, 64L << 30, Duration.ofSeconds(10));

    public Checkpoints {
      Objects.requireNonNull(lockTimeout, "lockTimeout");
      if (hostMemoryLimitBytes < 0) {
        throw new IllegalArgumentException(
            "checkpoint host memory limit " + hostMemoryLimitBytes + ": want >= 0");
      }
      if (lockTimeout.isNegative() || lockTimeout.isZero()) {
        throw new IllegalArgumentException("checkpoint lock timeout " + lockTimeout + ": want > 0");
      }
    }
  }

  /** Settings with the default {@link Checkpoints}. */
  public GpuSettings(
      GpuBackends.Mode backend,
      Duration telemetryInterval,
      IdleSettings idle,
      boolean enforceMemory,
      Optional<String> mpsRoot) {
    this(backend, telemetryInterval, idle, enforceMemory, mpsRoot, Checkpoints.DEFAULT);
  }

  public static final Duration DEFAULT_TELEMETRY_INTERVAL = Duration.ofSeconds(5);

  /**
   * The defaults: auto backend, a sample every 5 s, no idle release, memory enforced, no MPS,
   * checkpoints on, the compute limit auto.
   */
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
    Objects.requireNonNull(checkpoints, "checkpoints");
    Objects.requireNonNull(computeLimit, "computeLimit");
    Objects.requireNonNull(ungrantedProcesses, "ungrantedProcesses");
    Objects.requireNonNull(hostProc, "hostProc");
    if (telemetryInterval.isNegative() || telemetryInterval.isZero()) {
      throw new IllegalArgumentException("telemetry interval " + telemetryInterval + ": want > 0");
    }
  }
}
