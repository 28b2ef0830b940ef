package dev.gpushare.http.api;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The adversarial suite's figures: per input surface, how many generated cases were tried, refused
 * (with the field named) and accepted (and found consistent). Printed after each test class and
 * written to {@code target/adversarial-figures-SUITE.txt}, for src-test/BENCHMARKS.md.
 */
final class AdversarialFigures {
  private static final int REFUSED = 0;
  private static final int ACCEPTED = 1;
  private static final Map<String, AtomicLongArray> COUNTS = new ConcurrentSkipListMap<>();

  private AdversarialFigures() {}

  static void refused(String surface) {
    counts(surface).incrementAndGet(REFUSED);
  }

  private static final Map<String, Map<Integer, Long>> STATUSES = new ConcurrentSkipListMap<>();

  /** The HTTP status a call of {@code surface} got, for the breakdown of refusals. */
  static synchronized void status(String suite, int status) {
    STATUSES.computeIfAbsent(suite, s -> new java.util.TreeMap<>()).merge(status, 1L, Long::sum);
  }

  static void accepted(String surface) {
    counts(surface).incrementAndGet(ACCEPTED);
  }

  private static AtomicLongArray counts(String surface) {
    return COUNTS.computeIfAbsent(surface, s -> new AtomicLongArray(2));
  }

  /** Prints and records the figures of the surfaces whose name starts with {@code prefix}. */
  static void report(String suite, String prefix) {
    StringBuilder text = new StringBuilder();
    long[] total = new long[2];
    COUNTS.forEach(
        (surface, c) -> {
          if (!surface.startsWith(prefix)) {
            return;
          }
          long refused = c.get(REFUSED);
          long accepted = c.get(ACCEPTED);
          if (!surface.contains("~")) { // "~": a subset of another surface's cases
            total[0] += refused;
            total[1] += accepted;
          }
          text.append(
              String.format(
                  "%s | %s | tried %d | refused %d | accepted %d%n",
                  suite, surface, refused + accepted, refused, accepted));
        });
    text.append(
        String.format(
            "%s | total | tried %d | refused %d | accepted %d%n",
            suite, total[0] + total[1], total[0], total[1]));
    Map<Integer, Long> statuses = STATUSES.get(suite);
    if (statuses != null) {
      text.append(suite).append(" | answers by status |");
      statuses.forEach((status, n) -> text.append(' ').append(status).append(": ").append(n));
      text.append(System.lineSeparator());
    }
    System.out.print(text);
    try {
      Path file = Path.of("target", "adversarial-figures-" + suite + ".txt");
      Files.createDirectories(file.getParent());
      Files.writeString(
          file,
          text,
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.TRUNCATE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
