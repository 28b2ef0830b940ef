package dev.gpushare.gpu;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a command (a compiler, a child JVM) for the fake-driver tests, with its standard output and
 * error together: without {@code LD_LIBRARY_PATH} and {@code LD_BIND_NOW} (the JNI wrappers must
 * bind lazily), within 60 s.
 */
public final class ChildProcess {
  private ChildProcess() {}

  /** The exit status (-1: could not start, -2: timed out) and the output. */
  public record Result(int rc, String out) {}

  public static Result run(List<String> cmd, Map<String, String> env) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    pb.environment().remove("LD_LIBRARY_PATH");
    pb.environment().remove("LD_BIND_NOW");
    File log = Files.createTempFile("fake-driver", ".log").toFile();
    pb.redirectOutput(log);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      return new Result(-1, e.toString());
    }
    boolean done = false;
    try {
      done = p.waitFor(60, TimeUnit.SECONDS);
    } finally {
      if (!done) {
        killTree(p.toHandle()); // timed out, or the test was interrupted (its timeout)
      }
    }
    if (!done) {
      return new Result(-2, "timed out: " + cmd);
    }
    String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
    Files.delete(log.toPath());
    return new Result(p.exitValue(), out);
  }

  /**
   * Kills {@code root} and every process it started, and waits (10 s at most) until they are gone.
   * Children first, each caught before its parent dies (a dead parent's children are re-parented
   * and are no longer its descendants), then the root; repeated until nothing is left, so a child
   * forked meanwhile is caught too. Safe on a test thread that was interrupted (a JUnit timeout):
   * the wait goes on and the interrupt is kept. Answers the processes that still ran (none when all
   * are gone).
   */
  public static List<ProcessHandle> killTree(ProcessHandle root) {
    boolean interrupted = Thread.interrupted();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    java.util.Set<ProcessHandle> seen = new java.util.LinkedHashSet<>();
    try {
      while (true) {
        List<ProcessHandle> now = new java.util.ArrayList<>(root.descendants().toList());
        java.util.Collections.reverse(now); // the deepest last found first
        now.add(root);
        seen.addAll(now);
        now.forEach(ProcessHandle::destroyForcibly);
        List<ProcessHandle> alive = seen.stream().filter(ChildProcess::running).toList();
        if (alive.isEmpty() || System.nanoTime() > deadline) {
          return alive;
        }
        try {
          alive.get(0).onExit().get(10, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (java.util.concurrent.ExecutionException
            | java.util.concurrent.TimeoutException e) {
          // checked again above
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Alive and not a zombie (a zombie has ended; only its parent, or init, has not reaped it). */
  public static boolean running(ProcessHandle p) {
    if (!p.isAlive()) {
      return false;
    }
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(p.pid()), "stat"));
      int close = stat.lastIndexOf(')');
      return close < 0 || close + 2 >= stat.length() || stat.charAt(close + 2) != 'Z';
    } catch (IOException e) {
      return p.isAlive(); // gone meanwhile, or no /proc
    }
  }

  /** The command line of a child JVM with this one's class path that runs {@code main}. */
  public static List<String> java(List<String> properties, Class<?> main, List<String> args) {
    List<String> cmd = new java.util.ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.addAll(properties);
    cmd.add(main.getName());
    cmd.addAll(args);
    return cmd;
  }
}
