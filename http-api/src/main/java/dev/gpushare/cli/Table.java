package dev.gpushare.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * A kubectl-style table: upper-case headers, cells left-aligned, columns three spaces apart, no
 * trailing blanks. An empty or null cell prints as {@code -}.
 */
final class Table {
  private static final String GAP = "   ";

  private final List<String> headers;
  private final List<List<String>> rows = new ArrayList<>();

  Table(String... headers) {
    this.headers = List.of(headers);
  }

  Table row(Object... cells) {
    if (cells.length != headers.size()) {
      throw new IllegalArgumentException(
          cells.length + " cells for " + headers.size() + " columns " + headers);
    }
    List<String> row = new ArrayList<>();
    for (Object c : cells) {
      String s = c == null ? "" : c.toString();
      row.add(s.isEmpty() ? "-" : s);
    }
    rows.add(row);
    return this;
  }

  boolean isEmpty() {
    return rows.isEmpty();
  }

  /** The lines, each ending with a newline; {@code indent} before each. */
  String render(String indent) {
    int[] width = new int[headers.size()];
    for (int i = 0; i < width.length; i++) {
      width[i] = headers.get(i).length();
      for (List<String> row : rows) {
        width[i] = Math.max(width[i], row.get(i).length());
      }
    }
    StringBuilder out = new StringBuilder();
    line(out, indent, headers, width);
    for (List<String> row : rows) {
      line(out, indent, row, width);
    }
    return out.toString();
  }

  String render() {
    return render("");
  }

  private static void line(StringBuilder out, String indent, List<String> cells, int[] width) {
    StringBuilder line = new StringBuilder(indent);
    for (int i = 0; i < cells.size(); i++) {
      String cell = cells.get(i);
      line.append(cell);
      if (i < cells.size() - 1) {
        line.append(" ".repeat(width[i] - cell.length())).append(GAP);
      }
    }
    out.append(line.toString().stripTrailing()).append('\n');
  }
}
