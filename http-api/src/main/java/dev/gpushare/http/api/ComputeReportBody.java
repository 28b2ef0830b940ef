package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.ServiceException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The body of {@code POST /v1/namespaces/{ns}/pods/{name}/compute}, the report of a pod's compute
 * limiter ({@code libgpushare.so}, issue 26):
 *
 * <pre>
 * {"aimPercent":30,"measuredPercent":29.4,"heldSeconds":12.5}
 * </pre>
 *
 * Every field is required and a JSON number. The shape is checked here: a body that is not an
 * object, a missing field, one that is not a number, or an unknown field is a {@code 400} naming
 * every such field; the values (percentages 0 to 100, seconds at least 0) are the service's rules
 * ({@link ComputeReport#errors()}, {@code 422}).
 */
final class ComputeReportBody {
  static final String EXPECTED =
      "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":12.5} (every field a number)";

  static final List<String> KEYS = List.of("aimPercent", "measuredPercent", "heldSeconds");

  private ComputeReportBody() {}

  /** The report of a parsed body; a {@code 400} {@link ServiceException} naming bad fields. */
  static ComputeReport read(JsonNode body) {
    List<FieldError> errors = new ArrayList<>();
    if (body == null || !body.isObject()) {
      BodyErrors.add(errors, "body", body, "must be a JSON object " + EXPECTED);
      throw BodyErrors.malformed(errors);
    }
    for (Iterator<String> names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!KEYS.contains(name)) {
        BodyErrors.add(errors, name, body.get(name), "unknown field; the body is " + EXPECTED);
      }
    }
    Double aim =
        number(body, "aimPercent", "the utilisation the limiter aims at, " + PERCENT, errors);
    Double measured =
        number(
            body,
            "measuredPercent",
            "the pod's share of the GPU's time last measured, " + PERCENT,
            errors);
    Double held =
        number(
            body,
            "heldSeconds",
            "the time launches were held back, " + ComputeReport.SECONDS,
            errors);
    if (!errors.isEmpty()) {
      throw BodyErrors.malformed(errors);
    }
    return new ComputeReport(aim, measured, held);
  }

  private static final String PERCENT = ComputeReport.PERCENT;

  private static Double number(JsonNode body, String key, String what, List<FieldError> errors) {
    JsonNode v = body.get(key);
    if (v == null || v.isNull()) {
      BodyErrors.add(errors, key, null, "required: " + what);
      return null;
    }
    if (!v.isNumber()) {
      BodyErrors.add(errors, key, v, "must be a number: " + what);
      return null;
    }
    return v.doubleValue();
  }
}
