package dev.gpushare.gpu;

import dev.gpushare.gpu.nvml.NvmlBackend;
import dev.gpushare.gpu.nvml.NvmlError;
import dev.gpushare.gpu.nvml.NvmlException;
import dev.gpushare.gpu.proc.ProcessPods;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Chooses the GPU backend from the configuration value {@value #CONFIG_KEY} ({@code auto | nvml |
 * simulated}).
 *
 * <ul>
 *   <li>{@code simulated}: the simulated backend.
 *   <li>{@code nvml}: NVML, or a {@link GpuBackendUnavailable} that names the missing library (or
 *       the NVML error) and what to install or mount.
 *   <li>{@code auto}: NVML when it loads and initializes, else the simulated backend, with one log
 *       line saying why.
 * </ul>
 *
 * <p>This is the one place where NVML's loading failures ({@link UnsatisfiedLinkError}, {@link
 * NoClassDefFoundError}, {@link ExceptionInInitializerError}: all {@link LinkageError}s) are
 * caught. {@code libnvidia-ml.so.1} is found by the dynamic linker ({@code LD_LIBRARY_PATH}, the
 * {@code ld.so} cache) or, in another directory, through the system property JavaCPP already
 * honours, {@code -Dorg.bytedeco.javacpp.platform.preloadpath=<dir>} (or {@code
 * -Djava.library.path=<dir>}); see {@code dev.gpushare.gpu.nvml.NvmlLibrary}.
 */
public final class GpuBackends {
  /** The configuration key. */
  public static final String CONFIG_KEY = "gpushare.gpu.backend";

  /** What to do when {@code libnvidia-ml.so.1} is missing. */
  static final String INSTALL_NVML =
      "Install the NVIDIA driver on the node; in a container, run it through the NVIDIA container"
          + " toolkit (runtimeClassName: nvidia, or NVIDIA_VISIBLE_DEVICES=all with"
          + " NVIDIA_DRIVER_CAPABILITIES=utility,compute) so that"
          + " /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 is mounted; a libnvidia-ml.so.1 in"
          + " another directory is found through LD_LIBRARY_PATH or"
          + " -Dorg.bytedeco.javacpp.platform.preloadpath=<dir>. Or set "
          + CONFIG_KEY
          + " = simulated.";

  private static final Pattern MISSING_LIBRARY =
      Pattern.compile("(lib[\\w.+-]+?\\.so[.\\d]*): cannot open shared object file");
  private static final Pattern MISSING_VERSION =
      Pattern.compile("version `([\\w.]+)' not found \\(required by ([^)]+)\\)");

  private GpuBackends() {}

  /**
   * A simulated backend: {@code count} devices of one model on {@code node}, with UUIDs derived
   * from the node name and index (stable across restarts, like real UUIDs), idle until scripted
   * ({@link GpuBackend#scriptable()}).
   *
   * @throws IllegalArgumentException when {@code count} is below 0
   */
  public static GpuBackend simulated(String node, int count, String model, long memoryMiB) {
    return new SimulatedGpuBackend(node, count, model, memoryMiB);
  }

  /**
   * The devices a node's {@code status.capacity} stands for until its hardware reports its own:
   * {@code count} devices of one model, with the UUIDs the simulated backend of {@code node}
   * reports.
   */
  public static List<GpuDevice> fromCapacity(String node, int count, String model, long memoryMiB) {
    return simulated(node, count, model, memoryMiB).devices();
  }

  /**
   * Whether {@code gpus} are devices a capacity stands for ({@link #fromCapacity}), not ones a real
   * backend reported: each has the UUID derived from {@code node} and its index.
   */
  public static boolean derivedFromCapacity(String node, List<GpuDevice> gpus) {
    return gpus.stream()
        .allMatch(g -> g.uuid().equals(SimulatedGpuBackend.uuidOf(node, g.index())));
  }

  /** The value of {@value #CONFIG_KEY}. */
  public enum Mode {
    /** NVML when it works, else the simulated backend. */
    AUTO,
    /** NVML, or fail. */
    NVML,
    /** The simulated backend. */
    SIMULATED;

    /**
     * Parses a configuration value: {@code auto}, {@code nvml} or {@code simulated} (case and
     * surrounding blanks do not matter).
     *
     * @throws IllegalArgumentException naming the key, the value and the accepted values
     */
    public static Mode parse(String value) {
      String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT);
      for (Mode m : values()) {
        if (m.configValue().equals(v)) {
          return m;
        }
      }
      throw new IllegalArgumentException(
          CONFIG_KEY
              + " = "
              + (value == null ? "(missing)" : "'" + value + "'")
              + " is not valid; accepted values: "
              + Arrays.stream(values()).map(Mode::configValue).collect(Collectors.joining(", ")));
    }

    /** The value as written in the configuration: {@code auto}, {@code nvml}, {@code simulated}. */
    public String configValue() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * The chosen backend, and why (the line that {@link #select} logged).
   *
   * @param backend the backend; an {@link NvmlBackend} is {@link AutoCloseable}: close it at
   *     shutdown
   * @param why one line, for example {@code "gpushare.gpu.backend=auto: NVML unavailable (...);
   *     using the simulated backend"}
   */
  public record Selected(GpuBackend backend, String why) {
    public Selected {
      Objects.requireNonNull(backend, "backend");
      Objects.requireNonNull(why, "why");
    }
  }

  /**
   * Chooses the backend for {@code mode} and logs exactly one line saying which and why.
   *
   * @param simulated makes the simulated backend (called only when it is chosen)
   * @param log receives the one line
   * @throws GpuBackendUnavailable for {@link Mode#NVML} when NVML cannot be loaded or initialized
   */
  public static Selected select(Mode mode, Supplier<GpuBackend> simulated, Consumer<String> log) {
    return select(mode, simulated, log, GpuBackend.SYSTEM_PROCESSES);
  }

  /**
   * {@link #select(Mode, Supplier, Consumer)}, NVML mapping its processes (host PIDs) to pods
   * through {@code hostProcesses}, the host's {@code /proc} as this member sees it.
   */
  public static Selected select(
      Mode mode, Supplier<GpuBackend> simulated, Consumer<String> log, ProcessPods hostProcesses) {
    Objects.requireNonNull(mode, "mode");
    String key = CONFIG_KEY + "=" + mode.configValue() + ": ";
    Selected selected;
    switch (mode) {
      case SIMULATED:
        selected = new Selected(simulated.get(), key + "using the simulated backend");
        break;
      case NVML:
        {
          NvmlBackend nvml = openNvml(key, hostProcesses);
          selected = new Selected(nvml, key + "using " + nvml.describe());
          break;
        }
      case AUTO:
        {
          NvmlBackend nvml;
          try {
            nvml = openNvml(key, hostProcesses);
          } catch (GpuBackendUnavailable e) {
            selected =
                new Selected(
                    simulated.get(),
                    key + "NVML unavailable (" + e.reason() + "); using the simulated backend");
            break;
          }
          selected = new Selected(nvml, key + "using " + nvml.describe());
          break;
        }
      default:
        throw new IllegalArgumentException(mode.toString());
    }
    log.accept(selected.why());
    return selected;
  }

  private static NvmlBackend openNvml(String key, ProcessPods hostProcesses) {
    try {
      return NvmlBackend.open(hostProcesses);
    } catch (LinkageError e) {
      String reason = loadFailure(e);
      throw new GpuBackendUnavailable(
          reason, key + "NVML unavailable: " + reason + ". " + advice(reason), e);
    } catch (NvmlException e) {
      String reason = e.getMessage();
      throw new GpuBackendUnavailable(
          reason, key + "NVML unavailable: " + reason + ". " + advice(e.error()), e);
    }
  }

  /**
   * What a loading failure means, from the messages in its cause chain: {@code "libnvidia-ml.so.1
   * not found: <the dynamic linker's message>"}, a C library too old, or the presets jars missing.
   */
  static String loadFailure(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String message = String.valueOf(t.getMessage());
      Matcher missing = MISSING_LIBRARY.matcher(message);
      if (missing.find()) {
        return missing.group(1) + " not found: " + message;
      }
      Matcher version = MISSING_VERSION.matcher(message);
      if (version.find()) {
        return version.group(1)
            + " not found (the JNI library needs a newer system library): "
            + message;
      }
    }
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof NoClassDefFoundError || t instanceof ClassNotFoundException) {
        return "the JavaCPP CUDA presets are not on the class path (org.bytedeco:cuda and"
            + " org.bytedeco:javacpp, with their linux-x86_64 jars): "
            + t;
      }
      if (String.valueOf(t.getMessage()).contains("jninvml")) {
        return "the JNI wrapper libjninvml.so is missing (org.bytedeco:cuda:linux-x86_64 jar): "
            + t.getMessage();
      }
    }
    return failure.toString();
  }

  private static String advice(String reason) {
    if (reason.startsWith("libnvidia-ml.so") || reason.startsWith("libcuda.so")) {
      return INSTALL_NVML;
    }
    if (reason.startsWith("GLIBC")) {
      return "The JavaCPP JNI libraries need glibc 2.34 or later (Debian 12, Ubuntu 22.04, RHEL 9"
          + " or later); use such a base image, or set "
          + CONFIG_KEY
          + " = simulated.";
    }
    return "Check the installation, or set " + CONFIG_KEY + " = simulated.";
  }

  private static String advice(NvmlError error) {
    switch (error) {
      case DRIVER_NOT_LOADED:
        return "The NVIDIA kernel module is not loaded: check the driver installation on the node"
            + " (nvidia-smi).";
      case LIB_RM_VERSION_MISMATCH:
        return "The libnvidia-ml.so.1 in use does not match the kernel driver: reboot the node"
            + " after a driver upgrade, or mount the driver's own libraries (NVIDIA container"
            + " toolkit).";
      case NO_PERMISSION:
        return "The process may not open /dev/nvidia*: run the pod through the NVIDIA container"
            + " toolkit (runtimeClassName: nvidia, NVIDIA_VISIBLE_DEVICES=all,"
            + " NVIDIA_DRIVER_CAPABILITIES=utility,compute).";
      case FUNCTION_NOT_FOUND:
        return "Upgrade the NVIDIA driver (R450 or later).";
      default:
        return "Check the NVIDIA driver on the node (nvidia-smi), or set "
            + CONFIG_KEY
            + " = simulated.";
    }
  }
}
