package dev.gpushare.e2e;

import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.gpu.pod.NativeBuild;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The pod side as a pod runs it: {@code libgpushare.so} preloaded into real processes that call a
 * fake CUDA driver. The build is gpu-actors' {@link NativeBuild} (the library by its {@code
 * build.sh}, the fake drivers, gpu-actors' test programs such as {@code workload}); this module's
 * own programs ({@code src-test/src/test/native/*.c}) are compiled by it too, with the same flags,
 * into the same folder.
 *
 * <p>{@link #get()} skips the calling test (a JUnit assumption) only where there is no gcc; a build
 * that fails fails the test, so that a machine with gcc (CI) always runs it.
 *
 * <p>With {@code -Dgpushare.native.sanitize=true} (as gpu-actors' tests take it) the build is
 * NativeBuild's ASan flavour (AddressSanitizer and UBSan), preloaded after the ASan runtime: a
 * finding ends the process with status 86 (ASan, leaks included) or 87 (UBSan) and its report on
 * stderr.
 */
public final class PodSide {

  /** How long any awaited line, view or exit may take: generous, for two loaded cores. */
  public static final long DEADLINE_SECONDS = 60;

  private static final AtomicInteger SEQ = new AtomicInteger();
  private static PodSide built;

  private final NativeBuild build;
  private final Path sources;

  private PodSide(NativeBuild build, Path sources) {
    this.build = build;
    this.sources = sources;
  }

  /**
   * The build ({@link NativeBuild#current()}), made at the first call in this JVM. Skips the caller
   * where there is no compiler; fails it (every time) where the build failed.
   */
  public static synchronized PodSide get() {
    NativeBuild build = NativeBuild.current();
    if (built == null) {
      Path sources =
          Path.of(System.getProperty("basedir", "."), "src", "test", "native")
              .toAbsolutePath()
              .normalize();
      if (!Files.isDirectory(sources)) {
        sources = NativeBuild.module().resolveSibling("src-test").resolve("src/test/native");
      }
      built = new PodSide(build, sources);
    }
    return built;
  }

  /** libgpushare.so. */
  public Path library() {
    return build.library();
  }

  /** The folder of the fake libcuda.so.1 (for LD_LIBRARY_PATH). */
  public Path fakes() {
    return build.fakes();
  }

  /**
   * A compiled program by its source's name without {@code .c}: this module's ({@code paced}, …),
   * else gpu-actors' ({@code workload}, …).
   */
  public Path program(String name) {
    Path mine = sources.resolve(name + ".c");
    return Files.isRegularFile(mine) ? build.program(mine) : build.program(name);
  }

  /** The environment of a process with the library: LD_PRELOAD and the fake driver's folder. */
  public Map<String, String> preloaded() {
    return build.environment();
  }

  /** The same without the library: the fake driver alone (the baseline). */
  public Map<String, String> bare() {
    return Map.of("LD_LIBRARY_PATH", fakes().toString());
  }

  /** A finished command: its exit status and its output (stdout and stderr together). */
  public record Result(int status, String out) {}

  /** Runs a short command to its end (at most {@link #DEADLINE_SECONDS}). */
  public static Result run(List<String> cmd, Map<String, String> env) {
    return run(cmd, env, false);
  }

  /** As {@link #run(List, Map)}; {@code only}: {@code env} is the whole environment. */
  public static Result run(List<String> cmd, Map<String, String> env, boolean only) {
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      if (only) {
        pb.environment().clear();
      }
      pb.environment().putAll(env);
      pb.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
      Process p = pb.start();
      boolean ended = false;
      byte[] out;
      try {
        try (InputStream in = p.getInputStream()) {
          out = in.readAllBytes();
        }
        ended = p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS);
      } finally {
        if (!ended) {
          ChildProcess.killTree(p.toHandle()); // on every path: timed out, failed, interrupted
        }
      }
      if (!ended) {
        throw new IllegalStateException(String.join(" ", cmd) + " did not end");
      }
      return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(String.join(" ", cmd) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  // ---------------------------------------------------------------- processes

  /**
   * Starts {@code program} with {@code args}, its environment this JVM's plus {@code env}; its
   * standard input stays open (a pipe) until {@link Proc#closeInput()}.
   */
  public Proc start(String label, String program, List<String> args, Map<String, String> env) {
    List<String> cmd = new ArrayList<>();
    cmd.add(program(program).toString());
    cmd.addAll(args);
    return Proc.start(label, cmd, env);
  }

  /** A running process whose stdout and stderr lines are kept, each in order, to be awaited. */
  public static final class Proc implements AutoCloseable {
    private final String label;
    private final Process process;
    private final List<String> out = new ArrayList<>();
    private final List<String> err = new ArrayList<>();
    private final Path log;
    private final Writer logWriter;
    private final Thread[] pumps = new Thread[2];

    private Proc(String label, Process process, Path log, Writer logWriter) {
      this.label = label;
      this.process = process;
      this.log = log;
      this.logWriter = logWriter;
    }

    static Proc start(String label, List<String> cmd, Map<String, String> env) {
      return start(label, cmd, env, false);
    }

    /**
     * As {@link #start(String, List, Map)}; {@code only}: {@code env} is the whole environment
     * (nothing of this JVM's), as a container's process has it.
     */
    static Proc start(String label, List<String> cmd, Map<String, String> env, boolean only) {
      try {
        Path logDir = Path.of(System.getProperty("basedir", "."), "target", "e2e-logs");
        Files.createDirectories(logDir);
        Path log = logDir.resolve("podside-" + label + "-" + SEQ.incrementAndGet() + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (only) {
          pb.environment().clear();
        }
        pb.environment().putAll(env);
        Process p = pb.start();
        Writer w = Files.newBufferedWriter(log, StandardCharsets.UTF_8);
        w.write("# " + env + " " + String.join(" ", cmd) + "\n");
        w.flush();
        Proc proc = new Proc(label, p, log, w);
        proc.pumps[0] = proc.pump(p.getInputStream(), proc.out, "out");
        proc.pumps[1] = proc.pump(p.getErrorStream(), proc.err, "err");
        return proc;
      } catch (IOException e) {
        throw new UncheckedIOException("cannot start " + String.join(" ", cmd), e);
      }
    }

    private Thread pump(InputStream in, List<String> into, String what) {
      Thread t =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                  String line;
                  while ((line = r.readLine()) != null) {
                    synchronized (this) {
                      into.add(line);
                      try {
                        logWriter.write(what + "| " + line + "\n");
                        logWriter.flush();
                      } catch (IOException e) {
                        // the log is for people; the lines are kept regardless
                      }
                      notifyAll();
                    }
                  }
                } catch (IOException e) {
                  // the process went away
                }
              },
              "podside-" + label + "-" + what);
      t.setDaemon(true);
      t.start();
      return t;
    }

    public long pid() {
      return process.pid();
    }

    public boolean isAlive() {
      return process.isAlive();
    }

    /** The stdout lines so far. */
    public synchronized List<String> out() {
      return List.copyOf(out);
    }

    /** The stderr lines so far. */
    public synchronized List<String> err() {
      return List.copyOf(err);
    }

    /** Waits for a stdout line matching {@code regex} (whole line) and answers its match. */
    public Matcher awaitOut(String regex) {
      return await(out, Pattern.compile(regex), "stdout", 0);
    }

    /** Waits until {@code times} stdout lines match {@code regex}; answers the last one's match. */
    public Matcher awaitOut(String regex, int times) {
      Pattern p = Pattern.compile(regex);
      Matcher m = null;
      int from = 0;
      for (int i = 0; i < times; i++) {
        m = await(out, p, "stdout (" + (i + 1) + " of " + times + ")", from);
        synchronized (this) {
          from = indexOf(out, p, from) + 1;
        }
      }
      return m;
    }

    private static int indexOf(List<String> lines, Pattern p, int from) {
      for (int i = from; i < lines.size(); i++) {
        if (p.matcher(lines.get(i)).matches()) {
          return i;
        }
      }
      return -1;
    }

    /** Waits for a stderr line matching {@code regex} (whole line) and answers its match. */
    public Matcher awaitErr(String regex) {
      return await(err, Pattern.compile(regex), "stderr", 0);
    }

    /** The same from the {@code from}-th stderr line on. */
    public Matcher awaitErr(String regex, int from) {
      return await(err, Pattern.compile(regex), "stderr", from);
    }

    /** The first stdout line matching {@code regex}, if one came. */
    public synchronized Optional<Matcher> findOut(String regex) {
      return find(out, Pattern.compile(regex), 0);
    }

    /** The first stderr line matching {@code regex}, if one came. */
    public synchronized Optional<Matcher> findErr(String regex) {
      return find(err, Pattern.compile(regex), 0);
    }

    private static Optional<Matcher> find(List<String> lines, Pattern p, int from) {
      for (int i = from; i < lines.size(); i++) {
        Matcher m = p.matcher(lines.get(i));
        if (m.matches()) {
          return Optional.of(m);
        }
      }
      return Optional.empty();
    }

    private synchronized Matcher await(List<String> lines, Pattern p, String what, int from) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
      while (true) {
        Optional<Matcher> m = find(lines, p, from);
        if (m.isPresent()) {
          return m.get();
        }
        long left = deadline - System.nanoTime();
        boolean ended = !process.isAlive() && !pumps[0].isAlive() && !pumps[1].isAlive();
        if (left <= 0 || ended) {
          throw new AssertionError(
              label
                  + ": no "
                  + what
                  + " line matching /"
                  + p
                  + "/ "
                  + (ended
                      ? "before the process ended (" + exitText() + ")"
                      : "within the deadline")
                  + "\n"
                  + transcript());
        }
        try {
          wait(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(left), 200)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
      }
    }

    private String exitText() {
      return process.isAlive() ? "alive" : "exit " + process.exitValue();
    }

    /** Everything it printed so far, for an assertion's message. */
    public synchronized String transcript() {
      StringBuilder b = new StringBuilder("--- " + label + " (" + log + ")\n");
      b.append("--- stdout\n");
      out.forEach(l -> b.append(l).append('\n'));
      b.append("--- stderr\n");
      err.forEach(l -> b.append(l).append('\n'));
      return b.toString();
    }

    /** Writes one line to its standard input. */
    public void send(String line) {
      try {
        OutputStream o = process.getOutputStream();
        o.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        o.flush();
      } catch (IOException e) {
        throw new UncheckedIOException(label + ": cannot write to its input", e);
      }
    }

    /** Closes its standard input (end of file). */
    public void closeInput() {
      try {
        process.getOutputStream().close();
      } catch (IOException e) {
        // already closed
      }
    }

    /** Waits for its end and answers its exit status; fails the test if it does not end. */
    public int awaitExit() {
      try {
        if (!process.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
          throw new AssertionError(label + " did not exit in time\n" + transcript());
        }
        for (Thread t : pumps) {
          t.join(TimeUnit.SECONDS.toMillis(DEADLINE_SECONDS));
        }
        return process.exitValue();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }

    /** SIGTERM (the library releases the share before the default action), then SIGKILL. */
    @Override
    public void close() {
      // listed while the process lives: once it is gone its children are no longer descendants
      List<ProcessHandle> children = process.descendants().toList();
      if (process.isAlive()) {
        process.destroy();
        try {
          if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      children.forEach(ProcessHandle::destroyForcibly); // what SIGTERM left of the tree
      ChildProcess.killTree(process.toHandle());
      synchronized (this) {
        try {
          logWriter.flush();
        } catch (IOException e) {
          // nothing more to keep
        }
      }
    }
  }
}
