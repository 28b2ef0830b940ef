package dev.gpushare.node.api;

import dev.gpushare.arbiter.FieldError;
import java.util.ArrayList;
import java.util.List;

/**
 * What a sharing pod's {@code libgpushare.so} reports of its compute limiter ({@code POST
 * /v1/namespaces/{ns}/pods/{name}/compute}): the utilisation it aims at and last measured, in
 * percent of one GPU, and how long it has held the pod's kernel launches back in all since the
 * pod's library state began. Each report replaces the previous one; none is journaled.
 *
 * @param aimPercent the utilisation the limiter aims at, 0 to 100
 * @param measuredPercent the pod's share of the GPU's time the limiter last measured, 0 to 100
 * @param heldSeconds the time launches were held back, cumulative, at least 0
 */
public record ComputeReport(double aimPercent, double measuredPercent, double heldSeconds) {

  /** A percentage's rule, as messages give it. */
  public static final String PERCENT = "a number from 0 to 100 (percent of one GPU)";

  /** {@code heldSeconds}' rule, as messages give it. */
  public static final String SECONDS =
      "a number of seconds, at least 0 (cumulative since the pod's library state began)";

  /** What is wrong with each value, field by field (empty: a good report). */
  public List<FieldError> errors() {
    List<FieldError> errors = new ArrayList<>();
    percent("aimPercent", aimPercent, errors);
    percent("measuredPercent", measuredPercent, errors);
    if (!Double.isFinite(heldSeconds) || heldSeconds < 0) {
      errors.add(error("heldSeconds", heldSeconds, SECONDS));
    }
    return errors;
  }

  private static void percent(String field, double value, List<FieldError> errors) {
    if (!Double.isFinite(value) || value < 0 || value > 100) {
      errors.add(error(field, value, PERCENT));
    }
  }

  private static FieldError error(String field, double value, String rule) {
    String shown = text(value);
    return new FieldError(field, shown, field + ": '" + shown + "' given; expected " + rule);
  }

  /** {@code 30} for 30.0, {@code 29.4} for 29.4: as a client would have written it. */
  static String text(double value) {
    return value == Math.rint(value) && Math.abs(value) < 1e15
        ? Long.toString((long) value)
        : Double.toString(value);
  }
}
