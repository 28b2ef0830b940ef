package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.List;

/**
 * How the request bodies the API reads itself ({@link GpuProcessesBody}, {@link ComputeReportBody},
 * {@link NodeMergePatch}) name what is wrong: one {@link FieldError} per field, with the field, the
 * value given and the rule, and one {@code 400} for all of them.
 */
final class BodyErrors {
  private BodyErrors() {}

  /** {@code field: 'value' given; rule} ({@code missing} for no value). */
  static FieldError error(String field, JsonNode value, String rule) {
    String shown = value == null ? null : value.isValueNode() ? value.asText() : value.toString();
    String given = shown == null ? "missing" : "'" + shown + "' given";
    return new FieldError(field, shown, field + ": " + given + "; " + rule);
  }

  /** Adds {@link #error} to {@code errors}. */
  static void add(List<FieldError> errors, String field, JsonNode value, String rule) {
    errors.add(error(field, value, rule));
  }

  /** A malformed request naming every error, the first in the detail. */
  static ServiceException malformed(List<FieldError> errors) {
    String detail =
        errors.size() == 1
            ? errors.get(0).message()
            : errors.size() + " fields are malformed: " + errors.get(0).message() + " …";
    return new ServiceException(Kind.MALFORMED, detail, errors);
  }
}
