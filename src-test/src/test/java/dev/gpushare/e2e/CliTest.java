package dev.gpushare.e2e;

import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code gpushare} CLI ({@code dev.gpushare.cli.GpushareCli}) as a person runs it: its own JVM
 * on the test class path, against a real server — tables with the server's real values, {@code -o
 * json}, and {@code run} as a pod's workload: the device in CMD's environment, the SPEC §4 waiting
 * line, the grant, SIGUSR1 on preemption and waiting again, SIGTERM forwarded, the release.
 */
class CliTest extends ServerPerClass {

  private static final long DEADLINE_SECONDS = 60;
  private static final Pattern WAITING_FIRST =
      Pattern.compile("^You have been waiting for (\\d+) seconds\\. Approximate position: 1$");

  @TempDir Path cwd;
  private final List<Cli> started = new ArrayList<>();

  @AfterEach
  void killEveryCli() {
    started.forEach(Cli::kill);
    started.clear();
  }

  // ------------------------------------------------------------------ the CLI process

  /** A running CLI: its output read line by line as it comes; waits are bounded. */
  final class Cli {
    private final Process process;
    private final List<String> out = new ArrayList<>();
    private final List<String> err = new ArrayList<>();
    private final List<String> args;
    private final List<Thread> pumps = new ArrayList<>();

    Cli(Path workingDir, boolean withToken, List<String> args) {
      this.args = args;
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-Xmx128m");
      cmd.add("-XX:+UseSerialGC");
      cmd.add("-XX:TieredStopAtLevel=1");
      cmd.add("-cp");
      cmd.add(ServerProcess.classPath());
      cmd.add("dev.gpushare.cli.GpushareCli");
      cmd.add("--server");
      cmd.add(server.baseUri().toString());
      Path token = server.dataDir().resolve("admin-token");
      if (withToken && Files.exists(token)) {
        cmd.add("--token-file");
        cmd.add(token.toString());
      }
      cmd.addAll(args);
      ProcessBuilder pb = new ProcessBuilder(cmd).directory(workingDir.toFile());
      Map<String, String> env = pb.environment();
      env.keySet().removeIf(k -> k.startsWith("GPUSHARE_") || k.startsWith("POD_"));
      try {
        process = pb.start();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      try {
        process.getOutputStream().close();
      } catch (IOException e) {
        // CMD reads nothing from it
      }
      pumps.add(pump(process.getInputStream(), out, "out"));
      pumps.add(pump(process.getErrorStream(), err, "err"));
    }

    private Thread pump(InputStream in, List<String> lines, String name) {
      Thread t =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                  String line;
                  while ((line = r.readLine()) != null) {
                    synchronized (lines) {
                      lines.add(line);
                      lines.notifyAll();
                    }
                  }
                } catch (IOException e) {
                  // the process went away
                }
              },
              "cli-" + name);
      t.setDaemon(true);
      t.start();
      return t;
    }

    /** Waits (bounded) for a line of stdout matching {@code p}; answers it. */
    String awaitOut(Predicate<String> p, String what) {
      return await(out, p, what);
    }

    String awaitErr(Predicate<String> p, String what) {
      return await(err, p, what);
    }

    /** Waits for the {@code n}th (1-based) line matching. */
    String await(List<String> lines, Predicate<String> p, String what) {
      return awaitCount(lines, p, 1, what);
    }

    String awaitCount(List<String> lines, Predicate<String> p, int n, String what) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
      synchronized (lines) {
        while (true) {
          int seen = 0;
          for (String l : lines) {
            if (p.test(l) && ++seen == n) {
              return l;
            }
          }
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            fail("no " + what + " within " + DEADLINE_SECONDS + " s; " + this);
          }
          try {
            lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            fail("interrupted");
          }
        }
      }
    }

    int awaitExit() {
      try {
        if (!process.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
          fail("the CLI did not exit within " + DEADLINE_SECONDS + " s; " + this);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        fail("interrupted");
      }
      // the pumps read what is left (CMD, a grandchild, may hold the pipes a little longer)
      for (Thread t : pumps) {
        try {
          t.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return process.exitValue();
    }

    int status() {
      return process.exitValue();
    }

    /** SIGTERM, keeping the pipes open (Process.destroy() would close them). */
    void terminate() {
      process.toHandle().destroy();
    }

    List<String> out() {
      synchronized (out) {
        return List.copyOf(out);
      }
    }

    List<String> err() {
      synchronized (err) {
        return List.copyOf(err);
      }
    }

    void kill() {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      try {
        process.waitFor(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public String toString() {
      return "gpushare "
          + String.join(" ", args)
          + (process.isAlive() ? " (running)" : " (exit " + process.exitValue() + ")")
          + "\n--- stdout\n"
          + String.join("\n", out())
          + "\n--- stderr\n"
          + String.join("\n", err());
    }
  }

  private Cli start(String... args) {
    Cli c = new Cli(cwd, true, List.of(args));
    started.add(c);
    return c;
  }

  /** A one-shot command: its exit status, then its output. */
  private Cli cli(String... args) {
    Cli c = start(args);
    c.awaitExit();
    return c;
  }

  private String node(int gpus, String qos) {
    String node = Manifests.unique("cli");
    api.putNode(node, gpus, "share-pool", qos);
    return node;
  }

  private String pod(String node, String suffix) {
    String name = node + "-" + suffix;
    api.createPod(sharePod(name, node, 10, 100));
    return name;
  }

  private static String ns(String name) {
    return Api.NS + "/" + name;
  }

  private String uuid(String node, int index) {
    return api.node(node).path("gpus").get(index).path("uuid").asText();
  }

  private static Pattern row(String... cells) {
    StringBuilder p = new StringBuilder("^");
    for (int i = 0; i < cells.length; i++) {
      p.append(Pattern.quote(cells[i])).append(i < cells.length - 1 ? "\\s{3,}" : "$");
    }
    return Pattern.compile(p.toString());
  }

  private static void assertRow(List<String> lines, String... cells) {
    Pattern p = row(cells);
    assertTrue(
        lines.stream().anyMatch(l -> p.matcher(l).matches()),
        () -> "a row " + List.of(cells) + " in:\n" + String.join("\n", lines));
  }

  // ------------------------------------------------------------------ tables

  @Test
  void nodesQueuePodsAndPodShowTheServersValues() {
    String node = node(1, Manifests.qos(false, 120));
    String h = pod(node, "h");
    String w1 = pod(node, "w1");
    String w2 = pod(node, "w2");
    api.demand(h);
    api.demand(w1);
    api.demand(w2);
    String uuid = uuid(node, 0);

    Cli nodes = cli("nodes");
    assertEquals(0, nodes.status(), nodes::toString);
    assertEquals("NAME POLICY GPUS HEALTHY QUEUE", nodes.out().get(0).replaceAll("\\s+", " "));
    assertRow(nodes.out(), node, "share-pool", "1", "1", "2");

    Cli queue = cli("queue", node);
    assertEquals(0, queue.status(), queue::toString);
    assertEquals(
        "POSITION POD WAITING LIMITS", queue.out().get(0).replaceAll("\\s+", " "), queue::toString);
    assertRow(queue.out(), "1", ns(w1), "0s", "100/100");
    assertRow(queue.out(), "2", ns(w2), "0s", "100/100");

    Cli pods = cli("pods", "--node", node);
    assertEquals(0, pods.status(), pods::toString);
    assertEquals(
        "NAMESPACE NAME NODE STATE GPU LIMITS POSITION WAITING RUNNING",
        pods.out().get(0).replaceAll("\\s+", " "));
    assertRow(pods.out(), "default", h, node, "Running", "0", "100/100", "-", "-", "0s");
    assertRow(pods.out(), "default", w1, node, "Ready", "-", "100/100", "1", "0s", "-");
    assertRow(pods.out(), "default", w2, node, "Ready", "-", "100/100", "2", "0s", "-");

    Cli json = cli("pods", "--node", node, "-o", "json");
    assertEquals(0, json.status(), json::toString);
    JsonNode items = parse(String.join("\n", json.out())).path("items");
    assertEquals(3, items.size(), json::toString);
    for (JsonNode p : items) {
      JsonNode fromApi = api.pod(p.path("name").asText());
      assertEquals(fromApi.path("state"), p.path("state"));
      assertEquals(fromApi.path("uid"), p.path("uid"));
      assertEquals(fromApi.path("queuePosition"), p.path("queuePosition"));
    }

    Cli pod = cli("pod", ns(h));
    assertEquals(0, pod.status(), pod::toString);
    assertTrue(pod.out().contains("State:        Running"), pod::toString);
    assertTrue(pod.out().contains("GPU:          0 (" + uuid + ")"), pod::toString);
    assertTrue(pod.out().contains("  CUDA_VISIBLE_DEVICES=" + uuid), pod::toString);
    Cli waiting = cli("pod", ns(w2));
    assertTrue(waiting.out().contains("State:        Ready"), waiting::toString);
    assertTrue(waiting.out().contains("Position:     2"), waiting::toString);
  }

  @Test
  void journalPrintsANodesAndAPodsTimelineThroughTheApi() {
    String node = node(1, Manifests.qos(false, 120));
    String p = pod(node, "j");
    api.demand(p);
    api.release(p);
    // The node's arbiter is the one writer of decisions: its journal is the pod's timeline.
    String arbiter = "NodeArbiter|" + node;
    Cli journal = cli("journal", arbiter);
    assertEquals(0, journal.status(), journal::toString);
    List<String> lines = journal.out();
    assertTrue(lines.size() >= 5, journal::toString);
    assertTrue(
        lines.get(0).matches("^1  \\d{4}-\\d\\d-\\d\\dT.*  NodeArbiter\\.\\S+\\s+\\{.*"),
        lines::toString);
    assertTrue(lines.get(lines.size() - 2).contains("NodeArbiter.Granted"), lines::toString);
    assertTrue(lines.get(lines.size() - 1).contains("NodeArbiter.Released"), lines::toString);
    // The pod's own journal keeps what only it knows: the spec seen (no Events here).
    String pod = "Pod|" + ns(p) + "/" + api.pod(p).path("uid").asText();
    Cli own = cli("journal", pod);
    assertEquals(0, own.status(), own::toString);
    assertEquals(1, own.out().size(), own::toString);
    assertTrue(own.out().get(0).contains("PodActor.SpecSeen"), own::toString);
    Cli ids = cli("journal", "--ids");
    assertTrue(ids.out().contains(arbiter), ids::toString);
    assertTrue(ids.out().contains(pod), ids::toString);
  }

  @Test
  void historyPrintsAPodsRecordAndItsArbitersDecisionsAsATable() {
    String node = node(1, Manifests.qos(false, 120));
    String p = pod(node, "hist");
    api.demand(p);
    api.release(p);
    String uid = api.pod(p).path("uid").asText();
    Cli history = cli("history", ns(p));
    assertEquals(0, history.status(), history::toString);
    List<String> lines = history.out();
    assertEquals(
        "TIME ENTITY EVENT SUMMARY", lines.get(0).replaceAll("\\s+", " "), lines::toString);
    assertEquals(5, lines.size(), history::toString);
    String time = "\\d{4}-\\d\\d-\\d\\dT\\S+Z";
    List<String> rest = lines.subList(1, lines.size());
    assertTrue(
        rest.stream()
            .anyMatch(
                l ->
                    l.matches(
                        time + " +pod " + uid + " +SpecSeen +record: spec seen on node " + node)),
        lines::toString);
    assertTrue(
        rest.stream()
            .anyMatch(
                l ->
                    l.matches(
                        time
                            + " +arbiter "
                            + node
                            + " +PodAdded +bound to the node \\(uid "
                            + uid
                            + "\\)")),
        lines::toString);
    assertTrue(
        lines.get(3).matches(time + " +arbiter " + node + " +Granted +granted GPU 0"),
        lines::toString);
    assertTrue(
        lines.get(4).matches(time + " +arbiter " + node + " +Released +released its GPU"),
        lines::toString);
    assertEquals("", String.join("\n", history.err()), history::toString);

    Cli json = cli("history", ns(p), "--limit", "2", "-o", "json");
    assertEquals(0, json.status(), json::toString);
    JsonNode page = parse(String.join("\n", json.out()));
    JsonNode fromApi = Api.ok(api.get(Api.podPath(p) + "/history?limit=2"));
    assertEquals(fromApi, page, "the API's answer as it is");
    assertTrue(
        String.join("\n", json.err()).startsWith("more entries after these 2"), json::toString);
    Cli none = cli("history", ns(node + "-never"));
    assertEquals(0, none.status(), none::toString);
    assertEquals(List.of("No history for pod " + ns(node + "-never") + "."), none.out());
  }

  @Test
  void errorsAndAuthentication() {
    Cli missing = cli("pod", "default/cli-nope");
    assertEquals(1, missing.status(), missing::toString);
    assertTrue(missing.err().get(0).startsWith("error: "), missing::toString);
    assertTrue(missing.err().get(0).contains("cli-nope"), missing::toString);

    Cli usage = cli("pod", "no-namespace");
    assertEquals(2, usage.status(), usage::toString);

    Path token = server.dataDir().resolve("admin-token");
    Assumptions.assumeTrue(Files.exists(token), "the server has access control");
    // no token anywhere: refused, exit 3
    Cli none = new Cli(cwd, false, List.of("nodes"));
    started.add(none);
    assertEquals(3, none.awaitExit(), none::toString);
    assertTrue(none.err().get(0).startsWith("error: not authenticated: "), none::toString);
    // ./data/admin-token of the working directory is found without a flag
    Cli found = new Cli(server.dataDir().getParent(), false, List.of("nodes"));
    started.add(found);
    assertEquals(0, found.awaitExit(), found::toString);
  }

  // ------------------------------------------------------------------ run

  @Test
  void runOnAFreeGpuExportsTheDeviceAndReleasesAfterwards() {
    String node = node(1, Manifests.qos(false, 120));
    String p = pod(node, "free");
    String uuid = uuid(node, 0);
    Cli run = cli("run", "--pod", ns(p), "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES; sleep 1");
    assertEquals(0, run.status(), run::toString);
    assertTrue(run.out().contains(uuid), run::toString);
    assertEquals("Hibernation", api.pod(p).path("state").asText(), "released");
  }

  @Test
  void runOnAFullGpuPrintsTheWaitingLineThenRunsWhenGranted() {
    String node = node(1, Manifests.qos(false, 120));
    String holder = pod(node, "holder");
    String w = pod(node, "w");
    api.demand(holder);
    String uuid = uuid(node, 0);
    Cli run =
        start(
            "run",
            "--pod",
            ns(w),
            "--interval",
            "1s",
            "--",
            "sh",
            "-c",
            "echo $CUDA_VISIBLE_DEVICES; sleep 1");
    run.awaitErr(l -> WAITING_FIRST.matcher(l).matches(), "the waiting line with position 1");
    assertEquals("Ready", api.pod(w).path("state").asText());
    api.release(holder);
    assertEquals(0, run.awaitExit(), run::toString);
    assertTrue(run.out().contains(uuid), run::toString);
    assertEquals("Hibernation", api.pod(w).path("state").asText(), "released");
  }

  @Test
  void preemptionSendsSigusr1ThenTheClientWaitsAndRunsAgain() {
    String node = node(1, "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":1}");
    String v = pod(node, "v");
    String p = pod(node, "p");
    Cli run =
        start(
            "run",
            "--pod",
            ns(v),
            "--interval",
            "1s",
            "--grace",
            "20s",
            "--",
            "sh",
            "-c",
            "trap 'echo got USR1; exit 0' USR1; echo started $CUDA_VISIBLE_DEVICES;"
                + " while true; do sleep 0.1; done");
    run.awaitOut(l -> l.startsWith("started GPU-"), "CMD started");
    assertEquals("Running", api.pod(v).path("state").asText());

    api.demand(p);
    api.advance(61); // v has run more than podMaxDurationMinutes: p preempts it
    assertEquals("Running", api.pod(p).path("state").asText());
    run.awaitOut("got USR1"::equals, "SIGUSR1 in CMD");
    run.awaitCount(
        run.err, l -> WAITING_FIRST.matcher(l).matches(), 1, "waiting again, position 1");
    assertEquals("Ready", api.pod(v).path("state").asText());
    assertTrue(run.process.isAlive(), run::toString);

    api.release(p); // v gets the GPU back: CMD starts again
    run.awaitCount(run.out, l -> l.startsWith("started GPU-"), 2, "CMD started again");
    api.release(v); // revoked from outside: SIGUSR1 again, and the client ends
    run.awaitCount(run.out, "got USR1"::equals, 2, "SIGUSR1 the second time");
    assertEquals(0, run.awaitExit(), run::toString);
    assertEquals("Hibernation", api.pod(v).path("state").asText());
  }

  @Test
  void sigtermToTheClientReachesCmdAndTheGpuIsReleased() {
    String node = node(1, Manifests.qos(false, 120));
    String p = pod(node, "term");
    Cli run =
        start(
            "run",
            "--pod",
            ns(p),
            "--",
            "sh",
            "-c",
            "trap 'echo got TERM; exit 42' TERM; echo started; while true; do sleep 0.1; done");
    run.awaitOut("started"::equals, "CMD started");
    assertEquals("Running", api.pod(p).path("state").asText());
    run.terminate();
    assertEquals(42, run.awaitExit(), run::toString);
    assertTrue(run.out().contains("got TERM"), run::toString);
    assertEquals("Hibernation", api.pod(p).path("state").asText(), "released");
  }

  private static JsonNode parse(String json) {
    try {
      return Api.JSON.readTree(json);
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + json, e);
    }
  }
}
