package dev.gpushare.node.kube;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;

/**
 * Times as the API server keeps them: {@code metav1.Time} to the second ({@code
 * 2026-01-01T00:00:00Z}), {@code metav1.MicroTime} to the microsecond. Comparing at the stored
 * precision keeps a write from being repeated forever because of digits the server drops.
 */
final class KubeTimes {
  private KubeTimes() {}

  private static final DateTimeFormatter MICRO =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX").withZone(ZoneOffset.UTC);

  /** {@code metav1.Time}; {@code null} stays {@code null}. */
  static String time(Instant t) {
    return t == null ? null : t.truncatedTo(ChronoUnit.SECONDS).toString();
  }

  /** {@code metav1.MicroTime}. */
  static String microTime(Instant t) {
    return MICRO.format(t.truncatedTo(ChronoUnit.MICROS));
  }

  /** Whether two {@code metav1.Time} texts name the same second (unparsable texts: same text). */
  static boolean sameSecond(String a, String b) {
    if (a == null || b == null) {
      return a == b;
    }
    Instant x = parse(a);
    Instant y = parse(b);
    return x == null || y == null ? a.equals(b) : x.equals(y);
  }

  private static Instant parse(String text) {
    try {
      return OffsetDateTime.parse(text).toInstant().truncatedTo(ChronoUnit.SECONDS);
    } catch (DateTimeParseException e) {
      return null;
    }
  }
}
