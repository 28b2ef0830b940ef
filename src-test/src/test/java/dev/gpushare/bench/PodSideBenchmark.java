package dev.gpushare.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.e2e.Api;
import dev.gpushare.e2e.Manifests;
import dev.gpushare.e2e.PodSide;
import dev.gpushare.e2e.ServerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code libgpushare.so} costs a pod's process, each figure beside its baseline measured in
 * the same run (src-test/BENCHMARKS.md, "The pod side (issue 24)"). A plain {@code main}, never run
 * by Surefire. It starts a real server (manual clock) on a temporary data directory, registers a
 * node with one GPU and one share-pool pod, and runs {@code src-test/src/test/native/
 * pod_side_bench.c} against the fake driver, alternately with and without {@code LD_PRELOAD}:
 *
 * <ul>
 *   <li>(a) ns per hooked call while Running: {@code --calls} cuLaunchKernel calls, then as many
 *       cuGraphLaunch calls of a one-kernel graph, timed inside the process, with the library vs
 *       the fake driver alone;
 *   <li>(b) the first cuInit to Running on a free GPU (the library's demand and grant), timed
 *       inside the process, vs one plain HTTP round trip (a GET of the pod's view, one connection,
 *       from C as the library makes its requests) to the same server, and vs the demand's own round
 *       trip (POST of the demand, from C, on a free GPU: the decision, journaled);
 *   <li>(c) VmRSS of the process with vs without the library, and the library's own mappings (Rss
 *       and Pss from /proc/self/smaps) and the pod's shared file;
 *   <li>(d) ns per cuLaunchKernel under a compute limit with a token always in the bucket (the hot
 *       path's atomic), vs the same program at core 100;
 *   <li>(e) on the fakes' virtual GPU, a pod at core 30 launching without pause: the settling time
 *       and the distance from 30 afterwards, vs the same program at core 100 (issue 26).
 * </ul>
 *
 * <p>Options: {@code --calls 10000000 --runs 7 --trips 200 --inits 30} (more first cuInits, each a
 * short process, beside as many rounds of HTTP trips), {@code --limit-rounds 5} (the rounds of
 * (e)), and {@code --library PATH} to measure another build of the library than
 * gpu-actors/target/native's. Run from the repository root after building (BENCHMARKS.md says how).
 */
public final class PodSideBenchmark {
  private PodSideBenchmark() {}

  public static void main(String[] args) throws Exception {
    long calls = Long.parseLong(BenchSupport.option(args, "--calls", "10000000"));
    int runs = Integer.parseInt(BenchSupport.option(args, "--runs", "7"));
    int trips = Integer.parseInt(BenchSupport.option(args, "--trips", "200"));
    int inits = Integer.parseInt(BenchSupport.option(args, "--inits", "30"));
    int limitRounds = Integer.parseInt(BenchSupport.option(args, "--limit-rounds", "5"));
    if (System.getProperty("basedir") == null) {
      System.setProperty("basedir", Path.of("src-test").toAbsolutePath().toString());
    }
    PodSide side = PodSide.get();
    Path dir = Files.createTempDirectory("pod-side-bench");
    // The data plane on the node's Unix socket too (gpushare.pod-side.socket), as deploy/ serves
    // it.
    Path socket = Files.createDirectories(dir.resolve("dp")).resolve("gpushare.sock");
    Path config = dir.resolve("gpushare.conf");
    Files.writeString(config, "gpushare.pod-side.socket = \"" + socket + "\"\n");
    try (ServerProcess server =
        ServerProcess.start(
            "PodSideBenchmark", dir.resolve("data"), "--config", config.toString())) {
      Api api = server.api();
      String node = "bench";
      JsonNode n = api.putNode(node, 1, "share-pool", Manifests.qos(false, 120));
      String uuid = n.path("gpus").get(0).path("uuid").asText();
      String pod = "bench-p";
      api.createPod(Manifests.sharePod(pod, node, 100, 100));
      Path state = Files.createDirectories(dir.resolve("state"));
      Path token = server.dataDir().resolve("admin-token").toAbsolutePath();

      Map<String, String> fake = new HashMap<>();
      fake.put("FAKE_CUDA_UUIDS", uuid);
      fake.put("FAKE_CUDA_MEMORY", String.valueOf(80L << 30));
      Map<String, String> bare = new HashMap<>(side.bare());
      bare.putAll(fake);
      Map<String, String> with = new HashMap<>(side.preloaded());
      String library = BenchSupport.option(args, "--library", null);
      if (library != null) {
        with.put("LD_PRELOAD", Path.of(library).toAbsolutePath().toString());
      }
      with.putAll(fake);
      with.put("GPUSHARE_SERVER", server.baseUri().toString());
      with.put("GPUSHARE_POD", Api.NS + "/" + pod);
      with.put("GPUSHARE_TOKEN_FILE", token.toString());
      with.put("GPUSHARE_STATE_DIR", state.toString());

      Map<String, String> overSocket = new HashMap<>(with);
      overSocket.put("GPUSHARE_SERVER", "unix:" + socket);

      String host = server.baseUri().getHost();
      String port = String.valueOf(server.baseUri().getPort());
      List<String> http =
          List.of("http", host, port, Api.podPath(pod), token.toString(), String.valueOf(trips));
      List<String> cycle = List.of("cycle", host, port, Api.podPath(pod), token.toString(), "1");

      System.out.printf(
          "pod side benchmark: %s; %,d calls per run, %d runs each way, %d HTTP round trips per"
              + " run; load average %s%n",
          with.get("LD_PRELOAD"), calls, runs, trips, loadAverage());
      // warm-up: the server's JIT and the page cache, on both paths
      for (int i = 0; i < 2; i++) {
        bench(side, with, List.of("calls", "100000"));
        bench(side, bare, http);
      }

      List<Map<String, List<Double>>> withRuns = new ArrayList<>();
      List<Map<String, List<Double>>> bareRuns = new ArrayList<>();
      List<Double> trip = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        withRuns.add(bench(side, with, List.of("calls", String.valueOf(calls))));
        bareRuns.add(bench(side, bare, List.of("calls", String.valueOf(calls))));
        trip.addAll(bench(side, bare, http).get("http_ns"));
        JsonNode v = api.pod(pod);
        if (!"Hibernation".equals(v.path("state").asText())) {
          throw new IllegalStateException("the pod did not go back to Hibernation: " + v);
        }
      }
      // more first cuInits, each a process of a few calls, each beside HTTP round trips
      List<Double> init = new ArrayList<>(all(withRuns, "init_ns"));
      List<Double> demand = new ArrayList<>();
      List<Double> initSocket = new ArrayList<>();
      bench(side, overSocket, List.of("calls", "1000")); // warm-up of the socket's binding
      for (int i = 0; i < inits; i++) {
        init.addAll(bench(side, with, List.of("calls", "1000")).get("init_ns"));
        initSocket.addAll(bench(side, overSocket, List.of("calls", "1000")).get("init_ns"));
        trip.addAll(bench(side, bare, http).get("http_ns"));
        demand.addAll(bench(side, bare, cycle).get("demand_ns"));
      }
      // (d) the compute limit's hot path: pod bench-l at core 99 on this node (no MPS: the view's
      // computeLimit.mode is library). Its launches take a token each; the fake NVML here cannot
      // measure it (it knows other UUIDs), so after a second the library stops limiting and the
      // rate stands at its maximum: the bucket is never empty, and each launch costs exactly the
      // hot path's atomic fetch-and-subtract. Warmed up once so that the pod's shared rate is
      // there.
      // (on a node of its own: bench-p's request takes all of the first one's GPU)
      String node2 = "bench-2";
      String uuid2 =
          api.putNode(node2, 1, "share-pool", Manifests.qos(false, 120))
              .path("gpus")
              .get(0)
              .path("uuid")
              .asText();
      String lpod = "bench-l";
      api.createPod(Manifests.sharePod(lpod, node2, 10, 99));
      Map<String, String> limitedEnv = new HashMap<>(with);
      limitedEnv.put("FAKE_CUDA_UUIDS", uuid2);
      limitedEnv.put("GPUSHARE_POD", Api.NS + "/" + lpod);
      limitedEnv.put(
          "GPUSHARE_STATE_DIR", Files.createDirectories(dir.resolve("state-l")).toString());
      run(side, "busy", limitedEnv, List.of("--seconds", "2"));
      List<Double> limitedNs = new ArrayList<>();
      List<Double> unlimitedNs = new ArrayList<>();
      for (int i = 0; i < runs; i++) {
        limitedNs.addAll(
            bench(side, limitedEnv, List.of("calls", String.valueOf(calls))).get("ns_per_call"));
        unlimitedNs.addAll(
            bench(side, with, List.of("calls", String.valueOf(calls))).get("ns_per_call"));
      }

      // (e) the limit itself on the fake driver's virtual GPU (1 ms kernels, a 20 ms launch queue,
      // NVML over 100 ms): a pod at core 30 launching without pause, sampled from outside every
      // 100 ms; beside it, the same program in pod bench-p (core 100, never limited).
      String l30 = "bench-30";
      api.createPod(Manifests.sharePod(l30, node2, 10, 30));
      List<Double> settle = new ArrayList<>();
      List<Double> error = new ArrayList<>();
      List<Double> worst = new ArrayList<>();
      List<Double> unlimitedUtil = new ArrayList<>();
      for (int i = 0; i < limitRounds; i++) {
        Path gpu = dir.resolve("gpu-" + i);
        Map<String, String> virtual = new HashMap<>(with);
        virtual.put("FAKE_GPU_FILE", gpu.toString());
        virtual.put("FAKE_GPU_QUEUE_US", "20000");
        virtual.put("FAKE_CUDA_UUIDS", uuid2);
        virtual.put("FAKE_NVML_UUIDS", uuid2);
        virtual.put("GPUSHARE_POD", Api.NS + "/" + l30);
        virtual.put(
            "GPUSHARE_STATE_DIR", Files.createDirectories(dir.resolve("state-30-" + i)).toString());
        double[] v = utilisation(side, virtual, uuid2, 6, 5);
        int from = settledFrom(v, 30, 5);
        settle.add(from < 0 ? Double.NaN : (from + 1) * 100.0);
        double sum = 0;
        double max = 0;
        int settled = 0;
        for (int k = Math.max(from, 0); k < v.length - 3 && from >= 0; k++, settled++) {
          sum += Math.abs(v[k] - 30);
          max = Math.max(max, Math.abs(v[k] - 30));
        }
        error.add(settled == 0 ? Double.NaN : sum / settled);
        worst.add(max);
        Map<String, String> free = new HashMap<>(virtual);
        free.put("GPUSHARE_POD", Api.NS + "/" + pod);
        free.put("GPUSHARE_STATE_DIR", state.toString());
        free.put("FAKE_CUDA_UUIDS", uuid);
        free.put("FAKE_NVML_UUIDS", uuid);
        double[] u = utilisation(side, free, uuid, 3, 2);
        double s = 0;
        for (int k = 3; k < u.length - 2; k++) {
          s += u[k];
        }
        unlimitedUtil.add(s / (u.length - 5));
      }
      System.out.printf("load average after: %s%n%n", loadAverage());

      System.out.println("| measure | with libgpushare.so | baseline | baseline is |");
      System.out.println("|---|---|---|---|");
      row(
          "(a) ns per cuLaunchKernel, Running (median of runs)",
          "%.2f",
          median(all(withRuns, "ns_per_call")),
          median(all(bareRuns, "ns_per_call")),
          "the fake driver alone");
      row(
          "(a) ns per cuGraphLaunch, Running (median of runs)",
          "%.2f",
          median(all(withRuns, "graph_ns_per_call")),
          median(all(bareRuns, "graph_ns_per_call")),
          "the fake driver alone");
      row(
          "(b) first cuInit → Running, µs (median; p90; max) of " + init.size(),
          "%s",
          micros(init),
          micros(trip) + " of " + trip.size(),
          "one HTTP GET of the pod view from C, new connection each");
      row(
          "(b) first cuInit → Running, µs (median; p90; max)",
          "%s",
          "as above",
          micros(demand) + " of " + demand.size(),
          "the demand alone from C: POST …/demand answered Running (then a DELETE, not timed)");
      row(
          "(b) first cuInit → Running over the node's Unix socket, µs (median; p90; max) of "
              + initSocket.size(),
          "%s",
          micros(initSocket),
          micros(init.subList(init.size() - inits, init.size())) + " of " + inits,
          "the same over TCP (GPUSHARE_SERVER=http://…), alternating with it");
      row(
          "(b) first cuInits that took 1 s or more",
          "%s",
          init.stream().filter(ns -> ns >= 1e9).count() + " of " + init.size(),
          "–",
          "");
      row(
          "(b) cuInit of the fake driver alone, µs (median; p90; max)",
          "%s",
          micros(all(bareRuns, "init_ns")),
          "–",
          "");
      row(
          "(c) VmRSS, KiB (median)",
          "%.0f",
          median(all(withRuns, "vmrss_kib")),
          median(all(bareRuns, "vmrss_kib")),
          "the same program without LD_PRELOAD");
      row(
          "(c) libgpushare.so mappings: Rss / Pss / size, KiB",
          "%s",
          String.format(
              "%.0f / %.0f / %.0f",
              median(all(withRuns, "lib_rss_kib")),
              median(all(withRuns, "lib_pss_kib")),
              median(all(withRuns, "lib_size_kib"))),
          "0",
          "");
      row(
          "(c) the pod's shared file mapping: Rss / Pss, KiB",
          "%s",
          String.format(
              "%.0f / %.0f",
              median(all(withRuns, "podfile_rss_kib")), median(all(withRuns, "podfile_pss_kib"))),
          "0",
          "");
      row(
          "(d) ns per cuLaunchKernel under a compute limit, bucket never empty (median of runs)",
          "%.2f",
          median(limitedNs),
          median(unlimitedNs),
          "the same program at core 100 (no limit) with the library, alternating");
      row(
          "(e) core limit 30 on the fake virtual GPU: settled after, ms (median; max) of "
              + limitRounds,
          "%s",
          String.format("%.0f; %.0f", median(settle), max(settle)),
          "–",
          "first 300 ms mean from which every later one stays within ±5 points");
      row(
          "(e) then its mean / worst distance from 30, points (median of rounds)",
          "%s",
          String.format("%.1f / %.1f", median(error), median(worst)),
          String.format("%.0f %% busy", median(unlimitedUtil)),
          "the same program at core 100 (never limited), its utilisation");
      row(
          "(c) threads",
          "%.0f",
          median(all(withRuns, "threads")),
          median(all(bareRuns, "threads")),
          "");
    }
  }

  private static void row(String what, String fmt, Object with, Object base, String note) {
    String w = with instanceof Double d ? String.format(fmt, d) : String.valueOf(with);
    String b = base instanceof Double d ? String.format(fmt, d) : String.valueOf(base);
    System.out.printf("| %s | %s | %s | %s |%n", what, w, b, note);
  }

  private static String micros(List<Double> ns) {
    List<Double> s = new ArrayList<>(ns);
    s.sort(Double::compare);
    return String.format(
        "%.0f; %.0f; %.0f",
        s.get(s.size() / 2) / 1000.0,
        s.get((int) (s.size() * 0.9)) / 1000.0,
        s.get(s.size() - 1) / 1000.0);
  }

  private static double median(List<Double> values) {
    List<Double> s = new ArrayList<>(values);
    s.sort(Double::compare);
    return s.get(s.size() / 2);
  }

  private static List<Double> all(List<Map<String, List<Double>>> runs, String key) {
    List<Double> l = new ArrayList<>();
    runs.forEach(r -> l.addAll(r.getOrDefault(key, List.of())));
    if (l.isEmpty()) {
      throw new IllegalStateException("no " + key + " in the runs' output: " + runs);
    }
    return l;
  }

  /** Runs pod_side_bench to its end; its key=value lines, each key with all its values. */
  private static Map<String, List<Double>> bench(
      PodSide side, Map<String, String> env, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(side.program("pod_side_bench").toString());
    cmd.addAll(args);
    PodSide.Result r = PodSide.run(cmd, env);
    if (r.status() != 0) {
      throw new IllegalStateException(
          "pod_side_bench " + args + " failed (rc " + r.status() + "):\n" + r.out());
    }
    Map<String, List<Double>> values = new LinkedHashMap<>();
    for (String line : r.out().split("\n")) {
      int eq = line.indexOf('=');
      if (eq > 0 && line.substring(0, eq).matches("[a-z_]+")) {
        try {
          double v = Double.parseDouble(line.substring(eq + 1).strip());
          values.computeIfAbsent(line.substring(0, eq), k -> new ArrayList<>()).add(v);
        } catch (NumberFormatException e) {
          // not a figure
        }
      }
    }
    for (String rc : List.of("init_rc", "launch_rc", "device_rc")) {
      List<Double> v = values.get(rc);
      if (v != null && v.get(0) != 0) {
        throw new IllegalStateException(rc + " is not 0:\n" + r.out());
      }
    }
    List<Double> status = values.get("http_status");
    if (status != null && status.stream().anyMatch(s -> s != 200)) {
      throw new IllegalStateException("an HTTP GET was not answered 200:\n" + r.out());
    }
    return values;
  }

  /** Runs a test program to its end (status 0 required). */
  private static void run(
      PodSide side, String program, Map<String, String> env, List<String> args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(side.program(program).toString());
    cmd.addAll(args);
    PodSide.Result r = PodSide.run(cmd, env);
    if (r.status() != 0) {
      throw new IllegalStateException(program + " " + args + " failed:\n" + r.out());
    }
  }

  /**
   * {@code busy} for {@code seconds} with {@code env} while {@code gpu_util} samples the GPU every
   * 100 ms for {@code sampled} seconds: the busy process's share, as 300 ms means.
   */
  private static double[] utilisation(
      PodSide side, Map<String, String> env, String uuid, int seconds, int sampled)
      throws Exception {
    PodSide.Proc busy =
        side.start("busy", "busy", List.of("--seconds", String.valueOf(seconds)), env);
    Map<String, String> nvml = new HashMap<>();
    nvml.put("LD_LIBRARY_PATH", side.fakes().toString());
    nvml.put("FAKE_GPU_FILE", env.get("FAKE_GPU_FILE"));
    nvml.put("FAKE_NVML_UUIDS", uuid);
    PodSide.Result r =
        PodSide.run(
            List.of(
                side.program("gpu_util").toString(),
                "--seconds",
                String.valueOf(sampled),
                "--every-ms",
                "100",
                "--uuid",
                uuid),
            nvml);
    busy.awaitExit();
    busy.close();
    List<Double> raw = new ArrayList<>();
    for (String line : r.out().split("\n")) {
      String[] f = line.trim().split("\\s+");
      if (f.length < 2 || !f[0].matches("\\d+")) {
        continue;
      }
      double sum = 0;
      for (int i = 2; i < f.length; i++) {
        String[] kv = f[i].split(":");
        if (kv[0].equals(String.valueOf(busy.pid()))) {
          sum += Double.parseDouble(kv[1]);
        }
      }
      raw.add(sum);
    }
    double[] mean = new double[raw.size()];
    for (int i = 0; i < mean.length; i++) {
      int from = Math.max(0, i - 2);
      double s = 0;
      for (int j = from; j <= i; j++) {
        s += raw.get(j);
      }
      mean[i] = s / (i - from + 1);
    }
    return mean;
  }

  /** The index from which every value but the last 3 stays within ±band of target, or -1. */
  private static int settledFrom(double[] v, double target, double band) {
    int from = -1;
    for (int i = 0; i < v.length - 3; i++) {
      if (Math.abs(v[i] - target) > band) {
        from = -1;
      } else if (from < 0) {
        from = i;
      }
    }
    return from;
  }

  private static double max(List<Double> values) {
    return values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
  }

  private static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (Exception e) {
      return "unknown";
    }
  }
}
