package dev.gpushare.arbiter;

import java.util.List;
import java.util.stream.Collectors;

/**
 * Builds {@link FieldError}s whose message stands on its own: it names the field, the value given
 * and what would be accepted, so that it reads correctly in a condition, an Event or a log line
 * where the other two parts of the error are not shown.
 */
public final class FieldErrors {
  private FieldErrors() {}

  /**
   * @param given the value as the user wrote it, {@code null} when absent
   * @param accepted what would be accepted, as a phrase ({@code "an integer from 1 to 100"})
   */
  public static FieldError of(String field, String given, String accepted) {
    String what = given == null ? "is missing" : "is " + quote(given);
    return new FieldError(field, given, field + " " + what + "; want " + accepted);
  }

  /**
   * Like {@link #of} for a value taken from JSON: {@code jsonText} is shown as JSON, so that the
   * string {@code "120"} and the number {@code 120} read differently.
   */
  public static FieldError ofJson(String field, String jsonText, String accepted) {
    return new FieldError(field, jsonText, field + " is " + jsonText + "; want " + accepted);
  }

  /** The messages joined with {@code "; "}, in order. */
  public static String summary(List<FieldError> errors) {
    return errors.stream().map(FieldError::message).collect(Collectors.joining("; "));
  }

  static String quote(String text) {
    return "\"" + text + "\"";
  }
}
