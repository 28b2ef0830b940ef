package dev.gpushare.arbiter;

import java.util.List;
import java.util.Objects;

/**
 * The outcome of checking user input: either a value and no errors, or no value and every error
 * found (not only the first), so that a user fixes a manifest or an annotation in one go.
 */
public record Parsed<T>(T value, List<FieldError> errors) {

  public Parsed {
    errors = List.copyOf(errors);
    if (errors.isEmpty() == (value == null)) {
      throw new IllegalArgumentException(
          "a Parsed holds either a value or at least one error, got value "
              + value
              + " and errors "
              + errors);
    }
  }

  public static <T> Parsed<T> ok(T value) {
    return new Parsed<>(Objects.requireNonNull(value, "value"), List.of());
  }

  public static <T> Parsed<T> failed(List<FieldError> errors) {
    return new Parsed<>(null, errors);
  }

  public boolean ok() {
    return errors.isEmpty();
  }

  /** The errors' messages joined with {@code "; "}: for conditions, Events and problem details. */
  public String errorSummary() {
    return FieldErrors.summary(errors);
  }
}
