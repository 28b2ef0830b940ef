package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;

/**
 * The server refused a request: its status and its problem ({@code application/problem+json},
 * API.md) — {@code detail} and every field error. A body that is no problem (a proxy's error page)
 * becomes a detail naming the status.
 */
final class ApiException extends RuntimeException {

  /** One bad input field, as the problem's {@code errors} list names it. */
  record FieldProblem(String field, String value, String message) {}

  private final int status;
  private final String detail;
  private final List<FieldProblem> errors;

  ApiException(int status, String detail, List<FieldProblem> errors) {
    super(status + ": " + detail);
    this.status = status;
    this.detail = detail;
    this.errors = List.copyOf(errors);
  }

  /** From an error answer: its problem JSON if it is one, else the status and the body. */
  static ApiException of(int status, String body) {
    JsonNode problem = null;
    try {
      problem = body == null || body.isBlank() ? null : Output.JSON.readTree(body);
    } catch (java.io.IOException e) {
      problem = null;
    }
    if (problem == null || !problem.isObject() || !problem.hasNonNull("detail")) {
      String text = body == null ? "" : body.strip();
      if (text.length() > 200) {
        text = text.substring(0, 200) + "…";
      }
      return new ApiException(
          status, "HTTP " + status + (text.isEmpty() ? "" : ": " + text), List.of());
    }
    List<FieldProblem> errors = new ArrayList<>();
    for (JsonNode e : problem.path("errors")) {
      errors.add(
          new FieldProblem(
              e.path("field").asText(""),
              e.hasNonNull("value") ? e.get("value").asText() : null,
              e.path("message").asText("")));
    }
    if (errors.isEmpty() && problem.hasNonNull("field")) {
      errors.add(new FieldProblem(problem.get("field").asText(), null, ""));
    }
    return new ApiException(status, problem.get("detail").asText(), errors);
  }

  int status() {
    return status;
  }

  String detail() {
    return detail;
  }

  List<FieldProblem> errors() {
    return errors;
  }

  boolean isAuth() {
    return status == 401 || status == 403;
  }
}
