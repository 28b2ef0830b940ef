package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.pod.DataPlaneStub.StubPod;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compute limit (issue 26) on the fake driver's virtual GPU: each kernel launch occupies the
 * GPU for 1 ms of a timeline the fakes share ({@code FAKE_GPU_FILE}), and the fake NVML reports
 * each process's busy share of the last 100 ms. Busy pods ({@code busy.c}, launching without pause
 * under the library) are measured from outside with {@code gpu_util.c} every 100 ms; a reading is
 * the mean of three samples (300 ms), the settling time the first reading from which every later
 * one stays within ±5 points of the limit. The settling times are printed.
 */
class ComputeLimitTest {
  static final Duration T = Duration.ofSeconds(30);
  static final int EVERY_MS = 100;

  @TempDir Path dir;
  DataPlaneStub stub;
  Path gpuFile;

  @BeforeEach
  void start() {
    stub = DataPlaneStub.start();
    gpuFile = dir.resolve("gpu");
  }

  @AfterEach
  void stop() {
    stub.close();
  }

  NativeBuild build() {
    return NativeBuild.plain();
  }

  PodProcess.Builder busy(StubPod pod, String... args) {
    return PodProcess.builder("busy")
        .build(build())
        .pod(pod)
        .env("FAKE_GPU_FILE", gpuFile.toString())
        // 20 launches may be queued, as on a GPU whose launch queue is deep: a process that the
        // machine's load keeps from running for a few ms does not leave the GPU idle meanwhile
        .env("FAKE_GPU_QUEUE_US", "20000")
        .env("FAKE_CUDA_UUIDS", String.join(",", PodSideScenarios.uuids(2)))
        .env("FAKE_NVML_UUIDS", String.join(",", PodSideScenarios.uuids(2)))
        .env("FAKE_CUDA_VERSION", "13000")
        .args(args);
  }

  /** gpu_util's readings of GPU 0 for {@code seconds}: time in ms, then pid → percent. */
  record Reading(long ms, Map<Long, Double> perPid) {}

  List<Reading> sample(int seconds) throws Exception {
    return sample(seconds, Map.of());
  }

  /** The same, gpu_util run with {@code env} added (a container's NVML: host PIDs). */
  List<Reading> sample(int seconds, Map<String, String> env) throws Exception {
    Path program = build().program("gpu_util");
    ProcessBuilder pb =
        new ProcessBuilder(
            program.toString(),
            "--seconds",
            String.valueOf(seconds),
            "--every-ms",
            String.valueOf(EVERY_MS),
            "--uuid",
            DataPlaneStub.uuidOf(0));
    pb.environment().put("FAKE_GPU_FILE", gpuFile.toString());
    pb.environment().put("FAKE_NVML_UUIDS", String.join(",", PodSideScenarios.uuids(2)));
    pb.environment().put("LD_LIBRARY_PATH", build().fakes().toString());
    pb.environment().putAll(env);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    List<Reading> out = new ArrayList<>();
    try {
      try (BufferedReader r =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          String[] f = line.trim().split("\\s+");
          if (f.length < 2 || !f[0].matches("\\d+")) {
            continue;
          }
          Map<Long, Double> per = new HashMap<>();
          for (int i = 2; i < f.length; i++) {
            String[] kv = f[i].split(":");
            per.put(Long.parseLong(kv[0]), Double.parseDouble(kv[1]));
          }
          out.add(new Reading(Long.parseLong(f[0]), per));
        }
      }
      assertTrue(p.waitFor(seconds + 30L, TimeUnit.SECONDS), "gpu_util ends");
    } finally {
      ChildProcess.killTree(p.toHandle()); // on every path: failed, timed out, interrupted
    }
    return out;
  }

  /** A pod's percent per reading: its processes' samples added up, then a 3-sample mean. */
  static double[] series(List<Reading> readings, List<Long> pids) {
    double[] raw = new double[readings.size()];
    for (int i = 0; i < raw.length; i++) {
      double sum = 0;
      for (long pid : pids) {
        sum += readings.get(i).perPid().getOrDefault(pid, 0.0);
      }
      raw[i] = sum;
    }
    double[] mean = new double[raw.length];
    for (int i = 0; i < raw.length; i++) {
      int from = Math.max(0, i - 2);
      double s = 0;
      for (int j = from; j <= i; j++) {
        s += raw[j];
      }
      mean[i] = s / (i - from + 1);
    }
    return mean;
  }

  /** The index from which every value stays within ±band of target; -1 if it never settles. */
  static int settledFrom(double[] v, double target, double band, int ignoreLast) {
    int end = v.length - ignoreLast;
    int from = -1;
    for (int i = 0; i < end; i++) {
      boolean in = Math.abs(v[i] - target) <= band;
      if (!in) {
        from = -1;
      } else if (from < 0) {
        from = i;
      }
    }
    return from;
  }

  private static String describe(double[] v) {
    StringBuilder b = new StringBuilder();
    for (double d : v) {
      b.append(String.format("%.0f ", d));
    }
    return b.toString();
  }

  @Test
  void aPodAtLimit30LaunchingWithoutPauseSettlesAt30AndStaysThere() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p = busy(a, "--seconds", "6").start()) {
      List<Reading> readings = sample(5);
      double[] v = series(readings, List.of(p.pid()));
      int from = settledFrom(v, 30, 5, 3);
      System.out.printf(
          "compute limit 30: settled from %d ms (%s)%n",
          from < 0 ? -1 : readings.get(from).ms(), describe(v));
      assertTrue(from >= 0, "settles at 30 and stays there (the time is printed): " + describe(v));
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
    List<String> reports = a.computeReports();
    assertTrue(!reports.isEmpty(), "the library reported the pod's figures");
    String last = reports.get(reports.size() - 1);
    assertTrue(last.contains("\"aimPercent\":30"), last);
    assertTrue(!last.contains("\"heldSeconds\":0.000"), "launches were held back: " + last);
  }

  @Test
  void twoPodsAt30And70EachGetTheirLimitWhenBothAreBusy() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 50).computeMode("library").grantOnDemand(0);
    StubPod b = stub.pod("default", "b").limits(70, 50).computeMode("library").grantOnDemand(0);
    try (PodProcess pa = busy(a, "--seconds", "7").start();
        PodProcess pb = busy(b, "--seconds", "7").start()) {
      List<Reading> readings = sample(6);
      double[] va = series(readings, List.of(pa.pid()));
      double[] vb = series(readings, List.of(pb.pid()));
      int fa = settledFrom(va, 30, 5, 3);
      int fb = settledFrom(vb, 70, 5, 3);
      System.out.printf(
          "compute limits 30 + 70: settled from %d ms and %d ms%n  a %s%n  b %s%n",
          fa < 0 ? -1 : readings.get(fa).ms(),
          fb < 0 ? -1 : readings.get(fb).ms(),
          describe(va),
          describe(vb));
      assertTrue(fa >= 0, "a settles at 30 and stays there: " + describe(va));
      assertTrue(fb >= 0, "b settles at 70 and stays there: " + describe(vb));
      assertEquals(0, pa.awaitExit(T), pa.transcript());
      assertEquals(0, pb.awaitExit(T), pb.transcript());
    }
  }

  @Test
  void aPodAt100IsNeverSlowedNorArePodsWhereTheNodeDoesNotLimit() throws Exception {
    for (String[] c : new String[][] {{"100", "library"}, {"30", "mps"}, {"30", "off"}}) {
      StubPod a =
          stub.pod("default", "p" + c[0] + c[1])
              .limits(Integer.parseInt(c[0]), 100)
              .computeMode(c[1])
              .grantOnDemand(0);
      try (PodProcess p = busy(a, "--seconds", "3").start()) {
        List<Reading> readings = sample(2);
        double[] v = series(readings, List.of(p.pid()));
        double late = v[v.length - 4];
        System.out.printf("limit %s, mode %s: %s%n", c[0], c[1], describe(v));
        assertTrue(late >= 90, c[0] + "/" + c[1] + " runs unlimited: " + describe(v));
        assertEquals(0, p.awaitExit(T), p.transcript());
      }
      assertTrue(a.computeReports().isEmpty(), "nothing limited, nothing reported");
    }
  }

  /**
   * Where NVML cannot measure the pod (here: it does not know the GPU's UUID) and the member has no
   * figure of it either, the library says so once and does not limit blindly.
   */
  @Test
  void aPodNvmlCannotMeasureIsSaidOnceAndNotLimitedBlindly() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p =
        busy(a, "--seconds", "3", "--report-ms", "500")
            .env("FAKE_NVML_UUIDS", "GPU-00000000-0000-4000-8000-0000000000ff")
            .start()) {
      p.awaitStderr(
          java.util.regex.Pattern.compile(
              "^gpushare: compute limit: NVML cannot measure pod default/a's GPU .*"),
          T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      String last = p.stdout().get(p.stdout().size() - 2); // "<t_ms> <launches>", then done
      long launches = Long.parseLong(last.split(" ")[1]);
      assertTrue(launches >= 400, "unlimited after it was said (1 ms kernels): " + p.transcript());
      assertEquals(1, p.countStderr(java.util.regex.Pattern.compile("compute limit:")));
    }
  }

  /** What the fake NVML adds to a pid to name it (a container's process seen from the host). */
  static final long HOST_PID_OFFSET = 1_000_000;

  static final Map<String, String> CONTAINER =
      Map.of("FAKE_NVML_PID_OFFSET", String.valueOf(HOST_PID_OFFSET));

  /**
   * A pod without hostPID (issue 32): NVML names its process by a host PID, never its getpid(). The
   * member knows the host PIDs (the stub's {@code GET …/processes} plays it): the limit holds. The
   * shipped member has no hostPID either; it names them through the host's /proc mounted at
   * gpushare.gpu.host-proc (issue 37), and src-test's RealNodeTest shows it on a real node.
   */
  @Test
  void aPodWhoseNvmlNamesHostPidsSettlesAt30ThroughTheMembersPids() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p = busy(a, "--seconds", "6").env(CONTAINER).start()) {
      long host = p.pid() + HOST_PID_OFFSET;
      a.hostPids(List.of(host), null);
      List<Reading> readings = sample(5, CONTAINER);
      double[] v = series(readings, List.of(host));
      int from = settledFrom(v, 30, 5, 3);
      System.out.printf(
          "compute limit 30, host PIDs: settled from %d ms (%s)%n",
          from < 0 ? -1 : readings.get(from).ms(), describe(v));
      assertTrue(from >= 0, "settles at 30 and stays there (the time is printed): " + describe(v));
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertTrue(
          stub.requests().stream().anyMatch(r -> r.pathOnly().endsWith("/processes")),
          "the library asked the member for the pod's processes");
    }
  }

  /** Launches through CUDA graphs (4 kernels a launch) are held to the limit as kernels are. */
  @Test
  void aPodLaunchingOnlyCudaGraphsSettlesAt30() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p = busy(a, "--seconds", "6", "--graph", "4").env(CONTAINER).start()) {
      long host = p.pid() + HOST_PID_OFFSET;
      a.hostPids(List.of(host), null);
      List<Reading> readings = sample(5, CONTAINER);
      double[] v = series(readings, List.of(host));
      int from = settledFrom(v, 30, 5, 3);
      System.out.printf(
          "compute limit 30, graphs of 4 kernels: settled from %d ms (%s)%n",
          from < 0 ? -1 : readings.get(from).ms(), describe(v));
      assertTrue(from >= 0, "settles at 30 and stays there: " + describe(v));
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
  }

  /**
   * Where NVML refuses the per-process query (NO_PERMISSION in a container) the library says so
   * once and measures the pod through the member's figure (here 90 %, over its limit of 30): its
   * launches are held back.
   */
  @Test
  void aPodWhosePerProcessQueryIsRefusedIsMeasuredThroughTheMembersFigure() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    Map<String, String> env = new HashMap<>(CONTAINER);
    env.put("FAKE_NVML_NO_PERMISSION", "1");
    try (PodProcess p = busy(a, "--seconds", "3").env(env).start()) {
      a.hostPids(List.of(p.pid() + HOST_PID_OFFSET), 90);
      p.awaitStderr(
          java.util.regex.Pattern.compile(
              "^gpushare: compute limit: NVML does not give this container pod default/a's"
                  + " per-process use \\(NVML error 4\\): its use is measured through the"
                  + " member's figure$"),
          T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(1, p.countStderr(java.util.regex.Pattern.compile("compute limit:")));
    }
    List<String> reports = a.computeReports();
    assertTrue(!reports.isEmpty(), "the library reported the pod's figures");
    String last = reports.get(reports.size() - 1);
    assertTrue(last.contains("\"measuredPercent\":90.0"), "the member's figure: " + last);
    assertTrue(!last.contains("\"heldSeconds\":0.000"), "launches were held back: " + last);
  }

  /**
   * Another NVML failure (here NVML_ERROR_UNKNOWN, 999, on every per-process query): the last rate
   * is kept for 1 s, then the pod is measured through the member's figure, said once.
   */
  @Test
  void anotherNvmlErrorKeepsTheRateForASecondThenUsesTheMembersFigure() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    Map<String, String> env = new HashMap<>(CONTAINER);
    env.put("FAKE_NVML_PROC_RC", "999");
    try (PodProcess p = busy(a, "--seconds", "3").env(env).start()) {
      a.hostPids(List.of(p.pid() + HOST_PID_OFFSET), 90);
      p.awaitStderr(
          java.util.regex.Pattern.compile(
              "^gpushare: compute limit: NVML answered error 999 for pod default/a's use for 1 s"
                  + " \\(the last rate was kept meanwhile\\): its use is measured through the"
                  + " member's figure$"),
          T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      assertEquals(1, p.countStderr(java.util.regex.Pattern.compile("compute limit:")));
    }
    String last = a.computeReports().get(a.computeReports().size() - 1);
    assertTrue(last.contains("\"measuredPercent\":90.0"), "the member's figure: " + last);
  }

  /** A lost GPU: not limited (the member revokes the pod), said once. */
  @Test
  void aLostGpuIsSaidOnceAndNotLimited() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p =
        busy(a, "--seconds", "3", "--report-ms", "500").env("FAKE_NVML_LOST", "0").start()) {
      p.awaitStderr(
          java.util.regex.Pattern.compile(
              "^gpushare: compute limit: NVML says pod default/a's GPU is lost: the pod's compute"
                  + " is not limited here$"),
          T);
      assertEquals(0, p.awaitExit(T), p.transcript());
      String last = p.stdout().get(p.stdout().size() - 2); // "<t_ms> <launches>", then done
      long launches = Long.parseLong(last.split(" ")[1]);
      assertTrue(launches >= 400, "unlimited after it was said (1 ms kernels): " + p.transcript());
      assertEquals(1, p.countStderr(java.util.regex.Pattern.compile("compute limit:")));
    }
  }

  @Test
  void aPodThatGoesIdleAndComesBackDoesNotBurstOverItsLimitForMoreThanOneWindow() throws Exception {
    StubPod a = stub.pod("default", "a").limits(30, 100).computeMode("library").grantOnDemand(0);
    try (PodProcess p =
        busy(a, "--seconds", "8", "--pattern", "on:3000,off:2000,on:3000").start()) {
      List<Reading> readings = sample(7);
      List<Double> raw = new ArrayList<>();
      for (Reading r : readings) {
        raw.add(r.perPid().getOrDefault(p.pid(), 0.0));
      }
      // after the pause: readings from 5.0 s on (the pod comes back at about 5 s)
      int over = 0;
      int longest = 0;
      for (int i = 0; i < readings.size(); i++) {
        if (readings.get(i).ms() < 5000) {
          continue;
        }
        if (raw.get(i) > 35) {
          over++;
          longest = Math.max(longest, over);
        } else {
          over = 0;
        }
      }
      System.out.printf("idle and back at limit 30: %s%n", raw);
      assertTrue(longest <= 1, "over its limit for at most one window after idling: " + raw);
      assertEquals(0, p.awaitExit(T), p.transcript());
    }
  }
}
