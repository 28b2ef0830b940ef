package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.events;
import static dev.gpushare.e2e.Checks.isNull;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.e2e.PodSide.Proc;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The pod side end to end (SPEC §10, issue 24): a real server process, {@code libgpushare.so}
 * preloaded into real processes, the fake CUDA driver below them. The processes are gpu-actors'
 * {@code workload} (steps from its command line) and {@code paced} ({@code src/test/native}: one
 * step per line of its standard input, so that the test decides when each call happens).
 *
 * <p>The server runs the simulated GPU backend with a fast telemetry round and idle release on
 * ({@code idle-release-after = 10m}), under the manual clock: nothing is idle-released unless a
 * test advances the clock, and only the checkpoint test does, on its own node.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PodSideTest {

  private static final String WAITING =
      "You have been waiting for (\\d+) seconds\\. Approximate position: (\\d+)";
  private static final String CHECKPOINT = "gpushare.dev/preemption";
  private static final long GIB = 1L << 30;

  private PodSide side;
  private ServerProcess server;
  private Api api;
  private Path state;
  private final List<Proc> procs = new ArrayList<>();

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    side = PodSide.get(); // skips the class where there is no gcc, before a server is started
    Path conf = dir.resolve("gpushare.conf");
    Files.writeString(
        conf,
        """
        gpushare.gpu {
          backend = simulated
          telemetry-interval = 100ms
          idle-release-after = 10m
          idle-release-grace = 30s
        }
        """);
    server =
        ServerProcess.start(
            "PodSideTest", dir.resolve("data"), List.of(), Map.of(), "--config", conf.toString());
    api = server.api();
    state = Files.createDirectories(dir.resolve("state"));
  }

  @AfterEach
  void endProcesses() {
    procs.forEach(Proc::close);
    procs.clear();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  // ---------------------------------------------------------------- SPEC §5 by four processes

  @Test
  void theReferenceExamplePlayedByFourProcesses() {
    String node = Manifests.unique("demo");
    List<String> uuids = uuids(api.putNode(node, 2, "share-pool", Manifests.qos(false, 120)));
    String a = node + "-a";
    String b = node + "-b";
    String c = node + "-c";
    String d = node + "-d";
    api.createPod(sharePod(a, node, 50, 50));
    api.createPod(sharePod(b, node, 50, 50));
    api.createPod(sharePod(c, node, 50, 100));
    api.createPod(sharePod(d, node, 50, 100));

    // T1: A's first GPU work is its demand; it gets GPU 0, and its driver sees only GPU 0.
    Proc pa = paced(a, uuids);
    pa.send("init");
    pa.awaitOut("init -> 0");
    pa.awaitErr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + Pattern.quote(uuids.get(0)));
    pa.send("ctx");
    pa.awaitOut("ctx -> 0");
    assertRunningOn(api.pod(a), 0);
    Proc pc = paced(c, uuids);
    pc.send("init");
    pc.awaitOut("init -> 0");
    pc.awaitErr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + Pattern.quote(uuids.get(1)));
    pc.send("launch");
    pc.awaitOut("launch -> 0");
    assertRunningOn(api.pod(c), 1);

    // D, then B: their cuInit waits, each printing SPEC §4's line with its place in the queue.
    Proc pd = paced(d, uuids);
    pd.send("init");
    Matcher dLine = pd.awaitErr(WAITING);
    assertEquals("1", dLine.group(2), () -> "D is first in the queue\n" + pd.transcript());
    assertReady(api.pod(d), 1);
    Proc pb = paced(b, uuids);
    pb.send("init");
    Matcher bLine = pb.awaitErr(WAITING);
    assertEquals("2", bLine.group(2), () -> "B is second in the queue\n" + pb.transcript());
    assertReady(api.pod(b), 2);
    // the manual clock stands still: the server says 0 seconds, and the line comes at once
    assertEquals("0", dLine.group(1), () -> pd.transcript());
    assertEquals("0", bLine.group(1), () -> pb.transcript());
    // ... and again every GPUSHARE_WAIT_INTERVAL (1s here), with the same place
    pd.awaitErr(WAITING, indexOf(pd, WAITING) + 1);
    pb.awaitErr(WAITING, indexOf(pb, WAITING) + 1);
    assertEquals(List.of("1"), positions(pd), () -> pd.transcript());
    assertEquals(List.of("2"), positions(pb), () -> pb.transcript());
    assertTrue(pd.out().isEmpty(), () -> "D's cuInit has not returned\n" + pd.transcript());
    assertTrue(pb.out().isEmpty(), () -> "B's cuInit has not returned\n" + pb.transcript());
    assertInvariants(api);

    // T2: C's process ends normally; its library gives the share back (pod c to Hibernation).
    pc.closeInput();
    assertEquals(0, pc.awaitExit(), () -> pc.transcript());
    assertHibernation(awaitPod(c, "Hibernation after its process ended", stateIs("Hibernation")));
    // Phase 1: D gets GPU 1, its cuInit returns, its driver sees GPU 1 only.
    pd.awaitOut("init -> 0");
    pd.awaitErr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + Pattern.quote(uuids.get(1)));
    // Phase 2: B gets GPU 0 beside A.
    pb.awaitOut("init -> 0");
    pb.awaitErr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + Pattern.quote(uuids.get(0)));
    assertRunningOn(api.pod(d), 1);
    assertRunningOn(api.pod(b), 0);
    assertRunningOn(api.pod(a), 0);
    JsonNode t2 = api.node(node);
    assertGpu(t2, 0, 100, 100, a, b);
    assertGpu(t2, 1, 100, 100, d);
    assertEquals(0, t2.path("queue").size(), () -> "queue empty: " + t2);
    // D before B: the arbiter's journal has the grants in decision order, C's release first
    assertEquals(
        List.of("granted " + a, "granted " + c, "released " + c, "granted " + d, "granted " + b),
        grantsAndReleases(node));
    pd.send("launch");
    pd.awaitOut("launch -> 0");
    pb.send("launch");
    pb.awaitOut("launch -> 0");
    assertInvariants(api);
  }

  // ---------------------------------------------------------------- memory (SPEC §10)

  @Test
  void anAllocationOverTheMemoryLimitIsRefusedAndTheDriverShowsTheShare() {
    String node = Manifests.unique("mem");
    List<String> uuids = uuids(api.putNode(node, 1, "share-pool", Manifests.qos(false, 120)));
    String pod = node + "-m";
    api.createPod(sharePod(pod, node, 50, 50)); // memory limit 50 %
    long memory = 4 * GIB;
    long share = memory / 2;
    long over = memory * 60 / 100;
    long under = memory * 40 / 100;
    Map<String, String> env = env(pod, uuids);
    env.put("FAKE_CUDA_MEMORY", String.valueOf(memory));
    Proc w =
        start(
            pod,
            "workload",
            List.of("init", "ctx", "meminfo", "alloc:" + over, "alloc:" + under, "meminfo", "hold"),
            env);
    w.awaitOut("init -> 0");
    Matcher before = w.awaitOut("meminfo -> 0 (\\d+) (\\d+)");
    assertEquals(
        share, Long.parseLong(before.group(2)), () -> "total is the share\n" + w.transcript());
    assertEquals(share, Long.parseLong(before.group(1)), () -> "all of it free\n" + w.transcript());
    // 60 %: CUDA_ERROR_OUT_OF_MEMORY (2) from the library, the driver never asked
    w.awaitOut("alloc:" + over + " -> 2");
    assertTrue(
        w.findErr("fake libcuda: cuMemAlloc\\w*\\(" + over + "\\)").isEmpty(),
        () -> "the driver saw no allocation over the limit\n" + w.transcript());
    // 40 %: passes, and the driver made it
    w.awaitOut("alloc:" + under + " -> 0 0x\\p{XDigit}+");
    w.awaitErr("fake libcuda: cuMemAlloc_v2\\(" + under + "\\)");
    Matcher after = w.awaitOut("meminfo -> 0 (\\d+) (\\d+)", 2);
    assertEquals(share, Long.parseLong(after.group(2)), () -> w.transcript());
    assertEquals(share - under, Long.parseLong(after.group(1)), () -> w.transcript());
    assertRunningOn(api.pod(pod), 0);
  }

  // ---------------------------------------------------------------- checkpoint (SPEC §10)

  /**
   * In embedded mode the node's member checkpoints through the simulated backend's checkpoint
   * driver ({@code SimulatedCheckpointDriver}): a pod's processes are those the GPU's script lists
   * with the pod's uid, and a checkpoint takes them off the scripted GPU until the restore puts
   * them back. So the test scripts this real process (its pid) on the pod's GPU, idle (0 % SM), and
   * the member checkpoints and restores it in the simulation while the library, in the process,
   * follows the pod's view: the process itself is never touched, as with the real driver.
   */
  @Test
  void anIdleCheckpointedProcessGoesOnAtItsNextCall() {
    String node = Manifests.unique("ckpt");
    List<String> uuids = uuids(api.putNode(node, 1, "share-pool", Manifests.qos(false, 120)));
    String pod = node + "-k";
    ObjectNode manifest = sharePod(pod, node, 10, 100);
    ((ObjectNode) manifest.get("metadata")).putObject("annotations").put(CHECKPOINT, "checkpoint");
    JsonNode created = api.createPod(manifest);
    Proc p = paced(pod, uuids);
    p.send("init");
    p.awaitOut("init -> 0");
    p.send("ctx");
    p.awaitOut("ctx -> 0");
    p.send("alloc:" + (1L << 20));
    p.awaitOut("alloc:" + (1L << 20) + " -> 0 0x\\p{XDigit}+");
    p.send("launch");
    p.awaitOut("launch -> 0");
    JsonNode running = api.pod(pod);
    assertRunningOn(running, 0);

    // What the node's driver would list: this process on GPU 0, 1 GiB, idle.
    script(node, 0, p.pid(), created.path("uid").asText(), 1024, 0);
    awaitPod(pod, "sampled idle", v -> v.path("usage").path("processes").asInt(-1) == 1);
    api.advance(600);
    awaitPod(pod, "asked to hibernate", v -> !events(v, "GPUShareIdle").isEmpty());
    api.advance(30);
    JsonNode held =
        awaitPod(
            pod,
            "held in host memory",
            v ->
                v.path("state").asText().equals("Hibernation")
                    && v.path("checkpoint").path("phase").asText().equals("held"));
    assertEquals(0, held.path("checkpoint").path("gpu").asInt(-1), () -> "" + held);
    assertEquals(GIB, held.path("checkpoint").path("bytes").asLong(), () -> "" + held);
    p.awaitErr(
        Pattern.quote(
            "gpushare: pod default/"
                + pod
                + " left Running (now Hibernation): its GPU state is checkpointed in host"
                + " memory; paced keeps running without a signal and goes on when the pod runs"
                + " again"));
    assertTrue(p.isAlive(), () -> "no signal, no exit\n" + p.transcript());
    assertTrue(
        p.findErr(".*SIGUSR1.*|.*SIGTERM.*").isEmpty(),
        () -> "a checkpointed process gets no signal\n" + p.transcript());

    // Its next GPU work is a new demand: it waits until the member restored it on GPU 0.
    p.send("launch");
    p.awaitErr(
        Pattern.quote(
            "gpushare: pod default/"
                + pod
                + " is Running again on GPU 0 ("
                + uuids.get(0)
                + "): its GPU state was restored; paced goes on"));
    p.awaitOut("launch -> 0", 2);
    // the call reached the driver only after the library saw the state restored
    int again = indexOf(p, ".*is Running again on GPU 0.*");
    assertTrue(
        p.err().indexOf("fake libcuda: cuLaunchKernel()") < again,
        () -> "the first launch before the checkpoint\n" + p.transcript());
    p.awaitErr("fake libcuda: cuLaunchKernel\\(\\)", again + 1);
    JsonNode restored = api.pod(pod);
    JsonNode condition = Checks.condition(restored.path("conditions"), "GPUShareCheckpointed");
    assertTrue(
        condition != null
            && condition.path("status").asText().equals("False")
            && condition.path("reason").asText().equals("GPUShareRestored"),
        () -> "condition GPUShareCheckpointed False, GPUShareRestored: " + restored);
    assertRunningOn(restored, 0);
    assertTrue(isNull(restored.get("checkpoint")), () -> "checkpoint cleared: " + restored);
    List<String> order = grantsAndReleases(node);
    assertEquals(
        List.of("granted " + pod, "suspended " + pod, "granted " + pod), order, () -> "" + order);
  }

  // ---------------------------------------------------------------- the token

  @Test
  void aRefusedTokenIsSaidAndTheProcessWaitsUntilTheFileHoldsOneThatIsAccepted() throws Exception {
    String node = Manifests.unique("tok");
    List<String> uuids = uuids(api.putNode(node, 1, "share-pool", Manifests.qos(false, 120)));
    String pod = node + "-t";
    api.createPod(sharePod(pod, node, 10, 100));
    Path token = Files.createTempFile(state, "token", "");
    Files.writeString(token, "not-a-token-this-server-made\n");
    Map<String, String> env = env(pod, uuids);
    env.put("GPUSHARE_TOKEN_FILE", token.toString());
    Proc w = start(pod, "workload", List.of("init", "ctx", "launch", "hold"), env);
    Matcher refused =
        w.awaitErr(
            "gpushare: the data plane at "
                + Pattern.quote(server.baseUri().toString())
                + " refused the token \\(HTTP (401|403): .+\\): set GPUSHARE_TOKEN_FILE to a file"
                + " holding a token it accepts \\(now "
                + Pattern.quote(token.toString())
                + "\\); CUDA calls wait, retrying every 2s");
    assertEquals("401", refused.group(1), () -> w.transcript());
    // it waits: no demand reached the server, its cuInit has not returned
    assertHibernation(api.pod(pod));
    assertTrue(w.isAlive(), () -> w.transcript());
    assertTrue(w.out().isEmpty(), () -> "cuInit has not returned\n" + w.transcript());
    assertTrue(
        w.findErr("fake libcuda: cuInit.*").isEmpty(),
        () -> "the driver was not started\n" + w.transcript());
    // The file is read at each request: once it holds the server's token, the wait ends.
    Files.writeString(token, server.adminToken().orElseThrow() + "\n");
    w.awaitOut("init -> 0");
    w.awaitOut("launch -> 0");
    w.awaitErr("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=" + Pattern.quote(uuids.get(0)));
    assertRunningOn(api.pod(pod), 0);
    // said once, not at every retry
    assertEquals(
        1,
        w.err().stream().filter(l -> l.contains("refused the token")).count(),
        () -> w.transcript());
  }

  // ---------------------------------------------------------------- the compute limit (issue 26)

  /**
   * A pod at core limit 30 on a node without MPS: the real member's view says {@code
   * computeLimit.mode} library with aim 30, the library keeps the pod's GPU time there on the fake
   * driver's virtual GPU, and its report reaches the view and {@code /metrics}.
   */
  @Test
  void aPodAtCoreLimit30IsKeptThereAndItsReportReachesTheViewAndTheMetrics() throws Exception {
    String node = Manifests.unique("limit");
    List<String> uuids = uuids(api.putNode(node, 1, "share-pool", Manifests.qos(false, 120)));
    String pod = node + "-a";
    api.createPod(sharePod(pod, node, 30, 30));
    JsonNode before = api.pod(pod);
    assertEquals("library", before.at("/computeLimit/mode").asText(), before.toString());
    assertEquals(30, before.at("/computeLimit/aimPercent").asInt(), before.toString());

    Map<String, String> env = env(pod, uuids);
    env.put("FAKE_GPU_FILE", state.resolve("gpu-" + node).toString());
    env.put("FAKE_GPU_QUEUE_US", "20000");
    env.put("FAKE_NVML_UUIDS", String.join(",", uuids)); // the node's GPUs, as NVML names them
    env.remove("FAKE_CUDA_TRACE");
    Proc busy = start(pod, "busy", List.of("--seconds", "6", "--report-ms", "1000"), env);
    busy.awaitOut("done launches=\\d+");
    assertEquals(0, busy.awaitExit(), busy.transcript());
    // 1 ms kernels: about 1000 launches a second unlimited; at 30 % about 300
    long last = 0;
    for (String line : busy.out()) {
      String[] f = line.split(" ");
      if (f.length == 2 && f[0].matches("\\d+") && Long.parseLong(f[0]) >= 5000) {
        last = Long.parseLong(f[1]);
      }
    }
    assertTrue(last >= 250 && last <= 350, "about 300 launches in the last second: " + busy.out());

    JsonNode after =
        awaitPod(pod, "the exit's report", v -> !v.at("/computeLimit/reportedAt").isNull());
    assertTrue(after.at("/computeLimit/heldSeconds").asDouble() > 1, after.toString());
    double measured = after.at("/computeLimit/measuredPercent").asDouble();
    assertTrue(measured >= 25 && measured <= 35, after.toString());
    String metrics = api.get("/metrics").body();
    assertTrue(
        metrics
            .lines()
            .anyMatch(
                l ->
                    l.startsWith("gpushare_pod_compute_aim_percent{")
                        && l.contains("pod=\"" + pod + "\"")
                        && l.matches(".* 30(\\.0)?")),
        () -> "the aim in /metrics:\n" + metrics);
    assertTrue(
        metrics
            .lines()
            .anyMatch(
                l ->
                    l.startsWith("gpushare_pod_compute_held_seconds_total{")
                        && l.contains("pod=\"" + pod + "\"")),
        "the held-back seconds in /metrics");
  }

  // ---------------------------------------------------------------- helpers

  private Map<String, String> env(String pod, List<String> uuids) {
    Map<String, String> env = new HashMap<>(side.preloaded());
    env.put("GPUSHARE_SERVER", server.baseUri().toString());
    env.put("GPUSHARE_POD", Api.NS + "/" + pod);
    env.put(
        "GPUSHARE_TOKEN_FILE", server.dataDir().resolve("admin-token").toAbsolutePath().toString());
    env.put("GPUSHARE_WAIT_INTERVAL", "1s");
    env.put("GPUSHARE_GRACE", "5s");
    env.put("GPUSHARE_STATE_DIR", state.toString());
    env.put("FAKE_CUDA_UUIDS", String.join(",", uuids));
    env.put("FAKE_CUDA_TRACE", "1");
    env.remove("CUDA_VISIBLE_DEVICES");
    return env;
  }

  private Proc start(String label, String program, List<String> args, Map<String, String> env) {
    Proc p = side.start(label, program, args, env);
    procs.add(p);
    return p;
  }

  /** A {@code paced} process of {@code pod}: steps are sent with {@link Proc#send}. */
  private Proc paced(String pod, List<String> uuids) {
    return start(pod, "paced", List.of(), env(pod, uuids));
  }

  private static List<String> uuids(JsonNode node) {
    List<String> l = new ArrayList<>();
    node.path("gpus").forEach(g -> l.add(g.path("uuid").asText()));
    assertFalse(l.isEmpty() || l.contains(""), () -> "GPU uuids: " + node);
    return l;
  }

  private static int indexOf(Proc p, String regex) {
    List<String> err = p.err();
    for (int i = 0; i < err.size(); i++) {
      if (err.get(i).matches(regex)) {
        return i;
      }
    }
    return -1;
  }

  /** The distinct positions of the waiting lines, in order. */
  private static List<String> positions(Proc p) {
    List<String> l = new ArrayList<>();
    Pattern w = Pattern.compile(WAITING);
    for (String line : p.err()) {
      Matcher m = w.matcher(line);
      if (m.matches() && (l.isEmpty() || !l.get(l.size() - 1).equals(m.group(2)))) {
        l.add(m.group(2));
      }
    }
    return l;
  }

  private static Predicate<JsonNode> stateIs(String state) {
    return v -> state.equals(v.path("state").asText());
  }

  private JsonNode awaitPod(String name, String what, Predicate<JsonNode> condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(PodSide.DEADLINE_SECONDS);
    JsonNode last = null;
    while (System.nanoTime() < deadline) {
      last = api.pod(name);
      if (condition.test(last)) {
        return last;
      }
      pause();
    }
    fail(name + ": not within " + PodSide.DEADLINE_SECONDS + " s: " + what + "; last " + last);
    return null;
  }

  private static void pause() {
    try {
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private void script(String node, int gpu, long pid, String uid, long mib, int sm) {
    Api.Resp r =
        api.put(
            "/v1/nodes/" + node + "/gpus/" + gpu + "/processes",
            "{\"processes\":[{\"pid\":"
                + pid
                + ",\"podUid\":\""
                + uid
                + "\",\"usedMemoryMiB\":"
                + mib
                + ",\"smUtilizationPercent\":"
                + sm
                + "}]}",
            "application/json");
    assertEquals(200, r.status(), () -> "script: " + r);
  }

  /** A pod key of the journal (namespace/name/uid): its name. */
  private static String name(JsonNode key) {
    return key.asText().split("/")[1];
  }

  /**
   * The node arbiter's Granted, Released and SuspendRequested events in journal order, as "granted
   * NAME", "released NAME", "suspended NAME".
   */
  private List<String> grantsAndReleases(String node) {
    JsonNode items =
        Api.ok(
                api.get(
                    "/v1/journal/events?persistenceId="
                        + Api.enc("NodeArbiter|" + node)
                        + "&fromSequenceNr=1&limit=500"))
            .path("items");
    List<String> l = new ArrayList<>();
    for (JsonNode e : items) {
      JsonNode event = e.path("event");
      switch (e.path("type").asText()) {
        case "NodeArbiter.Granted" -> l.add("granted " + name(event.path("pod")));
        case "NodeArbiter.Released" -> l.add("released " + name(event.path("pod")));
        case "NodeArbiter.SuspendRequested" ->
            event.path("pods").forEach(k -> l.add("suspended " + name(k)));
        default -> {
          // not a grant nor a release
        }
      }
    }
    return l;
  }
}
