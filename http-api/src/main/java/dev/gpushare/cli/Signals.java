package dev.gpushare.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * POSIX signals for {@code run}: receiving SIGINT, SIGTERM and SIGHUP (so that they reach the
 * workload instead of ending the JVM) and sending any signal to the workload. Java can send only
 * SIGTERM and SIGKILL itself, so other signals go through {@code kill -s NAME PID}.
 */
interface Signals {

  /** The signals {@code run} catches and forwards to CMD, with their numbers (exit 128 + n). */
  Map<String, Integer> FORWARDED = Map.of("HUP", 1, "INT", 2, "TERM", 15);

  /** Calls {@code handler} with the signal's name (INT, TERM, HUP) on each one received. */
  AutoCloseable install(Consumer<String> handler);

  /** Sends {@code signal} (a name without SIG: USR1, TERM, INT, KILL) to process {@code pid}. */
  void send(long pid, String signal);

  /**
   * Called with CMD's pid between starting CMD and recording it, under the lock a signal's handler
   * takes: a signal received meanwhile waits for the recording and then reaches CMD. A seam for
   * tests, which send a signal at that very moment.
   */
  default void started(long pid) {}

  /** The real thing: {@code sun.misc.Signal} handlers, {@code kill} for sending. */
  static Signals posix() {
    return new Posix();
  }

  final class Posix implements Signals {
    @Override
    public AutoCloseable install(Consumer<String> handler) {
      List<Runnable> restore = new ArrayList<>();
      for (String name : FORWARDED.keySet()) {
        try {
          restore.add(SunSignals.handle(name, handler));
        } catch (IllegalArgumentException e) {
          // the JVM keeps this one (-Xrs, or ignored at start as nohup does): not forwarded
        }
      }
      return () -> restore.forEach(Runnable::run);
    }

    @Override
    public void send(long pid, String signal) {
      ProcessHandle target = ProcessHandle.of(pid).orElse(null);
      if (target == null || !target.isAlive()) {
        return;
      }
      if (signal.equals("KILL")) {
        target.destroyForcibly();
        return;
      }
      String pidText = Long.toString(pid);
      try {
        if (run(List.of("kill", "-s", signal, pidText))) {
          return;
        }
      } catch (IOException e) {
        // no kill(1) on the PATH: the shell's built-in below
      }
      try {
        run(List.of("sh", "-c", "kill -s " + signal + " " + pidText));
      } catch (IOException e) {
        if (signal.equals("TERM")) {
          target.destroy();
        }
      }
    }

    private static boolean run(List<String> command) throws IOException {
      Process p =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .redirectInput(ProcessBuilder.Redirect.PIPE)
              .start();
      p.getOutputStream().close();
      try {
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          return false;
        }
        return p.exitValue() == 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }
}
