package dev.gpushare.cli;

import static dev.gpushare.cli.StubServer.Answer.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code run} against a stub API: the waiting lines, the device environment, release at the end,
 * SIGUSR1 (then SIGTERM) when the pod leaves Running, and a signal while waiting. CMD is a real
 * {@code sh}; signals to it are real; signals to the client are simulated.
 *
 * <p>The simulated signal is TERM, never INT: a JVM started as a background job of a
 * non-interactive shell ({@code mvn verify &} in a script) ignores SIGINT, CMD inherits that, and
 * {@code sh} cannot trap a signal ignored on entry, so a forwarded INT would vanish (a real {@code
 * run} started so never receives INT either). Every process a test started, CMD and whatever it
 * started, is killed after each test, on every path ({@link #stop}).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class WorkloadRunnerTest {

  static final String POD = "/v1/namespaces/default/pods/w";
  static final long DEADLINE_SECONDS = 30;

  /** Receiving is simulated (the test JVM keeps its handlers); sending is real. */
  static final class TestSignals implements Signals {
    volatile Consumer<String> handler;

    /** Runs on install (after the handler is set): a signal at the very start of the run. */
    volatile Runnable atInstall = () -> {};

    /** Runs between CMD's start and its recording (Signals#started). */
    volatile Consumer<Long> atStart = pid -> {};

    @Override
    public AutoCloseable install(Consumer<String> h) {
      handler = h;
      atInstall.run();
      return () -> handler = null;
    }

    @Override
    public void started(long pid) {
      atStart.accept(pid);
    }

    @Override
    public void send(long pid, String signal) {
      Signals.posix().send(pid, signal);
    }
  }

  record Result(int status, String err) {
    List<String> lines() {
      return err.lines().toList();
    }
  }

  @TempDir Path dir;
  StubServer stub;
  TestSignals signals = new TestSignals();
  final List<OutputStream> streams = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    stub = new StubServer();
    stub.on("DELETE", POD + "/demand", json(Canned.pod("w", "Hibernation").toString()));
  }

  @AfterEach
  void stop() throws InterruptedException {
    try {
      killDescendants();
    } finally {
      stub.close();
    }
  }

  /**
   * Kills every process this JVM started (CMD started by {@code run}, and its children) and waits
   * for them: a test that failed or timed out leaves nothing running that could hold the fork's
   * output open.
   */
  static void killDescendants() throws InterruptedException {
    List<ProcessHandle> left = ProcessHandle.current().descendants().toList();
    left.forEach(ProcessHandle::destroyForcibly);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    for (ProcessHandle p : left) {
      try {
        p.onExit().get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        throw new AssertionError("pid " + p.pid() + " still runs after SIGKILL", e);
      }
    }
  }

  CompletableFuture<Result> run(String... args) {
    Map<String, String> env = new HashMap<>();
    env.put("GPUSHARE_SERVER", stub.uri().toString());
    env.put("GPUSHARE_POD", "default/w");
    StringWriter err = new StringWriter();
    List<String> all = new ArrayList<>(List.of("run", "--interval", "1s"));
    all.addAll(List.of(args));
    return CompletableFuture.supplyAsync(
        () -> {
          int status =
              GpushareCli.execute(
                  all.toArray(String[]::new),
                  env,
                  dir,
                  dir.resolve("none"),
                  signals,
                  new PrintWriter(new StringWriter()),
                  new PrintWriter(err, true));
          return new Result(status, err.toString());
        });
  }

  /** A watch that sends {@code views} one after the other, then stays open until the end. */
  StubServer.Handler watch(long delayMillis, JsonNode... views) {
    return (r, x) -> {
      OutputStream out = StubServer.stream(x);
      try {
        for (JsonNode v : views) {
          StubServer.event(out, v.toString());
          Thread.sleep(delayMillis);
        }
        Thread.sleep(TimeUnit.SECONDS.toMillis(DEADLINE_SECONDS));
      } catch (InterruptedException | IOException e) {
        // the stub stops, or the client went away
      }
    };
  }

  /** A grant long poll that answers {@code views} in turn, waiting its timeout for a Ready one. */
  StubServer.Handler grant(JsonNode... views) {
    AtomicInteger calls = new AtomicInteger();
    return (r, x) -> {
      JsonNode v = views[Math.min(calls.getAndIncrement(), views.length - 1)];
      if ("Ready".equals(v.path("state").asText())) {
        long seconds =
            Long.parseLong(GpushareCliTest.query(r.query()).getOrDefault("timeoutSeconds", "1"));
        try {
          Thread.sleep(Math.min(seconds, 5) * 1000);
        } catch (InterruptedException e) {
          return;
        }
      }
      StubServer.send(x, json(v.toString()));
    };
  }

  @Test
  void waitsPrintingTheLineThenRunsOnTheGrantedDeviceAndReleases() throws Exception {
    Path seen = dir.resolve("seen");
    stub.on("POST", POD + "/demand", json(Canned.ready("w", 2, 5).toString()));
    stub.on(
        "GET",
        POD + "/grant",
        grant(Canned.ready("w", 1, 6), Canned.running("w", 1, Canned.UUID1, 0)));
    stub.on("GET", POD + "/watch", watch(0, Canned.running("w", 1, Canned.UUID1, 0)));
    Result r =
        run(
                "--",
                "sh",
                "-c",
                "echo \"$CUDA_VISIBLE_DEVICES $GPUSHARE_GPU_INDEX $GPUSHARE_GPU_UUID"
                    + " $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\" > "
                    + seen
                    + "; exit 3")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(3, r.status(), r::toString);
    List<String> waiting = r.lines().stream().filter(l -> l.startsWith("You have")).toList();
    assertEquals(
        List.of(
            "You have been waiting for 5 seconds. Approximate position: 2",
            "You have been waiting for 6 seconds. Approximate position: 1"),
        waiting,
        r::toString);
    assertEquals(
        Canned.UUID1 + " 1 " + Canned.UUID1 + " 100\n", Files.readString(seen), r::toString);
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "released once");
    assertTrue(
        r.err().contains("gpushare: sh exited with status 3; releasing pod default/w"), r.err());
  }

  @Test
  void aPodThatLeavesRunningGetsSigusr1AndAHibernatedPodEndsTheRun() throws Exception {
    Path seen = dir.resolve("seen");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on(
        "GET",
        POD + "/watch",
        watch(1000, Canned.running("w", 0, Canned.UUID0, 0), Canned.ready("w", 1, 0)));
    stub.on("GET", POD + "/grant", grant(Canned.pod("w", "Hibernation")));
    Result r =
        run(
                "--grace",
                "20s",
                "--",
                "sh",
                "-c",
                "trap 'echo usr1 > " + seen + "; exit 5' USR1; while :; do sleep 0.1; done")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(5, r.status(), r::toString);
    assertEquals("usr1\n", Files.readString(seen));
    assertTrue(r.err().contains("left Running (now Ready)"), r.err());
    assertTrue(r.err().contains("sending SIGUSR1 to sh"), r.err());
    assertEquals(0, stub.requests("DELETE", POD + "/demand").size(), r::toString);
  }

  static com.fasterxml.jackson.databind.node.ObjectNode withCheckpoint(
      com.fasterxml.jackson.databind.node.ObjectNode view, String phase) {
    view.putObject("checkpoint")
        .put("phase", phase)
        .put("gpu", 0)
        .put("bytes", 1L << 30)
        .put("since", "2026-01-01T00:00:00Z");
    return view;
  }

  @Test
  void aCheckpointedPodsCommandGetsNoSignalAndGoesOnWhenRestored() throws Exception {
    Path seen = dir.resolve("seen");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on(
        "GET",
        POD + "/watch",
        watch(
            400,
            Canned.running("w", 0, Canned.UUID0, 0),
            withCheckpoint(Canned.running("w", 0, Canned.UUID0, 1), "checkpointing"),
            withCheckpoint(Canned.ready("w", 1, 0), "held"),
            withCheckpoint(Canned.running("w", 0, Canned.UUID0, 0), "restoring"),
            Canned.running("w", 0, Canned.UUID0, 0)));
    Result r =
        run(
                "--grace",
                "20s",
                "--",
                "sh",
                "-c",
                "trap 'echo usr1 > "
                    + seen
                    + "' USR1; i=0; while [ $i -lt 40 ]; do sleep 0.1; i=$((i+1)); done; exit 7")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(7, r.status(), r::toString);
    assertFalse(Files.exists(seen), "no SIGUSR1: " + r.err());
    assertTrue(
        r.err()
            .contains(
                "left Running (now Ready): its GPU state is checkpointed in host memory; sh keeps"
                    + " running without a signal"),
        r.err());
    assertTrue(r.err().contains("its GPU state was restored; sh goes on"), r.err());
    assertTrue(r.err().contains("sh exited with status 7; releasing pod default/w"), r.err());
  }

  @Test
  void aCheckpointThatIsGivenUpFallsBackToSigusr1() throws Exception {
    Path seen = dir.resolve("seen");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on(
        "GET",
        POD + "/watch",
        watch(
            400,
            Canned.running("w", 0, Canned.UUID0, 0),
            withCheckpoint(Canned.ready("w", 1, 0), "held"),
            Canned.ready("w", 1, 0)));
    stub.on("GET", POD + "/grant", grant(Canned.pod("w", "Hibernation")));
    Result r =
        run(
                "--grace",
                "20s",
                "--",
                "sh",
                "-c",
                "trap 'echo usr1 > " + seen + "; exit 5' USR1; while :; do sleep 0.1; done")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(5, r.status(), r::toString);
    assertEquals("usr1\n", Files.readString(seen));
    assertTrue(r.err().contains("its GPU state is no longer held"), r.err());
  }

  @Test
  void aCheckpointDroppedAfterTheGrantFallsBackToSigusr1() throws Exception {
    Path seen = dir.resolve("seen");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    com.fasterxml.jackson.databind.node.ObjectNode dropped =
        Canned.running("w", 0, Canned.UUID0, 0);
    dropped
        .putArray("conditions")
        .addObject()
        .put("type", "GPUShareCheckpointed")
        .put("status", "False")
        .put("reason", "GPUShareCheckpointDropped")
        .put("message", "GPU state no longer held: the restore kept failing.");
    stub.on(
        "GET",
        POD + "/watch",
        watch(
            400,
            Canned.running("w", 0, Canned.UUID0, 0),
            withCheckpoint(Canned.ready("w", 1, 0), "held"),
            withCheckpoint(Canned.running("w", 0, Canned.UUID0, 0), "restoring"),
            dropped));
    stub.on("GET", POD + "/grant", grant(Canned.pod("w", "Hibernation")));
    Result r =
        run(
                "--grace",
                "20s",
                "--",
                "sh",
                "-c",
                "trap 'echo usr1 > " + seen + "; exit 5' USR1; while :; do sleep 0.1; done")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals("usr1\n", Files.readString(seen), r::toString);
    assertTrue(r.err().contains("the restore kept failing"), r.err());
  }

  @Test
  void aCommandThatIgnoresSigusr1GetsSigtermAfterTheGraceThenRunsAgainWhenGranted()
      throws Exception {
    Path runs = dir.resolve("runs");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    // first run: revoked after a second; second run: on GPU 1, and it ends by itself
    AtomicInteger watches = new AtomicInteger();
    StubServer.Handler first =
        watch(1000, Canned.running("w", 0, Canned.UUID0, 0), Canned.ready("w", 1, 0));
    StubServer.Handler second = watch(0, Canned.running("w", 1, Canned.UUID1, 0));
    stub.on(
        "GET",
        POD + "/watch",
        (r, x) -> (watches.getAndIncrement() == 0 ? first : second).handle(r, x));
    stub.on(
        "GET",
        POD + "/grant",
        grant(Canned.ready("w", 1, 4), Canned.running("w", 1, Canned.UUID1, 0)));
    Result r =
        run(
                "--grace",
                "1s",
                "--",
                "sh",
                "-c",
                "echo $CUDA_VISIBLE_DEVICES >> "
                    + runs
                    + "; if [ $CUDA_VISIBLE_DEVICES = "
                    + Canned.UUID1
                    + " ]; then exit 0; fi; trap '' USR1; while :; do sleep 0.1; done")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(0, r.status(), r::toString);
    assertEquals(Canned.UUID0 + "\n" + Canned.UUID1 + "\n", Files.readString(runs));
    assertTrue(r.err().contains("gpushare: sh still runs: SIGTERM"), r.err());
    assertTrue(r.err().contains("sh exited with status 143 after losing the GPU share"), r.err());
    assertTrue(
        r.lines().contains("You have been waiting for 4 seconds. Approximate position: 1"),
        r::toString);
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "released at the end");
  }

  @Test
  void aSignalWhileWaitingWithdrawsTheDemand() throws Exception {
    CountDownLatch polled = new CountDownLatch(1);
    stub.on("POST", POD + "/demand", json(Canned.ready("w", 3, 0).toString()));
    StubServer.Handler slow = grant(Canned.ready("w", 3, 1));
    stub.on(
        "GET",
        POD + "/grant",
        (r, x) -> {
          polled.countDown();
          slow.handle(r, x);
        });
    CompletableFuture<Result> running = run("--", "sh", "-c", "exit 0");
    assertTrue(polled.await(DEADLINE_SECONDS, TimeUnit.SECONDS), "the client polls the grant");
    signals.handler.accept("TERM");
    Result r = running.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(143, r.status(), r::toString);
    assertEquals(
        "You have been waiting for 0 seconds. Approximate position: 3",
        r.lines().get(0),
        r::toString);
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "demand withdrawn");
  }

  @Test
  void aSignalWhileRunningIsForwardedAndTheDemandReleased() throws Exception {
    Path seen = dir.resolve("seen");
    Path started = dir.resolve("started");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on("GET", POD + "/watch", watch(0, Canned.running("w", 0, Canned.UUID0, 0)));
    CompletableFuture<Result> running =
        run(
            "--",
            "sh",
            "-c",
            "trap 'echo term > "
                + seen
                + "; exit 9' TERM; touch "
                + started
                + "; while :; do sleep 0.1; done");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
    while (!Files.exists(started) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertTrue(Files.exists(started), "CMD started");
    signals.handler.accept("TERM");
    Result r = running.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(9, r.status(), r::toString);
    assertEquals("term\n", Files.readString(seen));
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "released");
  }

  /**
   * A signal sent between CMD's start and its recording (from another thread, as the JVM's signal
   * thread does) waits for the recording and reaches CMD: CMD ends by it (its trap, or SIGTERM's
   * default action if the trap is not set yet), the demand is released once.
   */
  @RepeatedTest(5)
  void aSignalBetweenStartingCmdAndRecordingItReachesCmd() throws Exception {
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on("GET", POD + "/watch", watch(0, Canned.running("w", 0, Canned.UUID0, 0)));
    List<Thread> senders = new ArrayList<>();
    signals.atStart =
        pid -> {
          Thread t = new Thread(() -> signals.handler.accept("TERM"), "signal at start");
          senders.add(t);
          t.start();
          long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
          while (t.isAlive() && t.getState() != Thread.State.BLOCKED && System.nanoTime() < end) {
            Thread.onSpinWait();
          }
        };
    Result r =
        run("--", "sh", "-c", "trap 'exit 9' TERM; while :; do sleep 0.1; done")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(1, senders.size(), "one CMD started");
    assertTrue(r.status() == 9 || r.status() == 128 + 15, r::toString);
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "released");
  }

  /** A signal before CMD exists (right when the handlers are installed) ends the run: 143. */
  @RepeatedTest(3)
  void aSignalBeforeCmdExistsEndsTheRunAndStartsNoCmd() throws Exception {
    Path started = dir.resolve("started");
    stub.on("POST", POD + "/demand", json(Canned.running("w", 0, Canned.UUID0, 0).toString()));
    stub.on("GET", POD + "/watch", watch(0, Canned.running("w", 0, Canned.UUID0, 0)));
    signals.atInstall = () -> signals.handler.accept("TERM");
    Result r = run("--", "sh", "-c", "touch " + started).get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertEquals(128 + 15, r.status(), r::toString);
    assertFalse(Files.exists(started), "CMD was not started");
    assertEquals(1, stub.requests("DELETE", POD + "/demand").size(), "demand withdrawn");
  }
}
