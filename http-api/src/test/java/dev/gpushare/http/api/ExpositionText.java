package dev.gpushare.http.api;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A strict parser of the Prometheus text format 0.0.4, for tests: {@code # HELP} and {@code # TYPE}
 * lines, and samples {@code name{label="value",...} value}, label values unescaped ({@code \\},
 * {@code \"}, {@code \n}). Anything else fails the parse, so a test that parses a scrape also
 * checks that it is well-formed: every sample belongs to a family declared by a {@code # TYPE} line
 * before it ({@code _total}, {@code _bucket}, {@code _count}, {@code _sum} of counters and
 * histograms), and no family is declared twice.
 */
final class ExpositionText {

  record Sample(String name, Map<String, String> labels, double value) {}

  final Map<String, String> types = new LinkedHashMap<>();
  final Map<String, String> helps = new LinkedHashMap<>();
  final List<Sample> samples = new ArrayList<>();

  static ExpositionText parse(String text) {
    ExpositionText parsed = new ExpositionText();
    int lineNo = 0;
    for (String line : text.split("\n", -1)) {
      lineNo++;
      if (line.isEmpty()) {
        continue;
      }
      try {
        parsed.line(line);
      } catch (RuntimeException e) {
        throw new IllegalArgumentException("line " + lineNo + ": " + e.getMessage() + ": " + line);
      }
    }
    if (!text.isEmpty() && !text.endsWith("\n")) {
      throw new IllegalArgumentException("the text does not end with a newline");
    }
    return parsed;
  }

  private void line(String line) {
    if (line.startsWith("# HELP ")) {
      String rest = line.substring("# HELP ".length());
      int space = rest.indexOf(' ');
      helps.put(
          space < 0 ? rest : rest.substring(0, space), space < 0 ? "" : rest.substring(space + 1));
      return;
    }
    if (line.startsWith("# TYPE ")) {
      String[] parts = line.substring("# TYPE ".length()).split(" ");
      if (parts.length != 2
          || !List.of("counter", "gauge", "histogram", "summary", "untyped").contains(parts[1])) {
        throw new IllegalArgumentException("bad TYPE");
      }
      if (types.put(parts[0], parts[1]) != null) {
        throw new IllegalArgumentException("family declared twice");
      }
      return;
    }
    if (line.startsWith("#")) {
      return;
    }
    int i = 0;
    while (i < line.length()
        && (Character.isLetterOrDigit(line.charAt(i))
            || line.charAt(i) == '_'
            || line.charAt(i) == ':')) {
      i++;
    }
    String name = line.substring(0, i);
    if (name.isEmpty() || Character.isDigit(name.charAt(0))) {
      throw new IllegalArgumentException("bad metric name");
    }
    Map<String, String> labels = new TreeMap<>();
    if (i < line.length() && line.charAt(i) == '{') {
      i++;
      while (line.charAt(i) != '}') {
        int eq = line.indexOf('=', i);
        String label = line.substring(i, eq);
        if (!label.matches("[a-zA-Z_][a-zA-Z0-9_]*")) {
          throw new IllegalArgumentException("bad label name " + label);
        }
        if (line.charAt(eq + 1) != '"') {
          throw new IllegalArgumentException("label value not quoted");
        }
        StringBuilder value = new StringBuilder();
        int j = eq + 2;
        for (; line.charAt(j) != '"'; j++) {
          char c = line.charAt(j);
          if (c == '\\') {
            char next = line.charAt(++j);
            value.append(next == 'n' ? '\n' : next);
            if (next != 'n' && next != '\\' && next != '"') {
              throw new IllegalArgumentException("bad escape \\" + next);
            }
          } else {
            value.append(c);
          }
        }
        if (labels.put(label, value.toString()) != null) {
          throw new IllegalArgumentException("label " + label + " twice");
        }
        i = j + 1;
        if (line.charAt(i) == ',') {
          i++;
        }
      }
      i++;
    }
    if (line.charAt(i) != ' ') {
      throw new IllegalArgumentException("no space before the value");
    }
    String[] rest = line.substring(i + 1).split(" ");
    double value = parseValue(rest[0]);
    if (family(name).isEmpty()) {
      throw new IllegalArgumentException("sample of no declared family: " + name);
    }
    samples.add(new Sample(name, Map.copyOf(labels), value));
  }

  private static double parseValue(String v) {
    switch (v) {
      case "+Inf":
        return Double.POSITIVE_INFINITY;
      case "-Inf":
        return Double.NEGATIVE_INFINITY;
      case "NaN":
        return Double.NaN;
      default:
        return Double.parseDouble(v);
    }
  }

  /** The declared family a sample name belongs to. */
  Optional<String> family(String sample) {
    if (types.containsKey(sample)) {
      return Optional.of(sample);
    }
    for (String suffix : List.of("_total", "_bucket", "_count", "_sum", "_created")) {
      if (sample.endsWith(suffix)) {
        String base = sample.substring(0, sample.length() - suffix.length());
        if (types.containsKey(base)) {
          return Optional.of(base);
        }
      }
    }
    return Optional.empty();
  }

  /** The samples named {@code name} whose labels include {@code labels} (name, value, ...). */
  List<Sample> find(String name, String... labels) {
    List<Sample> found = new ArrayList<>();
    for (Sample s : samples) {
      if (!s.name().equals(name)) {
        continue;
      }
      boolean match = true;
      for (int k = 0; k < labels.length; k += 2) {
        if (!labels[k + 1].equals(s.labels().get(labels[k]))) {
          match = false;
        }
      }
      if (match) {
        found.add(s);
      }
    }
    return found;
  }

  /** The value of the one sample named {@code name} with exactly these labels. */
  double value(String name, String... labels) {
    Map<String, String> wanted = new TreeMap<>();
    for (int k = 0; k < labels.length; k += 2) {
      wanted.put(labels[k], labels[k + 1]);
    }
    List<Sample> found =
        samples.stream().filter(s -> s.name().equals(name) && s.labels().equals(wanted)).toList();
    if (found.size() != 1) {
      throw new AssertionError(
          found.size() + " samples " + name + wanted + " in:\n" + String.join("\n", names()));
    }
    return found.get(0).value();
  }

  /** Whether a sample named {@code name} with exactly these labels exists. */
  boolean has(String name, String... labels) {
    Map<String, String> wanted = new TreeMap<>();
    for (int k = 0; k < labels.length; k += 2) {
      wanted.put(labels[k], labels[k + 1]);
    }
    return samples.stream().anyMatch(s -> s.name().equals(name) && s.labels().equals(wanted));
  }

  private List<String> names() {
    return samples.stream().map(s -> s.name() + s.labels() + " " + s.value()).toList();
  }
}
