package dev.gpushare.gpu.cuda;

import static dev.gpushare.gpu.ChildProcess.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.ChildProcess.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The CUDA checkpoint binding end to end, JNI included, without a GPU: {@code
 * gpu-check/fake-cuda/fake_cuda.c} (with {@code fake_cuda_mem.c}) is compiled into a fake {@code
 * libcuda.so.1} (and a stand-in {@code libcudart.so.12}, which JavaCPP's wrapper links), and {@link
 * CheckpointCheck} — the member's {@link Checkpointer} over {@link CudaDriver} — runs against it in
 * a child JVM, so that no native code is loaded into this one. Skipped where there is no C
 * compiler.
 *
 * <p>It proves the loading path, the guards (driver version, exported symbols), the one return-code
 * checker with the driver's error names, and every path of the state machine through the real
 * binding; not how a real driver behaves (the GPU check does that on a GPU machine).
 */
class CudaFakeDriverTest {
  static final Path SOURCE = Path.of("gpu-check", "fake-cuda");
  static final Path BUILD = Path.of("target", "fake-cuda");
  static final Path FULL = BUILD.resolve("full");
  static final Path OLD = BUILD.resolve("old");

  private Process target;

  @BeforeAll
  static void compileTheFakeDriver() throws Exception {
    assumeTrue(Files.exists(SOURCE.resolve("fake_cuda.c")), "no " + SOURCE);
    assumeTrue(run(List.of("gcc", "--version"), Map.of()).rc() == 0, "no C compiler");
    compile(FULL, List.of());
    compile(OLD, List.of("-DFAKE_OLD_DRIVER"));
  }

  @BeforeEach
  void startATargetProcess() throws Exception {
    target = new ProcessBuilder("sleep", "120").start();
  }

  @AfterEach
  void stopIt() {
    target.destroyForcibly();
  }

  private String pid() {
    return Long.toString(target.pid());
  }

  @Test
  void aProcessIsCheckpointedAndRestoredThroughTheJniWrapper() throws Exception {
    Result r = check(FULL, Map.of(), pid(), "--bytes", "1073741824", "--between", "echo held");

    assertEquals(0, r.rc(), r.out());
    assertTrue(r.out().contains("using CUDA driver 12.9 ("), r.out());
    assertTrue(r.out().contains("libjnicudart.so"), r.out());
    assertTrue(r.out().contains("pid " + pid() + ": RUNNING"), r.out());
    assertTrue(
        r.out().contains("suspend: Held[pod=check, pids=[" + pid() + "], bytes=1073741824"),
        r.out());
    assertTrue(r.out().contains("pid " + pid() + ": CHECKPOINTED"), r.out());
    assertTrue(r.out().contains("between: held"), r.out());
    assertTrue(r.out().contains("resume: Resumed[pod=check, pids=[" + pid() + "]]"), r.out());
    assertTrue(r.out().contains("per GiB: checkpoint"), r.out());
    assertTrue(r.out().endsWith("checkpoint check OK\n"), r.out());
    List<String> calls =
        r.out()
            .lines()
            .filter(l -> l.startsWith("fake libcuda: "))
            .map(l -> l.substring(14))
            .toList();
    String p = pid();
    assertEquals(
        List.of(
            "lock(" + p + ") -> state 1",
            "checkpoint(" + p + ") -> state 2",
            "restore(" + p + ") -> state 1",
            "unlock(" + p + ") -> state 0"),
        calls);
  }

  @Test
  void aLockTimeoutIsReportedWithTheDriversNameAndNothingStaysLocked() throws Exception {
    Result r = check(FULL, Map.of("FAKE_CUDA_FAIL", "lock:909"), pid());

    assertEquals(3, r.rc(), r.out());
    assertTrue(r.out().contains("CUDA_ERROR_TIMEOUT (909)"), r.out());
    assertTrue(r.out().contains("checkpoint check FAILED: Failed[pod=check"), r.out());
    assertFalse(r.out().contains("checkpoint(" + pid() + ")"), "never checkpointed: " + r.out());
  }

  @Test
  void aRestoreOutOfMemoryIsRetriedUntilItFits() throws Exception {
    Result r =
        check(FULL, Map.of("FAKE_CUDA_FAIL", "restore:2:2"), pid(), "--restore-backoff-ms", "10");

    assertEquals(0, r.rc(), r.out());
    assertEquals(2, r.out().lines().filter(l -> l.startsWith("resume: RetryAt[")).count(), r.out());
    assertTrue(r.out().contains("CUDA_ERROR_OUT_OF_MEMORY (2)"), r.out());
    assertTrue(r.out().contains("resume: Resumed["), r.out());
  }

  @Test
  void aRestoreThatNeverFitsEndsTheProcessInsteadOfLeavingItLocked() throws Exception {
    Result r =
        check(
            FULL,
            Map.of("FAKE_CUDA_FAIL", "restore:2"),
            pid(),
            "--restore-attempts",
            "2",
            "--restore-backoff-ms",
            "10");

    assertEquals(3, r.rc(), r.out());
    assertTrue(r.out().contains("checkpoint check FAILED: Abandoned[pod=check"), r.out());
    assertTrue(target.waitFor(10, TimeUnit.SECONDS), "the process was killed");
  }

  @Test
  void aProcessThatIsGoneHasNothingToHold() throws Exception {
    target.destroyForcibly();
    target.waitFor(10, TimeUnit.SECONDS);
    Result r = check(FULL, Map.of(), pid());

    assertEquals(3, r.rc(), r.out());
    assertTrue(r.out().contains("NothingToHold[pod=check]"), r.out());
  }

  @Test
  void aDriverWithoutTheCheckpointFunctionsIsUnavailableInsteadOfKillingTheJvm() throws Exception {
    Result r = check(OLD, Map.of(), pid());

    assertEquals(2, r.rc(), r.out());
    assertTrue(
        r.out()
            .contains(
                "checkpoint check FAILED: CUDA checkpoint unavailable: libcuda.so.1 lacks"
                    + " cuCheckpointProcessGetState, cuCheckpointProcessLock,"
                    + " cuCheckpointProcessCheckpoint, cuCheckpointProcessRestore,"
                    + " cuCheckpointProcessUnlock (needs CUDA 12.8, R570)"),
        r.out());
  }

  @Test
  void aDriverBeforeCuda128IsUnavailable() throws Exception {
    Result r = check(FULL, Map.of("FAKE_CUDA_VERSION", "12040"), pid());

    assertEquals(2, r.rc(), r.out());
    assertTrue(
        r.out()
            .contains(
                "CUDA checkpoint unavailable: the driver supports CUDA 12.4; checkpointing needs 12.8"
                    + " or later"),
        r.out());
  }

  // ---- helpers ----

  static void compile(Path dir, List<String> flags) throws Exception {
    Files.createDirectories(dir);
    List<String> cuda = new ArrayList<>(List.of("gcc", "-shared", "-fPIC", "-O1"));
    cuda.addAll(flags);
    cuda.addAll(
        List.of(
            "-Wl,-soname,libcuda.so.1",
            "-o",
            dir.resolve("libcuda.so.1").toString(),
            SOURCE.resolve("fake_cuda.c").toString(),
            SOURCE.resolve("fake_cuda_mem.c").toString()));
    Result r = run(cuda, Map.of());
    assertEquals(0, r.rc(), r.out());
    r =
        run(
            List.of(
                "gcc",
                "-shared",
                "-fPIC",
                "-Wl,-soname,libcudart.so.12",
                "-Wl,--version-script=" + SOURCE.resolve("cudart.map"),
                "-o",
                dir.resolve("libcudart.so.12").toString(),
                SOURCE.resolve("fake_cudart.c").toString()),
            Map.of());
    assertEquals(0, r.rc(), r.out());
  }

  static Result check(Path driver, Map<String, String> env, String... args) throws Exception {
    List<String> properties =
        List.of(
            "-Dorg.bytedeco.javacpp.cachedir="
                + Path.of("target", "javacpp-cache-fake-cuda").toAbsolutePath(),
            "-Dorg.bytedeco.javacpp.platform.preloadpath=" + driver.toAbsolutePath());
    return run(ChildProcess.java(properties, CheckpointCheck.class, List.of(args)), env);
  }
}
