package dev.gpushare.gpu.nvml;

import static dev.gpushare.gpu.ChildProcess.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.ChildProcess.Result;
import dev.gpushare.gpu.NoNvidiaDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The NVML backend end to end, JNI included, on a machine without a GPU: {@code
 * gpu-check/fake-nvml/fake_nvml.c} is compiled into a fake {@code libnvidia-ml.so.1} and {@link
 * GpuCheck} (which goes through {@code GpuBackends.select}) runs against it in a child JVM, so that
 * no native code is loaded into this one. Skipped where there is no C compiler.
 *
 * <p>It proves the loading path (no CUDA runtime, {@code preloadpath} honoured), the JavaCPP
 * bindings, and the handling of processes, MIG, lost GPUs, Xid events and old drivers; not how a
 * real driver behaves.
 */
class NvmlFakeDriverTest {
  static final Path SOURCE = Path.of("gpu-check", "fake-nvml", "fake_nvml.c");
  static final Path BUILD = Path.of("target", "fake-nvml");
  static final Path FULL = BUILD.resolve("full");
  static final Path OLD = BUILD.resolve("old");

  @BeforeAll
  static void compileTheFakeDriver() throws Exception {
    assumeTrue(Files.exists(SOURCE), "no " + SOURCE);
    assumeTrue(run(List.of("gcc", "--version"), Map.of()).rc() == 0, "no C compiler");
    compile(FULL, List.of());
    compile(OLD, List.of("-DFAKE_OLD_DRIVER"));
  }

  @Test
  void discoveryAndTelemetryGoThroughTheJniWrapperWithoutTheCudaRuntime() throws Exception {
    Result r = gpuCheck(FULL, Map.of(), "2", "50");

    assertEquals(0, r.rc(), r.out());
    assertTrue(r.out().contains("using NVML, driver 999.99.99-fake (CUDA 13.0), 2 GPUs"), r.out());
    assertTrue(r.out().contains("Xid monitoring on"), r.out());
    assertTrue(
        r.out().contains("libjninvml.so, " + FULL.toAbsolutePath()), "preloadpath: " + r.out());
    assertFalse(r.out().contains("cudart"), r.out());
    assertTrue(
        r.out()
            .contains(
                "GPU 0  GPU-fa4e0000-0000-4000-8000-000000000000  NVIDIA H20 (fake)  97,871 MiB"
                    + "  healthy"),
        r.out());
    assertTrue(
        r.out().contains("memory 1,536 / 97,871 MiB  utilisation 42%  MIG disabled  healthy"),
        r.out());
    assertTrue(r.out().contains("MIG n/a"), "NOT_SUPPORTED is a value: " + r.out());
    String[] samples = r.out().split("sample 2:");
    assertTrue(samples[0].contains("pid 4242  1,024 MiB  SM 55%"), "the newest sample: " + r.out());
    // NVML samples only the processes that ran: a listed process without a sample ran nothing
    assertTrue(samples[0].contains("pid 4343  0 MiB  SM 0%"), "no sample of it: " + r.out());
    assertTrue(samples[1].contains("pid 4242  1,024 MiB  SM 0%"), "nothing newer: " + r.out());
    assertTrue(r.out().endsWith("GPU check OK\n"), r.out());
  }

  @Test
  void aCriticalXidMakesItsGpuUnhealthy() throws Exception {
    Result r = gpuCheck(FULL, Map.of("FAKE_NVML_XID", "1:79"), "1");

    assertEquals(0, r.rc(), r.out());
    assertTrue(
        r.out().contains("UNHEALTHY: Xid 79 reported (GPU has fallen off the bus)"), r.out());
    assertTrue(r.out().contains("MIG disabled  healthy"), "GPU 0 stays healthy: " + r.out());
  }

  @Test
  void aNonCriticalXidDoesNot() throws Exception {
    Result r = gpuCheck(FULL, Map.of("FAKE_NVML_XID", "1:13"), "1");

    assertEquals(0, r.rc(), r.out());
    assertFalse(r.out().contains("UNHEALTHY"), r.out());
  }

  @Test
  void aLostGpuIsUnhealthyAndMigUnsupportedIsAValue() throws Exception {
    Result r = gpuCheck(FULL, Map.of("FAKE_NVML_LOST", "1", "FAKE_NVML_MIG", "0"), "1");

    assertEquals(0, r.rc(), r.out());
    assertTrue(r.out().contains("UNHEALTHY: GPU is lost (NVML_ERROR_GPU_IS_LOST)"), r.out());
    assertTrue(r.out().contains("utilisation n/a  MIG enabled  healthy"), r.out());
  }

  @Test
  void anOldDriverWithoutTheNewerFunctionsDegradesInsteadOfKillingTheJvm() throws Exception {
    Result r = gpuCheck(OLD, Map.of(), "1");

    assertEquals(0, r.rc(), r.out());
    assertTrue(r.out().contains("2 GPUs, Xid monitoring off"), r.out());
    assertTrue(r.out().contains("note: Xid monitoring off: this driver lacks nvmlEventSetWait_v2"));
    assertTrue(r.out().contains("CUDA version unknown"), r.out());
    assertTrue(
        r.out().contains("pid 4242  1,024 MiB  SM n/a"), "processes through _v2: " + r.out());
    assertTrue(r.out().contains("utilisation 42%  MIG n/a  healthy"), r.out());
    assertTrue(r.out().endsWith("GPU check OK\n"), r.out());
  }

  @Test
  void anNvmlInitErrorIsReportedWithItsMeaning() throws Exception {
    Result r = gpuCheck(FULL, Map.of("FAKE_NVML_INIT_RC", "9"), "1");

    assertEquals(2, r.rc(), r.out());
    assertTrue(
        r.out()
            .contains(
                "GPU check FAILED: gpushare.gpu.backend=nvml: NVML unavailable: nvmlInit_v2 failed: the NVIDIA"
                    + " kernel driver is not loaded (NVML_ERROR_DRIVER_NOT_LOADED)"),
        r.out());
  }

  @Test
  void withoutTheLibraryTheCheckFailsCleanly() throws Exception {
    NoNvidiaDriver.assume();
    Result r = gpuCheck(null, Map.of(), "1");

    assertEquals(2, r.rc(), r.out());
    assertTrue(
        r.out()
            .contains(
                "GPU check FAILED: gpushare.gpu.backend=nvml: NVML unavailable: libnvidia-ml.so.1 not found"),
        r.out());
    assertTrue(r.out().contains("Install the NVIDIA driver"), r.out());
  }

  // ---- helpers ----

  static void compile(Path dir, List<String> flags) throws Exception {
    Files.createDirectories(dir);
    List<String> cmd = new ArrayList<>(List.of("gcc", "-shared", "-fPIC", "-O1"));
    cmd.addAll(flags);
    cmd.addAll(
        List.of(
            "-Wl,-soname,libnvidia-ml.so.1",
            "-o",
            dir.resolve("libnvidia-ml.so.1").toString(),
            SOURCE.toString()));
    Result r = run(cmd, Map.of());
    assertEquals(0, r.rc(), r.out());
  }

  static Result gpuCheck(Path driver, Map<String, String> env, String... args) throws Exception {
    List<String> properties = new ArrayList<>();
    properties.add(
        "-Dorg.bytedeco.javacpp.cachedir="
            + Path.of("target", "javacpp-cache-fake").toAbsolutePath());
    if (driver != null) {
      properties.add("-Dorg.bytedeco.javacpp.platform.preloadpath=" + driver.toAbsolutePath());
    }
    return run(ChildProcess.java(properties, GpuCheck.class, List.of(args)), env);
  }
}
