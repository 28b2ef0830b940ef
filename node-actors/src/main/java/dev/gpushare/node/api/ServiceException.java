package dev.gpushare.node.api;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.Refusal;
import java.util.List;

/**
 * A refusal the API turns into {@code application/problem+json}. Carries the HTTP-level kind, a
 * detail that names field, value and what is accepted, and the offending fields.
 */
public final class ServiceException extends RuntimeException {

  public enum Kind {
    MALFORMED(400, "Malformed request"),
    NOT_FOUND(404, "Not found"),
    CONFLICT(409, "Conflict with current state"),
    INVALID(422, "Against the rules"),
    UNAVAILABLE(503, "Not ready");

    public final int status;
    public final String title;

    Kind(int status, String title) {
      this.status = status;
      this.title = title;
    }
  }

  private final Kind kind;
  private final List<FieldError> errors;

  public ServiceException(Kind kind, String detail, List<FieldError> errors) {
    super(detail);
    this.kind = kind;
    this.errors = List.copyOf(errors);
  }

  public ServiceException(Kind kind, String detail) {
    this(kind, detail, List.of());
  }

  public static ServiceException of(Kind kind, FieldError error) {
    return new ServiceException(kind, error.message(), List.of(error));
  }

  /**
   * The API's answer to a refusal by an actor: the one place a {@link Refusal.Kind} becomes a
   * problem kind, with the refusal's field as the problem's field.
   */
  public static ServiceException refused(Refusal refusal) {
    Kind kind =
        switch (refusal.kind()) {
          case NOT_FOUND -> Kind.NOT_FOUND;
          case CONFLICT -> Kind.CONFLICT;
          case INVALID -> Kind.INVALID;
        };
    return of(kind, refusal.reason());
  }

  public static ServiceException invalid(List<FieldError> errors) {
    String detail =
        errors.size() == 1
            ? errors.get(0).message()
            : errors.size() + " fields are invalid: " + errors.get(0).message() + " …";
    return new ServiceException(Kind.INVALID, detail, errors);
  }

  public Kind kind() {
    return kind;
  }

  /** The fields at fault; the first one is reported as the problem's {@code field}. */
  public List<FieldError> errors() {
    return errors;
  }

  public String field() {
    return errors.isEmpty() ? null : errors.get(0).field();
  }
}
