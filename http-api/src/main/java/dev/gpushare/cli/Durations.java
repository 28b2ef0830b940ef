package dev.gpushare.cli;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Durations on the command line ({@code 10s}, {@code 500ms}, {@code 2m}, {@code 1h}) and in tables.
 */
final class Durations {
  private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m|h)?");

  private Durations() {}

  /** {@code N[ms|s|m|h]}, seconds without a unit. */
  static Duration parse(String value) {
    Matcher m = DURATION.matcher(value.toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new TypeConversionException(
          "'" + value + "' is not a duration; give a number with a unit: 500ms, 10s, 2m, 1h");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "s" : m.group(2);
    switch (unit) {
      case "ms":
        return Duration.ofMillis(n);
      case "m":
        return Duration.ofMinutes(n);
      case "h":
        return Duration.ofHours(n);
      default:
        return Duration.ofSeconds(n);
    }
  }

  /** For picocli. */
  static final class Converter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      return parse(value);
    }
  }

  /**
   * kubectl's short form: {@code 45s}, {@code 3m20s}, {@code 2h5m}, {@code 3d4h}; the larger unit
   * only when the smaller is zero ({@code 5m}, {@code 2h}, {@code 3d}).
   */
  static String human(long seconds) {
    if (seconds < 0) {
      return "-";
    }
    if (seconds < 60) {
      return seconds + "s";
    }
    if (seconds < 3600) {
      return pair(seconds / 60, "m", seconds % 60, "s");
    }
    if (seconds < 86400) {
      return pair(seconds / 3600, "h", seconds % 3600 / 60, "m");
    }
    return pair(seconds / 86400, "d", seconds % 86400 / 3600, "h");
  }

  private static String pair(long big, String bigUnit, long small, String smallUnit) {
    return small == 0 ? big + bigUnit : big + bigUnit + small + smallUnit;
  }
}
