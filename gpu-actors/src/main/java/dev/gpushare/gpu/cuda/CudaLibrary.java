package dev.gpushare.gpu.cuda;

import dev.gpushare.gpu.PresetsClasses;
import java.net.URL;
import java.util.List;
import org.bytedeco.javacpp.ClassProperties;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;

/**
 * Loads the CUDA driver API through JavaCPP's CUDA presets ({@code org.bytedeco.cuda.global.cudart}
 * maps the driver API too), in the way {@code NvmlLibrary} loads NVML: JavaCPP's own library, then
 * {@code libcuda.so.1} (the driver's) and {@code libcudart.so.12} where JavaCPP's search finds them
 * (the presets' link paths, {@code -Dorg.bytedeco.javacpp.platform.preloadpath}, {@code
 * java.library.path}; otherwise the dynamic linker), then the wrapper {@code libjnicudart.so}, then
 * the presets classes the checkpoint code uses, with {@code
 * org.bytedeco.javacpp.loadLibraries=false} for that moment only.
 *
 * <p>{@code libjnicudart.so} has {@code NEEDED libcuda.so.1} and {@code NEEDED libcudart.so.12}
 * (with the version node {@code libcudart.so.12}); it binds functions lazily, so only the driver
 * functions called must exist, and {@link CudaDriver} checks each with {@link Loader#addressof}
 * before the first call (a missing one would kill the JVM with "symbol lookup error"). A node with
 * the driver but without the CUDA 12 runtime cannot load it: checkpointing is then unavailable and
 * pods fall back to the signal contract.
 *
 * <p>Thread-safe; loads once. Failures surface as {@link UnsatisfiedLinkError} or {@link
 * NoClassDefFoundError}; {@link CudaDriver#load} turns them into {@link CheckpointUnavailable}.
 */
final class CudaLibrary {
  private static final Class<?> PRESETS = org.bytedeco.cuda.presets.cudart.class;

  /** Every presets class the checkpoint code touches. */
  static final List<String> CLASSES =
      List.of(
          "org.bytedeco.cuda.global.cudart",
          "org.bytedeco.cuda.cudart.CUcheckpointLockArgs",
          "org.bytedeco.cuda.cudart.CUcheckpointCheckpointArgs",
          "org.bytedeco.cuda.cudart.CUcheckpointRestoreArgs",
          "org.bytedeco.cuda.cudart.CUcheckpointUnlockArgs");

  private static final List<String> CORE_CLASSES =
      List.of("org.bytedeco.javacpp.BytePointer", "org.bytedeco.javacpp.PointerPointer");

  private static boolean loaded;
  private static String where;

  private CudaLibrary() {}

  static synchronized void load() {
    if (loaded) {
      return;
    }
    Loader.load(Pointer.class);
    PresetsClasses.initialize(CORE_CLASSES, CudaLibrary.class);
    ClassProperties p = Loader.loadProperties(PRESETS, Loader.loadProperties(), true);
    StringBuilder found = new StringBuilder();
    for (String library : List.of("cuda@.1", "cudart@.12")) {
      URL[] urls = Loader.findLibrary(PRESETS, p, library, true);
      if (urls.length > 0) {
        String path = Loader.loadLibrary(PRESETS, urls, library + "#");
        if (path != null) {
          found.append(found.length() == 0 ? "" : ", ").append(path);
        }
      }
    }
    String jni = p.getProperty("platform.library"); // "jnicudart"
    String jniPath = Loader.loadLibrary(PRESETS, Loader.findLibrary(PRESETS, p, jni), jni);
    if (jniPath == null) {
      throw new UnsatisfiedLinkError("lib" + jni + ".so not found in the CUDA presets");
    }
    PresetsClasses.initializeWithoutLoading(CLASSES, CudaLibrary.class);
    where = (found.length() == 0 ? "libcuda.so.1 via the dynamic linker" : found) + "; " + jniPath;
    loaded = true;
  }

  /** Where the libraries were loaded from; null before {@link #load()}. */
  static synchronized String where() {
    return where;
  }
}
