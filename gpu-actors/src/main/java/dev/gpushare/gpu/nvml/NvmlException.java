package dev.gpushare.gpu.nvml;

/**
 * An NVML call returned an error that is not a value (see {@link NvmlCheck}): carries the typed
 * {@link NvmlError}, the raw return code (which differs from {@code error().code()} only for a code
 * unknown to {@link NvmlError}) and the NVML function that returned it.
 */
public final class NvmlException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final NvmlError error;
  private final int code;
  private final String function;

  /** For the return code {@code code} (non-zero) of the NVML function {@code function}. */
  public NvmlException(String function, int code) {
    this(function, code, NvmlError.ofCode(code), null);
  }

  NvmlException(String function, int code, NvmlError error, String detail) {
    super(message(function, code, error, detail));
    this.error = error;
    this.code = code;
    this.function = function;
  }

  private static String message(String function, int code, NvmlError error, String detail) {
    String what =
        NvmlError.isKnown(code)
            ? error.describe()
            : "unknown NVML return code " + code + " (treated as " + error.nvmlName() + ")";
    return function + " failed: " + what + (detail == null ? "" : ": " + detail);
  }

  /** The typed error ({@link NvmlError#UNKNOWN} for an unknown code). */
  public NvmlError error() {
    return error;
  }

  /** The raw {@code nvmlReturn_t} value. */
  public int code() {
    return code;
  }

  /** The NVML function that returned the error, for example {@code "nvmlInit_v2"}. */
  public String function() {
    return function;
  }
}
