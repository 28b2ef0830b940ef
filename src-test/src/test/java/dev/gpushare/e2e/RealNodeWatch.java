package dev.gpushare.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.e2e.PodSide.Proc;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.stream.Stream;

/**
 * What a test sees of a {@link RealNode} from the machine, as an operator on the node would: which
 * host process is a pod's (its cgroup), how much of a GPU's time a process takes (NVML, the fake
 * one, over the node's virtual GPU), what is left of the product; and the same demand over loopback
 * (a server process and a preloaded process on this machine), to set beside the node's.
 */
final class RealNodeWatch {
  private RealNodeWatch() {}

  /**
   * The host PID of pod {@code uid}'s process whose command is {@code command} (the file name of
   * its first argument): found by its cgroup, {@code /kubepods/<qos>/pod<uid>/<container>}.
   */
  static long hostPid(String uid, String command) throws IOException {
    for (Path dir : processes()) {
      String cgroup = read(dir.resolve("cgroup"));
      String[] args = read(dir.resolve("cmdline")).split("\0");
      if (cgroup.contains("pod" + uid) && args.length > 0 && !args[0].isEmpty()) {
        String first = Path.of(args[0]).getFileName().toString();
        if (first.equals(command)) {
          return Long.parseLong(dir.getFileName().toString());
        }
      }
    }
    throw new AssertionError("no process '" + command + "' in pod " + uid + " on this machine");
  }

  /**
   * The share of GPU {@code uuid}'s time, in percent, that host process {@code hostPid} took over
   * {@code ms}: the mean of NVML's per-process samples every 100 ms ({@code gpu_util} on the node's
   * virtual GPU, with the fake NVML the node's containers have).
   */
  static double share(RealNode node, String uuid, long hostPid, int ms) {
    PodSide side = PodSide.get();
    Map<String, String> env = new HashMap<>();
    env.put("LD_LIBRARY_PATH", side.fakes().toString());
    env.put("FAKE_GPU_FILE", node.dir().resolve("fake-gpu/gpu").toString());
    env.put("FAKE_NVML_UUIDS", String.join(",", node.gpus()));
    PodSide.Result r =
        PodSide.run(
            List.of(
                side.program("gpu_util").toString(),
                "--uuid",
                uuid,
                "--seconds",
                String.valueOf(ms / 1000.0),
                "--every-ms",
                "100"),
            env);
    if (r.status() != 0) {
      throw new AssertionError("gpu_util: " + r.out());
    }
    double sum = 0;
    int samples = 0;
    for (String line : r.out().lines().toList()) {
      String[] f = line.trim().split("\\s+");
      if (f.length < 2 || !f[0].matches("\\d+")) {
        continue;
      }
      samples++;
      for (int i = 2; i < f.length; i++) {
        if (f[i].startsWith(hostPid + ":")) {
          sum += Double.parseDouble(f[i].substring(f[i].indexOf(':') + 1));
        }
      }
    }
    if (samples == 0) {
      throw new AssertionError("gpu_util sampled nothing: " + r.out());
    }
    return sum / samples;
  }

  /** The product's processes left in the node's pods (a JVM of dev.gpushare, by its cgroup). */
  static List<String> productProcesses() throws IOException {
    List<String> left = new ArrayList<>();
    for (Path dir : processes()) {
      String cmdline = read(dir.resolve("cmdline")).replace('\0', ' ');
      if (read(dir.resolve("cgroup")).contains("kubepods") && cmdline.contains("dev.gpushare")) {
        left.add(dir.getFileName() + " " + cmdline);
      }
    }
    return left;
  }

  /** The mounts on this machine that hold one of {@code podUids} or lie under /run/gpushare. */
  static List<String> mountsOf(List<String> podUids) throws IOException {
    return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
        .filter(l -> l.contains(" /run/gpushare") || podUids.stream().anyMatch(l::contains))
        .toList();
  }

  /**
   * {@code n} times, the time a preloaded process's demand takes to Running over loopback, the GPU
   * free: a server on this machine (its embedded default node, node-1), a share-pool pod there, and
   * the reference image's {@code sleep} ({@code gpu_sleep}) under the library with the fake driver.
   */
  static List<Double> loopbackDemands(Path dir, int n) throws IOException {
    PodSide side = PodSide.get();
    List<Double> ms = new ArrayList<>();
    ServerProcess server = ServerProcess.start("loopback", dir.resolve("data"));
    try {
      Api api = server.api();
      List<String> uuids = new ArrayList<>();
      api.node("node-1").path("gpus").forEach(g -> uuids.add(g.path("uuid").asText()));
      for (int i = 0; i < n; i++) {
        String name = Manifests.unique("loop");
        JsonNode created = api.createPod(Manifests.sharePod(name, "node-1", 10, 50));
        Map<String, String> env = new HashMap<>(side.preloaded());
        env.put("GPUSHARE_SERVER", server.baseUri().toString());
        env.put("GPUSHARE_POD", created.path("namespace").asText("default") + "/" + name);
        env.put(
            "GPUSHARE_TOKEN_FILE",
            server.dataDir().resolve("admin-token").toAbsolutePath().toString());
        env.put("GPUSHARE_STATE_DIR", Files.createDirectories(dir.resolve("state")).toString());
        env.put("FAKE_CUDA_UUIDS", String.join(",", uuids));
        env.put("FAKE_NVML_UUIDS", String.join(",", uuids));
        env.remove("CUDA_VISIBLE_DEVICES");
        try (Proc p = side.start(name, "gpu_sleep", List.of("3600"), env)) {
          Matcher m = p.awaitOut("gpu_sleep: .*cuInit 0 after ([0-9.]+) ms.*");
          ms.add(Double.parseDouble(m.group(1)));
        }
      }
    } finally {
      server.stop();
    }
    return ms;
  }

  private static List<Path> processes() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("/proc"))) {
      return s.filter(p -> p.getFileName().toString().matches("\\d+")).toList();
    }
  }

  private static String read(Path file) {
    try {
      return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
    } catch (IOException | SecurityException e) {
      return ""; // the process ended meanwhile
    }
  }
}
