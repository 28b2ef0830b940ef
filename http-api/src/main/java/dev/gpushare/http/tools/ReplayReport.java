package dev.gpushare.http.tools;

import dev.gpushare.arbiter.fragmentation.Replay;
import dev.gpushare.arbiter.fragmentation.Replay.GpuBucket;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One trace × policy over its seeds: means, and minimum and maximum over the seeds, of what {@link
 * Replay.Result} measured; and how it is printed and written to CSV.
 *
 * @param creationTimeGiven whether the pod list has {@code creation_time} (without it, the {@code
 *     creation_time} order is the file order)
 */
public record ReplayReport(
    String trace,
    String policy,
    Replay.Order order,
    boolean creationTimeGiven,
    List<Replay.Result> results) {

  /**
   * The CSV columns: those of the trace's {@code reference-results.csv} first, then this replay's.
   */
  public static final List<String> CSV_COLUMNS = csvColumns();

  private static List<String> csvColumns() {
    List<String> columns = new ArrayList<>(List.of("trace", "policy", "seeds"));
    for (int x : Replay.CHECKPOINTS) {
      columns.add("alloc_pct_at_" + x);
    }
    columns.add("unallocated_gpus_at_130");
    for (int x : Replay.CHECKPOINTS) {
      columns.add("alloc_pct_at_" + x + "_min");
      columns.add("alloc_pct_at_" + x + "_max");
    }
    columns.addAll(
        List.of(
            "order",
            "total_gpus",
            "frag_gpus_at_130",
            "frag_pct_of_free_at_130",
            "arrived_pods",
            "drawn_pods",
            "failed_pods"));
    for (int x : Replay.FAILURE_CHECKPOINTS) {
      for (GpuBucket bucket : GpuBucket.values()) {
        columns.add(failedColumn(x, bucket));
      }
    }
    columns.add("creation_time_column");
    columns.add("pods_per_s");
    return List.copyOf(columns);
  }

  /** The CSV column of the mean failed pods of {@code bucket} at {@code checkpoint} %. */
  public static String failedColumn(int checkpoint, GpuBucket bucket) {
    return "failed_at_" + checkpoint + "_" + bucket.key();
  }

  public ReplayReport {
    if (results.isEmpty()) {
      throw new IllegalArgumentException("no result for " + trace + " / " + policy);
    }
    results = List.copyOf(results);
  }

  public int seeds() {
    return results.size();
  }

  public int totalGpus() {
    return results.get(0).totalGpus();
  }

  public double allocationMean(int checkpoint) {
    return results.stream().mapToDouble(r -> r.allocationPercentAt(checkpoint)).average().orElse(0);
  }

  public double allocationMin(int checkpoint) {
    return results.stream().mapToDouble(r -> r.allocationPercentAt(checkpoint)).min().orElse(0);
  }

  public double allocationMax(int checkpoint) {
    return results.stream().mapToDouble(r -> r.allocationPercentAt(checkpoint)).max().orElse(0);
  }

  /**
   * GPUs left unallocated at 130 %, as the reference results derive it from their allocation
   * column: {@code round(total GPUs × (1 − mean allocation at 130 % / 100))}.
   */
  public long unallocatedGpusAt130() {
    return Math.round(totalGpus() * (1 - allocationMean(130) / 100));
  }

  public double fragmentationGpus() {
    return results.stream().mapToDouble(r -> r.fragmentationMilli() / 1000).average().orElse(0);
  }

  public double fragmentationPercentOfFree() {
    return results.stream()
        .mapToDouble(Replay.Result::fragmentationPercentOfFree)
        .average()
        .orElse(0);
  }

  public double arrived() {
    return results.stream().mapToInt(Replay.Result::arrived).average().orElse(0);
  }

  public double drawn() {
    return results.stream().mapToInt(Replay.Result::drawn).average().orElse(0);
  }

  public double failed() {
    return results.stream().mapToInt(Replay.Result::failed).average().orElse(0);
  }

  /**
   * Mean over the seeds of the pods of {@code bucket} failed when the arrived demand reached {@code
   * checkpoint} % (one of {@link Replay#FAILURE_CHECKPOINTS}).
   */
  public double failedAt(int checkpoint, GpuBucket bucket) {
    return results.stream().mapToInt(r -> r.failedAt(checkpoint, bucket)).average().orElse(0);
  }

  /** Pods placed (or found unplaceable) per second of scheduling, over all seeds. */
  public double podsPerSecond() {
    long pods = results.stream().mapToLong(Replay.Result::arrived).sum();
    long nanos = results.stream().mapToLong(Replay.Result::schedulingNanos).sum();
    return nanos <= 0 ? 0 : pods * 1e9 / nanos;
  }

  /** The table's header lines. */
  public static String tableHeader() {
    StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-14s", "policy"));
    for (int x : Replay.CHECKPOINTS) {
      line.append(String.format(Locale.ROOT, "  %-19s", "alloc% @" + x + "%"));
    }
    line.append(
        String.format(
            Locale.ROOT, "  %9s  %10s  %8s  %8s", "unalloc.", "frag GPUs", "failed", "pods/s"));
    StringBuilder second = new StringBuilder(String.format(Locale.ROOT, "%-14s", ""));
    for (int ignored : Replay.CHECKPOINTS) {
      second.append(String.format(Locale.ROOT, "  %-19s", "mean [min-max]"));
    }
    second.append(
        String.format(Locale.ROOT, "  %9s  %10s  %8s  %8s", "GPUs@130", "@130", "pods", ""));
    return line.toString().stripTrailing() + "\n" + second.toString().stripTrailing() + "\n";
  }

  /** One table line: means with [min-max] over the seeds. */
  public String tableLine() {
    StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-14s", policy));
    for (int x : Replay.CHECKPOINTS) {
      line.append(
          String.format(
              Locale.ROOT,
              "  %-19s",
              String.format(
                  Locale.ROOT,
                  "%.2f [%.2f-%.2f]",
                  allocationMean(x),
                  allocationMin(x),
                  allocationMax(x))));
    }
    line.append(
        String.format(
            Locale.ROOT,
            "  %9d  %10.1f  %8.1f  %8.0f",
            unallocatedGpusAt130(),
            fragmentationGpus(),
            failed(),
            podsPerSecond()));
    return line.toString();
  }

  /** One CSV line in {@link #CSV_COLUMNS} order. */
  public String csvLine() {
    List<String> values = new ArrayList<>(List.of(trace, policy, Integer.toString(seeds())));
    for (int x : Replay.CHECKPOINTS) {
      values.add(two(allocationMean(x)));
    }
    values.add(Long.toString(unallocatedGpusAt130()));
    for (int x : Replay.CHECKPOINTS) {
      values.add(two(allocationMin(x)));
      values.add(two(allocationMax(x)));
    }
    values.add(order == Replay.Order.CREATION_TIME ? "creation_time" : "shuffled");
    values.add(Integer.toString(totalGpus()));
    values.add(String.format(Locale.ROOT, "%.1f", fragmentationGpus()));
    values.add(two(fragmentationPercentOfFree()));
    values.add(String.format(Locale.ROOT, "%.1f", arrived()));
    values.add(String.format(Locale.ROOT, "%.1f", drawn()));
    values.add(String.format(Locale.ROOT, "%.1f", failed()));
    for (int x : Replay.FAILURE_CHECKPOINTS) {
      for (GpuBucket bucket : GpuBucket.values()) {
        values.add(String.format(Locale.ROOT, "%.1f", failedAt(x, bucket)));
      }
    }
    values.add(creationTimeGiven ? "present" : "absent");
    values.add(String.format(Locale.ROOT, "%.0f", podsPerSecond()));
    return String.join(",", values);
  }

  /**
   * The failed pods by GPU count of one trace: a line per report (policy), a column per bucket with
   * the means over the seeds at each of {@link Replay#FAILURE_CHECKPOINTS} ({@code at 90 / at
   * 100}). The {@code other} column (3, 5, 6 or 7 GPUs) only when {@code withOther}.
   */
  public static String failureTable(List<ReplayReport> reports, boolean withOther) {
    List<GpuBucket> buckets = new ArrayList<>(List.of(GpuBucket.values()));
    if (!withOther) {
      buckets.remove(GpuBucket.OTHER);
    }
    String at =
        String.join(" / ", Replay.FAILURE_CHECKPOINTS.stream().map(x -> "@" + x + "%").toList());
    StringBuilder table =
        new StringBuilder(
            "failed pods by GPU count ("
                + at
                + " arrived, mean over the seeds; frac: a fraction of one GPU)\n");
    StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%-14s", "policy"));
    for (GpuBucket bucket : buckets) {
      header.append(String.format(Locale.ROOT, "  %15s", bucket.key()));
    }
    table.append(header.toString().stripTrailing()).append('\n');
    for (ReplayReport report : reports) {
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-14s", report.policy()));
      for (GpuBucket bucket : buckets) {
        String cell =
            String.join(
                " / ",
                Replay.FAILURE_CHECKPOINTS.stream()
                    .map(x -> String.format(Locale.ROOT, "%.1f", report.failedAt(x, bucket)))
                    .toList());
        line.append(String.format(Locale.ROOT, "  %15s", cell));
      }
      table.append(line.toString().stripTrailing()).append('\n');
    }
    return table.toString();
  }

  private static String two(double value) {
    return String.format(Locale.ROOT, "%.2f", value);
  }
}
