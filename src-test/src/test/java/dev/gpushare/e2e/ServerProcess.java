package dev.gpushare.e2e;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The server under test, launched as a child JVM ({@code dev.gpushare.http.Main}) exactly as the
 * conventions describe: {@code --port 0 --data DIR --clock manual}. Ready when it prints {@code
 * gpushare listening on http://127.0.0.1:<port>}; everything it prints goes to a log file under
 * {@code target/e2e-logs} so that the pipe never blocks.
 *
 * <p>{@link #crash()} is SIGKILL (no graceful shutdown); {@link #restart()} launches a new process
 * on the same data directory.
 */
public final class ServerProcess implements AutoCloseable {

  private static final Pattern LISTENING =
      Pattern.compile("^gpushare listening on (http://127\\.0\\.0\\.1:(\\d+))\\s*$");
  private static final long START_DEADLINE_SECONDS = 90;
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final String label;
  private final Path dataDir;
  private final List<String> extraArgs;
  private final List<String> jvmArgs;
  private final Map<String, String> environment;
  private final String clock;
  private String umask;
  private Process process;
  private URI baseUri;
  private Api api;
  private Path logFile;

  private ServerProcess(
      String label,
      Path dataDir,
      List<String> jvmArgs,
      Map<String, String> environment,
      String clock,
      List<String> extraArgs) {
    this.label = label;
    this.clock = clock;
    this.dataDir = dataDir;
    this.jvmArgs = List.copyOf(jvmArgs);
    // a copy that keeps null values (null = remove the variable from the child's environment)
    this.environment = new LinkedHashMap<>(environment);
    this.extraArgs = List.copyOf(extraArgs);
  }

  /** Starts a server with a manual clock on {@code dataDir}. */
  public static ServerProcess start(String label, Path dataDir, String... extraArgs) {
    return start(label, dataDir, List.of(), Map.of(), extraArgs);
  }

  /**
   * Starts a server with a manual clock on {@code dataDir}, with extra JVM options (such as {@code
   * -Dkubernetes.master=…}) before the main class, and changes to the environment it inherits (a
   * {@code null} value removes the variable). {@link #restart()} uses them again.
   */
  public static ServerProcess start(
      String label,
      Path dataDir,
      List<String> jvmArgs,
      Map<String, String> environment,
      String... extraArgs) {
    return startWithClock(label, dataDir, "manual", jvmArgs, environment, extraArgs);
  }

  /**
   * As {@link #start(String, Path, List, Map, String...)}, with the clock of {@code --clock} chosen
   * ({@code manual} or {@code system}) — e.g. the members of a cluster, whose manual clocks would
   * each stand still on their own.
   */
  public static ServerProcess startWithClock(
      String label,
      Path dataDir,
      String clock,
      List<String> jvmArgs,
      Map<String, String> environment,
      String... extraArgs) {
    ServerProcess s =
        new ServerProcess(label, dataDir, jvmArgs, environment, clock, List.of(extraArgs));
    s.launch();
    return s;
  }

  /**
   * Starts a server as {@link #start(String, Path, String...)} does, from a shell that first sets
   * the file mode creation mask to {@code umask} (e.g. {@code 000}); {@link #restart()} keeps it.
   */
  public static ServerProcess startWithUmask(
      String label, Path dataDir, String umask, String... extraArgs) {
    ServerProcess s =
        new ServerProcess(label, dataDir, List.of(), Map.of(), "manual", List.of(extraArgs));
    s.umask = umask;
    s.launch();
    return s;
  }

  public Api api() {
    return api;
  }

  /**
   * Waits up to {@code seconds} for the server to exit by itself and answers its exit status; empty
   * if it still runs then.
   */
  public Optional<Integer> awaitExit(long seconds) {
    if (process == null) {
      throw new IllegalStateException("the server is not running");
    }
    if (!waitForExit(process, seconds)) {
      return Optional.empty();
    }
    int status = process.exitValue();
    process = null;
    return Optional.of(status);
  }

  /** The server's admin token ({@code <data>/admin-token}, made at its first start), if there. */
  public Optional<String> adminToken() {
    java.nio.file.Path file = dataDir.resolve("admin-token");
    try {
      return java.nio.file.Files.exists(file)
          ? Optional.of(java.nio.file.Files.readString(file).strip())
          : Optional.empty();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  public URI baseUri() {
    return baseUri;
  }

  public Path dataDir() {
    return dataDir;
  }

  public Path logFile() {
    return logFile;
  }

  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** SIGKILL: the JVM gets no chance to flush or shut down. */
  public void crash() {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    waitForExit(process, 30);
    process = null;
  }

  /** Graceful stop (SIGTERM), then SIGKILL if it does not exit in time. */
  public void stop() {
    if (process == null) {
      return;
    }
    process.destroy();
    if (!waitForExit(process, 30)) {
      process.destroyForcibly();
      waitForExit(process, 30);
    }
    process = null;
  }

  /** Starts a fresh process on the same data directory (the previous one must be gone). */
  public void restart() {
    if (process != null) {
      throw new IllegalStateException("stop or crash the server before restarting it");
    }
    launch();
  }

  @Override
  public void close() {
    stop();
  }

  private static boolean waitForExit(Process p, long seconds) {
    try {
      return p.waitFor(seconds, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** The class path the child JVMs run with: the test class path. */
  static String classPath() {
    // Under surefire, java.class.path may be a manifest-only booter jar; that still works with
    // -cp, but the real class path is clearer in the logs when surefire exposes it.
    String cp = System.getProperty("surefire.test.class.path");
    if (cp == null || cp.isBlank()) {
      cp = System.getProperty("java.class.path");
    }
    return cp;
  }

  private void launch() {
    try {
      Files.createDirectories(dataDir);
      Path logDir = Path.of(System.getProperty("basedir", "."), "target", "e2e-logs");
      Files.createDirectories(logDir);
      logFile = logDir.resolve(label + "-" + SEQ.incrementAndGet() + ".log");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx384m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.addAll(jvmArgs);
    cmd.add("-cp");
    cmd.add(classPath());
    cmd.add("dev.gpushare.http.Main");
    cmd.add("--port");
    cmd.add("0");
    cmd.add("--data");
    cmd.add(dataDir.toString());
    cmd.add("--clock");
    cmd.add(clock);
    cmd.addAll(extraArgs);

    List<String> command = new ArrayList<>();
    if (umask != null) {
      command.addAll(List.of("sh", "-c", "umask " + umask + " && exec \"$@\"", "sh"));
    }
    command.addAll(cmd);
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    environment.forEach(
        (name, value) -> {
          if (value == null) {
            pb.environment().remove(name);
          } else {
            pb.environment().put(name, value);
          }
        });
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot launch the server", e);
    }
    process = p;
    CompletableFuture<String> listening = new CompletableFuture<>();
    Deque<String> tail = new ArrayDeque<>();
    Path log = logFile;
    Thread pump =
        new Thread(
            () -> {
              try (BufferedReader r =
                      new BufferedReader(
                          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                  Writer w = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
                w.write("# " + String.join(" ", cmd) + "\n");
                String line;
                while ((line = r.readLine()) != null) {
                  w.write(line);
                  w.write('\n');
                  w.flush();
                  if (!listening.isDone()) {
                    synchronized (tail) {
                      tail.addLast(line);
                      if (tail.size() > 40) {
                        tail.removeFirst();
                      }
                    }
                    Matcher m = LISTENING.matcher(line);
                    if (m.matches()) {
                      listening.complete(m.group(1));
                    }
                  }
                }
              } catch (IOException e) {
                // the process went away; the exit is reported below
              } finally {
                if (!listening.isDone()) {
                  synchronized (tail) {
                    listening.completeExceptionally(
                        new IllegalStateException(
                            "server exited before listening; last output:\n"
                                + String.join("\n", tail)));
                  }
                }
              }
            },
            "server-output-" + label);
    pump.setDaemon(true);
    pump.start();
    try {
      String url = listening.get(START_DEADLINE_SECONDS, TimeUnit.SECONDS);
      baseUri = URI.create(url);
      api = new Api(baseUri, this::adminToken);
    } catch (TimeoutException e) {
      p.destroyForcibly();
      waitForExit(p, 30);
      process = null;
      String t;
      synchronized (tail) {
        t = String.join("\n", tail);
      }
      throw new IllegalStateException(
          "server did not print its listening line within "
              + START_DEADLINE_SECONDS
              + " s; log "
              + logFile
              + "; last output:\n"
              + t);
    } catch (ExecutionException e) {
      p.destroyForcibly();
      waitForExit(p, 30);
      process = null;
      throw new IllegalStateException(e.getCause().getMessage() + "\nlog: " + logFile, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      process = null;
      throw new IllegalStateException(e);
    }
  }
}
