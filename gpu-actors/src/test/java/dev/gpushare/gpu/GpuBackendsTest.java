package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.GpuBackends.Mode;
import dev.gpushare.gpu.GpuBackends.Selected;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Choosing the backend from {@code gpu.backend}. The NVML cases run the real loading path on a
 * machine without the NVIDIA driver (this one, CI): they are skipped where a driver is installed.
 */
class GpuBackendsTest {
  static final SimulatedGpuBackend SIMULATED =
      new SimulatedGpuBackend("gpu-node-1", 2, "NVIDIA H20", 97_871);

  @Test
  void theModeParserAcceptsTheThreeValuesWhateverTheirCase() {
    assertEquals(Mode.AUTO, Mode.parse("auto"));
    assertEquals(Mode.NVML, Mode.parse("NVML"));
    assertEquals(Mode.SIMULATED, Mode.parse(" Simulated "));
    for (Mode m : Mode.values()) {
      assertEquals(m, Mode.parse(m.configValue()));
    }
  }

  @Test
  void aBadValueNamesTheKeyTheValueAndTheAcceptedValues() {
    for (String bad : new String[] {"gpu", "", "nvml,auto", "simulate"}) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> Mode.parse(bad));
      assertTrue(e.getMessage().startsWith("gpushare.gpu.backend = '" + bad + "'"), e.getMessage());
      assertTrue(e.getMessage().endsWith("accepted values: auto, nvml, simulated"), e.getMessage());
    }
    IllegalArgumentException missing =
        assertThrows(IllegalArgumentException.class, () -> Mode.parse(null));
    assertTrue(
        missing.getMessage().contains("gpushare.gpu.backend = (missing)"), missing.getMessage());
  }

  @Test
  void simulatedIsSimulatedWithOneLogLine() {
    List<String> log = new ArrayList<>();
    Selected s = GpuBackends.select(Mode.SIMULATED, () -> SIMULATED, log::add);
    assertSame(SIMULATED, s.backend());
    assertEquals(List.of("gpushare.gpu.backend=simulated: using the simulated backend"), log);
    assertEquals(log.get(0), s.why());
  }

  @Test
  void nvmlWithoutTheDriverFailsNamingTheLibraryAndWhatToInstall() {
    NoNvidiaDriver.assume();
    List<String> log = new ArrayList<>();
    GpuBackendUnavailable e =
        assertThrows(
            GpuBackendUnavailable.class,
            () ->
                GpuBackends.select(
                    Mode.NVML,
                    () -> {
                      throw new AssertionError("nvml never falls back");
                    },
                    log::add));
    String m = e.getMessage();
    assertTrue(
        m.startsWith("gpushare.gpu.backend=nvml: NVML unavailable: libnvidia-ml.so.1 not found"),
        m);
    assertTrue(m.contains("cannot open shared object file"), "the linker's own words: " + m);
    assertTrue(m.contains("Install the NVIDIA driver"), m);
    assertTrue(m.contains("NVIDIA container toolkit"), m);
    assertTrue(m.contains("runtimeClassName: nvidia"), m);
    assertTrue(m.contains("NVIDIA_DRIVER_CAPABILITIES=utility,compute"), m);
    assertTrue(m.contains("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"), m);
    assertTrue(m.contains("-Dorg.bytedeco.javacpp.platform.preloadpath="), m);
    assertTrue(e.reason().startsWith("libnvidia-ml.so.1 not found: "), e.reason());
    assertTrue(e.getCause() instanceof LinkageError, String.valueOf(e.getCause()));
    assertTrue(
        !m.contains("libcudart") && !m.contains("jnicudart"),
        "NVML does not need the CUDA runtime: " + m);
    assertEquals(List.of(), log, "a failure is thrown, not logged");
  }

  @Test
  void autoWithoutTheDriverFallsBackToSimulatedWithOneLogLineSayingWhy() {
    NoNvidiaDriver.assume();
    for (int attempt = 0; attempt < 2; attempt++) { // a second attempt fails the same way
      List<String> log = new ArrayList<>();
      Selected s = GpuBackends.select(Mode.AUTO, () -> SIMULATED, log::add);

      assertSame(SIMULATED, s.backend());
      assertEquals(1, log.size(), log.toString());
      String line = log.get(0);
      assertTrue(
          line.startsWith("gpushare.gpu.backend=auto: NVML unavailable (libnvidia-ml.so.1"), line);
      assertTrue(line.endsWith("); using the simulated backend"), line);
      assertEquals(line, s.why());
    }
  }

  @Test
  void loadingFailuresAreExplainedFromTheirCauseChain() {
    UnsatisfiedLinkError jni =
        new UnsatisfiedLinkError("no jninvml in java.library.path: /usr/lib");
    jni.initCause(
        new UnsatisfiedLinkError(
            "/cache/libjninvml.so: libnvidia-ml.so.1: cannot open shared object file: No such"
                + " file or directory"));
    assertTrue(
        GpuBackends.loadFailure(jni).startsWith("libnvidia-ml.so.1 not found: /cache/libjninvml"),
        GpuBackends.loadFailure(jni));

    assertTrue(
        GpuBackends.loadFailure(
                new UnsatisfiedLinkError(
                    "/cache/libjnicudart.so: libcudart.so.12: cannot open shared object file"))
            .startsWith("libcudart.so.12 not found"));

    String glibc =
        GpuBackends.loadFailure(
            new UnsatisfiedLinkError(
                "/cache/libjninvml.so: /lib64/libc.so.6: version `GLIBC_2.34' not found"
                    + " (required by /cache/libjninvml.so)"));
    assertTrue(glibc.startsWith("GLIBC_2.34 not found"), glibc);

    String classes =
        GpuBackends.loadFailure(new NoClassDefFoundError("org/bytedeco/cuda/global/nvml"));
    assertTrue(classes.contains("not on the class path"), classes);
    assertTrue(classes.contains("org/bytedeco/cuda/global/nvml"), classes);

    String jniMissing =
        GpuBackends.loadFailure(new UnsatisfiedLinkError("no jninvml in java.library.path: /x"));
    assertTrue(jniMissing.startsWith("the JNI wrapper libjninvml.so is missing"), jniMissing);
  }
}
