package dev.gpushare.http.tools;

import dev.gpushare.arbiter.fragmentation.NodeState;
import dev.gpushare.arbiter.fragmentation.Policies;
import dev.gpushare.arbiter.fragmentation.Replay;
import dev.gpushare.arbiter.fragmentation.Replay.GpuBucket;
import dev.gpushare.arbiter.fragmentation.Replay.TracePod;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@code java -jar gpushare.jar replay TRACE_DIR [--trace NAME|all] [--policies fgd,bestfit,…]
 * [--seeds 1..10] [--order creation_time|shuffled] [--csv FILE] [--threads N]}: replays the Alibaba
 * GPU trace v2023 with placement policies under the protocol of the FGD paper ({@link Replay}) and
 * prints, per trace and policy, the allocation ratio at 90–130 % arrived demand (mean [min-max]
 * over the seeds), the GPUs left unallocated and the fragmentation at 130 %, failed pods and the
 * scheduler's pods per second, and per trace the failed pods by GPU count at 90 and 100 %; {@code
 * --csv} writes the same as CSV with the columns of the trace's {@code reference-results.csv}
 * first. Exit status: 0; 2 for a bad flag or a missing folder or file; 1 for a malformed trace file
 * or a CSV that cannot be written.
 */
public final class ReplayCommand {

  public static final String NAME = "replay";

  static final String DEFAULT_POLICIES = "fgd,bestfit,fgd-reserve";
  static final String DEFAULT_SEEDS = "1..10";
  private static final int MAX_SEEDS = 1000;
  private static final int MAX_THREADS = 256;

  /** What an absent optional pod column stands for ({@link TraceFiles}). */
  private static final Map<String, String> DEFAULTS =
      Map.of("name", "line-N", "memory_mib", "0", "gpu_spec", "any model");

  private static final Set<String> VALUE_FLAGS =
      Set.of("--trace", "--policies", "--seeds", "--order", "--csv", "--threads");
  private static final String FLAGS =
      "TRACE_DIR, --trace NAME|all, --policies LIST, --seeds A..B|LIST, --order"
          + " creation_time|shuffled, --csv FILE, --threads N, --help";

  private ReplayCommand() {}

  public static String usage() {
    return """
        Usage: java -jar gpushare.jar replay TRACE_DIR [--trace NAME|all]
                                             [--policies fgd,bestfit,fgd-reserve]
                                             [--seeds 1..10] [--order creation_time|shuffled]
                                             [--csv FILE] [--threads N]

        Replays the Alibaba GPU trace v2023 (the cluster-trace-gpu-v2023 folder of
        github.com/alibaba/clusterdata: openb_node_list_gpu_node.csv and
        openb_pod_list_NAME.csv in TRACE_DIR) with placement policies, under the protocol
        of the FGD paper (Weng et al., USENIX ATC'23): the pods arrive in creation_time
        order and are never deleted; then pods drawn at random from the list (the seed)
        arrive until the arrived GPU demand reaches 130 % of the cluster's GPUs; a pod that
        fits nowhere is counted as failed and skipped.

        Pod lists need cpu_milli, num_gpu and gpu_milli; name (default line-N),
        memory_mib (default 0), gpu_spec (default any model) and creation_time may be
        absent, as in some lists of the public folder (name,cpu_milli,memory_mib,num_gpu,
        gpu_milli). Without creation_time the pods arrive in file order: the report says
        so in a note line, and the CSV's creation_time_column is "absent".

        Prints, per trace and policy, the GPU allocation ratio at 90, 100, 110, 120 and
        130 % arrived demand as mean [min-max] over the seeds, the GPUs left unallocated at
        130 %, the fragmentation at 130 % (the paper's measure, in GPUs), the failed pods
        and the pods per second of the scheduler; then, per trace, the failed pods by GPU
        count (0gpu: CPU-only; frac: num_gpu 1 with gpu_milli < 1000; 1gpu, 2gpu, 4gpu,
        8gpu; other: 3, 5, 6 or 7 GPUs, shown when the trace has such pods) by the time
        the arrived demand reached 90 % and 100 %, mean over the seeds.

        Flags:
          --trace NAME|all    NAME of openb_pod_list_NAME.csv (e.g. default, gpushare40),
                              several comma-separated, or all; default all
          --policies LIST     comma-separated, of: {POLICIES};
                              default {DEFAULT_POLICIES}
          --seeds A..B|LIST   seeds, a range A..B or comma-separated (0 or more);
                              default {DEFAULT_SEEDS}
          --order ORDER       creation_time (the protocol; default) or shuffled (the order
                              the paper's artifact actually replays: sorted by name, then
                              shuffled with the seed)
          --csv FILE          also write the results as CSV: the columns of the trace's
                              reference-results.csv, then min/max and this replay's own,
                              among them failed_at_90_0gpu, _frac, _1gpu, _2gpu, _4gpu,
                              _8gpu, _other and the same at 100 (means over the seeds),
                              and creation_time_column (present or absent)
          --threads N         replays run at once (each trace, policy and seed is one);
                              default the number of processors; the results do not
                              depend on it (but the pods per second)
          --help              this text

        Exit status: 0; 2 for a bad flag or a missing folder or file; 1 for a malformed
        trace file (the message names file, line, column, value and what is accepted) or a
        CSV that cannot be written.
        """
        .replace("{POLICIES}", Policies.keys())
        .replace("{DEFAULT_POLICIES}", DEFAULT_POLICIES)
        .replace("{DEFAULT_SEEDS}", DEFAULT_SEEDS);
  }

  /** The parsed command line. */
  record Options(
      Path dir,
      List<String> traces,
      List<Policies> policies,
      List<Long> seeds,
      Replay.Order order,
      Path csv,
      int threads) {}

  public static int run(List<String> args, PrintStream out, PrintStream err) {
    Options options;
    try {
      Map<String, String> values = new HashMap<>();
      List<String> positional = new ArrayList<>();
      boolean help = false;
      for (int i = 0; i < args.size(); i++) {
        String arg = args.get(i);
        if (!arg.startsWith("--")) {
          positional.add(arg);
          continue;
        }
        int eq = arg.indexOf('=');
        String flag = eq < 0 ? arg : arg.substring(0, eq);
        if (flag.equals("--help")) {
          help = true;
          continue;
        }
        if (!VALUE_FLAGS.contains(flag)) {
          throw new IllegalArgumentException("unknown flag '" + flag + "'; accepted: " + FLAGS);
        }
        String value;
        if (eq >= 0) {
          value = arg.substring(eq + 1);
        } else if (i + 1 < args.size() && !args.get(i + 1).startsWith("--")) {
          value = args.get(++i);
        } else {
          throw new IllegalArgumentException(flag + ": missing value");
        }
        if (values.putIfAbsent(flag, value) != null) {
          throw new IllegalArgumentException(flag + ": given more than once; give it once");
        }
      }
      if (help) {
        out.print(usage());
        out.flush();
        return 0;
      }
      options = parse(positional, values);
    } catch (IllegalArgumentException e) {
      err.println("gpushare " + NAME + ": " + e.getMessage());
      err.println("gpushare " + NAME + ": run `java -jar gpushare.jar " + NAME + " --help`");
      err.flush();
      return 2;
    }
    try {
      execute(options, out);
      out.flush();
      return 0;
    } catch (TraceFormatException e) {
      err.println("gpushare " + NAME + ": " + e.getMessage());
      err.flush();
      return 1;
    }
  }

  static Options parse(List<String> positional, Map<String, String> values) {
    if (positional.isEmpty()) {
      throw new IllegalArgumentException(
          "missing TRACE_DIR; give the folder holding "
              + TraceFiles.NODE_FILE
              + " and openb_pod_list_NAME.csv (the cluster-trace-gpu-v2023 folder of"
              + " github.com/alibaba/clusterdata)");
    }
    if (positional.size() > 1) {
      throw new IllegalArgumentException(
          "unexpected argument '" + positional.get(1) + "'; give one TRACE_DIR");
    }
    Path dir;
    try {
      dir = Path.of(positional.get(0));
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException(
          "TRACE_DIR: '" + positional.get(0) + "' is not a valid path (" + e.getReason() + ")");
    }
    if (!Files.isDirectory(dir)) {
      throw new IllegalArgumentException(
          "TRACE_DIR: "
              + dir
              + (Files.exists(dir) ? " is not a folder" : " does not exist")
              + "; give the folder holding "
              + TraceFiles.NODE_FILE
              + " and openb_pod_list_NAME.csv (the cluster-trace-gpu-v2023 folder of"
              + " github.com/alibaba/clusterdata)");
    }
    if (!Files.isRegularFile(dir.resolve(TraceFiles.NODE_FILE))) {
      throw new IllegalArgumentException(
          "TRACE_DIR: " + dir + " has no " + TraceFiles.NODE_FILE + " (the trace's GPU nodes)");
    }
    List<String> available = TraceFiles.traceNames(dir);
    String traceValue = values.getOrDefault("--trace", "all").strip();
    List<String> traces = new ArrayList<>();
    if (traceValue.equals("all")) {
      if (available.isEmpty()) {
        throw new IllegalArgumentException(
            "--trace all: " + dir + " has no openb_pod_list_NAME.csv");
      }
      traces.addAll(available);
    } else {
      for (String item : list("--trace", traceValue)) {
        String name =
            item.startsWith(TraceFiles.POD_PREFIX)
                ? item.substring(TraceFiles.POD_PREFIX.length()).replaceFirst("\\.csv$", "")
                : item;
        if (!available.contains(name)) {
          throw new IllegalArgumentException(
              "--trace: '"
                  + item
                  + "' given; "
                  + TraceFiles.podFile(dir, name)
                  + " does not exist; accepted: all"
                  + (available.isEmpty() ? "" : ", " + String.join(", ", available)));
        }
        if (!traces.contains(name)) {
          traces.add(name);
        }
      }
    }
    Set<Policies> policies = new LinkedHashSet<>();
    for (String item : list("--policies", values.getOrDefault("--policies", DEFAULT_POLICIES))) {
      policies.add(
          Policies.byKey(item)
              .orElseThrow(
                  () ->
                      new IllegalArgumentException(
                          "--policies: '" + item + "' given; accepted: " + Policies.keys())));
    }
    List<Long> seeds = seeds(values.getOrDefault("--seeds", DEFAULT_SEEDS));
    String orderValue = values.getOrDefault("--order", "creation_time").strip();
    Replay.Order order =
        switch (orderValue.toLowerCase(Locale.ROOT)) {
          case "creation_time", "creation" -> Replay.Order.CREATION_TIME;
          case "shuffled", "shuffle" -> Replay.Order.SHUFFLED;
          default ->
              throw new IllegalArgumentException(
                  "--order: '" + orderValue + "' given; accepted: creation_time, shuffled");
        };
    Path csv = null;
    if (values.containsKey("--csv")) {
      String text = values.get("--csv").strip();
      if (text.isEmpty()) {
        throw new IllegalArgumentException("--csv: empty value given; expected a file path");
      }
      try {
        csv = Path.of(text);
      } catch (InvalidPathException e) {
        throw new IllegalArgumentException(
            "--csv: '" + text + "' is not a valid path (" + e.getReason() + ")");
      }
      Path parent = csv.toAbsolutePath().getParent();
      if (parent != null && !Files.isDirectory(parent)) {
        throw new IllegalArgumentException(
            "--csv: " + csv + ": the folder " + parent + " does not exist");
      }
    }
    int threads = Runtime.getRuntime().availableProcessors();
    if (values.containsKey("--threads")) {
      String text = values.get("--threads").strip();
      try {
        threads = Integer.parseInt(text);
      } catch (NumberFormatException e) {
        threads = 0;
      }
      if (threads < 1 || threads > MAX_THREADS) {
        throw new IllegalArgumentException(
            "--threads: '" + text + "' given; expected a whole number, 1 to " + MAX_THREADS);
      }
    }
    return new Options(dir, traces, List.copyOf(policies), seeds, order, csv, threads);
  }

  private static List<String> list(String flag, String value) {
    List<String> items = new ArrayList<>();
    for (String item : value.split(",", -1)) {
      String stripped = item.strip();
      if (stripped.isEmpty()) {
        throw new IllegalArgumentException(
            flag + ": '" + value + "' given; expected comma-separated names, none empty");
      }
      items.add(stripped);
    }
    return items;
  }

  static List<Long> seeds(String value) {
    String text = value.strip();
    String rule = "a range A..B (A <= B) or comma-separated seeds, 0 or more, at most " + MAX_SEEDS;
    List<Long> seeds = new ArrayList<>();
    try {
      int dots = text.indexOf("..");
      if (dots >= 0) {
        long from = Long.parseLong(text.substring(0, dots).strip());
        long to = Long.parseLong(text.substring(dots + 2).strip());
        if (from < 0 || to < from || to - from >= MAX_SEEDS) {
          throw new IllegalArgumentException("--seeds: '" + value + "' given; expected " + rule);
        }
        for (long s = from; s <= to; s++) {
          seeds.add(s);
        }
      } else {
        for (String item : text.split(",", -1)) {
          long seed = Long.parseLong(item.strip());
          if (seed < 0) {
            throw new IllegalArgumentException("--seeds: '" + value + "' given; expected " + rule);
          }
          if (!seeds.contains(seed)) {
            seeds.add(seed);
          }
        }
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--seeds: '" + value + "' given; expected " + rule);
    }
    if (seeds.isEmpty() || seeds.size() > MAX_SEEDS) {
      throw new IllegalArgumentException("--seeds: '" + value + "' given; expected " + rule);
    }
    return seeds;
  }

  static List<ReplayReport> execute(Options options, PrintStream out) {
    List<NodeState> nodes = TraceFiles.readNodes(options.dir().resolve(TraceFiles.NODE_FILE));
    int gpus = nodes.stream().mapToInt(NodeState::gpuCount).sum();
    if (gpus == 0) {
      throw new TraceFormatException(
          options.dir().resolve(TraceFiles.NODE_FILE) + ": no node has a GPU; nothing to replay");
    }
    // Every file is read (once) before any replay, so that a malformed one stops the run at once.
    List<TraceFiles.PodList> lists = new ArrayList<>();
    for (String name : options.traces()) {
      lists.add(TraceFiles.readPods(TraceFiles.podFile(options.dir(), name)));
    }
    // Every trace × policy × seed is one task on a fixed pool; each replay depends on its seed
    // only, and the results are gathered in the order of the command line, so the output is the
    // same for any number of threads (but the pods per second).
    int tasks = lists.size() * options.policies().size() * options.seeds().size();
    ExecutorService pool =
        Executors.newFixedThreadPool(
            Math.max(1, Math.min(options.threads(), tasks)),
            runnable -> {
              Thread thread = new Thread(runnable, "replay");
              thread.setDaemon(true);
              return thread;
            });
    try {
      List<List<List<Future<Replay.Result>>>> futures = new ArrayList<>();
      for (TraceFiles.PodList list : lists) {
        List<List<Future<Replay.Result>>> byPolicy = new ArrayList<>();
        for (Policies policy : options.policies()) {
          List<Future<Replay.Result>> bySeed = new ArrayList<>();
          for (long seed : options.seeds()) {
            bySeed.add(
                pool.submit(
                    () ->
                        Replay.run(
                            nodes,
                            list.pods(),
                            policy.factory(),
                            seed,
                            options.order(),
                            arrival -> {})));
          }
          byPolicy.add(bySeed);
        }
        futures.add(byPolicy);
      }
      List<ReplayReport> reports = new ArrayList<>();
      for (int t = 0; t < lists.size(); t++) {
        reports.addAll(report(options, nodes, gpus, lists.get(t), futures.get(t), out));
      }
      writeCsv(options, reports, out);
      return reports;
    } finally {
      pool.shutdownNow();
    }
  }

  private static List<ReplayReport> report(
      Options options,
      List<NodeState> nodes,
      int gpus,
      TraceFiles.PodList list,
      List<List<Future<Replay.Result>>> futures,
      PrintStream out) {
    List<TracePod> pods = list.pods();
    long demand = pods.stream().mapToLong(p -> p.spec().gpuDemandMilli()).sum();
    String file = list.file().getFileName().toString();
    String trace = file.substring(0, file.length() - ".csv".length());
    out.printf(
        Locale.ROOT,
        "%ntrace %s: %d pods (GPU demand %.1f %% of capacity), %d nodes, %d GPUs;"
            + " order %s; seeds %s%n",
        trace,
        pods.size(),
        100.0 * demand / (gpus * 1000.0),
        nodes.size(),
        gpus,
        options.order() == Replay.Order.CREATION_TIME ? "creation_time" : "shuffled",
        describe(options.seeds()));
    if (!list.creationTimeGiven()) {
      out.printf(
          Locale.ROOT,
          "note: %s has no creation_time column: its pods arrive in file order%s%n",
          file,
          options.order() == Replay.Order.SHUFFLED ? " (unused: --order shuffled)" : "");
    }
    List<String> defaulted =
        list.absentColumns().stream()
            .filter(column -> !column.equals("creation_time"))
            .map(column -> column + " (" + DEFAULTS.get(column) + ")")
            .toList();
    if (!defaulted.isEmpty()) {
      out.printf(
          Locale.ROOT,
          "note: %s has no %s: defaulted%n",
          file,
          String.join(", ", defaulted) + (defaulted.size() == 1 ? " column" : " columns"));
    }
    out.print(ReplayReport.tableHeader());
    List<ReplayReport> reports = new ArrayList<>();
    for (int p = 0; p < options.policies().size(); p++) {
      List<Replay.Result> results = new ArrayList<>();
      for (Future<Replay.Result> future : futures.get(p)) {
        results.add(join(future));
      }
      ReplayReport report =
          new ReplayReport(
              trace,
              options.policies().get(p).label(),
              options.order(),
              list.creationTimeGiven(),
              results);
      reports.add(report);
      out.println(report.tableLine());
      out.flush();
    }
    boolean other = pods.stream().anyMatch(pod -> GpuBucket.of(pod.spec()) == GpuBucket.OTHER);
    out.println();
    out.print(ReplayReport.failureTable(reports, other));
    out.flush();
    return reports;
  }

  private static Replay.Result join(Future<Replay.Result> future) {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while replaying", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (e.getCause() instanceof Error error) {
        throw error;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private static void writeCsv(Options options, List<ReplayReport> reports, PrintStream out) {
    if (options.csv() == null) {
      return;
    }
    try (Writer writer = Files.newBufferedWriter(options.csv(), StandardCharsets.UTF_8)) {
      writer.write(String.join(",", ReplayReport.CSV_COLUMNS));
      writer.write('\n');
      for (ReplayReport report : reports) {
        writer.write(report.csvLine());
        writer.write('\n');
      }
    } catch (IOException e) {
      throw new TraceFormatException(
          "--csv: cannot write " + options.csv() + " (" + e.getMessage() + ")");
    }
    out.println();
    out.println("CSV written to " + options.csv());
  }

  private static String describe(List<Long> seeds) {
    long first = seeds.get(0);
    long last = seeds.get(seeds.size() - 1);
    boolean range = last - first == seeds.size() - 1;
    for (int i = 1; range && i < seeds.size(); i++) {
      range = seeds.get(i) == first + i;
    }
    if (range && seeds.size() > 1) {
      return first + ".." + last;
    }
    return seeds.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse("");
  }
}
