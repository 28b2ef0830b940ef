package dev.gpushare.http.launch;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.node.GpuSettings;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The GPU side {@code gpushare.gpu} of {@link EmbeddedConfig}, checked with the same rules and
 * messages (key, where it was set, the value given, what is accepted):
 *
 * <pre>
 * gpushare.gpu {
 *   backend = auto                  # auto (NVML when it loads, else simulated) | nvml | simulated
 *   telemetry-interval = 5s         # how often the node's GPUs are sampled; above 0
 *   idle-release-after = off        # off | a duration above 0: a Running pod idle that long is
 *                                   #   asked to hibernate, and released idle-release-grace later
 *   idle-release-grace = 30s        # at least 0
 *   memory-limit-enforcement = on   # on | off: memory used over a pod's limit revokes its share
 *   mps-root = off                  # off | an absolute path; default: $GPUSHARE_MPS_ROOT when set
 *   checkpoint = on                 # on | off: pods with gpushare.dev/preemption: checkpoint are
 *                                   #   checkpointed (CUDA driver) instead of signalled
 *   checkpoint-host-memory-limit = 64Gi  # host memory all checkpoints of the node may hold
 *   checkpoint-lock-timeout = 10s   # how long a lock may wait for CUDA work in flight; above 0
 *   compute-limit = auto            # auto | off: libgpushare.so keeps a pod's compute at or under
 *                                   #   its core limit when the node runs no MPS (auto), or never
 *   ungranted-processes = report    # report | kill: a pod's process on a GPU the pod does not hold
 *                                   #   gets an Event and a metric; kill: SIGKILL too
 *   host-proc = /proc               # where this member sees the host's /proc: NVML names GPU
 *                                   #   processes by host PIDs, mapped to pods through
 *                                   #   <host-proc>/<pid>/cgroup (deploy/: /host/proc, mounted)
 * }
 * </pre>
 *
 * Every key is optional; an absent key takes its default ({@link GpuSettings#DEFAULT}), except
 * {@code mps-root}, whose default is the environment variable {@value #MPS_ROOT_ENV} (set by the
 * deploy/mps component) when it is set and not empty.
 */
final class GpuConfig {

  static final String AT = "gpushare.gpu";

  /** The environment variable that gives {@code mps-root} when the configuration does not. */
  static final String MPS_ROOT_ENV = "GPUSHARE_MPS_ROOT";

  static final Set<String> KEYS =
      Set.of(
          "backend",
          "telemetry-interval",
          "idle-release-after",
          "idle-release-grace",
          "memory-limit-enforcement",
          "mps-root",
          "checkpoint",
          "checkpoint-host-memory-limit",
          "checkpoint-lock-timeout",
          "compute-limit",
          "ungranted-processes",
          "host-proc");

  private static final String BACKENDS =
      Arrays.stream(GpuBackends.Mode.values())
              .map(GpuBackends.Mode::configValue)
              .collect(Collectors.joining(" | "))
          + " (auto: NVML when libnvidia-ml.so.1 loads, else the simulated backend; nvml: NVML or"
          + " the launcher stops; simulated: never NVML)";
  private static final String ON_OFF = "on or off";
  private static final String MPS_ROOT =
      "off (the node runs no MPS) or the absolute path of the node's MPS directory, such as"
          + " \"/run/gpushare/mps\"";

  private static final String COMPUTE_LIMIT =
      "auto (libgpushare.so keeps each pod's compute at or under its core limit when the node"
          + " runs no MPS; under MPS, MPS does) or off (the library never limits compute)";

  private static final String UNGRANTED =
      "report (a pod's process on a GPU the pod does not hold gets an Event and a metric) or kill"
          + " (and the member ends it with SIGKILL)";

  private static final String HOST_PROC =
      "the absolute path at which this member sees the host's /proc, such as \"/proc\" (the"
          + " member shares the host's PID namespace) or \"/host/proc\" (the host's /proc mounted"
          + " there, as deploy/daemonset.yaml does)";

  private GpuConfig() {}

  /** {@code gpushare.gpu} of the {@code gpushare} section; {@code null} after an error. */
  static GpuSettings read(
      ConfigObject section, ConfigErrors errors, Function<String, String> environment) {
    GpuSettings d = GpuSettings.DEFAULT;
    ConfigObject gpu = errors.object(section, "gpu", "gpushare", false);
    if (gpu == null && section.get("gpu") != null) {
      return null;
    }
    if (gpu == null) {
      Optional<String> root = mpsRootFromEnvironment(errors, environment);
      return root == null
          ? null
          : new GpuSettings(d.backend(), d.telemetryInterval(), d.idle(), d.enforceMemory(), root);
    }
    errors.unknownKeys(gpu, AT, KEYS);
    Config config = gpu.toConfig();
    GpuBackends.Mode backend =
        gpu.get("backend") == null
            ? d.backend()
            : errors.scalar(gpu, "backend", AT, BACKENDS, GpuConfig::backend);
    Duration interval =
        gpu.get("telemetry-interval") == null
            ? d.telemetryInterval()
            : duration(
                config,
                gpu,
                "telemetry-interval",
                false,
                "a duration above 0, such as 5s or 500ms",
                errors);
    Optional<Duration> after;
    if (gpu.get("idle-release-after") == null) {
      after = d.idle().after();
    } else if (isOff(gpu.get("idle-release-after"))) {
      after = Optional.empty();
    } else {
      Duration a =
          duration(
              config,
              gpu,
              "idle-release-after",
              false,
              "off (no idle release) or a duration above 0, such as 10m",
              errors);
      after = a == null ? null : Optional.of(a);
    }
    Duration grace =
        gpu.get("idle-release-grace") == null
            ? d.idle().grace()
            : duration(
                config,
                gpu,
                "idle-release-grace",
                true,
                "a duration of at least 0, such as 30s",
                errors);
    Boolean enforce =
        gpu.get("memory-limit-enforcement") == null
            ? Boolean.valueOf(d.enforceMemory())
            : errors.scalar(gpu, "memory-limit-enforcement", AT, ON_OFF, GpuConfig::onOff);
    Optional<String> mpsRoot =
        gpu.get("mps-root") == null
            ? mpsRootFromEnvironment(errors, environment)
            : errors.scalar(gpu, "mps-root", AT, MPS_ROOT, GpuConfig::mpsRoot);
    GpuSettings.Checkpoints dc = d.checkpoints();
    Boolean checkpoint =
        gpu.get("checkpoint") == null
            ? Boolean.valueOf(dc.enabled())
            : errors.scalar(gpu, "checkpoint", AT, ON_OFF, GpuConfig::onOff);
    Long hostMemory =
        gpu.get("checkpoint-host-memory-limit") == null
            ? Long.valueOf(dc.hostMemoryLimitBytes())
            : errors.scalar(
                gpu,
                "checkpoint-host-memory-limit",
                AT,
                "a Kubernetes quantity of bytes, such as 64Gi or 500Mi (0: no checkpoint is taken)",
                GpuConfig::bytes);
    Duration lock =
        gpu.get("checkpoint-lock-timeout") == null
            ? dc.lockTimeout()
            : duration(
                config,
                gpu,
                "checkpoint-lock-timeout",
                false,
                "a duration above 0, such as 10s",
                errors);
    GpuSettings.ComputeLimit computeLimit =
        gpu.get("compute-limit") == null
            ? d.computeLimit()
            : errors.scalar(
                gpu, "compute-limit", AT, COMPUTE_LIMIT, GpuSettings.ComputeLimit::parse);
    UsageRules.UngrantedAction ungranted =
        gpu.get("ungranted-processes") == null
            ? d.ungrantedProcesses()
            : errors.scalar(
                gpu, "ungranted-processes", AT, UNGRANTED, UsageRules.UngrantedAction::parse);
    java.nio.file.Path hostProc =
        gpu.get("host-proc") == null
            ? d.hostProc()
            : errors.scalar(gpu, "host-proc", AT, HOST_PROC, GpuConfig::hostProc);
    if (backend == null
        || hostProc == null
        || ungranted == null
        || interval == null
        || after == null
        || grace == null
        || enforce == null
        || mpsRoot == null
        || checkpoint == null
        || hostMemory == null
        || lock == null
        || computeLimit == null) {
      return null;
    }
    return new GpuSettings(
        backend,
        interval,
        new IdleSettings(after, grace),
        enforce.booleanValue(),
        mpsRoot,
        new GpuSettings.Checkpoints(checkpoint.booleanValue(), hostMemory.longValue(), lock),
        computeLimit,
        ungranted,
        hostProc);
  }

  private static Optional<java.nio.file.Path> hostProc(String value) {
    return isAbsolutePath(value)
        ? Optional.of(java.nio.file.Path.of(value).normalize())
        : Optional.empty();
  }

  private static Optional<GpuBackends.Mode> backend(String value) {
    try {
      return Optional.of(GpuBackends.Mode.parse(value));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  static Optional<Boolean> onOff(String value) {
    switch (value.toLowerCase(Locale.ROOT)) {
      case "on":
      case "true":
      case "yes":
        return Optional.of(Boolean.TRUE);
      case "off":
      case "false":
      case "no":
        return Optional.of(Boolean.FALSE);
      default:
        return Optional.empty();
    }
  }

  private static Optional<Long> bytes(String value) {
    try {
      java.math.BigDecimal b = dev.gpushare.arbiter.Quantity.parse(value).value();
      return b.scale() > 0 && b.stripTrailingZeros().scale() > 0
          ? Optional.empty()
          : Optional.of(b.longValueExact());
    } catch (IllegalArgumentException | ArithmeticException e) {
      return Optional.empty();
    }
  }

  /** {@code off}, or an absolute path; wrapped twice: empty = rejected, of(empty) = off. */
  private static Optional<Optional<String>> mpsRoot(String value) {
    if (value.equalsIgnoreCase("off")) {
      return Optional.of(Optional.empty());
    }
    return isAbsolutePath(value) ? Optional.of(Optional.of(value)) : Optional.empty();
  }

  private static boolean isAbsolutePath(String value) {
    return value.startsWith("/") && value.indexOf('\0') < 0;
  }

  /** {@code $GPUSHARE_MPS_ROOT} when set and not empty, else off; {@code null} after an error. */
  private static Optional<String> mpsRootFromEnvironment(
      ConfigErrors errors, Function<String, String> environment) {
    String value = environment.apply(MPS_ROOT_ENV);
    if (value == null || value.isBlank()) {
      return Optional.empty();
    }
    String root = value.strip();
    if (!isAbsolutePath(root)) {
      errors.addGiven(
          AT + ".mps-root",
          "'" + root + "' given by the environment variable " + MPS_ROOT_ENV,
          "expected " + MPS_ROOT + " (unset " + MPS_ROOT_ENV + " or set " + AT + ".mps-root)");
      return null;
    }
    return Optional.of(root);
  }

  /** HOCON reads an unquoted {@code off} as the string "off" (a boolean only where one is read). */
  private static boolean isOff(ConfigValue value) {
    Object unwrapped = value.unwrapped();
    return unwrapped instanceof String s && s.strip().equalsIgnoreCase("off")
        || Boolean.FALSE.equals(unwrapped);
  }

  private static Duration duration(
      Config config,
      ConfigObject gpu,
      String key,
      boolean zeroAllowed,
      String rule,
      ConfigErrors errors) {
    ConfigValue value = gpu.get(key);
    try {
      Duration d = config.getDuration(key);
      if (!d.isNegative() && (zeroAllowed || !d.isZero())) {
        return d;
      }
    } catch (ConfigException e) {
      // reported below, with the accepted form
    }
    errors.add(AT + "." + key, value, "expected " + rule);
    return null;
  }
}
