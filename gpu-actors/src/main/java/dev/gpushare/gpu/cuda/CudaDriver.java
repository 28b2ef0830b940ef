package dev.gpushare.gpu.cuda;

import java.time.Duration;
import java.util.List;
import org.bytedeco.cuda.cudart.CUcheckpointCheckpointArgs;
import org.bytedeco.cuda.cudart.CUcheckpointLockArgs;
import org.bytedeco.cuda.cudart.CUcheckpointRestoreArgs;
import org.bytedeco.cuda.cudart.CUcheckpointUnlockArgs;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;

/**
 * The real {@link CheckpointDriver}: the CUDA driver API through JavaCPP ({@link CudaLibrary}).
 * {@link #load} checks, before anything is called, that the driver is at least {@link
 * #MIN_DRIVER_VERSION} ({@code cuDriverGetVersion}) and that every function used is exported
 * ({@link Loader#addressof}): a missing one would kill the JVM at its first call. Every return code
 * goes through {@link #check}.
 *
 * <p>The checkpoint calls act on another process ({@code pid}); they need the driver to see it (the
 * host's PID namespace for a node member) and the right to ptrace it (root, or {@code
 * CAP_SYS_PTRACE}). Calls for one pid must not overlap; the member makes them from one actor.
 */
public final class CudaDriver implements CheckpointDriver {
  /** CUDA 12.8: the first driver with {@code cuCheckpointProcess*}. */
  public static final int MIN_DRIVER_VERSION = 12080;

  /** The driver functions used, each checked with {@code Loader.addressof} before use. */
  static final List<String> SYMBOLS =
      List.of(
          "cuDriverGetVersion",
          "cuGetErrorName",
          "cuCheckpointProcessGetState",
          "cuCheckpointProcessLock",
          "cuCheckpointProcessCheckpoint",
          "cuCheckpointProcessRestore",
          "cuCheckpointProcessUnlock");

  private final int version;

  private CudaDriver(int version) {
    this.version = version;
  }

  /**
   * Loads the driver API and checks it can checkpoint.
   *
   * @throws CheckpointUnavailable with the reason and what would fix it
   */
  public static CudaDriver load() throws CheckpointUnavailable {
    try {
      CudaLibrary.load();
    } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
      throw new CheckpointUnavailable(
          "CUDA checkpoint unavailable: the CUDA driver API could not be loaded ("
              + rootMessage(e)
              + "); it needs the NVIDIA driver's libcuda.so.1 (R570 or later) and the CUDA 12"
              + " runtime libcudart.so.12 that JavaCPP's wrapper links",
          e);
    }
    String missing = missingSymbols();
    if (!missing.isEmpty()) {
      throw new CheckpointUnavailable(
          "CUDA checkpoint unavailable: libcuda.so.1 lacks " + missing + " (needs CUDA 12.8, R570)",
          null);
    }
    int[] v = new int[1];
    int rc = cudart.cuDriverGetVersion(v);
    if (rc != 0) {
      throw new CheckpointUnavailable(
          "CUDA checkpoint unavailable: "
              + new CudaException("cuDriverGetVersion", 0, rc, name(rc)).getMessage(),
          null);
    }
    if (v[0] < MIN_DRIVER_VERSION) {
      throw new CheckpointUnavailable(
          "CUDA checkpoint unavailable: the driver supports CUDA "
              + versionText(v[0])
              + "; checkpointing needs "
              + versionText(MIN_DRIVER_VERSION)
              + " or later",
          null);
    }
    return new CudaDriver(v[0]);
  }

  /** The functions of {@link #SYMBOLS} that the loaded libraries do not export, comma-separated. */
  static String missingSymbols() {
    StringBuilder missing = new StringBuilder();
    for (String symbol : SYMBOLS) {
      Pointer address = Loader.addressof(symbol);
      if (address == null || address.isNull()) {
        missing.append(missing.length() == 0 ? "" : ", ").append(symbol);
      }
    }
    return missing.toString();
  }

  /** "12.9" for 12090. */
  static String versionText(int version) {
    return (version / 1000) + "." + (version % 1000) / 10;
  }

  /**
   * The one return-code checker: success, or a {@link CudaException} with the driver's name for the
   * code.
   */
  static void check(String call, int pid, int rc) {
    if (rc != 0) {
      throw new CudaException(call, pid, rc, name(rc));
    }
  }

  private static String name(int rc) {
    try (BytePointer name = new BytePointer((Pointer) null)) {
      if (cudart.cuGetErrorName(rc, name) == 0 && !name.isNull()) {
        return name.getString();
      }
    } catch (RuntimeException e) {
      // no name: the code alone
    }
    return null;
  }

  @Override
  public ProcessState state(int pid) {
    int[] state = new int[1];
    check("cuCheckpointProcessGetState", pid, cudart.cuCheckpointProcessGetState(pid, state));
    if (state[0] == cudart.CU_PROCESS_STATE_RUNNING) {
      return ProcessState.RUNNING;
    }
    if (state[0] == cudart.CU_PROCESS_STATE_LOCKED) {
      return ProcessState.LOCKED;
    }
    if (state[0] == cudart.CU_PROCESS_STATE_CHECKPOINTED) {
      return ProcessState.CHECKPOINTED;
    }
    return ProcessState.FAILED;
  }

  @Override
  public void lock(int pid, Duration timeout) {
    long ms = Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
    try (CUcheckpointLockArgs args = new CUcheckpointLockArgs()) {
      args.timeoutMs((int) ms);
      check("cuCheckpointProcessLock", pid, cudart.cuCheckpointProcessLock(pid, args));
    }
  }

  @Override
  public void checkpoint(int pid) {
    try (CUcheckpointCheckpointArgs args = new CUcheckpointCheckpointArgs()) {
      check("cuCheckpointProcessCheckpoint", pid, cudart.cuCheckpointProcessCheckpoint(pid, args));
    }
  }

  @Override
  public void restore(int pid) {
    try (CUcheckpointRestoreArgs args = new CUcheckpointRestoreArgs()) {
      check("cuCheckpointProcessRestore", pid, cudart.cuCheckpointProcessRestore(pid, args));
    }
  }

  @Override
  public void unlock(int pid) {
    try (CUcheckpointUnlockArgs args = new CUcheckpointUnlockArgs()) {
      check("cuCheckpointProcessUnlock", pid, cudart.cuCheckpointProcessUnlock(pid, args));
    }
  }

  @Override
  public boolean restoresOnAnotherGpu() {
    return false; // CUDA 12.9's CUcheckpointRestoreArgs has reserved fields only
  }

  @Override
  public String describe() {
    return "CUDA driver " + versionText(version) + " (" + CudaLibrary.where() + ")";
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.toString() : t.getMessage();
  }
}
