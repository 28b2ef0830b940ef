package dev.gpushare.gpu.nvml;

import dev.gpushare.gpu.PresetsClasses;
import java.net.URL;
import java.util.List;
import org.bytedeco.javacpp.ClassProperties;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;

/**
 * Loads NVML through JavaCPP's CUDA presets without the CUDA runtime.
 *
 * <p><b>Why not {@code Loader.load(nvml.class)}.</b> The presets' {@code
 * org.bytedeco.cuda.presets.nvml} declares {@code @Properties(inherit = cudart.class)}, so {@code
 * Loader.load(nvml.class)} (which every presets class runs in its static initializer) first
 * initializes {@code org.bytedeco.cuda.global.cudart}, whose JNI wrapper {@code libjnicudart.so}
 * needs {@code libcudart.so.12} (the CUDA 12 runtime, part of the toolkit) and {@code
 * libcuda.so.1}. NVML's own wrapper, {@code libjninvml.so}, needs only {@code libnvidia-ml.so.1}
 * (plus libstdc++, libgcc_s and glibc 2.34 or later). GPU nodes and pods that run through the
 * NVIDIA container toolkit have the driver's libraries but usually no CUDA 12 runtime, so this
 * class loads exactly what NVML needs, in this order:
 *
 * <ol>
 *   <li>JavaCPP's own {@code libjnijavacpp.so}, the usual way;
 *   <li>{@code libnvidia-ml.so.1}, if JavaCPP's search finds it (see below); otherwise the dynamic
 *       linker resolves it in the next step;
 *   <li>{@code libjninvml.so}, from the presets' {@code linux-x86_64} jar (extracted to JavaCPP's
 *       cache, {@code ~/.javacpp/cache} or {@code -Dorg.bytedeco.javacpp.cachedir});
 *   <li>the presets classes NVML calls use ({@link #CLASSES}) are initialized with {@code
 *       org.bytedeco.javacpp.loadLibraries=false} set for that moment only, so that their static
 *       {@code Loader.load()} returns at once instead of loading the CUDA runtime; their native
 *       methods bind to the {@code libjninvml.so} already loaded. The property is restored at once.
 * </ol>
 *
 * <p><b>Where {@code libnvidia-ml.so.1} is found.</b> The presets tag the library as a system one
 * ({@code nvidia-ml@.1#}), so JavaCPP leaves it to the dynamic linker: {@code LD_LIBRARY_PATH}, the
 * {@code ld.so} cache ({@code /usr/lib/x86_64-linux-gnu} on Debian and Ubuntu, where the NVIDIA
 * container toolkit mounts it), {@code /usr/lib64}. Step 2 adds JavaCPP's own search, with the
 * properties JavaCPP already honours: the presets' link paths ({@code /usr/local/cuda-12.9/lib64},
 * {@code /usr/local/cuda/lib64}, {@code /usr/lib64}), then the directories of the system property
 * {@code org.bytedeco.javacpp.platform.preloadpath}, then {@code java.library.path}. So a driver
 * library in another directory (for example {@code /usr/local/nvidia/lib64}) is named with {@code
 * -Dorg.bytedeco.javacpp.platform.preloadpath=/usr/local/nvidia/lib64} (or {@code
 * -Djava.library.path=...}, or {@code LD_LIBRARY_PATH} before the JVM starts).
 *
 * <p>Thread-safe; loads once. A failure leaves nothing half-loaded that a later attempt would trip
 * on, and surfaces as JavaCPP reports it: {@link UnsatisfiedLinkError} (a missing library, with the
 * dynamic linker's message in its cause chain) or {@link NoClassDefFoundError} (the presets jars
 * missing from the class path). Callers do not catch those; {@code GpuBackends.select} does.
 */
final class NvmlLibrary {

  /** The presets class whose properties describe NVML (link, paths, JNI library name). */
  private static final Class<?> PRESETS = org.bytedeco.cuda.presets.nvml.class;

  /**
   * Every presets class the NVML backend touches. A presets class that is not in this list and is
   * initialized later would run {@code Loader.load()} for real and fail on the CUDA runtime: add it
   * here when {@link NvmlBackend} starts using it.
   */
  static final List<String> CLASSES =
      List.of(
          "org.bytedeco.cuda.global.nvml",
          "org.bytedeco.cuda.nvml.nvmlDevice_st",
          "org.bytedeco.cuda.nvml.nvmlMemory_t",
          "org.bytedeco.cuda.nvml.nvmlUtilization_t",
          "org.bytedeco.cuda.nvml.nvmlProcessInfo_v2_t",
          "org.bytedeco.cuda.nvml.nvmlProcessUtilizationSample_t",
          "org.bytedeco.cuda.nvml.nvmlEventSet_st",
          "org.bytedeco.cuda.nvml.nvmlEventData_t");

  /** The JavaCPP core classes used; initialized (and {@code libjnijavacpp.so} loaded) normally. */
  private static final List<String> CORE_CLASSES =
      List.of(
          "org.bytedeco.javacpp.BytePointer",
          "org.bytedeco.javacpp.IntPointer",
          "org.bytedeco.javacpp.LongPointer",
          "org.bytedeco.javacpp.PointerPointer");

  private static boolean loaded;
  private static String jniLibrary;
  private static String nvmlLibrary;

  private NvmlLibrary() {}

  /**
   * Loads NVML (once).
   *
   * @throws UnsatisfiedLinkError when a native library cannot be found or loaded
   * @throws NoClassDefFoundError when the presets are not on the class path
   */
  static synchronized void load() {
    if (loaded) {
      return;
    }
    // 1. JavaCPP's own JNI library and the core classes.
    Loader.load(Pointer.class);
    PresetsClasses.initialize(CORE_CLASSES, NvmlLibrary.class);

    ClassProperties p = Loader.loadProperties(PRESETS, Loader.loadProperties(), true);

    // 2. libnvidia-ml.so.1 where JavaCPP's search finds it (link paths, preloadpath,
    // java.library.path); when it finds none, the dynamic linker resolves it in step 3.
    URL[] nvml = Loader.findLibrary(PRESETS, p, "nvidia-ml@.1", true);
    String foundNvml = null;
    if (nvml.length > 0) {
      foundNvml = Loader.loadLibrary(PRESETS, nvml, "nvidia-ml@.1#");
    }

    // 3. NVML's JNI wrapper alone (not libjnicudart.so).
    String library = p.getProperty("platform.library"); // "jninvml"
    String jni = Loader.loadLibrary(PRESETS, Loader.findLibrary(PRESETS, p, library), library);

    // 4. The presets classes, without their static Loader.load() pulling in the CUDA runtime.
    PresetsClasses.initializeWithoutLoading(CLASSES, NvmlLibrary.class);
    jniLibrary = jni;
    nvmlLibrary = foundNvml != null ? foundNvml : "libnvidia-ml.so.1 (via the dynamic linker)";
    loaded = true;
  }

  /** Where {@code libjninvml.so} was loaded from; null before {@link #load()}. */
  static synchronized String jniLibrary() {
    return jniLibrary;
  }

  /** Where {@code libnvidia-ml.so.1} was loaded from, as far as JavaCPP knows. */
  static synchronized String nvmlLibrary() {
    return nvmlLibrary;
  }
}
