package dev.gpushare.http.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code replay} on small traces written here (never the shipped files): the protocol seen through
 * the command, the output and CSV shape, determinism, and the errors.
 */
class ReplayCommandTest {
  @TempDir Path dir;

  private static final String NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model";
  private static final String POD_HEADER =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
          + "deletion_time,scheduled_time";

  private record Outcome(int status, String out, String err) {}

  private static Outcome run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status =
        ReplayCommand.run(
            Arrays.asList(args),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Outcome(
        status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private void write(String file, String... lines) throws IOException {
    Files.writeString(dir.resolve(file), String.join("\n", lines) + "\n");
  }

  private static String pod(String name, int cpu, int numGpu, int milli, String spec, long t) {
    return name
        + ","
        + cpu
        + ",1024,"
        + numGpu
        + ","
        + milli
        + ","
        + spec
        + ",LS,Running,"
        + t
        + ",,";
  }

  /** One node of two GPUs; trace "half": one pod of half a GPU. */
  private void halfTrace() throws IOException {
    write(TraceFiles.NODE_FILE, NODE_HEADER, "node-0,8000,65536,2,T4");
    write("openb_pod_list_half.csv", POD_HEADER, pod("half", 100, 1, 500, "", 0));
  }

  /** The same node; trace "mixed": shares, whole GPUs, a CPU-only pod, out of time order. */
  private void mixedTrace() throws IOException {
    write(
        "openb_pod_list_mixed.csv",
        POD_HEADER,
        pod("m3", 1000, 1, 1000, "", 30),
        pod("m1", 1000, 1, 300, "T4", 10),
        pod("m2", 500, 0, 0, "", 20),
        pod("m4", 1000, 1, 700, "T4|V100M16", 40),
        pod("m5", 1000, 2, 1000, "", 50));
  }

  @Test
  void the_protocol_stops_at_130_percent_and_skips_what_fits_nowhere() throws IOException {
    // 2 GPUs: the stop at 2600. Pods of 500: five arrive (2500), the sixth would pass 130 %.
    // Four fit (2000), the fifth fails. Arrived after each: 25, 50, 75, 100, 125 %; allocation at
    // 90 %: the last arrival below 90.5 (75 %); at 100: 100; at 110–130: the last below (100).
    halfTrace();
    Path csv = dir.resolve("out.csv");
    Outcome outcome =
        run(dir.toString(), "--trace", "half", "--seeds", "1..3", "--csv", csv.toString());
    assertEquals(0, outcome.status(), outcome.err());
    List<String> lines = Files.readAllLines(csv);
    assertEquals(String.join(",", ReplayReport.CSV_COLUMNS), lines.get(0));
    assertTrue(
        lines
            .get(0)
            .startsWith(
                "trace,policy,seeds,alloc_pct_at_90,alloc_pct_at_100,alloc_pct_at_110,"
                    + "alloc_pct_at_120,alloc_pct_at_130,unallocated_gpus_at_130,"),
        "the reference results' columns first: " + lines.get(0));
    assertEquals(4, lines.size(), "a header and one line per policy: " + lines);
    List<String> policies = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      assertEquals(ReplayReport.CSV_COLUMNS.size(), f.length, line);
      assertEquals("openb_pod_list_half", f[0]);
      policies.add(f[1]);
      assertEquals("3", f[2]);
      assertEquals(
          List.of("75.00", "100.00", "100.00", "100.00", "100.00", "0"),
          List.of(f).subList(3, 9),
          line);
      assertEquals("creation_time", value(f, "order"));
      assertEquals("2", value(f, "total_gpus"));
      assertEquals("5.0", value(f, "arrived_pods"));
      assertEquals("4.0", value(f, "drawn_pods"));
      assertEquals("1.0", value(f, "failed_pods"));
      assertEquals("0.0", value(f, "frag_gpus_at_130"));
    }
    assertEquals(List.of("FGD", "BestFit", "FGD-Reserve"), policies);
    assertTrue(
        outcome.out().contains("trace openb_pod_list_half: 1 pods (GPU demand 25.0 % of capacity)"),
        outcome.out());
    assertTrue(outcome.out().contains("seeds 1..3"), outcome.out());
    assertTrue(outcome.out().contains("100.00 [100.00-100.00]"), outcome.out());
  }

  private static String value(String[] fields, String column) {
    return fields[ReplayReport.CSV_COLUMNS.indexOf(column)];
  }

  @Test
  void a_seed_gives_the_same_results_every_time() throws IOException {
    halfTrace();
    mixedTrace();
    Path first = dir.resolve("first.csv");
    Path second = dir.resolve("second.csv");
    assertEquals(0, run(dir.toString(), "--seeds", "4,9", "--csv", first.toString()).status());
    assertEquals(0, run(dir.toString(), "--seeds", "4,9", "--csv", second.toString()).status());
    assertEquals(withoutTiming(first), withoutTiming(second));
    List<String> lines = Files.readAllLines(first);
    assertEquals(1 + 2 * 3, lines.size(), "all traces by default: half and mixed, 3 policies");
    assertTrue(lines.get(1).startsWith("openb_pod_list_half,"));
    assertTrue(lines.get(4).startsWith("openb_pod_list_mixed,"));
    Path shuffled = dir.resolve("shuffled.csv");
    assertEquals(
        0,
        run(
                dir.toString(),
                "--trace",
                "mixed",
                "--order",
                "shuffled",
                "--policies",
                "fgd",
                "--csv",
                shuffled.toString())
            .status());
    assertEquals("shuffled", value(Files.readAllLines(shuffled).get(1).split(","), "order"));
  }

  private static List<String> withoutTiming(Path csv) throws IOException {
    return Files.readAllLines(csv).stream()
        .map(line -> line.substring(0, line.lastIndexOf(',')))
        .toList();
  }

  @Test
  void help_describes_the_protocol_and_the_flags() {
    Outcome help = run("--help");
    assertEquals(0, help.status());
    assertTrue(help.out().startsWith("Usage: java -jar gpushare.jar replay TRACE_DIR"));
    assertTrue(help.out().contains("cluster-trace-gpu-v2023"));
    assertTrue(help.out().contains("fgd, bestfit, fgd-capacity, fgd-reserve"));
  }

  @Test
  void bad_command_lines_are_refused_with_status_2() throws IOException {
    halfTrace();
    assertRefused(run(), "missing TRACE_DIR");
    assertRefused(
        run(dir.resolve("nope").toString()),
        "TRACE_DIR: " + dir.resolve("nope") + " does not exist");
    assertRefused(run(dir.toString(), "--trace", "other"), "--trace: 'other' given;");
    assertTrue(run(dir.toString(), "--trace", "other").err().contains("accepted: all, half"));
    assertRefused(
        run(dir.toString(), "--policies", "fgd,random"),
        "--policies: 'random' given; accepted: fgd, bestfit, fgd-capacity, fgd-reserve");
    assertRefused(
        run(dir.toString(), "--seeds", "5..2"), "--seeds: '5..2' given; expected a range");
    assertRefused(run(dir.toString(), "--seeds", "x"), "--seeds: 'x' given");
    assertRefused(
        run(dir.toString(), "--order", "random"),
        "--order: 'random' given; accepted: creation_time, shuffled");
    assertRefused(run(dir.toString(), "--frobnicate", "1"), "unknown flag '--frobnicate'");
    assertRefused(
        run(dir.toString(), "--seeds", "1", "--seeds", "2"), "--seeds: given more than once");
    assertRefused(
        run(dir.toString(), "--csv", dir.resolve("no/such/out.csv").toString()), "--csv: ");
    Files.delete(dir.resolve(TraceFiles.NODE_FILE));
    assertRefused(
        run(dir.toString()), "TRACE_DIR: " + dir + " has no openb_node_list_gpu_node.csv");
  }

  private static void assertRefused(Outcome outcome, String expected) {
    assertEquals(2, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(outcome.err().startsWith("gpushare replay: " + expected), outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void malformed_lines_name_file_line_column_value_and_what_is_accepted() throws IOException {
    halfTrace();
    Path pods = dir.resolve("openb_pod_list_half.csv");
    assertMalformed(
        POD_HEADER + "\nok,100,1024,1,500,,LS,Running,0,,\nbad,100,1024,x,500,,LS,Running,1,,\n",
        pods + " line 3, column num_gpu: 'x' given; expected a whole number: a GPU count, 0 to 8");
    assertMalformed(
        POD_HEADER + "\nbad,100,1024,2,500,,LS,Running,1,,\n",
        pods
            + " line 2, column gpu_milli: gpu_milli 500 with num_gpu 2: pods with more than one"
            + " GPU take whole GPUs (gpu_milli 1000)");
    assertMalformed(
        POD_HEADER + "\nbad,100,1024,1,1500,,LS,Running,1,,\n",
        pods + " line 2, column gpu_milli: '1500' given; expected a whole number: thousandths");
    assertMalformed(
        POD_HEADER + "\nshort,100,1024,1\n",
        pods + " line 2: 4 fields, the header has 11; expected one value per column");
    assertMalformed(
        "name,cpu_milli,memory_mib,gpu_milli\nx,1,1,1\n",
        pods
            + " line 1: header lacks num_gpu; header seen: 'name,cpu_milli,memory_mib,gpu_milli';"
            + " expected the columns cpu_milli,num_gpu,gpu_milli");
    assertMalformed(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,1,1,1\ny,1,1,1,x\n",
        pods + " line 3, column gpu_milli: 'x' given; expected a whole number");
    assertMalformed(
        POD_HEADER + "\nbad,100,1024,1,500,T4||V100,LS,Running,1,,\n",
        pods + " line 2, column gpu_spec: 'T4||V100' given; expected GPU model names");
    assertMalformed(POD_HEADER + "\n", pods + ": no pod (only a header)");
    Files.writeString(pods, POD_HEADER + "\n" + pod("half", 100, 1, 500, "", 0) + "\n");
    Path nodes = dir.resolve(TraceFiles.NODE_FILE);
    Files.writeString(nodes, NODE_HEADER + "\nnode-0,8000,65536,9,T4\n");
    Outcome outcome = run(dir.toString());
    assertEquals(1, outcome.status());
    assertTrue(
        outcome
            .err()
            .startsWith(
                "gpushare replay: "
                    + nodes
                    + " line 2, column gpu: '9' given; expected a whole number: a GPU count, 0 to 8"),
        outcome.err());
  }

  private void assertMalformed(String content, String expected) throws IOException {
    Files.writeString(dir.resolve("openb_pod_list_half.csv"), content);
    Outcome outcome = run(dir.toString(), "--trace", "half");
    assertEquals(1, outcome.status(), outcome.err());
    assertTrue(outcome.err().startsWith("gpushare replay: " + expected), outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void pod_lists_of_every_variant_replay_side_by_side_and_file_order_is_said() throws IOException {
    halfTrace();
    write(
        "openb_pod_list_five.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
        "f1,100,1024,1,500",
        "f2,100,1024,0,0");
    write("openb_pod_list_min.csv", "cpu_milli,num_gpu,gpu_milli", "100,1,250");
    Path csv = dir.resolve("out.csv");
    Outcome outcome = run(dir.toString(), "--seeds", "1,2", "--csv", csv.toString());
    assertEquals(0, outcome.status(), outcome.err());
    String out = outcome.out();
    assertTrue(
        out.contains(
            "note: openb_pod_list_five.csv has no creation_time column: its pods arrive in file"
                + " order\n"),
        out);
    assertTrue(
        out.contains(
            "note: openb_pod_list_min.csv has no creation_time column: its pods arrive in file"
                + " order\n"),
        out);
    assertTrue(
        out.contains(
            "note: openb_pod_list_min.csv has no name (line-N), memory_mib (0), gpu_spec (any"
                + " model) columns: defaulted\n"),
        out);
    assertTrue(
        out.contains("note: openb_pod_list_five.csv has no gpu_spec (any model) column: defaulted"),
        out);
    assertFalse(out.contains("note: openb_pod_list_half.csv"), out);
    List<String> lines = Files.readAllLines(csv);
    assertEquals(1 + 3 * 3, lines.size(), lines.toString());
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      assertEquals(
          f[0].equals("openb_pod_list_half") ? "present" : "absent",
          value(f, "creation_time_column"),
          line);
    }
  }

  @Test
  void failed_pods_are_reported_by_gpu_count_at_90_and_100_percent() throws IOException {
    // Two GPUs (2000): a takes one; b (CPU only, more CPU than the node) fails at 50 %; c, d, e
    // (300, 300, 200: 90 %, the first at 90 % or more) share the other; f (500: 115 %, the first
    // at 100 % or more) fails.
    write(TraceFiles.NODE_FILE, NODE_HEADER, "node-0,8000,65536,2,T4");
    write(
        "openb_pod_list_fails.csv",
        POD_HEADER,
        pod("a", 1000, 1, 1000, "", 1),
        pod("b", 9000, 0, 0, "", 2),
        pod("c", 100, 1, 300, "", 3),
        pod("d", 100, 1, 300, "", 4),
        pod("e", 100, 1, 200, "", 5),
        pod("f", 100, 1, 500, "", 6));
    Path csv = dir.resolve("out.csv");
    Outcome outcome = run(dir.toString(), "--seeds", "1..3", "--csv", csv.toString());
    assertEquals(0, outcome.status(), outcome.err());
    List<String> lines = Files.readAllLines(csv);
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",");
      for (String bucket : List.of("0gpu", "frac", "1gpu", "2gpu", "4gpu", "8gpu", "other")) {
        assertEquals(
            bucket.equals("0gpu") ? "1.0" : "0.0", value(f, "failed_at_90_" + bucket), line);
        assertEquals(
            bucket.equals("0gpu") || bucket.equals("frac") ? "1.0" : "0.0",
            value(f, "failed_at_100_" + bucket),
            line);
      }
    }
    String out = outcome.out();
    assertTrue(
        out.contains(
            "failed pods by GPU count (@90% / @100% arrived, mean over the seeds; frac: a fraction"
                + " of one GPU)\npolicy"),
        out);
    assertTrue(
        out.matches(
            "(?s).*\nFGD +1\\.0 / 1\\.0 +0\\.0 / 1\\.0 +0\\.0 / 0\\.0 +0\\.0 / 0\\.0 +0\\.0"
                + " / 0\\.0 +0\\.0 / 0\\.0\n.*"),
        out);
    assertFalse(out.contains(" other"), "no pod of 3, 5, 6 or 7 GPUs: " + out);
  }

  @Test
  void the_results_do_not_depend_on_the_number_of_threads() throws IOException {
    halfTrace();
    mixedTrace();
    Path one = dir.resolve("one.csv");
    Path many = dir.resolve("many.csv");
    Outcome first =
        run(dir.toString(), "--seeds", "1..4", "--threads", "1", "--csv", one.toString());
    Outcome second =
        run(dir.toString(), "--seeds", "1..4", "--threads", "3", "--csv", many.toString());
    assertEquals(0, first.status(), first.err());
    assertEquals(0, second.status(), second.err());
    assertEquals(withoutTiming(one), withoutTiming(many));
    assertEquals(
        first
            .out()
            .lines()
            .filter(l -> !l.startsWith("CSV"))
            .map(ReplayCommandTest::noRate)
            .toList(),
        second
            .out()
            .lines()
            .filter(l -> !l.startsWith("CSV"))
            .map(ReplayCommandTest::noRate)
            .toList());
    assertRefused(
        run(dir.toString(), "--threads", "0"),
        "--threads: '0' given; expected a whole number, 1 to 256");
  }

  /** A table line without its last field, the pods per second. */
  private static String noRate(String line) {
    return line.replaceFirst("\\s+\\d+$", "");
  }

  @Test
  void quoted_fields_and_columns_in_any_order_are_read() throws IOException {
    write(
        TraceFiles.NODE_FILE,
        "model,gpu,sn,memory_mib,cpu_milli",
        "\"T4\",2,\"node, 0\",65536,8000");
    write(
        "openb_pod_list_q.csv",
        "creation_time,gpu_spec,gpu_milli,num_gpu,memory_mib,cpu_milli,name",
        "0,\"T4|P100\",500,1,1024,100,\"a \"\"quoted\"\" pod\"");
    assertEquals(2, TraceFiles.readNodes(dir.resolve(TraceFiles.NODE_FILE)).get(0).gpuCount());
    var pods = TraceFiles.readPods(dir.resolve("openb_pod_list_q.csv")).pods();
    assertEquals("a \"quoted\" pod", pods.get(0).name());
    assertEquals(List.of("P100", "T4"), pods.get(0).spec().models());
    assertEquals(0, run(dir.toString(), "--seeds", "1", "--policies", "bestfit").status());
  }
}
