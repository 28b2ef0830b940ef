package dev.gpushare.http.launch;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/** Which clock the server runs on: the system clock, or a manual clock moved by the API. */
public enum ClockMode {
  SYSTEM("system"),
  MANUAL("manual");

  private final String value;

  ClockMode(String value) {
    this.value = value;
  }

  /** The value as written in {@code --clock} and {@code gpushare.clock}. */
  public String value() {
    return value;
  }

  public static Optional<ClockMode> parse(String text) {
    return Arrays.stream(values()).filter(m -> m.value.equals(text)).findFirst();
  }

  /** {@code system or manual}, for error messages. */
  public static String accepted() {
    return Arrays.stream(values()).map(ClockMode::value).collect(Collectors.joining(" or "));
  }
}
