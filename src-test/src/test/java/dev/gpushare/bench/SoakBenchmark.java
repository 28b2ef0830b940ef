package dev.gpushare.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.e2e.Api;
import dev.gpushare.e2e.Manifests;
import dev.gpushare.e2e.ServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * The embedded journal's soak (issue 13, BENCHMARKS §6): the launcher as a process on an H2 data
 * directory, driven at a fixed rate of decisions (each a demand that is granted at once or a
 * release: one arbiter event each), and every minute killed with SIGKILL <em>while the load
 * runs</em> and restarted on the same directory. Per minute it records the journal file's size, the
 * floor beside it (the same file compacted: a copy opened and closed with {@code SHUTDOWN COMPACT},
 * what the live data need), the restart time (launch to {@code /readyz} 200) beside the floor of a
 * fresh start measured in the same run, and whether every acknowledged decision survived (each
 * pod's state is compared with the last answer it got before the kill; pods with a request in
 * flight at the kill may be either way).
 *
 * <pre>
 *   java -cp src-test/target/test-classes:$(cat src-test/target/bench.classpath) \
 *     dev.gpushare.bench.SoakBenchmark --minutes 30 --rate 100
 * </pre>
 */
public final class SoakBenchmark {

  private static final String NODE = "soak";
  private static final int GPUS = 8;

  private final int rate;
  private final int minutes;
  private final int pods;
  private final int interval;
  private final Path dir;
  private final Map<String, String> acked = new ConcurrentHashMap<>();
  private final Map<String, Boolean> inFlight = new ConcurrentHashMap<>();
  private final AtomicLong decisions = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private volatile Api api;
  private volatile boolean paused;

  private SoakBenchmark(int rate, int minutes, int interval, int pods, Path dir) {
    this.rate = rate;
    this.minutes = minutes;
    this.interval = interval;
    this.pods = pods;
    this.dir = dir;
  }

  public static void main(String[] args) throws Exception {
    int rate = 100;
    int minutes = 30;
    int interval = 60;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--rate" -> rate = Integer.parseInt(args[++i]);
        case "--minutes" -> minutes = Integer.parseInt(args[++i]);
        case "--interval-seconds" -> interval = Integer.parseInt(args[++i]);
        default ->
            throw new IllegalArgumentException(
                "unknown option "
                    + args[i]
                    + "; accepted: --rate N (decisions/s), --minutes N (kills),"
                    + " --interval-seconds N (between kills, 60)");
      }
    }
    Path dir = Files.createTempDirectory("gpushare-soak");
    try {
      new SoakBenchmark(rate, minutes, interval, 2 * GPUS, dir).run();
    } finally {
      deleteTree(dir);
    }
  }

  private void run() throws Exception {
    // The floor of a restart: a fresh start on an empty directory, in this run.
    Path fresh = dir.resolve("fresh");
    long t0 = System.nanoTime();
    ServerProcess probe = ServerProcess.start("soak-fresh", fresh);
    awaitReady(probe);
    double freshSeconds = (System.nanoTime() - t0) / 1e9;
    probe.stop();

    Path data = dir.resolve("data");
    ServerProcess server = ServerProcess.start("soak", data);
    awaitReady(server);
    api = server.api();
    api.putNode(NODE, GPUS, "share-pool", null);
    for (int i = 0; i < pods; i++) {
      String name = "p" + i;
      // half a GPU each: every demand fits, so each is granted at once and no pod changes
      // without an answer of its own
      api.createPod(Manifests.sharePod(name, NODE, 50, 50));
      acked.put(name, "Hibernation");
    }

    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
    ExecutorService workers = Executors.newFixedThreadPool(8);
    AtomicInteger next = new AtomicInteger();
    ticker.scheduleAtFixedRate(
        () -> {
          if (paused) {
            return;
          }
          String pod = "p" + Math.floorMod(next.getAndIncrement(), pods);
          if (inFlight.putIfAbsent(pod, Boolean.TRUE) != null) {
            return;
          }
          workers.execute(() -> step(pod));
        },
        0,
        1_000_000 / rate,
        TimeUnit.MICROSECONDS);

    List<String> rows = new ArrayList<>();
    long lost = 0;
    for (int minute = 1; minute <= minutes; minute++) {
      Thread.sleep(interval * 1000L);
      Path file = data.resolve("journal.mv.db");
      long running = Files.size(file);
      // SIGKILL while the load runs: what was answered before must survive.
      Map<String, String> before = Map.copyOf(acked);
      java.util.Set<String> busy = java.util.Set.copyOf(inFlight.keySet());
      server.crash();
      paused = true;
      long killed = Files.size(file);
      long floor = compacted(file);
      long start = System.nanoTime();
      server.restart();
      awaitReady(server);
      double restart = (System.nanoTime() - start) / 1e9;
      api = server.api();
      // let the requests the kill cut off finish failing, then compare
      awaitIdle();
      long lostNow = 0;
      for (JsonNode p : api.pods(NODE)) {
        String name = p.path("name").asText();
        String state = p.path("state").asText();
        if (!busy.contains(name) && !state.equals(before.get(name))) {
          lostNow++;
          System.out.println("LOST: " + name + " answered " + before.get(name) + ", now " + state);
        }
        acked.put(name, state);
      }
      lost += lostNow;
      paused = false;
      String row =
          String.format(
              Locale.ROOT,
              "| %d | %,d | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f | %d |",
              minute,
              decisions.get(),
              running / 1e6,
              killed / 1e6,
              floor / 1e6,
              killed / (double) floor,
              restart,
              freshSeconds,
              lostNow);
      rows.add(row);
      System.out.println(row);
    }
    ticker.shutdownNow();
    workers.shutdownNow();
    server.stop();
    System.out.println();
    System.out.printf(
        Locale.ROOT,
        "soak: %d min at %d decisions/s, %,d decisions acknowledged, %,d requests cut off by the"
            + " kills, %d acknowledged decisions lost%n%n",
        minutes,
        rate,
        decisions.get(),
        failed.get(),
        lost);
    System.out.println(
        "| minute | decisions | file while running (MB) | file after SIGKILL (MB) | floor:"
            + " compacted (MB) | file / floor | restart (s) | floor: fresh start (s) | lost |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    rows.forEach(System.out::println);
  }

  private void step(String pod) {
    try {
      boolean running = "Running".equals(acked.get(pod));
      JsonNode answer = running ? api.release(pod) : api.demand(pod);
      acked.put(pod, answer.path("state").asText());
      decisions.incrementAndGet();
    } catch (RuntimeException | AssertionError e) {
      failed.incrementAndGet();
    } finally {
      inFlight.remove(pod);
    }
  }

  private void awaitIdle() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!inFlight.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
  }

  private static void awaitReady(ServerProcess s) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      try {
        if (s.api().get("/readyz").status() == 200) {
          return;
        }
      } catch (RuntimeException e) {
        // not listening yet
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("not ready within 120 s: " + s.logFile());
  }

  /** The size {@code file} takes compacted: a copy opened and closed with SHUTDOWN COMPACT. */
  private long compacted(Path file) throws Exception {
    Path copy = Files.createTempDirectory(dir, "compact");
    Files.copy(file, copy.resolve("journal.mv.db"));
    try (Connection c =
        DriverManager.getConnection("jdbc:h2:file:" + copy.resolve("journal"), "sa", "")) {
      c.createStatement().execute("SHUTDOWN COMPACT");
    }
    long size = Files.size(copy.resolve("journal.mv.db"));
    deleteTree(copy);
    return size;
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
