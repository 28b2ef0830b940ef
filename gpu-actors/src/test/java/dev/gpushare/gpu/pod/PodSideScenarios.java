package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.pod.DataPlaneStub.StubPod;
import dev.gpushare.gpu.proc.ProcessPods;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * libgpushare.so as a pod's processes meet it (SPEC §10): real processes ({@code
 * src/test/native/workload.c}, {@code nvml_view.c}) with the library preloaded, the fake {@code
 * libcuda.so.1} and {@code libnvidia-ml.so.1}, and a scripted data plane ({@link DataPlaneStub}).
 * The end-to-end tests in src-test do the same against a real server. Every scenario runs twice: on
 * the plain library ({@link PodSideTest}) and under AddressSanitizer and UndefinedBehaviorSanitizer
 * ({@link PodSideSanitizedTest}); a sanitizer's report fails the test when its process is closed.
 */
abstract class PodSideScenarios {
  static final Duration T = Duration.ofSeconds(20);

  /** What the fake GPU has: with a 50 % memory limit the pod may take 500,000,000 bytes. */
  static final long GPU_BYTES = 1_000_000_000L;

  DataPlaneStub stub;
  StubPod a;

  abstract NativeBuild build();

  @BeforeEach
  void start() {
    stub = DataPlaneStub.start();
    a = stub.pod("default", "a").limits(50, 50);
  }

  @AfterEach
  void stop() {
    stub.close();
  }

  PodProcess.Builder workload(StubPod pod, String... args) {
    return PodProcess.builder("workload")
        .build(build())
        .pod(pod)
        .waitInterval("1s")
        .env("GPUSHARE_GRACE", "1s")
        .env("FAKE_CUDA_VERSION", "13000")
        .env("FAKE_CUDA_TRACE", "1")
        .env("FAKE_CUDA_MEMORY", Long.toString(GPU_BYTES))
        .env("FAKE_CUDA_UUIDS", String.join(",", uuids(4)))
        .args(args);
  }

  /**
   * "pid1": the process is PID 1 of a PID namespace of its own, as a container's command is (the
   * kernel drops the signals it sends itself without a handler, SIGKILL included); "plain": as is.
   */
  static PodProcess.Builder at(String where, PodProcess.Builder b) {
    if (!where.equals("pid1")) {
      return b;
    }
    String problem = PodProcess.pid1Problem();
    org.junit.jupiter.api.Assumptions.assumeTrue(
        problem == null, "cannot run a process as PID 1 of its own PID namespace: " + problem);
    return b.pid1();
  }

  static String[] uuids(int n) {
    String[] u = new String[n];
    for (int i = 0; i < n; i++) {
      u[i] = DataPlaneStub.uuidOf(i);
    }
    return u;
  }

  static int freePort() throws java.io.IOException {
    try (java.net.ServerSocket s =
        new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  static Pattern waitingLine(int position) {
    return Pattern.compile(
        "^You have been waiting for (\\d+) seconds\\. Approximate position: " + position + "$");
  }

  // ------------------------------------------------------------------ 1. first use is the demand

  @ParameterizedTest(name = "via {0}")
  @ValueSource(strings = {"symbol", "dlsym", "procaddress"})
  void theFirstCudaCallRaisesDemandWaitsWithTheWaitingLineAndGoesOnWhenRunning(String via)
      throws Exception {
    a.onDemand(p -> p.ready(2).waiting(3L));
    try (PodProcess p = workload(a, "--via", via, "init", "ctx", "launch", "exit:0").start()) {
      Matcher first = p.awaitStderr(waitingLine(2), T);
      assertEquals("3", first.group(1), "the first line at once, with the view's seconds");
      assertEquals(1, stub.requests("POST", "/demand").size());
      a.position(1);
      p.awaitStderr(waitingLine(1), T); // every GPUSHARE_WAIT_INTERVAL, the position as it is now
      assertTrue(p.stdout().isEmpty(), "cuInit waits: " + p.transcript());
      a.running(1);
      p.awaitStdout("init -> 0", T);
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(1), T);
      p.awaitStdout("launch -> 0", T);
      assertEquals(0, p.awaitExit(T));
      stub.awaitRequest("DELETE", "/demand", T); // the pod's last GPU process released it
    }
  }

  /**
   * Where the CUDA toolkit is installed: the real runtime reaches the driver through the library.
   */
  @Test
  void theRealCudaRuntimeRaisesDemandThroughGetProcAddress() throws Exception {
    Path cudart = Path.of("/usr/local/cuda/lib64/libcudart.so.13");
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.exists(cudart) && !build().sanitized(), "no CUDA 13 runtime at " + cudart);
    Path bin = Files.createDirectories(stub.dir().resolve("cudart"));
    Process cc =
        new ProcessBuilder(
                "gcc",
                "-o",
                bin.resolve("runtime_count").toString(),
                NativeBuild.module().resolve("src/test/native-cudart/runtime_count.c").toString(),
                "-L" + cudart.getParent(),
                "-l:libcudart.so.13",
                "-Wl,-rpath," + cudart.getParent())
            .redirectErrorStream(true)
            .start();
    String ccOut = new String(cc.getInputStream().readAllBytes());
    assertEquals(0, cc.waitFor(), ccOut);
    a.onDemand(p -> p.ready(1));
    try (PodProcess p =
        workload(a).program(bin.resolve("runtime_count")).env("FAKE_CUDA_TRACE", "1").start()) {
      p.awaitStderr(Pattern.compile("cuGetProcAddress.*\\(cuInit, "), T); // resolved so
      p.awaitStderr(waitingLine(1), T); // cuInit, through the wrapper: the demand
      a.running(3);
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(3), T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(hasLine(p, "cudaGetDeviceCount -> "), p.transcript());
    }
  }

  @Test
  void perThreadStreamVariantsKeepTheirVariantThroughGetProcAddress() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "--via", "procaddress", "--flags", "2", "init", "ctx", "alloc:1000")
            .args("memcpy", "launch", "streamsync", "exit:0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      p.awaitStderr(Pattern.compile("fake libcuda: cuLaunchKernel_ptsz"), T);
      p.awaitStderr(Pattern.compile("fake libcuda: cuStreamSynchronize_ptsz"), T);
    }
  }

  @Test
  void aStaticPodIsRestrictedToItsPinnedGpuAndRaisesNoDemand() throws Exception {
    a.policy("static").running(3);
    try (PodProcess p = workload(a, "init", "count", "exit:0").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(3), T);
      assertTrue(p.stdout().contains("count -> 0 1"), p.transcript());
      assertTrue(stub.requests("POST", "/demand").isEmpty(), stub.requests().toString());
      assertTrue(stub.requests("DELETE", "/demand").isEmpty(), "pinned for life, never released");
      assertEquals(0, p.countStderr(Pattern.compile("^gpushare: ")), p.transcript());
    }
  }

  @Test
  void aProcessOutsideASharingPodIsLeftAlone() throws Exception {
    try (PodProcess p =
        workload(a, "init", "count", "alloc:900000000", "exit:0")
            .env("GPUSHARE_SERVER", null)
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=unset", T);
      assertTrue(p.stdout().contains("count -> 0 4"), p.transcript());
      assertTrue(p.stdout().contains("alloc:900000000 -> 0") || hasAlloc(p), p.transcript());
      assertTrue(stub.requests().isEmpty());
    }
  }

  private static boolean hasAlloc(PodProcess p) {
    return p.stdout().stream().anyMatch(l -> l.startsWith("alloc:900000000 -> 0"));
  }

  @Test
  void aPodWithoutAShareIsLeftAloneToo() throws Exception {
    a.policy("none");
    try (PodProcess p = workload(a, "init", "count", "exit:0").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=unset", T);
      assertTrue(stub.requests("POST", "/demand").isEmpty());
    }
  }

  // ------------------------------------------------------------------ 3. memory

  @Test
  void anAllocationOverTheLimitIsOutOfMemoryWithoutReachingTheDriver() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "alloc:600000000", "alloc:400000000", "meminfo")
            .args("managed:200000000", "pitch:100000:900", "freeall", "meminfo", "exit:0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("alloc:600000000 -> 2"), p.transcript());
      assertTrue(hasLine(p, "alloc:400000000 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 100000000 500000000"), p.transcript());
      assertTrue(p.stdout().contains("managed:200000000 -> 2"), p.transcript());
      assertTrue(hasLine(p, "pitch:100000:900 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 500000000 500000000"), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("cuMemAlloc_v2\\(600000000\\)")));
      assertEquals(0, p.countStderr(Pattern.compile("cuMemAllocManaged\\(200000000")));
    }
  }

  private static boolean hasLine(PodProcess p, String start) {
    return p.stdout().stream().anyMatch(l -> l.startsWith(start));
  }

  @Test
  void thePodsMemoryIsCountedAcrossItsProcessesAndGivenBackWhenOneIsKilled() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess first = workload(a, "init", "ctx", "alloc:300000000", "hold").start()) {
      first.awaitStdout(Pattern.compile("^alloc:300000000 -> 0"), T);
      try (PodProcess second =
          workload(a, "init", "ctx", "alloc:300000000", "alloc:200000000", "stdin")
              .args("alloc:300000000", "exit:0")
              .start()) {
        second.awaitStdout(Pattern.compile("^alloc:200000000 -> 0"), T);
        assertTrue(second.stdout().contains("alloc:300000000 -> 2"), second.transcript());
        first.signal("KILL");
        first.awaitExit(T);
        second.send("go");
        second.awaitStdout(Pattern.compile("^alloc:300000000 -> 0"), T); // the dead one's is back
        assertEquals(0, second.awaitExit(T));
      }
    }
  }

  @Test
  void aDeadProcesssCountIsGivenBackBeforeAnyFigureIsReported() throws Exception {
    // a process SIGKILLed while holding memory (an OOM kill, a container's restart with the pod's
    // /dev/shm kept): the next process's first figure, without an allocation, is without it
    a.grantOnDemand(0);
    try (PodProcess first = workload(a, "init", "ctx", "alloc:300000000", "hold").start()) {
      first.awaitStdout(Pattern.compile("^alloc:300000000 -> 0"), T);
      first.signal("KILL");
      first.awaitExit(T);
    }
    try (PodProcess next = workload(a, "init", "ctx", "meminfo", "exit:0").start()) {
      assertEquals(0, next.awaitExit(T), next.transcript());
      assertTrue(next.stdout().contains("meminfo -> 0 500000000 500000000"), next.transcript());
    }
  }

  @Test
  void aFreeAndAnAllocationRacingOnTheSameAddressNeverLoseACount() throws Exception {
    // one thread frees and allocates again, the other allocates and keeps: the driver gives the
    // freed address to the other thread at once, while the free is still being counted
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "race:20000:1000", "meminfo", "exit:0")
            .env("FAKE_CUDA_TRACE", "0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("race:20000:1000 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 480000000 500000000"), p.transcript());
    }
  }

  @Test
  void whatAStreamOrderedPoolHoldsCountsUntilThePoolGivesItBack() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "threshold:max", "async:300000000", "free", "meminfo")
            .args("async:200000000", "alloc:250000000", "alloc:200000000", "free", "free")
            .args("sync", "meminfo", "trim:0", "meminfo")
            .args("threshold:0", "async:300000000", "free", "meminfo", "sync", "meminfo", "exit:0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(
          List.of(
              "meminfo -> 0 200000000 500000000", // freed into the pool, which keeps it
              "meminfo -> 0 200000000 500000000", // never trims (UINT64_MAX): a sync keeps it
              "meminfo -> 0 500000000 500000000", // cuMemPoolTrimTo gave it back
              "meminfo -> 0 200000000 500000000", // threshold 0: kept until a synchronisation
              "meminfo -> 0 500000000 500000000"), // which trims it
          p.stdout().stream().filter(l -> l.startsWith("meminfo")).toList(),
          p.transcript());
      assertTrue(hasLine(p, "async:200000000 -> 0"), p.transcript()); // from the pool's own
      assertTrue(p.stdout().contains("alloc:250000000 -> 2"), p.transcript()); // the pool holds 300
      assertTrue(hasLine(p, "alloc:200000000 -> 0"), p.transcript()); // reuse was not counted twice
    }
  }

  @Test
  void whatAPoolGaveBackAtASynchronisationIsFreeForTheOtherProcessesOfThePod() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess first =
        workload(a, "init", "ctx", "async:300000000", "free", "streamsync", "stdin", "exit:0")
            .start()) {
      first.awaitStdout(Pattern.compile("^streamsync -> 0"), T);
      // the pool (release threshold 0) gave its 300 MB back at the synchronisation
      try (PodProcess second = workload(a, "init", "ctx", "alloc:400000000", "exit:0").start()) {
        assertEquals(0, second.awaitExit(T), second.transcript());
        assertTrue(hasLine(second, "alloc:400000000 -> 0"), second.transcript());
      }
      first.send("go");
      assertEquals(0, first.awaitExit(T), first.transcript());
    }
  }

  @Test
  void hostLocatedMemoryIsNotCountedAgainstTheGpu() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "hostcreate:600000000", "create:400000000", "meminfo")
            .args("freeall", "meminfo", "exit:0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(hasLine(p, "hostcreate:600000000 -> 0"), p.transcript());
      assertTrue(hasLine(p, "create:400000000 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 100000000 500000000"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 500000000 500000000"), p.transcript());
    }
  }

  @Test
  void aContextsAndAModulesOwnMemoryCountAgainstThePodsLimit() throws Exception {
    // the virtual GPU: the fake driver's device memory is the device's, as NVML shows it too, and
    // each context takes 100 MB of it, as a real driver takes a few hundred MiB
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "meminfo", "alloc:450000000", "module", "meminfo", "free")
            .args("meminfo", "alloc:400000000", "free", "release", "ctx", "meminfo", "release")
            .args("meminfo", "exit:0")
            .env("FAKE_GPU_FILE", stub.dir().resolve("virtual-gpu").toString())
            .env("FAKE_CUDA_CONTEXT_BYTES", "100000000")
            .env("FAKE_CUDA_MODULE_BYTES", "50000000")
            .env("FAKE_NVML_UUIDS", String.join(",", uuids(4)))
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(
          List.of(
              "meminfo -> 0 400000000 500000000", // the context's 100 MB
              "meminfo -> 0 350000000 500000000", // and a loaded module's 50 MB
              "meminfo -> 0 400000000 500000000", // given back at its unload
              "meminfo -> 0 400000000 500000000", // released and retained again: counted once
              "meminfo -> 0 500000000 500000000"), // its last release frees the context
          p.stdout().stream().filter(l -> l.startsWith("meminfo")).toList(),
          p.transcript());
      assertTrue(p.stdout().contains("alloc:450000000 -> 2"), p.transcript());
      assertTrue(hasLine(p, "alloc:400000000 -> 0"), p.transcript());
    }
  }

  /**
   * Once the member names the process (its host PID, found by its own PID and start time), the
   * pod's count is what the driver says the process holds: lazily loaded code, which its first
   * launch takes and no call returns (200 MB here), counts against the limit as its context does
   * (100 MB), and nothing measured around the context's making is counted twice.
   */
  @Test
  void theDriversOwnFigureForTheProcessCountsWhatNoCallReturns() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "launch", "meminfo", "stdin", "alloc:250000000")
            .args("alloc:150000000", "meminfo", "exit:0")
            .env("FAKE_GPU_FILE", stub.dir().resolve("virtual-gpu").toString())
            .env("FAKE_CUDA_CONTEXT_BYTES", "100000000")
            .env("FAKE_CUDA_LAZY_BYTES", "200000000")
            .env("FAKE_NVML_UUIDS", String.join(",", uuids(4)))
            .debug()
            .start()) {
      p.awaitStdout(Pattern.compile("^meminfo -> 0 "), T);
      // before the member names it: the context measured around its making, the lazy code unseen
      assertEquals("meminfo -> 0 400000000 500000000", lines(p, "meminfo").get(0), p.transcript());
      ProcessPods.Identity self =
          new ProcessPods().identity(p.pid()).orElseThrow(() -> new AssertionError(p.pid()));
      a.hostProcesses(List.of(self), null);
      p.awaitStderr(
          Pattern.compile(
              "^gpushare: debug: memory: the driver's figure for this process \\(host pid "
                  + p.pid()
                  + ": 300000000 bytes\\) counts from now$"),
          T);
      p.send("go");
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(hasLine(p, "alloc:250000000 -> 2"), p.transcript()); // 100 + 200 + 250 > 500
      assertTrue(hasLine(p, "alloc:150000000 -> 0"), p.transcript());
      assertEquals("meminfo -> 0 50000000 500000000", lines(p, "meminfo").get(1), p.transcript());
    }
  }

  private static List<String> lines(PodProcess p, String start) {
    return p.stdout().stream().filter(l -> l.startsWith(start)).toList();
  }

  @Test
  void podsSharingOneDirectoryUnderOneUidKeepTheirFilesApart() throws Exception {
    // an MPS node: one /dev/shm for every pod, every workload under the MPS UID
    Path shm = Files.createDirectories(stub.dir().resolve("shared-shm"));
    String dir = shm.toString();
    StubPod b = stub.pod("default", "b").limits(50, 50).grantOnDemand(0);
    a.grantOnDemand(0);
    try (PodProcess pa =
        workload(a, "init", "ctx", "alloc:300000000", "hold")
            .env("GPUSHARE_STATE_DIR", dir)
            .start()) {
      pa.awaitStdout(Pattern.compile("^alloc:300000000 -> 0"), T);
      Path aDir = shm.resolve("gpushare-" + a.uid());
      assertEquals(
          PosixFilePermissions.fromString("rwx------"),
          Files.getPosixFilePermissions(aDir, LinkOption.NOFOLLOW_LINKS));

      // b's count is its own: a's 300 MB are not in it
      try (PodProcess pb =
          workload(b, "init", "ctx", "alloc:400000000", "exit:0")
              .env("GPUSHARE_STATE_DIR", dir)
              .start()) {
        assertEquals(0, pb.awaitExit(T), pb.transcript());
        assertTrue(hasLine(pb, "alloc:400000000 -> 0"), pb.transcript());
      }

      // a link planted where c's directory goes, toward a's, is not followed
      StubPod c = stub.pod("default", "c").limits(50, 50).grantOnDemand(0);
      Files.createSymbolicLink(shm.resolve("gpushare-" + c.uid()), aDir);
      try (PodProcess pc =
          workload(c, "init", "ctx", "alloc:400000000", "exit:0")
              .env("GPUSHARE_STATE_DIR", dir)
              .start()) {
        assertEquals(0, pc.awaitExit(T), pc.transcript());
        assertTrue(hasLine(pc, "alloc:400000000 -> 0"), pc.transcript()); // not a's count
        pc.awaitStderr(
            Pattern.compile(
                "^gpushare: the pod's directory .*gpushare-"
                    + c.uid()
                    + " cannot be opened without following a link.*memory is counted per process"),
            T);
      }

      // a file of another pod's (a's, copied into d's directory) is refused, said once
      StubPod d = stub.pod("default", "d").limits(50, 50).grantOnDemand(0);
      Path dDir =
          Files.createDirectory(
              shm.resolve("gpushare-" + d.uid()),
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.copy(aDir.resolve("pod"), dDir.resolve("pod"));
      try (PodProcess pd =
          workload(d, "init", "ctx", "alloc:400000000", "exit:0")
              .env("GPUSHARE_STATE_DIR", dir)
              .start()) {
        assertEquals(0, pd.awaitExit(T), pd.transcript());
        assertTrue(hasLine(pd, "alloc:400000000 -> 0"), pd.transcript());
        Pattern refused =
            Pattern.compile(
                "^gpushare: .*gpushare-"
                    + d.uid()
                    + "/pod was written by another version of gpushare or for another pod .*uid "
                    + a.uid()
                    + "\\): it is not used");
        assertEquals(1, pd.countStderr(refused), pd.transcript());
      }

      // a new pod of a's name (another uid) does not see the deleted one's counts
      a.uid("uid-default-a-again");
      try (PodProcess again =
          workload(a, "init", "ctx", "alloc:400000000", "exit:0")
              .env("GPUSHARE_STATE_DIR", dir)
              .start()) {
        assertEquals(0, again.awaitExit(T), again.transcript());
        assertTrue(hasLine(again, "alloc:400000000 -> 0"), again.transcript());
        assertTrue(Files.isDirectory(shm.resolve("gpushare-uid-default-a-again")));
      }
    }
  }

  @Test
  void aForkedChildCountsWithItsParent() throws Exception {
    // GCC 12's sanitizer runtime does not hold its allocator's locks across fork: a child forked
    // while another thread (the library's watch) allocates can deadlock inside the runtime itself
    // (seen: the child's LeakSanitizer and its first new thread both waiting for a lock no thread
    // holds). The plain library is forked here; the sanitized one in every other scenario.
    org.junit.jupiter.api.Assumptions.assumeFalse(
        build().sanitized(), "fork under GCC 12's AddressSanitizer runtime (see the comment)");
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "alloc:300000000", "fork", "init", "alloc:300000000")
            .args("alloc:100000000", "exit:0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("alloc:300000000 -> 2"), p.transcript());
      assertTrue(hasLine(p, "alloc:100000000 -> 0"), p.transcript());
    }
  }

  // ------------------------------------------------------------------ 5. wake on use

  @Test
  void aCheckpointedProcessRaisesDemandAtItsNextCallAndGoesOnOnceRestored() throws Exception {
    a.grantOnDemand(2);
    try (PodProcess p =
        workload(a, "init", "ctx", "alloc:1000", "launch", "stdin", "launch", "sync", "exit:0")
            .start()) {
      p.awaitStdout(Pattern.compile("^launch -> 0"), T);
      stub.awaitWatchers(1, T);
      // idle release with the state kept: the member checkpointed it, the share is free
      a.checkpoint("held", 2, 1000).hibernate();
      p.awaitStderr(
          "gpushare: pod default/a left Running (now Hibernation): its GPU state is checkpointed"
              + " in host memory; workload keeps running without a signal and goes on when the"
              + " pod runs again",
          T);
      int demands = stub.requests("POST", "/demand").size();
      a.grantOnDemand(null).onDemand(pod -> pod.ready(1));
      p.send("next cell");
      p.awaitStderr(waitingLine(1), T);
      assertEquals(demands + 1, stub.requests("POST", "/demand").size());
      a.checkpoint("restoring", 2, 1000).running(2); // granted its own GPU, restore under way
      a.noCheckpoint();
      p.awaitStderr(
          "gpushare: pod default/a is Running again on GPU 2 ("
              + DataPlaneStub.uuidOf(2)
              + "): its GPU state was restored; workload goes on",
          T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(2, p.stdout().stream().filter(l -> l.startsWith("launch -> 0")).count());
      assertEquals(0, p.countStderr(Pattern.compile("SIGUSR1")));
    }
  }

  /**
   * CUDA graphs (vLLM's decode, torch.compile) put work on the GPU through cuGraphLaunch: such a
   * launch is gated as a kernel launch is, so it waits while the pod's state is checkpointed and
   * goes on once restored.
   */
  @Test
  void aCudaGraphLaunchWaitsWhileThePodIsCheckpointedAndGoesOnOnceRestored() throws Exception {
    a.grantOnDemand(2);
    try (PodProcess p =
        PodProcess.builder("busy")
            .build(build())
            .pod(a)
            .env("FAKE_CUDA_UUIDS", String.join(",", uuids(4)))
            .env("FAKE_CUDA_VERSION", "13000")
            .args("--graph", "2", "--seconds", "5", "--report-ms", "100")
            .start()) {
      p.awaitStdout(Pattern.compile("^\\d+ [1-9]\\d*$"), T); // graph launches went through
      stub.awaitWatchers(1, T);
      a.checkpoint("held", 2, 1000).hibernate();
      p.awaitStderr(
          Pattern.compile("left Running \\(now Hibernation\\): its GPU state is checkpointed"), T);
      int demands = stub.requests("POST", "/demand").size();
      a.grantOnDemand(null).onDemand(pod -> pod.ready(1));
      p.awaitStderr(waitingLine(1), T); // the next cuGraphLaunch raised demand and waits
      assertEquals(demands + 1, stub.requests("POST", "/demand").size());
      long reports = p.stdout().stream().filter(l -> l.matches("\\d+ \\d+")).count();
      assertTrue(
          reports < 40, "a graph launch waited, not the final cuCtxSynchronize: " + p.transcript());
      a.checkpoint("restoring", 2, 1000).running(2);
      a.noCheckpoint();
      p.awaitStderr(Pattern.compile("is Running again on GPU 2 .*: its GPU state was restored"), T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().stream().anyMatch(l -> l.startsWith("done launches=")));
    }
  }

  // ------------------------------------------------------------------ 6. release

  @Test
  void theShareIsReleasedWhenThePodsLastGpuProcessExits() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess first = workload(a, "init", "ctx", "stdin", "exit:0").start();
        PodProcess second = workload(a, "init", "ctx", "stdin", "exit:0").start()) {
      first.awaitStdout("ctx -> 0", T);
      second.awaitStdout("ctx -> 0", T);
      first.send("bye");
      assertEquals(0, first.awaitExit(T));
      second.send("still here");
      assertEquals(0, second.awaitExit(T));
      stub.awaitRequest("DELETE", "/demand", T);
      assertEquals(1, stub.requests("DELETE", "/demand").size(), stub.requests().toString());
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"plain", "pid1"})
  void aSigtermLeftAtItsDefaultReleasesTheShareBeforeItEndsTheProcess(String where)
      throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p = at(where, workload(a, "init", "ctx", "hold")).start()) {
      p.awaitStdout("ctx -> 0", T);
      p.signal("TERM");
      assertEquals(128 + 15, p.awaitExit(T));
      stub.awaitRequest("DELETE", "/demand", T);
    }
  }

  // ------------------------------------------------------------------ 7. the signal contract

  /**
   * The grace is Kubernetes': a preempted process that ignores the signals keeps its GPU state and
   * its calls go on (they never wait: a Python main thread must get back to its interpreter to run
   * a handler), until SIGTERM one grace later and SIGKILL one more grace later.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"plain", "pid1"})
  void aPreemptedProcessGetsSigusr1ThenSigtermThenSigkillAndItsCallsGoOnMeanwhile(String where)
      throws Exception {
    a.grantOnDemand(1);
    try (PodProcess p =
        at(
                where,
                workload(a, "init", "ctx", "ignore:USR1", "ignore:TERM", "stdin", "launch", "hold"))
            .start()) {
      p.awaitStdout(Pattern.compile("^ignore:TERM -> 0"), T);
      stub.awaitWatchers(1, T);
      a.ready(1); // preempted by a waiting pod, and still wanting a GPU
      p.awaitStderr(
          Pattern.compile(
              "^gpushare: pod default/a left Running \\(now Ready\\): its GPU share was preempted"
                  + " or revoked: sending SIGUSR1 to workload \\(pid "
                  + (where.equals("pid1") ? 1 : p.pid())
                  + "\\), SIGTERM if it still runs 1s later$"),
          T);
      p.send("a call after the signal");
      p.awaitStdout("launch -> 0", T); // within the grace: it goes on, no waiting line
      p.awaitStderr("gpushare: workload still runs: SIGTERM", T);
      p.awaitStderr("gpushare: workload still runs: SIGKILL", T);
      assertEquals(128 + 9, p.awaitExit(T));
      assertEquals(0, p.countStderr(waitingLine(1)), p.transcript());
      stub.awaitRequest("DELETE", "/demand", T); // before the SIGKILL: nobody wants the GPU now
    }
  }

  /**
   * A workload with its own SIGUSR1/SIGTERM handler (a flag its main thread looks at between calls,
   * as a Python framework's) saves within the grace: its launch loop returns to look, its copy of
   * device memory to the host and its synchronisation succeed, and it exits before the SIGTERM, its
   * share released.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"plain", "pid1"})
  void aWorkloadWithItsOwnHandlerSavesItsDeviceMemoryWithinTheGrace(String where) throws Exception {
    a.grantOnDemand(1);
    try (PodProcess p =
        at(where, workload(a, "init", "ctx", "alloc:4096", "memcpy", "train:5"))
            .env("GPUSHARE_GRACE", "10s")
            .start()) {
      p.awaitStdout("memcpy -> 0", T);
      stub.awaitWatchers(1, T);
      a.ready(1); // preempted
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(hasLine(p, "save -> 0 after SIGUSR1"), p.transcript());
      assertTrue(hasLine(p, "train:5 -> 0 saved"), p.transcript());
      assertEquals(1, p.countStderr(Pattern.compile("fake libcuda: cuMemcpyDtoH_v2\\(64\\)")));
      assertEquals(0, p.countStderr(Pattern.compile("still runs: SIGTERM")), p.transcript());
      stub.awaitRequest("DELETE", "/demand", T);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"plain", "pid1"})
  void aPreemptedProcessWithSigusr1AtItsDefaultEndsAndWithdrawsTheDemand(String where)
      throws Exception {
    a.grantOnDemand(1);
    try (PodProcess p = at(where, workload(a, "init", "ctx", "hold")).start()) {
      p.awaitStdout("ctx -> 0", T);
      stub.awaitWatchers(1, T);
      a.hibernate(); // revoked (idle release without a checkpoint)
      assertEquals(128 + 10, p.awaitExit(T), p.transcript());
      stub.awaitRequest("DELETE", "/demand", T);
    }
  }

  // ------------------------------------------------------------------ 8. failures

  @Test
  void anUnreachableDataPlaneIsSaidOnceAndTheCallWaitsOrFailsAsConfigured() throws Exception {
    String dead = "http://127.0.0.1:" + freePort();
    try (PodProcess p = workload(a, "init", "exit:0").env("GPUSHARE_SERVER", dead).start()) {
      p.awaitStderr(
          Pattern.compile(
              "^gpushare: cannot reach the gpushare data plane at "
                  + Pattern.quote(dead)
                  + " \\(connect: Connection refused\\): set GPUSHARE_SERVER to the node's"
                  + " data-plane address; CUDA calls wait, retrying every 2s$"),
          T);
      assertTrue(p.isAlive());
      assertTrue(p.stdout().isEmpty(), p.transcript());
    }
    try (PodProcess p =
        workload(a, "init", "exit:0")
            .env("GPUSHARE_SERVER", dead)
            .env("GPUSHARE_ON_ERROR", "fail")
            .start()) {
      assertEquals(0, p.awaitExit(T));
      assertTrue(p.stdout().contains("init -> 100"), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("fake libcuda: cuInit")), p.transcript());
    }
  }

  @Test
  void aRefusedTokenUnknownPodOrUnreadableAnswerIsSaidAndNothingRunsWithoutAGrant()
      throws Exception {
    stub.requireToken("right");
    Path wrong = Files.writeString(stub.dir().resolve("wrong-token"), "wrong\n");
    try (PodProcess p =
        workload(a, "init", "exit:0")
            .env("GPUSHARE_TOKEN_FILE", wrong.toString())
            .env("GPUSHARE_ON_ERROR", "fail")
            .start()) {
      assertEquals(0, p.awaitExit(T));
      p.awaitStderr(
          Pattern.compile(
              "^gpushare: the data plane at .* refused the token \\(HTTP 401: .*\\): set"
                  + " GPUSHARE_TOKEN_FILE to a file holding a token it accepts \\(now "
                  + Pattern.quote(wrong.toString())
                  + "\\); the CUDA call fails with CUDA_ERROR_NO_DEVICE"
                  + " \\(GPUSHARE_ON_ERROR=fail\\)$"),
          T);
      assertTrue(p.stdout().contains("init -> 100"), p.transcript());
    }
    try (PodProcess p = workload(stub.pod("default", "right"), "init", "exit:0").start()) {
      stub.remove("default", "right");
      p.awaitStderr(
          Pattern.compile(
              "^gpushare: the arbiter does not know pod default/right \\(HTTP 404: .*\\): set"
                  + " GPUSHARE_POD, or POD_NAMESPACE and POD_NAME, to this pod; CUDA calls wait,"
                  + " retrying every 2s$"),
          T);
      assertTrue(p.stdout().isEmpty());
    }
    stub.garbage(true);
    try (PodProcess p = workload(a, "init", "exit:0").env("GPUSHARE_ON_ERROR", "fail").start()) {
      assertEquals(0, p.awaitExit(T));
      p.awaitStderr(
          Pattern.compile("^gpushare: cannot read the data plane's answer to GET /v1/.*"), T);
      assertTrue(p.stdout().contains("init -> 100"), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("fake libcuda: cuInit")));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(
      strings = {
        "GPUSHARE_WAIT_INTERVAL=ten|GPUSHARE_WAIT_INTERVAL='ten' is not a duration",
        "GPUSHARE_WAIT_INTERVAL=10ms|GPUSHARE_WAIT_INTERVAL='10ms' is too short",
        "GPUSHARE_GRACE=-1|GPUSHARE_GRACE='-1' is not a duration",
        "GPUSHARE_SERVER=ftp://node:21|GPUSHARE_SERVER='ftp://node:21' is not usable",
        "GPUSHARE_SERVER=http://node:99999|GPUSHARE_SERVER='http://node:99999' is not usable: the"
            + " port",
        "GPUSHARE_POD=just-a-name|GPUSHARE_POD='just-a-name' is not NAMESPACE/NAME",
        "GPUSHARE_POD=Default/A|pod 'Default/A' is not a Kubernetes namespace and name",
        "GPUSHARE_ON_ERROR=maybe|GPUSHARE_ON_ERROR='maybe' is not one of: wait",
        "GPUSHARE_TOKEN_FILE=relative/token|GPUSHARE_TOKEN_FILE='relative/token' is not usable",
        "GPUSHARE_STATE_DIR=tmp|GPUSHARE_STATE_DIR='tmp' is not usable"
      })
  void aMalformedSettingIsNamedAndTheCallsFail(String setting) throws Exception {
    String[] s = setting.split("\\|", 2);
    String[] kv = s[0].split("=", 2);
    try (PodProcess p = workload(a, "init", "init", "exit:0").env(kv[0], kv[1]).start()) {
      assertEquals(0, p.awaitExit(T));
      assertEquals(
          1,
          p.countStderr(
              Pattern.compile(
                  "^gpushare: "
                      + Pattern.quote(s[1])
                      + ".*; CUDA calls fail with CUDA_ERROR_NO_DEVICE until it is set right$")),
          p.transcript());
      assertEquals(2, p.stdout().stream().filter(l -> l.equals("init -> 100")).count());
      assertTrue(stub.requests().isEmpty());
    }
  }

  /**
   * A server that sends the watch's headers and first event in one write (the real server may): the
   * event must be read at once, not when the next bytes (a heartbeat, 15 s later) come.
   */
  @Test
  void aWatchEventThatCameWithTheHeadersIsReadAtOnce() throws Exception {
    a.running(2);
    String view = a.json();
    try (java.net.ServerSocket server =
        new java.net.ServerSocket(0, 8, java.net.InetAddress.getLoopbackAddress())) {
      Thread t =
          new Thread(
              () -> {
                while (!server.isClosed()) {
                  try {
                    java.net.Socket c = server.accept();
                    String line =
                        new java.io.BufferedReader(
                                new java.io.InputStreamReader(c.getInputStream()))
                            .readLine();
                    String body = line.contains("/watch") ? "data: " + view + "\n\n" : view;
                    String head =
                        "HTTP/1.1 200 OK\r\nContent-Type: "
                            + (line.contains("/watch")
                                ? "text/event-stream\r\n"
                                : "application/json\r\nContent-Length: " + body.length() + "\r\n")
                            + "\r\n";
                    c.getOutputStream().write((head + body).getBytes());
                    c.getOutputStream().flush();
                    if (!line.contains("/watch")) {
                      c.close();
                    }
                  } catch (java.io.IOException e) {
                    return;
                  }
                }
              });
      t.setDaemon(true);
      t.start();
      try (PodProcess p =
          workload(a, "init", "exit:0")
              .env("GPUSHARE_SERVER", "http://127.0.0.1:" + server.getLocalPort())
              .start()) {
        p.awaitStdout("init -> 0", Duration.ofSeconds(10)); // well before a 15 s heartbeat
        p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(2), T);
      }
    }
  }

  // ------------------------------------------------------------------ the Unix socket

  @Test
  void theDataPlaneMayBeAUnixSocket() throws Exception {
    a.grantOnDemand(1);
    try (PodProcess p =
        workload(a, "init", "exit:0").env("GPUSHARE_SERVER", stub.unixSocket()).start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("init -> 0"));
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(1), T);
    }
  }

  @Test
  void aTokenIsNeverSentToAnotherMachineOverPlainHttp() throws Exception {
    a.grantOnDemand(1);
    try (PodProcess p =
        workload(a, "init", "exit:0")
            .env("GPUSHARE_SERVER", "http://10.0.0.5:8080")
            .env("GPUSHARE_TOKEN_FILE", stub.dir().resolve("token").toString())
            .env("GPUSHARE_ON_ERROR", "fail")
            .start()) {
      p.awaitStderr(
          Pattern.compile(
              "GPUSHARE_SERVER='http://10.0.0.5:8080' with GPUSHARE_TOKEN_FILE would send the"
                  + " pod's token over the network in clear text"),
          T);
      p.awaitExit(T);
      assertTrue(stub.requests().isEmpty(), stub.requests().toString());
    }
  }

  // ------------------------------------------------------------------ MPS

  @Test
  void underMpsTheGrantedGpusDaemonIsFoundThroughTheViewsWorkloadEnvironment() throws Exception {
    a.workloadEnv(
            "CUDA_MPS_PIPE_DIRECTORY", "/run/gpushare/mps/" + DataPlaneStub.uuidOf(2) + "/pipe")
        .workloadEnv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50")
        .grantOnDemand(2);
    try (PodProcess p = workload(a, "init", "exit:0").env("FAKE_CUDA_TRACE", "1").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      p.awaitStderr(
          "fake libcuda: cuInit CUDA_MPS_PIPE_DIRECTORY=/run/gpushare/mps/"
              + DataPlaneStub.uuidOf(2)
              + "/pipe",
          T);
    }
  }

  /** The device's size as CUDA tells it (cuDeviceTotalMem_v2) is the share's, as cuMemGetInfo's. */
  @Test
  void cuDeviceTotalMemIsTheSharesMemory() throws Exception {
    a.limits(50, 50).grantOnDemand(1);
    try (PodProcess p =
        PodProcess.builder("busy")
            .build(build())
            .pod(a)
            .env("FAKE_CUDA_MEMORY", Long.toString(GPU_BYTES))
            .env("FAKE_CUDA_UUIDS", String.join(",", uuids(4)))
            .args("--memory", "--seconds", "0")
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      long half = GPU_BYTES / 2;
      assertTrue(
          p.stdout().contains("memory total=" + half + " info=" + half + " " + half),
          p.transcript());
    }
  }

  // ------------------------------------------------------------------ 4. the NVML view

  /** The fake NVML's memory of a GPU (fake_nvml.c: 97871 MiB), and half of it (a 50 % share). */
  static final long NVML_GPU_BYTES = 97871L * 1024 * 1024;

  static final long HALF_SHARE = NVML_GPU_BYTES / 100 * 50 + NVML_GPU_BYTES % 100 * 50 / 100;

  PodProcess.Builder nvmlView(StubPod pod, String... args) {
    return PodProcess.builder("nvml_view")
        .build(build())
        .pod(pod)
        .env("FAKE_NVML_UUIDS", String.join(",", uuids(4)))
        .env("FAKE_CUDA_UUIDS", String.join(",", uuids(4)))
        .env("FAKE_CUDA_VERSION", "13000")
        .args(args);
  }

  /**
   * The granted GPU alone, with its real index; its utilisation the pod's own (the samples of the
   * processes the member names: pid 4242, scripted at 42 %) relative to the core limit of 50, its
   * memory the share's; other processes are not listed.
   */
  @Test
  void nvmlShowsTheGrantedGpuOnlyWithItsRealIndexAndUtilisationRelativeToTheCoreLimit()
      throws Exception {
    a.limits(50, 50).running(1).hostPids(java.util.List.of(4242L), null);
    for (String mode : new String[] {"--dlsym", "--link"}) {
      try (PodProcess p =
          nvmlView(a, mode.equals("--link") ? new String[] {"--link"} : new String[0])
              .env("FAKE_NVML_UTIL", "1:42:17")
              .start()) {
        assertEquals(0, p.awaitExit(T), p.transcript());
        assertTrue(p.stdout().contains("count 1"), p.transcript());
        assertTrue(
            p.stdout()
                .contains(
                    "gpu index=1 uuid="
                        + DataPlaneStub.uuidOf(1)
                        + " util=84 mem=17 procutil=84 memtotal="
                        + HALF_SHARE
                        + " procs=0"),
            p.transcript());
      }
    }
  }

  /**
   * Another pod's process on the GPU (the fake's pid 4242, at 42 %) is not the pod's: the pod's
   * utilisation is its own (0), never the GPU's over the limit, and no sample of it is shown.
   */
  @Test
  void nvmlNeverShowsAnotherPodsUseOrProcesses() throws Exception {
    a.limits(50, 50).running(1).hostPids(java.util.List.of(999_999L), null);
    try (PodProcess p = nvmlView(a).env("FAKE_NVML_UTIL", "1:42:17").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(
          p.stdout()
              .contains(
                  "gpu index=1 uuid="
                      + DataPlaneStub.uuidOf(1)
                      + " util=0 mem=17 procutil=err6 memtotal="
                      + HALF_SHARE
                      + " procs=0"),
          p.transcript());
    }
  }

  /**
   * Before its grant (Hibernation) a sharing pod sees one GPU, the node's first, with its share's
   * memory (vLLM and others look for a GPU through NVML before the CUDA call that raises demand); a
   * static pod sees the GPU it is pinned to. The node's other processes (the fake's 4242, 4343 on
   * GPU 0) are not shown.
   */
  @Test
  void beforeItsGrantAPodSeesTheGpuItWouldGetWithItsSharesMemory() throws Exception {
    a.limits(50, 50).hibernate();
    try (PodProcess p = nvmlView(a).start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("count 1"), p.transcript());
      assertTrue(
          p.stdout()
              .contains(
                  "gpu index=0 uuid="
                      + DataPlaneStub.uuidOf(0)
                      + " util=0 mem=17 procutil=err6 memtotal="
                      + HALF_SHARE
                      + " procs=0"),
          p.transcript());
    }
    StubPod s =
        stub.pod("default", "s").limits(50, 50).policy("static").gpu(2, DataPlaneStub.uuidOf(2));
    s.state("Ready");
    try (PodProcess p = nvmlView(s).start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("count 1"), p.transcript());
      assertTrue(
          p.stdout().stream()
              .anyMatch(l -> l.startsWith("gpu index=2 uuid=" + DataPlaneStub.uuidOf(2) + " ")),
          p.transcript());
    }
  }

  /**
   * Lists the devices again (nvml_view --again) until a listing has a line that starts with {@code
   * start}: the view follows the pod in the background, so the listing after a change may still be
   * the one before.
   */
  static void awaitListing(PodProcess p, String start) throws Exception {
    long until = System.nanoTime() + T.toNanos();
    int n = 2 + (int) p.stdout().stream().filter(l -> l.startsWith("list ")).count();
    for (; System.nanoTime() < until; n++) {
      p.send("again");
      p.awaitStdout("list " + n, T);
      java.util.List<String> out = p.stdout();
      int at = out.indexOf("list " + n);
      p.awaitStdout(Pattern.compile("^past index="), T);
      out = p.stdout();
      if (out.subList(at, out.size()).stream().anyMatch(l -> l.startsWith(start))) {
        return;
      }
      Thread.sleep(200);
    }
    throw new AssertionError(
        "no listing showed '" + start + "' within " + T + ":\n" + p.transcript());
  }

  /**
   * A member that accepts the connection and says nothing (one being restarted, a rollout with
   * maxUnavailable 1) never makes NVML show a sharing pod no GPU: nvmlInit waits a moment for it
   * and then shows the GPU the pod would get, the node's first; once the member answers, the view
   * is the pod's (Running on GPU 2), without initialising NVML again.
   */
  @Test
  void aSilentMemberNeverMakesNvmlShowNoGpuAndTheViewFollowsOnceItAnswers() throws Exception {
    a.limits(50, 50).running(2);
    stub.hold(r -> true);
    try (PodProcess p = nvmlView(a, "--again").start()) {
      p.awaitStdout(Pattern.compile("^past index=1 rc=2$"), T);
      assertEquals("count 1", p.stdout().get(0), p.transcript());
      assertTrue(
          p.stdout().get(1).startsWith("gpu index=0 uuid=" + DataPlaneStub.uuidOf(0) + " "),
          p.transcript());
      stub.release();
      awaitListing(p, "gpu index=2 uuid=" + DataPlaneStub.uuidOf(2) + " ");
      p.closeStdin();
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
  }

  /** Nothing listens where the data plane should be: still one GPU, the node's first. */
  @Test
  void anUnreachableDataPlaneNeverMakesNvmlShowNoGpu() throws Exception {
    a.limits(50, 50).running(2);
    String dead = "http://127.0.0.1:" + freePort();
    try (PodProcess p = nvmlView(a).env("GPUSHARE_SERVER", dead).start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals("count 1", p.stdout().get(0), p.transcript());
      assertTrue(
          p.stdout().get(1).startsWith("gpu index=0 uuid=" + DataPlaneStub.uuidOf(0) + " "),
          p.transcript());
    }
  }

  /**
   * A process that only uses NVML (nvidia-smi -l, a monitoring agent) follows the pod's grants as
   * they come and go: the granted GPU while the pod runs, the GPU it would get while it sleeps, the
   * next grant's GPU afterwards.
   */
  @Test
  void anNvmlOnlyProcessFollowsThePodsGrantsAsTheyComeAndGo() throws Exception {
    a.limits(50, 50).running(1);
    try (PodProcess p = nvmlView(a, "--again").start()) {
      p.awaitStdout(Pattern.compile("^past index=1 rc=2$"), T);
      assertTrue(
          p.stdout().get(1).startsWith("gpu index=1 uuid=" + DataPlaneStub.uuidOf(1) + " "),
          p.transcript());
      a.hibernate();
      awaitListing(p, "gpu index=0 uuid=" + DataPlaneStub.uuidOf(0) + " ");
      a.running(3);
      awaitListing(p, "gpu index=3 uuid=" + DataPlaneStub.uuidOf(3) + " ");
      p.closeStdin();
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
  }

  /**
   * The view follows the grant: a process that initialised NVML in Hibernation (the node's first
   * GPU) sees the GPU granted at its first CUDA call afterwards, without initialising NVML again.
   */
  @Test
  void nvmlInitialisedBeforeTheGrantShowsTheGrantedGpuAfterwards() throws Exception {
    a.limits(50, 50).hibernate().grantOnDemand(2);
    try (PodProcess p = nvmlView(a, "--then-cuinit").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      java.util.List<String> out = p.stdout();
      int cuInit = out.indexOf("cuInit 0");
      assertTrue(cuInit > 0, p.transcript());
      assertTrue(
          out.subList(0, cuInit).stream()
              .anyMatch(l -> l.startsWith("gpu index=0 uuid=" + DataPlaneStub.uuidOf(0) + " ")),
          p.transcript());
      assertEquals("count 1", out.get(cuInit + 1), p.transcript());
      assertTrue(
          out.get(cuInit + 2).startsWith("gpu index=2 uuid=" + DataPlaneStub.uuidOf(2) + " "),
          p.transcript());
    }
  }

  // ------------------------------------------------------------------ issue 32: the data plane
  // fails

  @Test
  void anAnswerCutShortIsAnErrorAndTheCallGoesOnOnceAWholeOneComes() throws Exception {
    a.grantOnDemand(0);
    stub.cut(r -> r.is("GET", "/pods/a"), DataPlaneStub.Cut.SHORT_BODY, 1)
        .cut(r -> r.is("POST", "/demand"), DataPlaneStub.Cut.CUT_CHUNK, 1)
        .cut(r -> r.is("GET", "/watch"), DataPlaneStub.Cut.CUT_CHUNK, 1);
    try (PodProcess p = workload(a, "init", "ctx", "launch", "exit:0").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("launch -> 0"), p.transcript());
      assertTrue(
          p.countStderr(Pattern.compile("^gpushare: cannot reach .*\\(the answer was cut short\\)"))
              >= 1,
          p.transcript());
      assertEquals(2, stub.requests("POST", "/demand").size(), stub.requests().toString());
    }
  }

  @Test
  void aRequestUnderWayHoldsUpNeitherForkNorTheProcess() throws Exception {
    // fork under GCC 12's AddressSanitizer runtime: see aForkedChildCountsWithItsParent
    org.junit.jupiter.api.Assumptions.assumeFalse(
        build().sanitized(), "fork under GCC 12's AddressSanitizer runtime");
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctx", "stdin", "fork", "env:GPUSHARE_POD", "exit:0").start()) {
      p.awaitStdout("ctx -> 0", T);
      stub.awaitWatchers(1, T);
      int gets = stub.requests("GET", "/pods/a").size();
      stub.hold(r -> r.is("GET", "/pods/a"));
      try {
        a.ready(1); // the watch's view is looked at again with a fresh GET: the stub holds it
        stub.awaitRequests(r -> r.is("GET", "/pods/a"), gets + 1, T);
        p.send("fork now");
        p.awaitStdout("env:GPUSHARE_POD -> 0 default/a", T); // the child runs meanwhile
        a.running(0); // what the held GET answers
      } finally {
        stub.release();
      }
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("SIGUSR1")), p.transcript());
    }
  }

  @Test
  void a404OnTheWatchIsLookedAtAgainAndStopsNothingWhileTheViewSaysRunning() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p = workload(a, "init", "ctx", "stdin", "launch", "exit:0").debug().start()) {
      p.awaitStdout("ctx -> 0", T);
      settled(p);
      int watches = stub.requests("GET", "/watch").size();
      // the member answers 404 while it (re)creates a pod: twice on the watch, once on a GET too
      java.util.concurrent.atomic.AtomicInteger watch404 =
          new java.util.concurrent.atomic.AtomicInteger(2);
      java.util.concurrent.atomic.AtomicInteger get404 =
          new java.util.concurrent.atomic.AtomicInteger(1);
      stub.intercept(
          r ->
              (r.is("GET", "/watch") && watch404.getAndDecrement() > 0)
                      || (r.is("GET", "/pods/a")
                          && watch404.get() < 2 // the re-check of the first 404
                          && get404.getAndDecrement() > 0)
                  ? DataPlaneStub.Answer.problem(404, "Not Found", "pod default/a is not known")
                  : null);
      stub.dropWatches();
      stub.awaitRequests(r -> r.is("GET", "/watch"), watches + 3, T); // two 404s, then a watch
      stub.awaitWatchers(1, T);
      p.send("go on");
      p.awaitStdout("launch -> 0", T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("SIGUSR1")), p.transcript());
    }
  }

  /**
   * The watch has shown the Running view (GPUSHARE_DEBUG's line), after any view it fetched before
   * the demand and that view's re-check: nothing of the start is still under way.
   */
  private void settled(PodProcess p) {
    stub.awaitWatchers(1, T);
    p.awaitStderr("gpushare: debug: view (watch): Running", T);
  }

  @Test
  void aDeletedPodIsStoppedOnceA404IsConfirmedByAFreshGet() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p = workload(a, "init", "ctx", "hold").debug().start()) {
      p.awaitStdout("ctx -> 0", T);
      settled(p);
      stub.remove("default", "a");
      p.awaitStderr(Pattern.compile("^gpushare: pod default/a left Running \\(now Deleted\\)"), T);
      assertEquals(128 + 10, p.awaitExit(T), p.transcript());
    }
  }

  @Test
  void aProcessThatOnlyUsesNvmlStartsNoLimiter() throws Exception {
    a.limits(50, 50).computeMode("library").running(1);
    try (PodProcess p =
        PodProcess.builder("nvml_view")
            .build(build())
            .pod(a)
            .env("FAKE_NVML_UUIDS", String.join(",", uuids(4)))
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("count 1"), p.transcript());
    }
    assertTrue(stub.requests("POST", "/compute").isEmpty(), stub.requests().toString());
    assertEquals(List.of(), limitFiles(a), "no limiter, no limit file");
    // the same pod's CUDA process starts the limiter: the check above looks for the right file
    try (PodProcess p = workload(a, "init", "ctx", "launch", "exit:0").start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
    assertEquals(1, limitFiles(a).size(), "a CUDA process's limiter keeps the pod's limit file");
  }

  /** The pod's limit files (limiter.c: "limit" in the pod's directory, or one being made). */
  private static List<Path> limitFiles(StubPod pod) throws java.io.IOException {
    try (java.util.stream.Stream<Path> files = Files.walk(pod.stateDir())) {
      return files
          .filter(f -> f.getFileName().toString().matches("limit|\\.limit\\.\\d+"))
          .toList();
    }
  }

  // ------------------------------------------------------------------ issue 32: the environment

  @ParameterizedTest(name = "CUDA_VISIBLE_DEVICES {0}")
  @ValueSource(strings = {"unset", "7"})
  void cudaVisibleDevicesIsTheUsersAgainAfterCuInitForTheProgramAndWhatItStarts(String had)
      throws Exception {
    a.grantOnDemand(2);
    String seen = had.equals("unset") ? "(unset)" : had;
    try (PodProcess p =
        workload(a, "init", "env:CUDA_VISIBLE_DEVICES", "exec", "env:CUDA_VISIBLE_DEVICES")
            .args("init", "exit:0")
            .env("CUDA_VISIBLE_DEVICES", had.equals("unset") ? null : had)
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(
          2,
          p.stdout().stream()
              .filter(l -> l.equals("env:CUDA_VISIBLE_DEVICES -> 0 " + seen))
              .count(),
          p.transcript());
      // the program started anew (as a spawned worker is) got its own grant for its own cuInit
      assertEquals(
          2,
          p.countStderr(
              Pattern.compile(
                  "^fake libcuda: cuInit CUDA_VISIBLE_DEVICES="
                      + Pattern.quote(DataPlaneStub.uuidOf(2))
                      + "$")),
          p.transcript());
    }
  }

  @ParameterizedTest(name = "CUDA_VISIBLE_DEVICES=''{0}''")
  @ValueSource(strings = {"", "-1", "-1,0", "none"})
  void aCpuOnlyProcessRaisesNoDemandAndTakesNoShare(String cvd) throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "count", "exit:0").env("CUDA_VISIBLE_DEVICES", cvd).start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(p.stdout().contains("init -> 100"), p.transcript()); // the driver: no device
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + cvd, T);
      assertTrue(stub.requests().isEmpty(), stub.requests().toString());
      assertEquals(0, p.countStderr(Pattern.compile("^gpushare: ")), p.transcript());
    }
  }

  // ------------------------------------------------------------------ issue 32: cuGetProcAddress

  /**
   * The fake driver's cuGetProcAddress, like a real one, gives internal entry points for cuInit,
   * cuMemAlloc_v2, cuLaunchKernel and others (fake_cuda.c): the library wraps them by name and
   * version, and says under GPUSHARE_DEBUG=1 which names it lets through.
   */
  @Test
  void internalEntryPointsFromGetProcAddressAreWrappedByNameAndVersion() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "--via", "procaddress", "init", "ctx", "alloc:600000000", "alloc:1000")
            .args("meminfo", "launch", "sync", "exit:0")
            .debug()
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(1, stub.requests("POST", "/demand").size(), "cuInit raised the demand");
      p.awaitStderr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + DataPlaneStub.uuidOf(0), T);
      assertTrue(p.stdout().contains("alloc:600000000 -> 2"), p.transcript());
      assertEquals(0, p.countStderr(Pattern.compile("cuMemAlloc_v2\\(600000000\\)")));
      assertTrue(hasLine(p, "alloc:1000 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 499999000 500000000"), p.transcript());
      assertTrue(p.stdout().contains("launch -> 0"), p.transcript());
      assertTrue(p.stdout().contains("sync -> 0"), p.transcript());
      assertEquals(
          1,
          p.countStderr(
              Pattern.compile(
                  "^gpushare: debug: cuGetProcAddress\\(cuDeviceGet, 13000, 0\\): not wrapped")),
          p.transcript()); // once, named with its version and flags
      assertEquals(
          0,
          p.countStderr(Pattern.compile("cuGetProcAddress\\(cuMemAlloc, .*not wrapped")),
          p.transcript());
    }
  }

  // ------------------------------------------------------------------ issue 37: exact variants

  /**
   * cuCtxCreate asked for at 12050 is the v4 entry point (a params struct), at 11040 v3, before
   * that v2; the fake driver hands back internal entry points for all three. Each caller gets the
   * wrapper of the signature it asked for, and the params pointer reaches the driver whole.
   */
  @Test
  void eachCuCtxCreateVariantGetsTheWrapperOfItsOwnSignature() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "init", "ctxcreate:12050", "ctxcreate:11040", "ctxcreate:3020", "exit:0")
            .debug()
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      Matcher asked =
          Pattern.compile("ctxcreate:12050 -> 0 params=(0x[0-9a-f]+)")
              .matcher(String.join("\n", p.stdout()));
      assertTrue(asked.find(), p.transcript());
      p.awaitStderr("fake libcuda: cuCtxCreate_v4 params=" + asked.group(1), T);
      assertTrue(hasLine(p, "ctxcreate:11040 -> 0"), p.transcript());
      assertTrue(hasLine(p, "ctxcreate:3020 -> 0"), p.transcript());
      assertEquals(1, p.countStderr(Pattern.compile("fake libcuda: cuCtxCreate_v3\\(")));
      assertEquals(1, p.countStderr(Pattern.compile("fake libcuda: cuCtxCreate_v2\\(")));
      assertEquals(
          0, p.countStderr(Pattern.compile("cuGetProcAddress\\(cuCtxCreate, .*not wrapped")));
    }
  }

  /**
   * A driver newer than the library's table answers a name with a variant the table does not know
   * (FAKE_CUDA_NEWER): it goes through unwrapped, said once under GPUSHARE_DEBUG=1, instead of the
   * wrapper of the newest variant the table knows.
   */
  @Test
  void aVariantNewerThanTheTablePassesThroughUnwrappedAndIsSaidOnce() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "--via", "procaddress", "init", "ctx", "meminfo", "meminfo", "exit:0")
            .env("FAKE_CUDA_NEWER", "cuMemGetInfo@13000")
            .debug()
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(2, p.countStderr(Pattern.compile("^fake libcuda: a newer variant$")));
      assertEquals(
          1,
          p.countStderr(
              Pattern.compile(
                  "^gpushare: debug: cuGetProcAddress\\(cuMemGetInfo, 13000, 0\\): not wrapped"
                      + " \\(the driver's entry point is a variant this library does not know\\)")),
          p.transcript());
    }
  }

  /**
   * A driver (or a shim in front of it) whose cuGetProcAddress hands back its exported names as the
   * process's global scope resolves them gives the library its own wrappers: they are handed back
   * calling the driver's exported functions, never themselves (cuInit used to wait for ever on its
   * own lock).
   */
  @Test
  void aDriverAnsweringWithTheGlobalScopesSymbolsNeverMakesAWrapperCallItself() throws Exception {
    a.grantOnDemand(0);
    try (PodProcess p =
        workload(a, "--via", "procaddress", "init", "ctx", "alloc:600000000", "alloc:1000")
            .args("meminfo", "launch", "sync", "exit:0")
            .env("FAKE_CUDA_PROC_ADDRESS", "global")
            .debug()
            .start()) {
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(1, stub.requests("POST", "/demand").size(), "cuInit raised the demand");
      assertTrue(p.stdout().contains("alloc:600000000 -> 2"), p.transcript());
      assertTrue(hasLine(p, "alloc:1000 -> 0"), p.transcript());
      assertTrue(p.stdout().contains("meminfo -> 0 499999000 500000000"), p.transcript());
      assertTrue(p.stdout().contains("launch -> 0"), p.transcript());
      assertEquals(1, p.countStderr(Pattern.compile("fake libcuda: cuLaunchKernel\\(")));
      assertTrue(
          p.countStderr(Pattern.compile("the driver answered with this library's own cuInit")) == 1,
          p.transcript());
    }
  }
}
