package dev.gpushare.gpu.nvml;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.javacpp.Loader;

/**
 * Which NVML functions the loaded {@code libnvidia-ml.so.1} exports. The JNI wrapper binds NVML
 * symbols lazily, so calling one that an older driver lacks does not throw: the dynamic linker
 * kills the whole JVM ("symbol lookup error"). Every call to a function newer than the baseline
 * below is therefore guarded here first, and the caller degrades ({@code Optional.empty()} or a
 * fallback) when it is absent.
 *
 * <p>Only meaningful after {@link NvmlLibrary#load()}: {@link Loader#addressof(String)} searches
 * the libraries loaded in the process.
 */
final class NvmlSymbols {
  /** The functions every supported driver has (R450 and later); checked once at start. */
  static final List<String> BASELINE =
      List.of(
          "nvmlInit_v2",
          "nvmlShutdown",
          "nvmlSystemGetDriverVersion",
          "nvmlDeviceGetCount_v2",
          "nvmlDeviceGetHandleByIndex_v2",
          "nvmlDeviceGetIndex",
          "nvmlDeviceGetUUID",
          "nvmlDeviceGetName",
          "nvmlDeviceGetMemoryInfo",
          "nvmlDeviceGetUtilizationRates");

  /** R510 and later; {@link #COMPUTE_PROCESSES_V2} before. */
  static final String COMPUTE_PROCESSES_V3 = "nvmlDeviceGetComputeRunningProcesses_v3";

  static final String COMPUTE_PROCESSES_V2 = "nvmlDeviceGetComputeRunningProcesses_v2";
  static final String MIG_MODE = "nvmlDeviceGetMigMode";
  static final String PROCESS_UTILIZATION = "nvmlDeviceGetProcessUtilization";
  static final String CUDA_DRIVER_VERSION = "nvmlSystemGetCudaDriverVersion_v2";
  static final String EVENT_SET_CREATE = "nvmlEventSetCreate";
  static final String REGISTER_EVENTS = "nvmlDeviceRegisterEvents";
  static final String EVENT_SET_WAIT_V2 = "nvmlEventSetWait_v2";
  static final String EVENT_SET_FREE = "nvmlEventSetFree";

  private static final Map<String, Boolean> PRESENT = new ConcurrentHashMap<>();

  private NvmlSymbols() {}

  /** Whether the loaded NVML exports {@code symbol}. */
  static boolean has(String symbol) {
    return PRESENT.computeIfAbsent(symbol, s -> Loader.addressof(s) != null);
  }

  /**
   * Throws unless every {@link #BASELINE} function is present.
   *
   * @throws NvmlException ({@link NvmlError#FUNCTION_NOT_FOUND}) naming the missing functions
   */
  static void requireBaseline() {
    List<String> missing = BASELINE.stream().filter(s -> !has(s)).toList();
    if (!missing.isEmpty()) {
      throw new NvmlException(
          missing.get(0),
          NvmlError.FUNCTION_NOT_FOUND.code(),
          NvmlError.FUNCTION_NOT_FOUND,
          "libnvidia-ml.so.1 lacks "
              + String.join(", ", missing)
              + ": the NVIDIA driver is too old (R450 or later is needed)");
    }
  }
}
