package dev.gpushare.gpu.nvml;

import static org.bytedeco.cuda.global.nvml.NVML_SUCCESS;

import java.util.EnumSet;
import java.util.Set;

/**
 * The one NVML return-code checker. Pure functions of the return code: no native code, testable
 * without a GPU.
 *
 * <p>{@link #require} turns every error into an {@link NvmlException}. {@link #optional} treats
 * {@code NVML_ERROR_NOT_SUPPORTED} as a value ("this device or driver has no such thing", which the
 * caller maps to {@code Optional.empty()}), and {@link #optionalPerProcess} also {@code
 * NVML_ERROR_NO_PERMISSION} (per-process queries in a container without the host's PID namespace or
 * without privileges).
 */
final class NvmlCheck {
  private static final Set<NvmlError> NONE = EnumSet.noneOf(NvmlError.class);
  private static final Set<NvmlError> NOT_SUPPORTED = EnumSet.of(NvmlError.NOT_SUPPORTED);
  private static final Set<NvmlError> PER_PROCESS =
      EnumSet.of(NvmlError.NOT_SUPPORTED, NvmlError.NO_PERMISSION);

  private NvmlCheck() {}

  /**
   * Checks {@code rc}, the return code of {@code function}.
   *
   * @param valueErrors errors that mean "no value" rather than failure
   * @return {@code true} on success, {@code false} for one of {@code valueErrors}
   * @throws NvmlException for any other error
   */
  static boolean check(String function, int rc, Set<NvmlError> valueErrors) {
    if (rc == NVML_SUCCESS) {
      return true;
    }
    NvmlError error = NvmlError.ofCode(rc);
    if (NvmlError.isKnown(rc) && valueErrors.contains(error)) {
      return false;
    }
    throw new NvmlException(function, rc);
  }

  /** Success, or an {@link NvmlException}, whatever the error (even not-supported). */
  static void require(String function, int rc) {
    check(function, rc, NONE);
  }

  /** {@code true} on success, {@code false} when not supported; throws for any other error. */
  static boolean optional(String function, int rc) {
    return check(function, rc, NOT_SUPPORTED);
  }

  /**
   * {@code true} on success, {@code false} when not supported or not permitted; throws for any
   * other error.
   */
  static boolean optionalPerProcess(String function, int rc) {
    return check(function, rc, PER_PROCESS);
  }
}
