package dev.gpushare.gpu.nvml;

import static org.bytedeco.cuda.global.nvml.*;

import java.util.HashMap;
import java.util.Map;

/**
 * Every {@code NVML_ERROR_*} return code of {@code nvml.h}, with a human message. The codes are the
 * presets' compile-time constants (javac inlines them: naming one loads no native code). {@code
 * NVML_SUCCESS} is not an error and has no constant here; a code this enum does not know (a newer
 * driver's) maps to {@link #UNKNOWN} through {@link #ofCode(int)}, and {@link NvmlException} keeps
 * the raw code.
 */
public enum NvmlError {
  UNINITIALIZED(NVML_ERROR_UNINITIALIZED, "NVML was not initialized"),
  INVALID_ARGUMENT(NVML_ERROR_INVALID_ARGUMENT, "invalid argument"),
  NOT_SUPPORTED(NVML_ERROR_NOT_SUPPORTED, "not supported by this device or driver"),
  NO_PERMISSION(NVML_ERROR_NO_PERMISSION, "insufficient permissions"),
  ALREADY_INITIALIZED(NVML_ERROR_ALREADY_INITIALIZED, "already initialized"),
  NOT_FOUND(NVML_ERROR_NOT_FOUND, "not found"),
  INSUFFICIENT_SIZE(NVML_ERROR_INSUFFICIENT_SIZE, "buffer too small"),
  INSUFFICIENT_POWER(NVML_ERROR_INSUFFICIENT_POWER, "insufficient external power"),
  DRIVER_NOT_LOADED(NVML_ERROR_DRIVER_NOT_LOADED, "the NVIDIA kernel driver is not loaded"),
  TIMEOUT(NVML_ERROR_TIMEOUT, "timed out"),
  IRQ_ISSUE(NVML_ERROR_IRQ_ISSUE, "interrupt request issue with the GPU"),
  LIBRARY_NOT_FOUND(NVML_ERROR_LIBRARY_NOT_FOUND, "a library NVML needs was not found"),
  FUNCTION_NOT_FOUND(NVML_ERROR_FUNCTION_NOT_FOUND, "function not implemented by this driver"),
  CORRUPTED_INFOROM(NVML_ERROR_CORRUPTED_INFOROM, "the GPU's infoROM is corrupted"),
  GPU_IS_LOST(NVML_ERROR_GPU_IS_LOST, "GPU is lost"),
  RESET_REQUIRED(NVML_ERROR_RESET_REQUIRED, "GPU needs a reset"),
  OPERATING_SYSTEM(NVML_ERROR_OPERATING_SYSTEM, "the operating system blocked the call"),
  LIB_RM_VERSION_MISMATCH(
      NVML_ERROR_LIB_RM_VERSION_MISMATCH,
      "libnvidia-ml.so and the kernel driver are different versions"),
  IN_USE(NVML_ERROR_IN_USE, "in use by another client"),
  MEMORY(NVML_ERROR_MEMORY, "insufficient memory"),
  NO_DATA(NVML_ERROR_NO_DATA, "no data"),
  VGPU_ECC_NOT_SUPPORTED(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "vGPU does not support ECC"),
  INSUFFICIENT_RESOURCES(NVML_ERROR_INSUFFICIENT_RESOURCES, "insufficient resources"),
  FREQ_NOT_SUPPORTED(NVML_ERROR_FREQ_NOT_SUPPORTED, "frequency not supported"),
  ARGUMENT_VERSION_MISMATCH(
      NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "the argument's structure version is not supported"),
  DEPRECATED(NVML_ERROR_DEPRECATED, "deprecated"),
  NOT_READY(NVML_ERROR_NOT_READY, "not ready"),
  GPU_NOT_FOUND(NVML_ERROR_GPU_NOT_FOUND, "GPU not found"),
  INVALID_STATE(NVML_ERROR_INVALID_STATE, "invalid state"),
  UNKNOWN(NVML_ERROR_UNKNOWN, "unknown error");

  private static final Map<Integer, NvmlError> BY_CODE = new HashMap<>();

  static {
    for (NvmlError e : values()) {
      BY_CODE.put(e.code, e);
    }
  }

  private final int code;
  private final String message;

  NvmlError(int code, String message) {
    this.code = code;
    this.message = message;
  }

  /** The {@code nvmlReturn_t} value. */
  public int code() {
    return code;
  }

  /** A short human message, for example {@code "GPU is lost"}. */
  public String message() {
    return message;
  }

  /** The name in {@code nvml.h}, for example {@code "NVML_ERROR_GPU_IS_LOST"}. */
  public String nvmlName() {
    return "NVML_ERROR_" + name();
  }

  /** {@code "GPU is lost (NVML_ERROR_GPU_IS_LOST)"}. */
  public String describe() {
    return message + " (" + nvmlName() + ")";
  }

  /**
   * The error for a non-zero return code; {@link #UNKNOWN} for a code this enum does not know.
   *
   * @throws IllegalArgumentException for {@code NVML_SUCCESS} (0), which is not an error
   */
  public static NvmlError ofCode(int code) {
    if (code == NVML_SUCCESS) {
      throw new IllegalArgumentException("NVML_SUCCESS (0) is not an error");
    }
    return BY_CODE.getOrDefault(code, UNKNOWN);
  }

  /** Whether {@code code} is one of this enum's codes. */
  public static boolean isKnown(int code) {
    return BY_CODE.containsKey(code);
  }
}
