package dev.gpushare.arbiter.bench;

import dev.gpushare.arbiter.GpuLoad;
import dev.gpushare.arbiter.Placement;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * How fast the pure policy decides (src-test/BENCHMARKS.md, "Arbiter policy"): one decision is
 * {@link ShareBook#next(Instant)} followed by {@link ShareBook#apply}, on one node with {@code
 * gpus} GPUs and {@code queued} pods in the ready queue. Every benchmark starts from the same
 * immutable book, so each invocation is the same decision.
 *
 * <ul>
 *   <li>{@code grant}: the GPUs are about 60 % used by running pods, the queue head fits (best fit
 *       over the 16 GPUs), the decision is a grant.
 *   <li>{@code preempt}: preemption on, every GPU full of running pods that are all candidates
 *       (they have run 3 h, the limit is 2 h), the head (limit 100 %) fits nowhere: {@code next}
 *       searches every GPU for the smallest set of victims and the decision is a preemption.
 *   <li>{@code round}: a whole round as the arbiter takes it after a change ({@link
 *       ShareBook#settle}): the GPUs are empty and the queue is granted in order until its head
 *       fits nowhere. The number of grants per round is printed at setup ("decisions per round").
 *   <li>{@code grantLeastFragmenting}: the {@code grant} decision with {@link
 *       Placement#leastFragmenting} (fragmentation-aware, issue 7) in place of best fit; {@code
 *       placeBestFit} and {@code placeLeastFragmenting}: the placement step alone. The arbiter
 *       itself uses best fit only (SPEC §5); these compare the cost of the two choices.
 * </ul>
 *
 * <p>Limits are mixed as in the Alibaba GPU trace v2023 ({@link #TRACE_WEIGHTS}: 10 % to 100 % in
 * steps of 10, seeded), requests 10 %. The baseline in the same run is {@code queued = 10}.
 *
 * <p>Run with {@code main} (prints JMH's own report, then a Markdown table); JMH options given on
 * the command line are passed on (e.g. {@code -p queued=1000 -f 1 -wi 2 -i 3}).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class ShareBookBenchmark {

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  /** When decisions are taken: three hours after every running pod started. */
  static final Instant NOW = T0.plus(Duration.ofHours(3));

  @Param({"16"})
  public int gpus;

  @Param({"10", "1000", "100000"})
  public int queued;

  private ShareBook grantBook;
  private ShareBook preemptBook;
  private ShareBook roundBook;
  private List<GpuLoad> grantLoads;
  private String grantHead;
  private Share grantHeadLimits;

  @Setup
  public void setUp() {
    grantBook = grantBook(gpus, queued);
    preemptBook = preemptBook(gpus, queued);
    roundBook = roundBook(gpus, queued);
    grantLoads = grantBook.loads();
    grantHead = grantBook.queue().head().orElseThrow().pod();
    grantHeadLimits = grantBook.members().get(grantHead).shared().limits();
    int decisions = (int) (roundBook.settle(NOW).decisions() - roundBook.decisions());
    System.out.printf(
        Locale.ROOT,
        "%n# setup: %d GPUs, %d queued: grant book %d members, %d running; preempt book %d"
            + " running; round book: %d decisions per round%n",
        gpus,
        queued,
        grantBook.members().size(),
        grantBook.holdings().size(),
        preemptBook.holdings().size(),
        decisions);
  }

  @Benchmark
  public ShareBook grant() {
    ShareBook.Decision d = grantBook.next(NOW).orElseThrow();
    return grantBook.apply(d, NOW);
  }

  /**
   * The same grant with the fragmentation-aware choice ({@link Placement#leastFragmenting}) in
   * place of the arbiter's best fit: the loads, the choice against the node's own mix, the apply.
   */
  @Benchmark
  public ShareBook grantLeastFragmenting() {
    List<GpuLoad> loads = grantBook.loads();
    int gpu = Placement.leastFragmenting(loads, grantHeadLimits).getAsInt();
    return grantBook.apply(new ShareBook.Grant(grantHead, gpu), NOW);
  }

  /** Placement alone, the arbiter's rule: best fit over the 16 GPUs of the grant book. */
  @Benchmark
  public OptionalInt placeBestFit() {
    return Placement.bestFit(grantLoads, grantHeadLimits);
  }

  /** Placement alone, the fragmentation-aware choice, same GPUs and share. */
  @Benchmark
  public OptionalInt placeLeastFragmenting() {
    return Placement.leastFragmenting(grantLoads, grantHeadLimits);
  }

  @Benchmark
  public ShareBook preempt() {
    ShareBook.Decision d = preemptBook.next(NOW).orElseThrow();
    return preemptBook.apply(d, NOW);
  }

  @Benchmark
  public ShareBook round() {
    return roundBook.settle(NOW);
  }

  // ---- books ----

  /** GPUs about 60 % used by running pods; {@code queued} pods waiting, the head fits. */
  static ShareBook grantBook(int gpus, int queued) {
    Random random = new Random(42);
    ShareBook book = node(gpus, QosConfig.DEFAULT);
    int n = 0;
    // Running pods until the GPUs hold 60 % of their capacity (best fit packs them).
    while (used(book) < 60 * gpus) {
      String pod = "run-" + n++;
      book = pool(book, pod, limit(random));
      ShareBook granted = book.enqueue(id(pod), T0).settle(T0);
      if (granted.holdings().size() == book.holdings().size()) {
        book = granted.withdraw(id(pod));
        break;
      }
      book = granted;
    }
    return queue(book, queued, random, 10);
  }

  /** Preemption on; every GPU full of long-running pods; the head (100 %) fits nowhere. */
  static ShareBook preemptBook(int gpus, int queued) {
    Random random = new Random(43);
    ShareBook book = node(gpus, new QosConfig(true, 120, "0"));
    int n = 0;
    // Fill until every GPU is full: a pod that fits nowhere ends the filling.
    while (true) {
      String pod = "run-" + n++;
      book = pool(book, pod, limit(random));
      ShareBook granted = book.enqueue(id(pod), T0).settle(T0);
      if (granted.holdings().size() == book.holdings().size()) {
        // Try the small ones to top up, then stop.
        book = granted.withdraw(id(pod));
        for (int small = 10; small <= 30; small += 10) {
          for (int k = 0; k < 2 * gpus; k++) {
            String filler = "fill-" + small + "-" + k;
            ShareBook with = pool(book, filler, small);
            ShareBook g = with.enqueue(id(filler), T0).settle(T0);
            if (g.holdings().size() == with.holdings().size()) {
              book = g.withdraw(id(filler));
              break;
            }
            book = g;
          }
        }
        break;
      }
      book = granted;
    }
    return queue(book, queued, random, 100);
  }

  /** Empty GPUs, {@code queued} pods waiting: a round grants until the head fits nowhere. */
  static ShareBook roundBook(int gpus, int queued) {
    Random random = new Random(44);
    return queue(node(gpus, QosConfig.DEFAULT), queued, random, limit(random));
  }

  /** Adds {@code count} share-pool pods and enqueues them; the first has limit {@code head}. */
  static ShareBook queue(ShareBook book, int count, Random random, int head) {
    for (int i = 0; i < count; i++) {
      String pod = "q-" + i;
      book = pool(book, pod, i == 0 ? head : limit(random));
      book = book.enqueue(id(pod), T0.plusMillis(i));
    }
    return book;
  }

  static ShareBook node(int gpus, QosConfig qos) {
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (int i = 0; i < gpus; i++) {
      slots.add(new ShareBook.GpuSlot(i, "GPU-" + i, true));
    }
    return ShareBook.empty("bench").withGpus(slots).withPolicy(SharePolicy.SHARE_POOL, qos);
  }

  static ShareBook pool(ShareBook book, String name, int limit) {
    return book.addPod(
        key(name),
        PodSharing.shared(
            SharePolicy.SHARE_POOL, new Share(10, 10), new Share(limit, limit), "main"));
  }

  /**
   * Limits as in the Alibaba GPU trace v2023 ({@code openb_pod_list_default.csv}, the trace the
   * placement replay uses): its 6,989 single-GPU pods by {@code gpu_milli} rounded to 10 %: 10 %:
   * 32, 20 %: 276, 30 %: 340, 40 %: 55, 50 %: 897, 60 %: 147, 70 %: 253, 80 %: 1,078, 90 %: 0, 100
   * %: 3,911 (whole GPUs are 56 % of them).
   */
  static final int[] TRACE_WEIGHTS = {32, 276, 340, 55, 897, 147, 253, 1078, 0, 3911};

  private static final int TRACE_TOTAL = java.util.Arrays.stream(TRACE_WEIGHTS).sum();

  /** A limit drawn from {@link #TRACE_WEIGHTS}: 10 % to 100 % in steps of 10. */
  static int limit(Random random) {
    int r = random.nextInt(TRACE_TOTAL);
    for (int i = 0; i < TRACE_WEIGHTS.length; i++) {
      r -= TRACE_WEIGHTS[i];
      if (r < 0) {
        return 10 * (i + 1);
      }
    }
    return 100;
  }

  static int used(ShareBook book) {
    return book.holdings().values().stream().mapToInt(h -> h.share().core()).sum();
  }

  static PodKey key(String name) {
    return new PodKey("bench", name, "uid-" + name);
  }

  static String id(String name) {
    return key(name).entityId();
  }

  // ---- runner ----

  /** Runs the benchmarks (JMH options on the command line are honoured), then a Markdown table. */
  public static void main(String[] args) throws Exception {
    CommandLineOptions cli = new CommandLineOptions(args);
    OptionsBuilder builder = new OptionsBuilder();
    builder.parent(cli);
    if (cli.getIncludes().isEmpty()) {
      builder.include(ShareBookBenchmark.class.getName());
    }
    Options options = builder.build();
    Collection<RunResult> results = new Runner(options).run();
    System.out.println();
    System.out.printf(
        Locale.ROOT,
        "ShareBook policy, %d cores, Java %s%n%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"));
    System.out.println("| benchmark | GPUs | queued | ops/s | ± (99.9 %) | µs per op |");
    System.out.println("|---|---|---|---|---|---|");
    for (RunResult r : results) {
      String name = r.getParams().getBenchmark();
      name = name.substring(name.lastIndexOf('.') + 1);
      double score = r.getPrimaryResult().getScore();
      double error = r.getPrimaryResult().getScoreError();
      System.out.printf(
          Locale.ROOT,
          "| %s | %s | %s | %,.0f | %,.0f | %.2f |%n",
          name,
          r.getParams().getParam("gpus"),
          r.getParams().getParam("queued"),
          score,
          error,
          1e6 / score);
    }
  }
}
