package dev.gpushare.gpu.cuda;

/**
 * A CUDA driver call returned an error: the call, the process it was for, the raw {@code CUresult}
 * and its name ({@code CUDA_ERROR_TIMEOUT}, …) where the driver gives one.
 */
public final class CudaException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** {@code CUDA_ERROR_OUT_OF_MEMORY}. */
  public static final int OUT_OF_MEMORY = 2;

  /** {@code CUDA_ERROR_NOT_READY}. */
  public static final int NOT_READY = 600;

  /** {@code CUDA_ERROR_TIMEOUT}. */
  public static final int TIMEOUT = 909;

  private final String call;
  private final int pid;
  private final int code;
  private final String name;

  public CudaException(String call, int pid, int code, String name) {
    super(
        call
            + "("
            + pid
            + ") failed: "
            + (name == null || name.isEmpty() ? "CUresult " + code : name + " (" + code + ")"));
    this.call = call;
    this.pid = pid;
    this.code = code;
    this.name = name;
  }

  /** The driver function, e.g. {@code cuCheckpointProcessLock}. */
  public String call() {
    return call;
  }

  public int pid() {
    return pid;
  }

  /** The raw {@code CUresult}. */
  public int code() {
    return code;
  }

  /** The driver's name for the code, or null. */
  public String errorName() {
    return name;
  }

  /** Whether the GPU had no room (a restore worth retrying later). */
  public boolean isOutOfMemory() {
    return code == OUT_OF_MEMORY;
  }

  /** Whether the lock's timeout passed with CUDA work still in flight. */
  public boolean isTimeout() {
    return code == TIMEOUT || code == NOT_READY;
  }
}
