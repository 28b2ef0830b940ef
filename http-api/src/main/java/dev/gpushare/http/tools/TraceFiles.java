package dev.gpushare.http.tools;

import dev.gpushare.arbiter.fragmentation.NodeState;
import dev.gpushare.arbiter.fragmentation.PodSpec;
import dev.gpushare.arbiter.fragmentation.Replay.TracePod;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Reads the Alibaba GPU trace v2023 ({@code cluster-trace-gpu-v2023} in {@code
 * github.com/alibaba/clusterdata}): the node list {@value #NODE_FILE} and pod lists {@code
 * openb_pod_list_NAME.csv}. Comma-separated with a header line; columns are found by name (others
 * are ignored), fields may be double-quoted, blank lines are skipped. Each file is read with its
 * own header, so the variants of the public folder may be mixed in one folder.
 *
 * <ul>
 *   <li>nodes: {@code sn} (name), {@code cpu_milli}, {@code memory_mib}, {@code gpu} (0–8), {@code
 *       model} (empty for a CPU-only node, as in {@code openb_node_list_all_node.csv});
 *   <li>pods: {@code cpu_milli}, {@code num_gpu} (0–8) and {@code gpu_milli} (1–1000 for one GPU,
 *       1000 for several, 0 without GPU) are required; optional, with the defaults of the trace's
 *       own converter ({@code pod_csv_to_yaml.py}) where it has one: {@code name} (absent: {@code
 *       line-N}, N the line number, zero-padded so that names sort in file order), {@code
 *       memory_mib} (absent: 0, no memory request), {@code gpu_spec} (models, {@code |}-separated;
 *       empty or absent = any), {@code creation_time} (seconds; absent: the pods arrive in file
 *       order, see {@link PodList#creationTimeGiven()}). {@code qos}, {@code pod_phase}, {@code
 *       deletion_time} and {@code scheduled_time} are not used. Some lists of the public folder
 *       (e.g. {@code openb_pod_list_multigpu50.csv}) have only {@code
 *       name,cpu_milli,memory_mib,num_gpu,gpu_milli}.
 * </ul>
 */
public final class TraceFiles {
  private TraceFiles() {}

  /** The GPU nodes of the trace. */
  public static final String NODE_FILE = "openb_node_list_gpu_node.csv";

  /** Pod lists are {@code PREFIX + NAME + ".csv"}. */
  public static final String POD_PREFIX = "openb_pod_list_";

  private static final List<String> NODE_COLUMNS =
      List.of("sn", "cpu_milli", "memory_mib", "gpu", "model");
  private static final List<String> POD_COLUMNS = List.of("cpu_milli", "num_gpu", "gpu_milli");
  private static final List<String> POD_OPTIONAL =
      List.of("name", "memory_mib", "gpu_spec", "creation_time");

  /**
   * One pod list as read.
   *
   * @param pods in file order
   * @param absentColumns the optional columns the header lacks, defaulted (in {@code name,
   *     memory_mib, gpu_spec, creation_time} order)
   */
  public record PodList(Path file, List<TracePod> pods, List<String> absentColumns) {
    public PodList {
      pods = List.copyOf(pods);
      absentColumns = List.copyOf(absentColumns);
    }

    /**
     * Whether the list has {@code creation_time}; without it every pod has creation time 0, so the
     * {@code creation_time} order is the file order.
     */
    public boolean creationTimeGiven() {
      return !absentColumns.contains("creation_time");
    }
  }

  /** The trace names ({@code NAME} of {@code openb_pod_list_NAME.csv}) in {@code dir}, sorted. */
  public static List<String> traceNames(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .map(f -> f.getFileName().toString())
          .filter(f -> f.startsWith(POD_PREFIX) && f.endsWith(".csv"))
          .map(f -> f.substring(POD_PREFIX.length(), f.length() - ".csv".length()))
          .filter(name -> !name.isEmpty())
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new TraceFormatException(dir + ": cannot list the folder (" + e.getMessage() + ")");
    }
  }

  public static Path podFile(Path dir, String name) {
    return dir.resolve(POD_PREFIX + name + ".csv");
  }

  public static List<NodeState> readNodes(Path file) {
    List<NodeState> nodes = new ArrayList<>();
    read(
        file,
        NODE_COLUMNS,
        List.of(),
        (line, row) -> {
          String name = row.text("sn");
          int cpu = (int) row.number("cpu_milli", 0, Integer.MAX_VALUE, "milli-cores, 0 or more");
          long memory = row.number("memory_mib", 0, Long.MAX_VALUE, "MiB, 0 or more");
          int gpus = (int) row.number("gpu", 0, PodSpec.MAX_GPUS, "a GPU count, 0 to 8");
          String model = row.raw("model").strip();
          if (gpus > 0 && model.isEmpty()) {
            throw row.bad("model", "a GPU model name (the node has " + gpus + " GPUs)");
          }
          nodes.add(new NodeState(name, cpu, memory, model, gpus));
        });
    if (nodes.isEmpty()) {
      throw new TraceFormatException(
          file + ": no node (only a header); expected one line per node");
    }
    return nodes;
  }

  public static PodList readPods(Path file) {
    List<TracePod> pods = new ArrayList<>();
    Map<String, Integer> columns =
        read(
            file,
            POD_COLUMNS,
            POD_OPTIONAL,
            (line, row) -> {
              String name =
                  row.has("name")
                      ? row.text("name")
                      : String.format(Locale.ROOT, "line-%010d", line);
              int cpu =
                  (int) row.number("cpu_milli", 0, Integer.MAX_VALUE, "milli-cores, 0 or more");
              long memory =
                  row.has("memory_mib")
                      ? row.number("memory_mib", 0, Long.MAX_VALUE, "MiB, 0 or more")
                      : 0;
              int numGpu = (int) row.number("num_gpu", 0, PodSpec.MAX_GPUS, "a GPU count, 0 to 8");
              int gpuMilli =
                  (int)
                      row.number(
                          "gpu_milli",
                          0,
                          PodSpec.MILLI,
                          "thousandths of a GPU, 0 to 1000 (1000 for whole GPUs, 0 without GPU)");
              String spec = row.has("gpu_spec") ? row.raw("gpu_spec").strip() : "";
              List<String> models =
                  spec.isEmpty()
                      ? List.of()
                      : Arrays.stream(spec.split("\\|")).map(String::strip).toList();
              if (models.stream().anyMatch(String::isEmpty)) {
                throw row.bad(
                    "gpu_spec", "GPU model names separated by '|', or empty for any model");
              }
              long created =
                  row.has("creation_time")
                      ? row.number("creation_time", Long.MIN_VALUE, Long.MAX_VALUE, "whole seconds")
                      : 0;
              PodSpec podSpec;
              try {
                podSpec = new PodSpec(cpu, memory, numGpu, gpuMilli, models);
              } catch (IllegalArgumentException e) {
                throw new TraceFormatException(
                    row.where("gpu_milli") + ": " + e.getMessage() + " (num_gpu " + numGpu + ")");
              }
              pods.add(new TracePod(name, podSpec, created));
            });
    if (pods.isEmpty()) {
      throw new TraceFormatException(file + ": no pod (only a header); expected one line per pod");
    }
    List<String> absent = POD_OPTIONAL.stream().filter(c -> !columns.containsKey(c)).toList();
    return new PodList(file, pods, absent);
  }

  /** One data line, its fields found by column name. */
  static final class Row {
    private final Path file;
    private final int line;
    private final Map<String, Integer> columns;
    private final List<String> fields;

    Row(Path file, int line, Map<String, Integer> columns, List<String> fields) {
      this.file = file;
      this.line = line;
      this.columns = columns;
      this.fields = fields;
    }

    boolean has(String column) {
      return columns.containsKey(column);
    }

    String raw(String column) {
      return fields.get(columns.get(column));
    }

    String where(String column) {
      return file + " line " + line + ", column " + column;
    }

    TraceFormatException bad(String column, String accepted) {
      return new TraceFormatException(
          where(column) + ": '" + raw(column) + "' given; expected " + accepted);
    }

    String text(String column) {
      String value = raw(column).strip();
      if (value.isEmpty()) {
        throw bad(column, "a name");
      }
      return value;
    }

    long number(String column, long min, long max, String accepted) {
      String value = raw(column).strip();
      try {
        long n = Long.parseLong(value);
        if (n >= min && n <= max) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw bad(column, "a whole number: " + accepted);
    }
  }

  @FunctionalInterface
  private interface RowReader {
    void accept(int line, Row row);
  }

  /** Reads {@code file}, each data line to {@code reader}; returns the header's columns. */
  private static Map<String, Integer> read(
      Path file, List<String> required, List<String> optional, RowReader reader) {
    if (!Files.isRegularFile(file)) {
      throw new TraceFormatException(
          file + ": no such file" + (Files.exists(file) ? " (not a regular file)" : ""));
    }
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String header = in.readLine();
      int lineNumber = 1;
      while (header != null && header.isBlank()) {
        header = in.readLine();
        lineNumber++;
      }
      if (header == null) {
        throw new TraceFormatException(
            file + ": empty; expected a header line with " + String.join(",", required));
      }
      List<String> names = split(stripBom(header), file, lineNumber);
      Map<String, Integer> columns = new HashMap<>();
      for (int i = 0; i < names.size(); i++) {
        String name = names.get(i).strip();
        if (columns.putIfAbsent(name, i) != null) {
          throw new TraceFormatException(
              file + " line " + lineNumber + ": column '" + name + "' appears twice");
        }
      }
      List<String> missing = required.stream().filter(c -> !columns.containsKey(c)).toList();
      if (!missing.isEmpty()) {
        throw new TraceFormatException(
            file
                + " line "
                + lineNumber
                + ": header lacks "
                + String.join(", ", missing)
                + "; header seen: '"
                + String.join(",", names)
                + "'; expected the columns "
                + String.join(",", required)
                + (optional.isEmpty() ? "" : ", optionally " + String.join(",", optional))
                + " (in any order, others ignored)");
      }
      String text;
      while ((text = in.readLine()) != null) {
        lineNumber++;
        if (text.isBlank()) {
          continue;
        }
        List<String> fields = split(text, file, lineNumber);
        if (fields.size() != names.size()) {
          throw new TraceFormatException(
              file
                  + " line "
                  + lineNumber
                  + ": "
                  + fields.size()
                  + " fields, the header has "
                  + names.size()
                  + "; expected one value per column, comma-separated");
        }
        reader.accept(lineNumber, new Row(file, lineNumber, columns, fields));
      }
      return columns;
    } catch (IOException e) {
      throw new TraceFormatException(file + ": cannot read (" + e.getMessage() + ")");
    }
  }

  private static String stripBom(String header) {
    return header.startsWith("\uFEFF") ? header.substring(1) : header;
  }

  /** Splits one CSV line; fields may be double-quoted ({@code ""} for a quote inside). */
  static List<String> split(String line, Path file, int lineNumber) {
    List<String> fields = new ArrayList<>();
    StringBuilder field = new StringBuilder();
    boolean quoted = false;
    boolean wasQuoted = false;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (quoted) {
        if (c == '"') {
          if (i + 1 < line.length() && line.charAt(i + 1) == '"') {
            field.append('"');
            i++;
          } else {
            quoted = false;
          }
        } else {
          field.append(c);
        }
      } else if (c == ',') {
        fields.add(field.toString());
        field.setLength(0);
        wasQuoted = false;
      } else if (c == '"' && field.toString().isBlank() && !wasQuoted) {
        quoted = true;
        wasQuoted = true;
        field.setLength(0);
      } else {
        field.append(c);
      }
    }
    if (quoted) {
      throw new TraceFormatException(
          file
              + " line "
              + lineNumber
              + ": a quoted field is not closed; expected a closing '\"' on the same line");
    }
    fields.add(field.toString());
    return fields;
  }
}
