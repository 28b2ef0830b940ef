package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * {@code gpushare run}: a pod's workload client. It raises the pod's demand, waits for the grant
 * (printing the SPEC §4 waiting line), runs CMD with the granted device in its environment, follows
 * the pod while CMD runs, and gives the GPU back when CMD is done.
 *
 * <p>The contract with CMD:
 *
 * <ul>
 *   <li>CMD starts only while the pod is Running, with the pod view's {@code workload.env} ({@code
 *       CUDA_VISIBLE_DEVICES}=the GPU's UUID, the MPS limits) plus {@code GPUSHARE_GPU_INDEX} and
 *       {@code GPUSHARE_GPU_UUID} in its environment, and without {@code libgpushare.so} in its
 *       {@code LD_PRELOAD} ({@link Preload}: this contract replaces the library's);
 *   <li>SIGINT, SIGTERM and SIGHUP sent to this client are forwarded to CMD; once CMD exits the
 *       demand is released and the client exits with CMD's status. Interrupted while waiting, the
 *       client withdraws the demand and exits 128 + the signal's number;
 *   <li>when the pod leaves Running while CMD runs (preempted, or its share revoked or released by
 *       someone else), CMD gets SIGUSR1 ("your GPU share was preempted or revoked: checkpoint and
 *       exit"), {@code --grace} later SIGTERM, another {@code --grace} later SIGKILL. Then, if the
 *       pod still has demand (Ready), the client waits for the grant again and starts CMD again,
 *       maybe on another GPU; if it is in Hibernation (or deleted), it exits with CMD's status;
 *   <li>except when the pod asked for {@code gpushare.dev/preemption: checkpoint} and the node's
 *       member checkpointed its CUDA processes (the view's {@code checkpoint}): CMD gets no signal
 *       and runs on (its CUDA calls wait) until the member restores it on the pod's next grant; if
 *       the state is given up instead, the signal contract above applies.
 * </ul>
 *
 * All of it is one event loop on the calling thread; the grant long poll, the watch and CMD's exit
 * only post events to it. A signal is decided where it arrives, under {@link #cmdLock}, the lock
 * CMD is started and recorded under: a CMD recorded gets it at once; without one, the run ends with
 * 128 + its number and no CMD is started after it. No moment between starting CMD and recording it
 * can lose a signal.
 */
final class WorkloadRunner {

  /** The SPEC §4 line, exactly. */
  static String waitingLine(long waitingSeconds, long position) {
    return "You have been waiting for "
        + waitingSeconds
        + " seconds. Approximate position: "
        + position;
  }

  static final Duration RETRY = Duration.ofSeconds(2);

  /** Polls start at least this far apart, whatever the server answers (a proxy, a stub). */
  static final Duration MIN_POLL_SPACING = Duration.ofMillis(250);

  private static final long TICK_MILLIS = 100;

  private sealed interface Event
      permits Polled, PollFailed, Watched, WatchGone, WatchTrouble, ChildExited, Signalled {}

  private record Polled(long gen, JsonNode view) implements Event {}

  private record PollFailed(long gen, RuntimeException error) implements Event {}

  private record Watched(long gen, JsonNode view) implements Event {}

  private record WatchGone(long gen) implements Event {}

  private record WatchTrouble(long gen, RuntimeException error) implements Event {}

  private record ChildExited(long gen, int status) implements Event {}

  private record Signalled(String name) implements Event {}

  private enum Phase {
    WAITING,
    RUNNING,
    /** CMD runs on, its GPU state checkpointed by the node's member (preemption: checkpoint). */
    HELD,
    STOPPING
  }

  private final ApiClient client;
  private final PodRef pod;
  private final List<String> command;
  private final Duration interval;
  private final Duration grace;
  private final Signals signals;
  private final PrintWriter err;
  private final String ldPreload;
  private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();

  /** CMD's start and recording, and every signal's decision, happen under this lock. */
  private final Object cmdLock = new Object();

  /** A signal that came while no CMD was recorded (guarded by cmdLock): the run ends. */
  private String signalWithoutCmd;

  private Phase phase = Phase.WAITING;
  private long gen;
  // waiting
  private boolean lineDue;
  private long nextLineNanos;
  private long retryAtNanos = -1;
  private long lastPollNanos = System.nanoTime() - MIN_POLL_SPACING.toNanos();
  private boolean unreachableSaid;
  // running: written under cmdLock (read there by the signal handler), null when no CMD runs
  private Process child;
  private PodWatch watch;
  private String grantedUuid;
  private long runningSeconds;
  // stopping
  private String stopStage;
  private long stopDeadlineNanos;
  // outcome
  private Integer lastStatus;
  private volatile String interruptedBy;
  private boolean podGone;
  private boolean released;

  WorkloadRunner(
      ApiClient client,
      PodRef pod,
      List<String> command,
      Duration interval,
      Duration grace,
      Signals signals,
      PrintWriter err,
      Map<String, String> environment) {
    this.client = client;
    this.ldPreload = environment.get(Preload.VARIABLE);
    this.pod = pod;
    this.command = List.copyOf(command);
    this.interval = interval;
    this.grace = grace;
    this.signals = signals;
    this.err = err;
  }

  /** Runs it all; answers the exit status. */
  int run() throws Exception {
    try (AutoCloseable handlers = signals.install(this::received)) {
      JsonNode view = client.post(ApiClient.podPath(pod) + "/demand");
      Integer done = follow(view, true);
      while (done == null) {
        Event e = events.poll(TICK_MILLIS, TimeUnit.MILLISECONDS);
        done = e == null ? tick() : on(e);
      }
      return done;
    } finally {
      if (watch != null) {
        watch.close();
      }
      Process left;
      synchronized (cmdLock) {
        left = child;
        child = null;
      }
      if (left != null && left.isAlive()) {
        // only on an unexpected failure of the loop itself: leave nothing behind
        left.descendants().forEach(ProcessHandle::destroyForcibly);
        left.destroyForcibly();
        release();
      }
    }
  }

  // ------------------------------------------------------------------ no CMD running

  /** Acts on the pod's view while no CMD runs: start CMD, wait, or end. */
  private Integer follow(JsonNode view, boolean firstLine) {
    if (interruptedBy != null) {
      release();
      return lastStatus != null ? lastStatus : 128 + Signals.FORWARDED.get(interruptedBy);
    }
    String state = Printers.text(view, "state");
    if ("Running".equals(state)) {
      return startChild(view);
    }
    if ("Ready".equals(state)) {
      if (phase != Phase.WAITING || firstLine) {
        lineDue = true;
      }
      phase = Phase.WAITING;
      if (lineDue || System.nanoTime() - nextLineNanos >= -TimeUnit.MILLISECONDS.toNanos(250)) {
        printWaiting(view);
      }
      pollGrant();
      return null;
    }
    if (lastStatus != null) {
      say(
          "pod "
              + pod
              + " is "
              + (state == null ? "gone" : state)
              + ": its GPU share was released or revoked; exiting with CMD's status "
              + lastStatus);
      return lastStatus;
    }
    err.println(
        "error: pod "
            + pod
            + " is "
            + state
            + (state != null && state.equals("Hibernation")
                ? ": its demand was withdrawn before it got a GPU"
                : ": `run` needs a share-pool pod (Hibernation, Ready or Running)"));
    err.flush();
    return 1;
  }

  private void printWaiting(JsonNode view) {
    long waiting = view.path("waitingSeconds").asLong(0);
    long position = view.path("queuePosition").asLong(0);
    err.println(waitingLine(waiting, position));
    err.flush();
    lineDue = false;
    nextLineNanos = System.nanoTime() + interval.toNanos();
  }

  /** The grant long poll, until the next waiting line is due. */
  private void pollGrant() {
    long now = System.nanoTime();
    if (now - lastPollNanos < MIN_POLL_SPACING.toNanos()) {
      retryAtNanos = lastPollNanos + MIN_POLL_SPACING.toNanos();
      return;
    }
    long remainingNanos = Math.max(0, nextLineNanos - now);
    long seconds = Math.max(1, (remainingNanos + 999_999_999L) / 1_000_000_000L);
    pollGrant(seconds);
  }

  private void pollGrant(long timeoutSeconds) {
    long g = ++gen;
    retryAtNanos = -1;
    lastPollNanos = System.nanoTime();
    client
        .sendAsync(
            "GET",
            ApiClient.podPath(pod) + "/grant?timeoutSeconds=" + timeoutSeconds,
            Duration.ofSeconds(timeoutSeconds).plus(ApiClient.REQUEST_TIMEOUT))
        .whenComplete(
            (view, failure) ->
                events.add(
                    failure == null ? new Polled(g, view) : new PollFailed(g, asRuntime(failure))));
  }

  // ------------------------------------------------------------------ CMD

  private Integer startChild(JsonNode view) {
    JsonNode gpu = view.path("gpu");
    ProcessBuilder pb = new ProcessBuilder(command).inheritIO();
    Map<String, String> env = pb.environment();
    Preload.apply(env, ldPreload);
    JsonNode workloadEnv = view.path("workload").path("env");
    for (Map.Entry<String, JsonNode> e : workloadEnv.properties()) {
      env.put(e.getKey(), e.getValue().asText());
    }
    grantedUuid = Printers.text(gpu, "uuid");
    if (gpu.hasNonNull("index")) {
      env.put("GPUSHARE_GPU_INDEX", gpu.get("index").asText());
    }
    if (grantedUuid != null) {
      env.put("GPUSHARE_GPU_UUID", grantedUuid);
    }
    runningSeconds = view.path("runningSeconds").asLong(0);
    say(
        "pod "
            + pod
            + " is Running on GPU "
            + Printers.text(gpu, "index")
            + " ("
            + grantedUuid
            + ") of node "
            + Printers.text(view, "node")
            + "; starting "
            + command.get(0));
    String before;
    IOException failed = null;
    synchronized (cmdLock) {
      before = signalWithoutCmd;
      if (before == null) {
        try {
          Process started = pb.start();
          signals.started(started.pid());
          child = started; // from here on, a signal goes to CMD
        } catch (IOException e) {
          failed = e;
        }
      }
    }
    if (before != null) {
      return onSignal(before); // it came before CMD: CMD is not started
    }
    if (failed != null) {
      err.println("error: cannot start " + command.get(0) + ": " + failed.getMessage());
      err.flush();
      release();
      return 127;
    }
    long g = ++gen;
    phase = Phase.RUNNING;
    child.onExit().thenAccept(p -> events.add(new ChildExited(g, p.exitValue())));
    watch =
        new PodWatch(
                client,
                pod,
                v -> events.add(new Watched(g, v)),
                () -> events.add(new WatchGone(g)),
                t -> events.add(new WatchTrouble(g, t)))
            .start();
    return null;
  }

  /** Whether this view says the share CMD was started on is no longer the pod's. */
  private boolean lostShare(JsonNode view) {
    if (!"Running".equals(Printers.text(view, "state"))) {
      return true;
    }
    String uuid = Printers.text(view.path("gpu"), "uuid");
    if (grantedUuid != null && !grantedUuid.equals(uuid)) {
      return true;
    }
    long seconds = view.path("runningSeconds").asLong(runningSeconds);
    if (seconds < runningSeconds) {
      return true; // Running again, since a moment this client did not see
    }
    runningSeconds = seconds;
    return false;
  }

  /** The view's {@code checkpoint.phase} (checkpointing, held, restoring), or null. */
  private static String checkpointPhase(JsonNode view) {
    return Printers.text(view.path("checkpoint"), "phase");
  }

  /** While the GPU state is held: restored (CMD goes on), or given up (the signal contract). */
  private void followHeld(JsonNode view) {
    String state = Printers.text(view, "state");
    String held = checkpointPhase(view);
    String dropped = held == null ? droppedBecause(view) : null;
    if (dropped != null) {
      phase = Phase.RUNNING; // for beginStop's bookkeeping
      beginStop("is " + state + " and its GPU state is no longer held (" + dropped + ")");
    } else if ("Running".equals(state) && held == null) {
      grantedUuid = Printers.text(view.path("gpu"), "uuid");
      runningSeconds = view.path("runningSeconds").asLong(0);
      phase = Phase.RUNNING;
      say(
          "pod "
              + pod
              + " is Running again on GPU "
              + Printers.text(view.path("gpu"), "index")
              + " ("
              + grantedUuid
              + "): its GPU state was restored; "
              + command.get(0)
              + " goes on");
    } else if (held == null) {
      phase = Phase.RUNNING; // for beginStop's bookkeeping
      beginStop("is " + state + " and its GPU state is no longer held (the pod's Events say why)");
    }
  }

  /** The message of a {@code GPUShareCheckpointDropped} condition on the view, or null. */
  private static String droppedBecause(JsonNode view) {
    for (JsonNode c : view.path("conditions")) {
      if ("GPUShareCheckpointed".equals(Printers.text(c, "type"))
          && "GPUShareCheckpointDropped".equals(Printers.text(c, "reason"))) {
        return Printers.text(c, "message");
      }
    }
    return null;
  }

  private void beginStop(String why) {
    phase = Phase.STOPPING;
    say(
        "pod "
            + pod
            + " "
            + why
            + ": sending SIGUSR1 to "
            + command.get(0)
            + " (pid "
            + child.pid()
            + "), SIGTERM if it still runs "
            + Durations.human(grace.toSeconds())
            + " later");
    signals.send(child.pid(), "USR1");
    stopStage = "USR1";
    stopDeadlineNanos = System.nanoTime() + grace.toNanos();
  }

  // ------------------------------------------------------------------ events

  private Integer on(Event e) {
    if (e instanceof Signalled s) {
      return onSignal(s.name());
    }
    if (e instanceof ChildExited c) {
      return c.gen() == gen ? onChildExit(c.status()) : null;
    }
    if (e instanceof Polled p) {
      if (p.gen() != gen || phase != Phase.WAITING) {
        return null;
      }
      unreachableSaid = false;
      return follow(p.view(), false);
    }
    if (e instanceof PollFailed f) {
      return f.gen() == gen && phase == Phase.WAITING ? onPollFailed(f.error()) : null;
    }
    if (e instanceof Watched w) {
      unreachableSaid = false;
      if (w.gen() == gen && phase == Phase.HELD) {
        followHeld(w.view());
        return null;
      }
      if (w.gen() == gen
          && phase == Phase.RUNNING
          && lostShare(w.view())
          && checkpointPhase(w.view()) != null) {
        phase = Phase.HELD;
        say(
            "pod "
                + pod
                + " left Running (now "
                + Printers.text(w.view(), "state")
                + "): its GPU state is checkpointed in host memory; "
                + command.get(0)
                + " keeps running without a signal and goes on when the pod runs again");
        return null;
      }
      if (w.gen() == gen && phase == Phase.RUNNING && lostShare(w.view())) {
        String state = Printers.text(w.view(), "state");
        beginStop(
            "Running".equals(state)
                ? "was granted a GPU again ("
                    + Printers.text(w.view().path("gpu"), "uuid")
                    + "): its share changed"
                : "left Running (now " + state + "): its GPU share was preempted or revoked");
      }
      return null;
    }
    if (e instanceof WatchGone g) {
      if (g.gen() == gen && (phase == Phase.RUNNING || phase == Phase.HELD)) {
        podGone = true;
        beginStop("was deleted");
      } else if (g.gen() == gen) {
        podGone = true;
      }
      return null;
    }
    if (e instanceof WatchTrouble t) {
      if (t.gen() == gen) {
        warnUnreachable(t.error());
      }
      return null;
    }
    return null;
  }

  /**
   * On the thread the signal arrived on: a recorded CMD gets it now; without one, the loop ends the
   * run ({@link #onSignal}) and {@link #startChild} starts no CMD after it.
   */
  private void received(String name) {
    synchronized (cmdLock) {
      interruptedBy = name;
      if (child != null) {
        signals.send(child.pid(), name);
        return;
      }
      if (signalWithoutCmd == null) {
        signalWithoutCmd = name;
      }
    }
    events.add(new Signalled(name));
  }

  /** A signal that came while no CMD was recorded: the demand is withdrawn, the run ends. */
  private Integer onSignal(String name) {
    say("SIG" + name + ": withdrawing the demand of pod " + pod);
    release();
    return 128 + Signals.FORWARDED.get(name);
  }

  private Integer onChildExit(int status) {
    lastStatus = status;
    synchronized (cmdLock) {
      child = null; // a signal from now on finds no CMD: the run ends (or CMD was signalled)
    }
    if (watch != null) {
      watch.close();
      watch = null;
    }
    if (phase == Phase.RUNNING || phase == Phase.HELD || interruptedBy != null) {
      // CMD ended on its own, or by a signal this client forwarded: the GPU goes back
      say(command.get(0) + " exited with status " + status + "; releasing pod " + pod);
      release();
      return status;
    }
    // stopped because the pod lost its share: what now depends on the pod
    if (podGone) {
      say(command.get(0) + " exited with status " + status + "; pod " + pod + " was deleted");
      return status;
    }
    say(command.get(0) + " exited with status " + status + " after losing the GPU share");
    phase = Phase.WAITING;
    lineDue = true;
    pollGrant(0);
    return null;
  }

  private Integer onPollFailed(RuntimeException error) {
    if (error instanceof ApiException a) {
      if (a.status() == 404) {
        err.println("error: pod " + pod + " no longer exists");
        err.flush();
        return lastStatus != null ? lastStatus : 1;
      }
      if (a.isAuth() || a.status() < 500) {
        throw a;
      }
    } else if (!(error instanceof UnreachableException)) {
      throw error;
    }
    warnUnreachable(error);
    retryAtNanos = System.nanoTime() + RETRY.toNanos();
    return null;
  }

  private void warnUnreachable(RuntimeException error) {
    if (!unreachableSaid) {
      unreachableSaid = true;
      say(
          (error instanceof UnreachableException
                  ? "cannot reach the gpushare server at " + client.server() + ": "
                  : "the gpushare server answered: ")
              + (error instanceof ApiException a ? a.detail() : error.getMessage())
              + "; retrying");
    }
  }

  private Integer tick() {
    long now = System.nanoTime();
    if (phase == Phase.WAITING && retryAtNanos >= 0 && now >= retryAtNanos) {
      pollGrant();
    } else if (phase == Phase.STOPPING && now >= stopDeadlineNanos && child.isAlive()) {
      if (stopStage.equals("USR1")) {
        say(command.get(0) + " still runs: SIGTERM");
        signals.send(child.pid(), "TERM");
        stopStage = "TERM";
        stopDeadlineNanos = now + grace.toNanos();
      } else if (stopStage.equals("TERM")) {
        say(command.get(0) + " still runs: SIGKILL");
        child.destroyForcibly();
        stopStage = "KILL";
      }
    }
    return null;
  }

  // ------------------------------------------------------------------ pieces

  private void release() {
    if (released || podGone) {
      return;
    }
    released = true;
    try {
      client.delete(ApiClient.podPath(pod) + "/demand");
    } catch (ApiException e) {
      if (e.status() != 404) {
        say("could not release the demand of pod " + pod + ": " + e.detail());
      }
    } catch (RuntimeException e) {
      say("could not release the demand of pod " + pod + ": " + e.getMessage());
    }
  }

  private void say(String message) {
    err.println("gpushare: " + message);
    err.flush();
  }

  private static RuntimeException asRuntime(Throwable failure) {
    Throwable t = failure;
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    return t instanceof RuntimeException r ? r : new IllegalStateException(t);
  }
}
