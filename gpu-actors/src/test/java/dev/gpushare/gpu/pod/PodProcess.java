package dev.gpushare.gpu.pod;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.pod.DataPlaneStub.StubPod;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One of a pod's processes: a test program ({@code src/test/native}) with libgpushare.so preloaded
 * and the fake drivers on its library path ({@link NativeBuild#environment()}), in an environment
 * cleared of whatever this JVM had of {@code LD_*}, {@code GPUSHARE_*}, {@code POD_*}, {@code
 * FAKE_*} and the sanitizers' options. Its standard output and error are collected line by line as
 * they come (and echoed to this JVM's output, prefixed), so that a test awaits a line with a bound
 * instead of sleeping.
 *
 * <pre>{@code
 * try (PodProcess p = PodProcess.builder("workload").pod(a).waitInterval("1s").start()) {
 *   Matcher m = p.awaitStderr(Pattern.compile("waiting for (\\d+) s"), Duration.ofSeconds(10));
 *   a.running(1);
 *   p.awaitStdout("ok", Duration.ofSeconds(10));
 *   assertEquals(0, p.awaitExit(Duration.ofSeconds(10)));
 * }
 * }</pre>
 *
 * <p>{@code awaitStdout}/{@code awaitStderr} look at the lines after the previous match on that
 * stream (so two awaits of the same pattern find two lines); {@link #stdout()} and {@link
 * #stderr()} give all of them. {@link #close()} kills what is still running (the process and its
 * descendants) and fails the test when a sanitizer reported anything.
 */
public final class PodProcess implements AutoCloseable {
  /** The lines of a sanitizer's report (ASan, LSan, UBSan). */
  static final Pattern SANITIZER_REPORT =
      Pattern.compile(
          "ERROR: (AddressSanitizer|LeakSanitizer)|: runtime error: |Sanitizer:DEADLYSIGNAL");

  private static final List<String> CLEARED_PREFIXES =
      List.of("LD_", "GPUSHARE_", "POD_", "FAKE_", "ASAN_", "UBSAN_", "LSAN_", "CUDA_");

  /** The prefix that makes a program PID 1 of a PID namespace of its own (see {@link #pid1}). */
  private static final List<String> PID1 =
      List.of("unshare", "--pid", "--fork", "--user", "--map-root-user", "--kill-child");

  private static volatile String pid1Problem;

  private final String name;
  private final Process process;
  private final boolean pid1;
  private final OutputStream stdin;
  private final List<String> out = new ArrayList<>();
  private final List<String> err = new ArrayList<>();
  private final List<String> all = new ArrayList<>();
  private final Thread outReader;
  private final Thread errReader;
  private int outCursor;
  private int errCursor;
  private int open = 2;

  private PodProcess(String name, Process process, boolean pid1) {
    this.name = name;
    this.process = process;
    this.pid1 = pid1;
    this.stdin = process.getOutputStream();
    this.outReader = reader(process.getInputStream(), out, "out");
    this.errReader = reader(process.getErrorStream(), err, "err");
  }

  /** A builder for that test program of {@link NativeBuild#current()}. */
  public static Builder builder(String program) {
    return new Builder(program);
  }

  /** Sets up and starts a process. */
  public static final class Builder {
    private final String program;
    private NativeBuild build;
    private final List<String> args = new ArrayList<>();
    private final Map<String, String> env = new LinkedHashMap<>();
    private boolean library = true;
    private boolean pid1;
    private Path path;

    private Builder(String program) {
      this.program = program;
    }

    /** Which build (default: {@link NativeBuild#current()}). */
    public Builder build(NativeBuild build) {
      this.build = build;
      return this;
    }

    public Builder args(String... args) {
      this.args.addAll(Arrays.asList(args));
      return this;
    }

    /** One variable; null removes it (also one that {@link #pod} set). */
    public Builder env(String name, String value) {
      env.put(name, value);
      return this;
    }

    public Builder env(Map<String, String> vars) {
      env.putAll(vars);
      return this;
    }

    /**
     * In that stub pod: GPUSHARE_SERVER (the stub's URL), GPUSHARE_POD, GPUSHARE_STATE_DIR (the
     * pod's own folder) and, when the stub requires a token, GPUSHARE_TOKEN_FILE.
     */
    public Builder pod(StubPod pod) {
      env.put("GPUSHARE_SERVER", pod.stub().url());
      env.put("GPUSHARE_POD", pod.namespace() + "/" + pod.name());
      env.put("GPUSHARE_STATE_DIR", pod.stateDir().toString());
      if (pod.stub().tokenFile() != null) {
        env.put("GPUSHARE_TOKEN_FILE", pod.stub().tokenFile().toString());
      }
      return this;
    }

    /** GPUSHARE_WAIT_INTERVAL, e.g. "1s" (the library's default: 10 s). */
    public Builder waitInterval(String interval) {
      return env("GPUSHARE_WAIT_INTERVAL", interval);
    }

    /** GPUSHARE_DEBUG=1: the library's trace lines on stderr. */
    public Builder debug() {
      return env("GPUSHARE_DEBUG", "1");
    }

    /** Another program than the build's (one a test compiled itself). */
    public Builder program(Path executable) {
      this.path = executable;
      return this;
    }

    /** Without LD_PRELOAD: the program on the fake drivers alone. */
    public Builder withoutLibrary() {
      library = false;
      return this;
    }

    /**
     * As PID 1 of a PID namespace of its own, as a container's command is: {@code unshare --pid
     * --fork --user --map-root-user --kill-child}, then {@code env} sets LD_PRELOAD for the program
     * only (unshare and env run without the library). {@link #pid()} is unshare's; {@link #signal}
     * goes to the program itself, from outside its namespace as the kubelet's does; the program
     * ends when unshare is killed. Check {@link #pid1Problem()} first.
     */
    public Builder pid1() {
      this.pid1 = true;
      return this;
    }

    public PodProcess start() {
      NativeBuild b = build == null ? NativeBuild.current() : build;
      List<String> cmd = new ArrayList<>();
      if (pid1) {
        cmd.addAll(PID1);
        cmd.add("env");
      }
      int programAt = cmd.size();
      cmd.add(path != null ? path.toString() : b.program(program).toString());
      cmd.addAll(args);
      ProcessBuilder pb = new ProcessBuilder(cmd);
      Map<String, String> e = pb.environment();
      e.keySet().removeIf(k -> CLEARED_PREFIXES.stream().anyMatch(k::startsWith));
      e.putAll(b.environment());
      if (!library) {
        e.remove("LD_PRELOAD");
      }
      env.forEach(
          (k, v) -> {
            if (v == null) {
              e.remove(k);
            } else {
              e.put(k, v);
            }
          });
      if (pid1 && e.containsKey("LD_PRELOAD")) {
        cmd.add(programAt, "LD_PRELOAD=" + e.remove("LD_PRELOAD"));
      }
      try {
        return new PodProcess(program, pb.start(), pid1);
      } catch (IOException ex) {
        throw new UncheckedIOException("cannot start " + cmd, ex);
      }
    }
  }

  public long pid() {
    return process.pid();
  }

  /**
   * Why {@link Builder#pid1} cannot be used here (no unshare, or no user and PID namespaces for
   * this user), or null when it can: checked once, by running {@code true} as PID 1.
   */
  public static String pid1Problem() {
    String p = pid1Problem;
    if (p == null) {
      try {
        List<String> cmd = new ArrayList<>(PID1);
        cmd.addAll(List.of("sh", "-c", "test $$ = 1"));
        Process t = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String said = new String(t.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!t.waitFor(10, TimeUnit.SECONDS)) {
          t.destroyForcibly();
          p = String.join(" ", PID1) + " did not end in 10 s";
        } else {
          p = t.exitValue() == 0 ? "" : String.join(" ", PID1) + " failed: " + said.strip();
        }
      } catch (IOException e) {
        p = "cannot run unshare: " + e.getMessage();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return "interrupted";
      }
      pid1Problem = p;
    }
    return p.isEmpty() ? null : p;
  }

  /** The process a signal is for: the program (PID 1 in its namespace), else the process. */
  private long target() {
    if (!pid1) {
      return pid();
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < end) {
      // unshare's child: env, which is the program once it has exec'd
      java.util.Optional<ProcessHandle> child = process.children().findFirst();
      if (child.isPresent()
          && child.get().info().command().map(c -> !c.endsWith("/env")).orElse(false)) {
        return child.get().pid();
      }
      if (!process.isAlive()) {
        break;
      }
      Thread.onSpinWait();
    }
    throw new AssertionError("no program under " + this + "\n" + transcript());
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** Writes a line to the program's standard input. */
  public PodProcess send(String line) {
    try {
      stdin.write((line + "\n").getBytes(StandardCharsets.UTF_8));
      stdin.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write to " + this + "\n" + transcript(), e);
    }
    return this;
  }

  /** Closes the program's standard input (it reads end of file). */
  public PodProcess closeStdin() {
    try {
      stdin.close();
    } catch (IOException ignored) {
      // already gone
    }
    return this;
  }

  /** Sends a signal by name ("TERM", "INT", "USR1", "KILL", …) to the process itself. */
  public PodProcess signal(String signal) {
    try {
      Process kill =
          new ProcessBuilder("kill", "-s", signal, Long.toString(target()))
              .redirectErrorStream(true)
              .start();
      String said = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new AssertionError("kill -s " + signal + " " + target() + " failed: " + said);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    return this;
  }

  /**
   * The exit status, once the process has exited and its output is read, within {@code timeout}
   * (128 + the signal's number when a signal ended it).
   */
  public int awaitExit(Duration timeout) {
    long end = System.nanoTime() + timeout.toNanos();
    try {
      if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        throw new AssertionError(this + " still runs after " + timeout + "\n" + transcript());
      }
      for (Thread t : List.of(outReader, errReader)) {
        t.join(Math.max(1, (end - System.nanoTime()) / 1_000_000));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    return process.exitValue();
  }

  /** The next line on stdout (after the previous match) in which {@code p} is found. */
  public Matcher awaitStdout(Pattern p, Duration timeout) {
    return await(true, p, timeout);
  }

  public Matcher awaitStderr(Pattern p, Duration timeout) {
    return await(false, p, timeout);
  }

  /** The next line on stdout that contains {@code text}. */
  public String awaitStdout(String text, Duration timeout) {
    return await(true, Pattern.compile(Pattern.quote(text)), timeout).group();
  }

  public String awaitStderr(String text, Duration timeout) {
    return await(false, Pattern.compile(Pattern.quote(text)), timeout).group();
  }

  /** Every line so far on stdout. */
  public synchronized List<String> stdout() {
    return List.copyOf(out);
  }

  public synchronized List<String> stderr() {
    return List.copyOf(err);
  }

  /** How many lines so far on stderr contain {@code p}. */
  public synchronized long countStderr(Pattern p) {
    return err.stream().filter(l -> p.matcher(l).find()).count();
  }

  /** Both streams so far, in the order read, each line marked {@code out|} or {@code err|}. */
  public synchronized String transcript() {
    return String.join("\n", all);
  }

  /** The sanitizers' lines on stderr so far (none: clean, or not sanitized). */
  public synchronized List<String> sanitizerReports() {
    return err.stream().filter(l -> SANITIZER_REPORT.matcher(l).find()).toList();
  }

  /** Kills the process (and its descendants) if still running; fails on a sanitizer report. */
  @Override
  public void close() {
    // the whole tree, children first, waited for even when the test thread was interrupted (its
    // JUnit timeout): nothing this test started outlives it
    List<ProcessHandle> left = ChildProcess.killTree(process.toHandle());
    closeStdin();
    boolean interrupted = Thread.interrupted();
    try {
      outReader.join(5000);
      errReader.join(5000);
    } catch (InterruptedException e) {
      interrupted = true;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    if (!left.isEmpty()) {
      throw new AssertionError(this + ": still running after SIGKILL: " + left);
    }
    if (!sanitizerReports().isEmpty()) {
      throw new AssertionError("a sanitizer reported in " + this + ":\n" + transcript());
    }
  }

  @Override
  public String toString() {
    return name + "[" + pid() + "]";
  }

  private Matcher await(boolean stdout, Pattern p, Duration timeout) {
    long end = System.nanoTime() + timeout.toNanos();
    synchronized (this) {
      List<String> lines = stdout ? out : err;
      while (true) {
        int from = stdout ? outCursor : errCursor;
        for (int i = from; i < lines.size(); i++) {
          Matcher m = p.matcher(lines.get(i));
          if (m.find()) {
            if (stdout) {
              outCursor = i + 1;
            } else {
              errCursor = i + 1;
            }
            return m;
          }
        }
        String which = stdout ? "stdout" : "stderr";
        if (open == 0) {
          throw new AssertionError(
              this
                  + " ended ("
                  + exitText()
                  + ") with no line on "
                  + which
                  + " matching "
                  + p
                  + "\n"
                  + transcript());
        }
        long left = end - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError(
              "no line on "
                  + which
                  + " of "
                  + this
                  + " matching "
                  + p
                  + " within "
                  + timeout
                  + "\n"
                  + transcript());
        }
        try {
          wait(Math.max(1, Math.min(left / 1_000_000, 1000)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new AssertionError(e);
        }
      }
    }
  }

  private String exitText() {
    return process.isAlive() ? "streams closed" : "exit status " + process.exitValue();
  }

  private Thread reader(InputStream in, List<String> lines, String tag) {
    Thread t =
        new Thread(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                  System.out.println("[" + this + " " + tag + "] " + line);
                  synchronized (this) {
                    lines.add(line);
                    all.add(tag + "| " + line);
                    notifyAll();
                  }
                }
              } catch (IOException e) {
                // the process is gone
              } finally {
                synchronized (this) {
                  open--;
                  notifyAll();
                }
              }
            },
            name + "-" + tag);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
