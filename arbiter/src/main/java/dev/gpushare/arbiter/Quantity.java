package dev.gpushare.arbiter;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Kubernetes resource quantity ({@code "176"}, {@code "500m"}, {@code "1800Gi"}, {@code "1e3"}),
 * non-negative when parsed, exact (a {@link BigDecimal}) and equal by value: {@code 1Ki} equals
 * {@code 1024}.
 *
 * <p>Like Kubernetes, a quantity remembers the {@link Format} it was written in, because the same
 * number prints differently in each: memory written in {@code Gi} should come back in binary
 * suffixes, CPUs in plain numbers or millis. Arithmetic keeps the format of the first operand
 * (unless that operand is zero, as when summing from {@link #ZERO}), and {@link #format()} prints
 * what {@code kubectl get -o yaml} would show.
 */
public final class Quantity implements Comparable<Quantity> {

  /**
   * How a quantity prints; Kubernetes' {@code BinarySI}, {@code DecimalSI}, {@code
   * DecimalExponent}.
   */
  public enum Format {
    BINARY_SI,
    DECIMAL_SI,
    DECIMAL_EXPONENT
  }

  public static final Quantity ZERO = new Quantity(BigDecimal.ZERO, Format.DECIMAL_SI);

  /** What {@link #parse} accepts, for error messages. */
  public static final String ACCEPTED =
      "a non-negative decimal number (such as 2, 0.5, 1.5) optionally followed by a decimal suffix"
          + " (n, u, m, k, M, G, T, P, E), a binary suffix (Ki, Mi, Gi, Ti, Pi, Ei) or an exponent"
          + " (1e3, 5E-1), at most "
          + Long.MAX_VALUE;

  private static final Pattern SYNTAX =
      Pattern.compile(
          "\\+?(\\d+(?:\\.\\d*)?|\\.\\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\\d+)?");

  private static final Map<String, Integer> DECIMAL_EXPONENTS =
      Map.of("n", -9, "u", -6, "m", -3, "", 0, "k", 3, "M", 6, "G", 9, "T", 12, "P", 15, "E", 18);

  private static final String[] BINARY_SUFFIXES = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

  private static final Map<Integer, String> DECIMAL_SUFFIXES =
      Map.of(-9, "n", -6, "u", -3, "m", 0, "", 3, "k", 6, "M", 9, "G", 12, "T", 15, "P", 18, "E");

  private static final BigDecimal MAX = BigDecimal.valueOf(Long.MAX_VALUE);
  private static final BigInteger KIBI = BigInteger.valueOf(1024);

  /** Kubernetes keeps nano precision and rounds finer values up; so do we. */
  private static final int NANO_SCALE = 9;

  private final BigDecimal value;
  private final Format format;

  private Quantity(BigDecimal value, Format format) {
    this.value = value.scale() > NANO_SCALE ? value.setScale(NANO_SCALE, RoundingMode.UP) : value;
    this.format = format;
  }

  /**
   * Parses Kubernetes quantity text.
   *
   * @throws IllegalArgumentException naming the text and the accepted forms, when the text is not a
   *     non-negative quantity of at most {@link Long#MAX_VALUE}
   */
  public static Quantity parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("quantity is missing; want " + ACCEPTED);
    }
    Matcher m = SYNTAX.matcher(text);
    if (!m.matches()) {
      throw invalid(text);
    }
    BigDecimal number = new BigDecimal(m.group(1));
    String suffix = m.group(2) == null ? "" : m.group(2);
    BigDecimal value;
    Format format;
    if (suffix.endsWith("i")) {
      int power = indexOf(BINARY_SUFFIXES, suffix);
      value = number.multiply(new BigDecimal(KIBI.pow(power)));
      format = Format.BINARY_SI;
    } else if (DECIMAL_EXPONENTS.containsKey(suffix)) {
      value = number.scaleByPowerOfTen(DECIMAL_EXPONENTS.get(suffix));
      format = Format.DECIMAL_SI;
    } else {
      String digits = suffix.substring(1);
      // An exponent beyond this bound cannot give a value within MAX; reject before computing.
      if (digits.replaceFirst("^[+-]?0*", "").length() > 4) {
        throw invalid(text);
      }
      value = number.scaleByPowerOfTen(Integer.parseInt(digits));
      format = Format.DECIMAL_EXPONENT;
    }
    if (value.compareTo(MAX) > 0) {
      throw invalid(text);
    }
    return new Quantity(value, format);
  }

  private static IllegalArgumentException invalid(String text) {
    return new IllegalArgumentException("quantity \"" + text + "\" is not valid; want " + ACCEPTED);
  }

  private static int indexOf(String[] values, String value) {
    for (int i = 0; i < values.length; i++) {
      if (values[i].equals(value)) {
        return i;
      }
    }
    throw new IllegalStateException("unknown suffix " + value);
  }

  public BigDecimal value() {
    return value;
  }

  /** The format this quantity prints in. */
  public Format suffixFormat() {
    return format;
  }

  public Quantity plus(Quantity other) {
    return new Quantity(value.add(other.value), resultFormat(other));
  }

  /** May go below zero; see {@link #isNegative()}. */
  public Quantity minus(Quantity other) {
    return new Quantity(value.subtract(other.value), resultFormat(other));
  }

  public Quantity times(long factor) {
    return new Quantity(value.multiply(BigDecimal.valueOf(factor)), format);
  }

  /** The smaller of the two, as it is (with its own format); {@code this} when equal. */
  public Quantity min(Quantity other) {
    return other.compareTo(this) < 0 ? other : this;
  }

  public boolean isNegative() {
    return value.signum() < 0;
  }

  private Format resultFormat(Quantity other) {
    return value.signum() == 0 ? other.format : format;
  }

  /**
   * The canonical text, as Kubernetes prints it: binary quantities of at least 1024 that are whole
   * numbers use the largest binary suffix that keeps the number whole ({@code 4608Gi}, {@code
   * 6Ti}); everything else prints as the smallest whole number times a power of 1000 ({@code 144},
   * {@code 500m}, {@code 1k}, {@code 1500}), with an SI suffix or, for exponent-written quantities,
   * an exponent ({@code 1e3}).
   */
  public String format() {
    if (value.signum() == 0) {
      return "0";
    }
    String sign = value.signum() < 0 ? "-" : "";
    BigDecimal magnitude = value.abs();
    if (format == Format.BINARY_SI
        && magnitude.compareTo(BigDecimal.valueOf(1024)) >= 0
        && magnitude.stripTrailingZeros().scale() <= 0) {
      BigInteger amount = magnitude.toBigIntegerExact();
      int power = 0;
      while (power < BINARY_SUFFIXES.length - 1 && amount.mod(KIBI).signum() == 0) {
        amount = amount.divide(KIBI);
        power++;
      }
      return sign + amount + BINARY_SUFFIXES[power];
    }
    BigDecimal stripped = magnitude.stripTrailingZeros();
    int exponent = -stripped.scale();
    int shift = Math.floorMod(exponent, 3);
    BigInteger mantissa = stripped.unscaledValue().multiply(BigInteger.TEN.pow(shift));
    exponent -= shift;
    String suffix =
        format == Format.DECIMAL_EXPONENT
            ? (exponent == 0 ? "" : "e" + exponent)
            : DECIMAL_SUFFIXES.getOrDefault(exponent, "e" + exponent);
    return sign + mantissa + suffix;
  }

  @Override
  public int compareTo(Quantity other) {
    return value.compareTo(other.value);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Quantity other && value.compareTo(other.value) == 0;
  }

  @Override
  public int hashCode() {
    return Objects.hashCode(value.stripTrailingZeros());
  }

  @Override
  public String toString() {
    return format();
  }
}
