package dev.gpushare.cli;

import static dev.gpushare.cli.StubServer.Answer.json;
import static dev.gpushare.cli.StubServer.Answer.problem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.http.server.UnixSocketBridge;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI with {@code GPUSHARE_SERVER=unix:/…} as the admission webhook sets it in a sharing pod:
 * real commands against a real HTTP server (the stub API) reached only through a Unix socket, the
 * member's own {@link UnixSocketBridge} in front of it. The pod's projected token (a file under the
 * pod's secrets) goes over the socket; views, -o json, a long journal, problems and a 401 read as
 * on TCP; {@code run} raises the demand, waits on the grant long poll, follows the pod on the SSE
 * watch (a preemption there gets CMD SIGUSR1), runs CMD again on the next grant without {@code
 * libgpushare.so} in its LD_PRELOAD, and releases. No sleeps: the steps wait for each other.
 */
class UnixSocketCliTest {
  static final String POD = "/v1/namespaces/default/pods/w";
  static final long DEADLINE_SECONDS = 30;
  static final String TOKEN = "projected-token-of-audience-gpushare";

  @TempDir Path dir;
  StubServer stub;
  UnixSocketBridge bridge;
  Path socket;
  Path podSecrets;
  Path tokenFile;
  final Map<String, String> env = new HashMap<>();
  final CountDownLatch end = new CountDownLatch(1);
  final WorkloadRunnerTest.TestSignals signals = new WorkloadRunnerTest.TestSignals();

  record Result(int status, String out, String err) {}

  @BeforeEach
  void start() throws IOException {
    stub = new StubServer();
    socket = dir.resolve("data-plane").resolve("gpushare.sock");
    Files.createDirectories(socket.getParent());
    bridge =
        UnixSocketBridge.open(
            socket,
            new InetSocketAddress(InetAddress.getLoopbackAddress(), stub.uri().getPort()),
            16);
    podSecrets = dir.resolve("var/run/secrets");
    tokenFile = podSecrets.resolve("gpushare.dev/token/token");
    Files.createDirectories(tokenFile.getParent());
    Files.writeString(tokenFile, TOKEN + "\n");
    // what the webhook injects into the GPU container
    env.put("GPUSHARE_SERVER", "unix:" + socket);
    env.put("GPUSHARE_TOKEN_FILE", tokenFile.toString());
    env.put("GPUSHARE_POD", "default/w");
    env.put("LD_PRELOAD", "/opt/gpushare/lib/libgpushare.so:libc.so.6");
  }

  @AfterEach
  void stop() {
    end.countDown();
    Path fifo = dir.resolve("started");
    if (Files.exists(fifo)) {
      // a watch still waiting for CMD to start (a failed test) gets its line. WRITE without
      // CREATE: once JUnit has deleted the temporary directory's fifo, this thread's write must
      // fail, not put a new file into the directory JUnit is deleting (which then fails the test)
      Thread unblock =
          new Thread(
              () -> {
                try (var w = Files.newOutputStream(fifo, StandardOpenOption.WRITE)) {
                  w.write("ended\n".getBytes(StandardCharsets.UTF_8));
                } catch (IOException e) {
                  // nobody reads it, or it is gone
                }
              });
      unblock.setDaemon(true);
      unblock.start();
    }
    bridge.close();
    stub.close();
  }

  Result cli(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status =
        GpushareCli.execute(
            args,
            env,
            dir,
            dir.resolve("no-service-account"),
            List.of(podSecrets),
            signals,
            new PrintWriter(out, true),
            new PrintWriter(err, true));
    return new Result(status, out.toString(), err.toString());
  }

  @Test
  void viewsDemandReleaseAndTheJournalGoOverTheSocketWithThePodsToken() throws IOException {
    stub.on("GET", "/v1/nodes", json(Canned.NODES));
    stub.on("GET", POD, json(Canned.running("w", 1, Canned.UUID1, 12).toString()));
    stub.on("POST", POD + "/demand", json(Canned.ready("w", 2, 0).toString()));
    stub.on("DELETE", POD + "/demand", json(Canned.pod("w", "Hibernation").toString()));
    stub.on(
        "GET",
        "/v1/journal/events",
        (r, x) -> {
          Map<String, String> q = GpushareCliTest.query(r.query());
          long from = Long.parseLong(q.get("fromSequenceNr"));
          ObjectNode all = Output.JSON.createObjectNode();
          ArrayNode items = all.putArray("items");
          for (long s = from; s < from + Integer.parseInt(q.get("limit")) && s <= 1200; s++) {
            items
                .addObject()
                .put("persistenceId", q.get("persistenceId"))
                .put("sequenceNr", s)
                .put("timestamp", "2026-01-01T00:00:00Z")
                .put("type", "PodActor.Granted")
                .putObject("event")
                .put("padding", "p".repeat(100));
          }
          StubServer.send(x, json(all.toString()));
        });

    Result nodes = cli("nodes");
    assertEquals(0, nodes.status(), nodes::toString);
    assertEquals(
        "NAME     POLICY       GPUS   HEALTHY   QUEUE\n"
            + "demo     share-pool   2      1         2\n"
            + "node-1   none         0      0         0\n",
        nodes.out());

    Result pod = cli("pod", "default/w", "-o", "json");
    assertEquals(0, pod.status(), pod::toString);
    assertEquals(
        Output.JSON.readTree(Canned.running("w", 1, Canned.UUID1, 12).toString()),
        Output.JSON.readTree(pod.out()));

    assertEquals(
        "default/w: Ready, position 2 in the queue of node demo, waiting 0s\n",
        cli("demand", "default/w").out());
    assertEquals("default/w: Hibernation\n", cli("release", "default/w").out());

    Result journal = cli("journal", "Pod|default/w/u");
    assertEquals(0, journal.status(), journal::toString);
    assertEquals(1200, journal.out().lines().count());
    assertEquals(2, stub.requests("GET", "/v1/journal/events").size(), "two pages");

    assertTrue(stub.requests.size() >= 6, stub.requests::toString);
    for (StubServer.Request r : stub.requests) {
      assertEquals("Bearer " + TOKEN, r.authorization(), r::toString);
    }
  }

  @Test
  void problemsAndRefusalsReadAsOnTcp() {
    stub.on(
        "POST",
        POD + "/demand",
        problem(
            422,
            "{\"type\":\"about:blank\",\"title\":\"Invalid\",\"status\":422,"
                + "\"detail\":\"the pod's share is against the rules\",\"errors\":["
                + "{\"field\":\"limits.core\",\"value\":\"120\",\"message\":\"at most 100\"}]}"));
    stub.on(
        "GET",
        "/v1/nodes",
        problem(
            403,
            "{\"type\":\"about:blank\",\"title\":\"Forbidden\",\"status\":403,"
                + "\"detail\":\"pod default/w may not list nodes\"}"));
    Result invalid = cli("demand", "default/w");
    assertEquals(1, invalid.status(), invalid::toString);
    assertEquals(
        "error: the pod's share is against the rules\n  limits.core: at most 100 (given: 120)\n",
        invalid.err());
    Result forbidden = cli("nodes");
    assertEquals(3, forbidden.status(), forbidden::toString);
    assertEquals(
        "error: not allowed: pod default/w may not list nodes (token from $GPUSHARE_TOKEN_FILE ("
            + tokenFile
            + "))\n",
        forbidden.err());
  }

  @Test
  void noSocketThereIsAnUnreachableServerNamedUnixPath() throws IOException {
    Path none = dir.resolve("data-plane/none.sock");
    Result r = cli("nodes", "--server", "unix:" + none);
    assertEquals(1, r.status(), r::toString);
    assertEquals(
        "error: cannot reach the gpushare server at unix:" + none + ": no such file or directory\n",
        r.err());
    Path file = Files.writeString(dir.resolve("data-plane/file.sock"), "");
    env.put("GPUSHARE_SERVER", "unix:" + file);
    Result refused = cli("nodes");
    assertEquals(
        "error: cannot reach the gpushare server at unix:" + file + ": connection refused\n",
        refused.err());
    assertEquals(0, stub.requests.size());
  }

  /** A watch that sends each view as the step before it allows, then stays open. */
  StubServer.Handler watch(Step... steps) {
    return (r, x) -> {
      OutputStream out = StubServer.stream(x);
      try {
        for (Step s : steps) {
          StubServer.event(out, s.view().toString());
          s.then().run();
        }
        end.await();
      } catch (InterruptedException | IOException e) {
        // the test ends, or the client went away
      }
    };
  }

  /** A view for the watch, and what must happen before the next one is sent. */
  record Step(JsonNode view, Waiting then) {}

  interface Waiting {
    void run() throws InterruptedException, IOException;
  }

  @Test
  void runDemandsWaitsForTheGrantFollowsTheWatchAndReleasesOverTheSocket() throws Exception {
    Path runs = dir.resolve("runs");
    Path started = dir.resolve("started");
    Process mkfifo = new ProcessBuilder("mkfifo", started.toString()).inheritIO().start();
    assertEquals(0, mkfifo.waitFor(), "mkfifo");

    stub.on("POST", POD + "/demand", json(Canned.ready("w", 1, 0).toString()));
    AtomicInteger grants = new AtomicInteger();
    stub.on(
        "GET",
        POD + "/grant",
        (r, x) ->
            StubServer.send(
                x,
                json(
                    (grants.getAndIncrement() == 0
                            ? Canned.running("w", 1, Canned.UUID1, 0)
                            : Canned.running("w", 0, Canned.UUID0, 0))
                        .toString())));
    // the first CMD: Running, then (once CMD says it started) preempted; the second: Running
    StubServer.Handler first =
        watch(
            new Step(Canned.running("w", 1, Canned.UUID1, 0), () -> Files.readString(started)),
            new Step(Canned.ready("w", 1, 0), () -> {}));
    StubServer.Handler second = watch(new Step(Canned.running("w", 0, Canned.UUID0, 0), () -> {}));
    AtomicInteger watches = new AtomicInteger();
    stub.on(
        "GET",
        POD + "/watch",
        (r, x) -> (watches.getAndIncrement() == 0 ? first : second).handle(r, x));
    stub.on("DELETE", POD + "/demand", json(Canned.pod("w", "Hibernation").toString()));

    String script =
        "echo \"$CUDA_VISIBLE_DEVICES ${LD_PRELOAD-unset}\" >> "
            + runs
            + "; if [ \"$CUDA_VISIBLE_DEVICES\" = "
            + Canned.UUID0
            + " ]; then exit 0; fi"
            + "; trap 'kill $p; exit 5' USR1; sleep 600 & p=$!; echo started > "
            + started
            + "; wait $p";
    List<String> args = new ArrayList<>(List.of("run", "--interval", "1s", "--", "sh", "-c"));
    args.add(script);
    Result r =
        CompletableFuture.supplyAsync(() -> cli(args.toArray(String[]::new)))
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);

    assertEquals(0, r.status(), r::toString);
    assertEquals(
        Canned.UUID1 + " libc.so.6\n" + Canned.UUID0 + " libc.so.6\n",
        Files.readString(runs),
        "CMD ran twice, without libgpushare.so in LD_PRELOAD: " + r);
    List<String> lines = r.err().lines().toList();
    assertEquals(
        "You have been waiting for 0 seconds. Approximate position: 1", lines.get(0), r::toString);
    assertTrue(
        r.err()
            .contains(
                "gpushare: pod default/w left Running (now Ready): its GPU share was preempted or"
                    + " revoked: sending SIGUSR1 to sh"),
        r::toString);
    assertTrue(r.err().contains("gpushare: sh exited with status 5 after losing the GPU share"));
    assertTrue(r.err().contains("gpushare: sh exited with status 0; releasing pod default/w"));
    assertEquals(1, stub.requests("POST", POD + "/demand").size());
    assertEquals(2, stub.requests("GET", POD + "/grant").size());
    assertTrue(stub.requests("GET", POD + "/watch").size() >= 1);
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "released once");
    for (StubServer.Request q : stub.requests) {
      assertEquals("Bearer " + TOKEN, q.authorization(), q::toString);
    }
  }

  @Test
  void runGivesCmdNoLdPreloadWhenTheLibraryWasAllOfIt() throws Exception {
    Path seen = dir.resolve("seen");
    env.put("LD_PRELOAD", "/opt/gpushare/lib/libgpushare.so");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on("GET", POD + "/watch", watch());
    stub.on("DELETE", POD + "/demand", json(Canned.pod("w", "Hibernation").toString()));
    Result r =
        CompletableFuture.supplyAsync(
                () -> cli("run", "--", "sh", "-c", "echo \"${LD_PRELOAD-unset}\" > " + seen))
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(0, r.status(), r::toString);
    assertEquals("unset\n", Files.readString(seen));
  }
}
