package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fakes' virtual GPU ({@code FAKE_GPU_FILE}, gpu-check/fake-cuda/fake_cuda_mem.c and
 * fake-nvml/fake_nvml.c) that the compute limiter is tested on: {@code src/test/native/busy.c}
 * launches kernels on the fake libcuda.so.1 and {@code gpu_util.c} reads NVML's utilisation of the
 * same GPU, both without libgpushare.so. Kernels of 1 ms (FAKE_GPU_KERNEL_US), a queue of 2 ms
 * (FAKE_GPU_QUEUE_US), NVML windows of 100 ms (FAKE_NVML_WINDOW_MS); the thresholds leave wide
 * margins for a loaded machine.
 */
@Timeout(120)
class VirtualGpuTest {
  static final Duration T = Duration.ofSeconds(20);
  static final String U0 = "GPU-7e570000-0000-4000-8000-000000000000";
  static final String U1 = "GPU-7e570000-0000-4000-8000-000000000001";
  static final Pattern REPORT = Pattern.compile("^(\\d+) (\\d+)$");
  static final Pattern DONE = Pattern.compile("^done launches=(\\d+)$");

  @TempDir Path dir;
  final List<PodProcess> started = new ArrayList<>();

  @AfterEach
  void stop() {
    for (PodProcess p : started) {
      p.close();
    }
  }

  /** The node's two GPUs for both fakes, the virtual GPU in this test's folder. */
  PodProcess.Builder program(String name, Map<String, String> env, String... args) {
    return PodProcess.builder(name)
        .build(NativeBuild.current())
        .withoutLibrary()
        .env("FAKE_GPU_FILE", dir.resolve("gpu").toString())
        .env("FAKE_CUDA_UUIDS", U0 + "," + U1)
        .env("FAKE_NVML_UUIDS", U0 + "," + U1)
        .env(env)
        .args(args);
  }

  PodProcess start(PodProcess.Builder b) {
    PodProcess p = b.start();
    started.add(p);
    return p;
  }

  /** busy on that GPU, reporting every 100 ms, once it launches (its first report). */
  PodProcess busy(String uuid, Map<String, String> env, String... args) {
    Map<String, String> e = new LinkedHashMap<>(env);
    e.put("CUDA_VISIBLE_DEVICES", uuid);
    List<String> a = new ArrayList<>(List.of("--report-ms", "100"));
    a.addAll(List.of(args));
    PodProcess p = start(program("busy", e, a.toArray(String[]::new)));
    p.awaitStdout(REPORT, T);
    return p;
  }

  /** One line of gpu_util: t_ms, the GPU's percent, each pid's percent. */
  record Sample(long ms, int gpu, Map<Long, Integer> pids) {
    static Sample parse(String line) {
      String[] f = line.trim().split("\\s+");
      Map<Long, Integer> pids = new LinkedHashMap<>();
      for (int i = 2; i < f.length; i++) {
        String[] pair = f[i].split(":");
        pids.put(Long.parseLong(pair[0]), Integer.parseInt(pair[1]));
      }
      return new Sample(Long.parseLong(f[0]), Integer.parseInt(f[1]), pids);
    }
  }

  PodProcess gpuUtil(String uuid, double seconds) {
    return start(
        program(
            "gpu_util",
            Map.of(),
            "--uuid",
            uuid,
            "--seconds",
            Double.toString(seconds),
            "--every-ms",
            "100"));
  }

  /** gpu_util's samples, once it has ended. */
  static List<Sample> samples(PodProcess util) {
    assertEquals(0, util.awaitExit(T), util.transcript());
    List<Sample> s = util.stdout().stream().map(Sample::parse).toList();
    assertTrue(s.size() >= 10, "samples: " + util.transcript());
    return s;
  }

  static double meanGpu(List<Sample> s) {
    return s.stream().mapToInt(Sample::gpu).average().orElse(0);
  }

  static double meanOf(List<Sample> s, long pid) {
    return s.stream().mapToInt(x -> x.pids().getOrDefault(pid, 0)).average().orElse(0);
  }

  static void stillRunning(PodProcess... busy) {
    for (PodProcess p : busy) {
      assertTrue(p.isAlive(), p + " ended before the samples did: " + p.transcript());
    }
  }

  // ------------------------------------------------------------------

  @Test
  void oneBusyProcessAloneKeepsItsGpuFullyBusy() {
    PodProcess busy = busy(U0, Map.of(), "--seconds", "30");
    List<Sample> s = samples(gpuUtil(U0, 1.5));
    stillRunning(busy);
    String all = s.toString();
    assertTrue(meanGpu(s) >= 90, "mean GPU % >= 90: " + all);
    long full = s.stream().filter(x -> x.gpu() >= 90).count();
    assertTrue(full >= s.size() * 0.8, "80 % of the windows >= 90: " + all);
    assertTrue(meanOf(s, busy.pid()) >= 90, "busy's own % >= 90: " + all);
    assertTrue(
        s.stream().allMatch(x -> x.pids().keySet().equals(Set.of(busy.pid()))),
        "busy's pid, only: " + all);
  }

  @Test
  void twoBusyProcessesOnOneGpuShareIt() {
    PodProcess a = busy(U0, Map.of(), "--seconds", "30");
    PodProcess b = busy(U0, Map.of(), "--seconds", "30");
    List<Sample> s = samples(gpuUtil(U0, 2));
    stillRunning(a, b);
    String all = s.toString();
    double pa = meanOf(s, a.pid());
    double pb = meanOf(s, b.pid());
    assertTrue(pa >= 35 && pa <= 65, "a's mean % in 35..65: " + pa + " " + all);
    assertTrue(pb >= 35 && pb <= 65, "b's mean % in 35..65: " + pb + " " + all);
    assertTrue(pa + pb >= 90, "together >= 90: " + (pa + pb) + " " + all);
    assertTrue(meanGpu(s) >= 90, "the GPU >= 90: " + all);
  }

  @Test
  void aDutyPatternOfHalfOnHalfOffIsHalfBusy() {
    PodProcess busy = busy(U0, Map.of(), "--seconds", "30", "--pattern", "on:50,off:50");
    List<Sample> s = samples(gpuUtil(U0, 2));
    stillRunning(busy);
    double gpu = meanGpu(s);
    assertTrue(gpu >= 40 && gpu <= 60, "mean GPU % in 40..60: " + gpu + " " + s);
    double own = meanOf(s, busy.pid());
    assertTrue(own >= 40 && own <= 60, "busy's mean % in 40..60: " + own + " " + s);
  }

  /**
   * 1e6 / FAKE_GPU_KERNEL_US launches a second: 1000 by default, 2000 with 500 µs kernels, 400 with
   * 2500 µs ones (longer than the 2 ms queue: each waits for an empty one).
   */
  @ParameterizedTest(name = "{0} µs kernels")
  @ValueSource(ints = {500, 1000, 2500})
  void aLaunchBlocksWhileTheQueueIsFullSoLaunchesFollowTheKernelTime(int kernelUs) {
    Map<String, String> env =
        kernelUs == 1000 ? Map.of() : Map.of("FAKE_GPU_KERNEL_US", Integer.toString(kernelUs));
    // CUDA_VISIBLE_DEVICES unset: device 0 is U0
    PodProcess p = start(program("busy", env, "--seconds", "1.5", "--report-ms", "500"));
    assertEquals(0, p.awaitExit(T), p.transcript());
    double perReport = 1e6 / kernelUs / 2;
    List<Long> counts = new ArrayList<>();
    long total = -1;
    for (String line : p.stdout()) {
      Matcher r = REPORT.matcher(line);
      Matcher d = DONE.matcher(line);
      if (r.matches()) {
        counts.add(Long.parseLong(r.group(2)));
      } else if (d.matches()) {
        total = Long.parseLong(d.group(1));
      }
    }
    assertEquals(3, counts.size(), "three reports of 500 ms: " + p.transcript());
    for (long c : counts.subList(1, counts.size())) { // the first has the queue's first kernels
      assertTrue(
          c >= perReport * 0.8 && c <= perReport * 1.2,
          c + " launches in 500 ms, expected " + perReport + " ± 20 %: " + p.transcript());
    }
    assertTrue(
        total >= perReport * 3 * 0.8 && total <= perReport * 3 * 1.2,
        total + " launches in 1.5 s: " + p.transcript());
  }

  @Test
  void synchronisationWaitsForTheProcesssLastKernel() {
    // a 300 ms queue: 0.2 s of launching leaves ~300 ms of kernels queued for cuCtxSynchronize
    long t0 = System.nanoTime();
    PodProcess p =
        start(program("busy", Map.of("FAKE_GPU_QUEUE_US", "300000"), "--seconds", "0.2"));
    assertEquals(0, p.awaitExit(T), p.transcript());
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(ms >= 450, "0.2 s of launches then ~0.3 s of waiting, took " + ms + " ms");
    Matcher d = p.awaitStdout(DONE, T);
    long n = Long.parseLong(d.group(1));
    assertTrue(n >= 400 && n <= 600, "300 queued + 200 in 0.2 s: " + n);
  }

  @Test
  void processesOnDifferentGpusDoNotSeeEachOther() {
    PodProcess a = busy(U0, Map.of(), "--seconds", "30");
    PodProcess b = busy(U1, Map.of(), "--seconds", "30");
    PodProcess utilA = gpuUtil(U0, 1.5);
    PodProcess utilB = gpuUtil(U1, 1.5);
    List<Sample> sa = samples(utilA);
    List<Sample> sb = samples(utilB);
    stillRunning(a, b);
    assertTrue(meanGpu(sa) >= 90, "GPU 0 fully busy with a alone: " + sa);
    assertTrue(meanGpu(sb) >= 90, "GPU 1 fully busy with b alone: " + sb);
    assertTrue(sa.stream().allMatch(x -> x.pids().keySet().equals(Set.of(a.pid()))), "" + sa);
    assertTrue(sb.stream().allMatch(x -> x.pids().keySet().equals(Set.of(b.pid()))), "" + sb);
  }

  @Test
  void anIdleGpuIsIdle() {
    busy(U0, Map.of(), "--seconds", "30");
    List<Sample> s = samples(gpuUtil(U1, 1));
    assertTrue(s.stream().allMatch(x -> x.gpu() == 0 && x.pids().isEmpty()), "" + s);
  }

  /**
   * A container as the driver shows it: NVML names each process by its host PID (here its pid +
   * 1,000,000), and may refuse the per-process query (NO_PERMISSION, 4) while the GPU's utilisation
   * still answers.
   */
  @Test
  void nvmlCanNameHostPidsAndRefuseThePerProcessQuery() {
    PodProcess busy = busy(U0, Map.of(), "--seconds", "30");
    List<Sample> host =
        samples(
            start(
                program(
                    "gpu_util",
                    Map.of("FAKE_NVML_PID_OFFSET", "1000000"),
                    "--uuid",
                    U0,
                    "--seconds",
                    "1",
                    "--every-ms",
                    "100")));
    assertTrue(
        host.stream().allMatch(x -> x.pids().keySet().equals(Set.of(busy.pid() + 1_000_000))),
        "busy's host PID only: " + host);
    PodProcess refused =
        start(
            program(
                "gpu_util",
                Map.of("FAKE_NVML_NO_PERMISSION", "1"),
                "--uuid",
                U0,
                "--seconds",
                "1",
                "--every-ms",
                "100"));
    assertEquals(0, refused.awaitExit(T), refused.transcript());
    assertTrue(
        refused.stdout().size() >= 5
            && refused.stdout().stream().allMatch(l -> l.matches("\\d+ \\d+ err4")),
        "the GPU's percent, then err4 for the samples: " + refused.transcript());
    stillRunning(busy);
  }

  /** Without FAKE_GPU_FILE the fakes are as they were: launches return at once, NVML scripted. */
  @Test
  void withoutTheFileNothingIsTimed() {
    PodProcess p =
        start(
            program("busy", Map.of(), "--seconds", "0.2")
                .env("FAKE_GPU_FILE", null)
                .env("FAKE_CUDA_UUIDS", null)
                .env("FAKE_NVML_UUIDS", null));
    assertEquals(0, p.awaitExit(T), p.transcript());
    long n = Long.parseLong(p.awaitStdout(DONE, T).group(1));
    assertTrue(n > 5000, "launches do not block: " + n + " in 0.2 s");
    PodProcess util =
        start(
            program(
                    "gpu_util",
                    Map.of(),
                    "--uuid",
                    "GPU-fa4e0000-0000-4000-8000-000000000000",
                    "--seconds",
                    "0.3")
                .env("FAKE_GPU_FILE", null)
                .env("FAKE_CUDA_UUIDS", null)
                .env("FAKE_NVML_UUIDS", null));
    assertEquals(0, util.awaitExit(T), util.transcript());
    assertEquals("100 42 4242:30 4242:55", util.stdout().get(0), util.transcript());
  }
}
