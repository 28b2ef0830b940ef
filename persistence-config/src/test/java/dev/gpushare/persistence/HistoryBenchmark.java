package dev.gpushare.persistence;

import dev.gpushare.arbiter.JsonSerializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.AskPattern;

/**
 * The history benchmark of {@code src-test/BENCHMARKS.md} ("A pod's history"), a plain {@code main}
 * (not a test: {@code mvn verify} never runs it). On the embedded H2 journal it writes {@code
 * --pods} pods' decisions ({@code --events} each, default 1,000 × 100 = 100,000 events) spread over
 * {@code --nodes} arbiters (default 16), each event tagged as the product tags it ({@link
 * Journaled}, {@code HistoryTags}), and a floor entity with {@code --limit} events. Then, for
 * {@code --rounds} rounds (default 200), alternating:
 *
 * <ul>
 *   <li><b>history</b>: {@link JournalInspector#history} of a random pod, its first page of {@code
 *       --limit} (default 100) entries — what {@code GET …/history} reads;
 *   <li><b>floor</b>: {@link JournalInspector#events} of the floor entity, the same number of
 *       events read by persistence id (the primary key) through the same read journal and
 *       rendering: the raw journal read of one page.
 * </ul>
 *
 * Then it drops the tag index ({@link SchemaSetup#TAG_INDEX}) and times the history again: what the
 * index saves. Output: medians and 90th percentiles in milliseconds. Everything lives in a
 * temporary directory that is deleted at the end.
 */
public final class HistoryBenchmark {

  private HistoryBenchmark() {}

  public static void main(String[] args) throws Exception {
    int pods = 1_000;
    int events = 100;
    int nodes = 16;
    int rounds = 200;
    int limit = 100;
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + ": give a value");
      }
      int value = Integer.parseInt(args[i + 1]);
      switch (args[i]) {
        case "--pods" -> pods = value;
        case "--events" -> events = value;
        case "--nodes" -> nodes = value;
        case "--rounds" -> rounds = value;
        case "--limit" -> limit = value;
        default ->
            throw new IllegalArgumentException(
                args[i] + ": give --pods, --events, --nodes, --rounds or --limit");
      }
    }
    Path dir = Files.createTempDirectory("gpushare-history-bench");
    ActorTestKit kit = JournalTestKits.embedded("history-bench", dir.resolve("data"));
    try {
      SchemaSetup.create(kit.system()).toCompletableFuture().get(1, TimeUnit.MINUTES);
      long fillStart = System.nanoTime();
      fill(kit, pods, events, nodes, limit);
      System.out.printf(
          Locale.ROOT,
          "filled %,d events (%d pods × %d, %d arbiters) in %.1f s%n",
          (long) pods * events + limit,
          pods,
          events,
          nodes,
          (System.nanoTime() - fillStart) / 1e9);
      JournalInspector inspector = JdbcJournalInspector.create(kit.system());
      Random random = new Random(27);
      int p = pods;
      int l = limit;
      // warm-up: the read journal's pool, the JIT
      measure(inspector, random, p, l, 20, true);
      double[][] indexed = measure(inspector, random, p, l, rounds, true);
      try (Connection connection = JournalTestKits.connection(kit.system());
          Statement ddl = connection.createStatement()) {
        ddl.execute("DROP INDEX \"" + SchemaSetup.TAG_INDEX + "\"");
      }
      measure(inspector, random, p, l, 5, false);
      double[][] scanned = measure(inspector, random, p, l, Math.max(20, rounds / 4), false);
      System.out.println();
      System.out.println("| read (page of " + limit + ") | median ms | p90 ms |");
      System.out.println("|---|---|---|");
      row("floor: events of one persistence id", indexed[1]);
      row("history of a random pod, with the tag index", indexed[0]);
      row("history of a random pod, without the tag index", scanned[0]);
      row("floor (same run, without the index)", scanned[1]);
    } finally {
      kit.shutdownTestKit();
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  /** Rounds alternating a random pod's history and the floor; [0] history ms, [1] floor ms. */
  private static double[][] measure(
      JournalInspector inspector, Random random, int pods, int limit, int rounds, boolean print)
      throws Exception {
    double[] history = new double[rounds];
    double[] floor = new double[rounds];
    for (int r = 0; r < rounds; r++) {
      String pod = "pod-" + random.nextInt(pods);
      long t0 = System.nanoTime();
      int got =
          inspector
              .history("default", pod, 0, limit)
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES)
              .items()
              .size();
      long t1 = System.nanoTime();
      int floorGot =
          inspector
              .events("Floor|x", 1, limit)
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES)
              .size();
      long t2 = System.nanoTime();
      if (got != limit || floorGot != limit) {
        throw new IllegalStateException(
            "a page of " + limit + " expected: history " + got + ", floor " + floorGot);
      }
      history[r] = (t1 - t0) / 1e6;
      floor[r] = (t2 - t1) / 1e6;
    }
    return new double[][] {history, floor};
  }

  private static void row(String what, double[] ms) {
    double[] sorted = ms.clone();
    Arrays.sort(sorted);
    System.out.printf(
        Locale.ROOT,
        "| %s | %.2f | %.2f |%n",
        what,
        sorted[sorted.length / 2],
        sorted[(int) Math.min(sorted.length - 1, Math.floor(sorted.length * 0.9))]);
  }

  /**
   * Each arbiter persists its pods' decisions one at a time (as the arbiter does), the arbiters in
   * parallel; pod {@code p} is on arbiter {@code p % nodes}, and the decisions of a node's pods
   * interleave.
   */
  private static void fill(ActorTestKit kit, int pods, int events, int nodes, int limit)
      throws Exception {
    List<CompletableFuture<Void>> writers = new ArrayList<>();
    for (int n = 0; n < nodes; n++) {
      ActorRef<Journaled.Append> arbiter =
          kit.spawn(Journaled.create("NodeArbiter|node-" + n, null));
      List<String> mine = new ArrayList<>();
      for (int p = n; p < pods; p += nodes) {
        mine.add("default/pod-" + p + "/uid-" + p);
      }
      CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
      for (int e = 0; e < events; e++) {
        for (String pod : mine) {
          int number = e;
          chain =
              chain.thenCompose(
                  done ->
                      append(
                              kit,
                              arbiter,
                              new Journaled.Decision("decision " + number, List.of(pod)))
                          .thenApply(d -> null));
        }
      }
      writers.add(chain);
    }
    ActorRef<Journaled.Append> floor = kit.spawn(Journaled.create("Floor|x", null));
    for (int e = 0; e < limit; e++) {
      append(kit, floor, new Journaled.Note("floor " + e)).get(1, TimeUnit.MINUTES);
    }
    CompletableFuture.allOf(writers.toArray(CompletableFuture[]::new)).get(30, TimeUnit.MINUTES);
  }

  private static CompletableFuture<Done> append(
      ActorTestKit kit, ActorRef<Journaled.Append> to, JsonSerializable event) {
    return AskPattern.<Journaled.Append, Done>ask(
            to, reply -> new Journaled.Append(event, reply), Duration.ofMinutes(1), kit.scheduler())
        .toCompletableFuture();
  }
}
