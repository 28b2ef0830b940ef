package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The pod side as a pod runs it: {@code libgpushare.so} (gpu-actors' {@code build.sh}, the one
 * place that holds its flags) preloaded into real processes that call a fake CUDA driver ({@code
 * gpu-actors/gpu-check/fake-cuda}, compiled here into {@code libcuda.so.1}). The programs are
 * gpu-actors' test workload ({@code src/test/native/workload.c}) and this module's own ({@code
 * src-test/src/test/native/*.c}), compiled with the library's compile flags into {@code
 * target/pod-side}.
 *
 * <p>{@link #get()} skips the calling test (a JUnit assumption) only where there is no gcc, or
 * where build.sh itself says it built nothing for want of a compiler; a build that fails fails the
 * test, so that a machine with gcc (CI) always runs it.
 *
 * <p>With {@code -Dgpushare.native.sanitize=true} (as gpu-actors' tests take it) the library is
 * build.sh's {@code --sanitize} build (AddressSanitizer and UBSan), preloaded after the ASan
 * runtime: a finding ends the process with status 86 (ASan, leaks included) or 87 (UBSan) and its
 * report on stderr.
 */
public final class PodSide {

  /** How long any awaited line, view or exit may take: generous, for two loaded cores. */
  public static final long DEADLINE_SECONDS = 60;

  private static final Pattern BUILD_LINE =
      Pattern.compile("^\\s*(?:/\\*+|\\*|//)?\\s*build:\\s*(.*?)\\s*(?:\\*/)?\\s*$");
  private static final AtomicInteger SEQ = new AtomicInteger();
  private static Object built;

  /** The system property that asks for the sanitized library. */
  public static final String SANITIZE_PROPERTY = "gpushare.native.sanitize";

  private final Path library;
  private final List<String> preload;
  private final Path fakes;
  private final Path bin;

  private PodSide(Path library, List<String> preload, Path fakes, Path bin) {
    this.library = library;
    this.preload = preload;
    this.fakes = fakes;
    this.bin = bin;
  }

  /** The repository root (src-test's parent). */
  public static Path root() {
    Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize();
    for (Path p = base; p != null; p = p.getParent()) {
      if (Files.exists(p.resolve("gpu-actors/src/main/native/build.sh"))) {
        return p;
      }
    }
    throw new IllegalStateException("no gpu-actors/src/main/native/build.sh above " + base);
  }

  /** Whether gcc runs here. */
  public static boolean hasCompiler() {
    try {
      return run(List.of("gcc", "--version"), Map.of()).status() == 0;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * The build, made at the first call in this JVM. Skips the caller where there is no compiler;
   * throws (every time) where the build failed.
   */
  public static synchronized PodSide get() {
    assumeTrue(hasCompiler(), "no C compiler (gcc): the pod-side library is not built here");
    if (built == null) {
      try {
        built = build();
      } catch (RuntimeException | Error e) {
        built = e;
      }
    }
    if (built instanceof SkipReason s) {
      assumeTrue(false, s.why());
    }
    if (built instanceof RuntimeException e) {
      throw new IllegalStateException("the pod-side build failed: " + e.getMessage(), e);
    }
    if (built instanceof Error e) {
      throw new IllegalStateException("the pod-side build failed: " + e.getMessage(), e);
    }
    return (PodSide) built;
  }

  private record SkipReason(String why) {}

  /** libgpushare.so. */
  public Path library() {
    return library;
  }

  /** The folder of the fake libcuda.so.1 (for LD_LIBRARY_PATH). */
  public Path fakes() {
    return fakes;
  }

  /** A compiled program by its source's name without {@code .c} ({@code workload}, …). */
  public Path program(String name) {
    Path p = bin.resolve(name);
    if (!Files.isExecutable(p)) {
      throw new IllegalArgumentException("no program " + name + " in " + bin);
    }
    return p;
  }

  /** The environment of a process with the library: LD_PRELOAD and the fake driver's folder. */
  public Map<String, String> preloaded() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("LD_PRELOAD", String.join(":", preload));
    env.put("LD_LIBRARY_PATH", fakes.toString());
    if (preload.size() > 1) {
      env.put("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86");
      env.put("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=87");
    }
    return env;
  }

  /** The same without the library: the fake driver alone (the baseline). */
  public Map<String, String> bare() {
    return Map.of("LD_LIBRARY_PATH", fakes.toString());
  }

  // ---------------------------------------------------------------- the build

  private static Object build() {
    Path root = root();
    Path script = root.resolve("gpu-actors/src/main/native/build.sh");
    boolean sanitize = Boolean.getBoolean(SANITIZE_PROPERTY);
    List<String> buildCmd = new ArrayList<>(List.of("bash", script.toString()));
    if (sanitize) {
      buildCmd.add("--sanitize");
    }
    Result lib = run(buildCmd, Map.of("CC", "gcc"));
    if (lib.status() != 0) {
      throw new IllegalStateException("build.sh failed (rc " + lib.status() + "):\n" + lib.out());
    }
    if (lib.out().contains("skipped")) {
      return new SkipReason("build.sh built no library: " + lib.out().strip());
    }
    Path library =
        root.resolve(sanitize ? "gpu-actors/target/native-asan" : "gpu-actors/target/native")
            .resolve("libgpushare.so");
    if (!Files.isRegularFile(library)) {
      throw new IllegalStateException("build.sh succeeded but made no " + library);
    }
    List<String> preload = new ArrayList<>();
    if (sanitize) {
      Result asan = run(List.of("gcc", "-print-file-name=libasan.so"), Map.of());
      Path runtime = Path.of(asan.out().strip());
      if (asan.status() != 0 || !runtime.isAbsolute() || !Files.exists(runtime)) {
        throw new IllegalStateException("gcc has no libasan.so (install libasan): " + asan.out());
      }
      preload.add(runtime.toString());
    }
    preload.add(library.toString());
    Result flags = run(List.of("bash", script.toString(), "--print-cflags"), Map.of());
    if (flags.status() != 0) {
      throw new IllegalStateException("build.sh --print-cflags failed:\n" + flags.out());
    }
    List<String> cflags = List.of(flags.out().strip().split("\\s+"));
    try {
      Path out =
          Files.createDirectories(
              Path.of(System.getProperty("basedir", "."), "target", "pod-side")
                  .toAbsolutePath()
                  .normalize());
      Path fakes = Files.createDirectories(out.resolve("lib"));
      Path bin = Files.createDirectories(out.resolve("bin"));

      Path fakeDir = root.resolve("gpu-actors/gpu-check/fake-cuda");
      List<String> cuda = new ArrayList<>();
      cuda.add(fakeDir.resolve("fake_cuda.c").toString());
      try (Stream<Path> s = Files.list(fakeDir)) {
        s.map(Path::toString)
            .filter(p -> Path.of(p).getFileName().toString().matches("fake_cuda_.+\\.c"))
            .sorted()
            .forEach(cuda::add);
      }
      List<String> fake =
          new ArrayList<>(
              List.of(
                  "gcc",
                  "-shared",
                  "-fPIC",
                  "-O1",
                  "-g",
                  "-D_GNU_SOURCE",
                  "-Wl,-soname,libcuda.so.1",
                  "-o",
                  "{out}"));
      fake.addAll(cuda);
      fake.addAll(List.of("-ldl", "-lpthread"));
      compile(fake, fakes.resolve("libcuda.so.1"));
      Path link = fakes.resolve("libcuda.so");
      if (!Files.isSymbolicLink(link)) {
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, Path.of("libcuda.so.1"));
      }

      List<Path> programs = new ArrayList<>();
      Path workload = root.resolve("gpu-actors/src/test/native/workload.c");
      if (Files.exists(workload)) {
        programs.add(workload);
      }
      Path mine = root.resolve("src-test/src/test/native");
      if (Files.isDirectory(mine)) {
        try (Stream<Path> s = Files.list(mine)) {
          s.filter(p -> p.toString().endsWith(".c")).sorted().forEach(programs::add);
        }
      }
      for (Path source : programs) {
        String name = source.getFileName().toString().replaceFirst("\\.c$", "");
        List<String> cmd = new ArrayList<>(List.of("gcc"));
        cmd.addAll(cflags);
        cmd.addAll(
            List.of("-I" + source.getParent(), "-o", "{out}", source.toString(), "-L" + fakes));
        for (String arg : buildLine(source)) {
          cmd.add(arg.replace("<dir>", fakes.toString()));
        }
        compile(cmd, bin.resolve(name));
      }
      return new PodSide(library, List.copyOf(preload), fakes, bin);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<String> buildLine(Path source) throws IOException {
    List<String> lines = Files.readAllLines(source, StandardCharsets.UTF_8);
    for (String line : lines.subList(0, Math.min(lines.size(), 40))) {
      Matcher m = BUILD_LINE.matcher(line);
      if (m.matches()) {
        String args = m.group(1).strip();
        return args.isEmpty() ? List.of() : List.of(args.split("\\s+"));
      }
    }
    return List.of("-l:libcuda.so.1", "-ldl"); // what a program of the driver API links
  }

  /** Compiles beside {@code out} and renames, so that a failed build leaves nothing half made. */
  private static void compile(List<String> cmd, Path out) throws IOException {
    Path tmp = out.resolveSibling("." + out.getFileName() + "." + ProcessHandle.current().pid());
    List<String> real = cmd.stream().map(a -> a.equals("{out}") ? tmp.toString() : a).toList();
    Result r = run(real, Map.of());
    if (r.status() != 0) {
      Files.deleteIfExists(tmp);
      throw new IllegalStateException(String.join(" ", real) + " failed:\n" + r.out());
    }
    Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }

  /** A finished command: its exit status and its output (stdout and stderr together). */
  public record Result(int status, String out) {}

  /** Runs a short command to its end (at most {@link #DEADLINE_SECONDS}). */
  public static Result run(List<String> cmd, Map<String, String> env) {
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
      pb.environment().putAll(env);
      pb.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
      Process p = pb.start();
      byte[] out;
      try (InputStream in = p.getInputStream()) {
        out = in.readAllBytes();
      }
      if (!p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
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
      try {
        Path logDir = Path.of(System.getProperty("basedir", "."), "target", "e2e-logs");
        Files.createDirectories(logDir);
        Path log = logDir.resolve("podside-" + label + "-" + SEQ.incrementAndGet() + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd);
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
