package dev.gpushare.gpu;

import java.util.List;

/**
 * How the GPU code initializes JavaCPP presets classes whose own static {@code Loader.load()} would
 * load more native libraries than it needs (the NVML loader and the CUDA checkpoint loader): the
 * libraries are loaded first, by hand, and then the classes are initialized with {@code
 * org.bytedeco.javacpp.loadLibraries=false} for that moment only, so that their native methods bind
 * to what is already loaded.
 */
public final class PresetsClasses {
  /** The system property that makes JavaCPP's {@code Loader.load} a no-op. */
  public static final String LOAD_LIBRARIES = "org.bytedeco.javacpp.loadLibraries";

  private PresetsClasses() {}

  /**
   * Initializes {@code classes} in order, with the class loader of {@code owner}.
   *
   * @throws NoClassDefFoundError when one is not on the class path
   */
  public static void initialize(List<String> classes, Class<?> owner) {
    ClassLoader loader = owner.getClassLoader();
    for (String name : classes) {
      try {
        Class.forName(name, true, loader);
      } catch (ClassNotFoundException e) {
        NoClassDefFoundError error = new NoClassDefFoundError(name);
        error.initCause(e);
        throw error;
      }
    }
  }

  /** As {@link #initialize}, with JavaCPP's loading off meanwhile (the property restored after). */
  public static synchronized void initializeWithoutLoading(List<String> classes, Class<?> owner) {
    String before = System.getProperty(LOAD_LIBRARIES);
    System.setProperty(LOAD_LIBRARIES, "false");
    try {
      initialize(classes, owner);
    } finally {
      if (before == null) {
        System.clearProperty(LOAD_LIBRARIES);
      } else {
        System.setProperty(LOAD_LIBRARIES, before);
      }
    }
  }
}
