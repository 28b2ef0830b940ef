package dev.gpushare.arbiter;

/**
 * Why a command was refused: what kind of refusal it is and the field at fault ({@code reason}
 * names the field, the value given and what would be accepted). The API turns the kind into its
 * problem kind in one place ({@code ServiceException.refused}); nothing reads a refusal's kind out
 * of its text or its field's name.
 */
public record Refusal(Kind kind, FieldError reason) implements JsonSerializable {

  public enum Kind {
    /** The command names something that is not there (a pod not bound to the node). */
    NOT_FOUND,
    /** The current state forbids it: no room, whole GPUs held, the node shares, the pod's kind. */
    CONFLICT,
    /** The input itself breaks a rule: the pod's policy label is not the node's policy. */
    INVALID
  }

  public Refusal {
    if (kind == null || reason == null) {
      throw new IllegalArgumentException("a refusal needs a kind and a reason");
    }
  }

  public static Refusal notFound(FieldError reason) {
    return new Refusal(Kind.NOT_FOUND, reason);
  }

  public static Refusal conflict(FieldError reason) {
    return new Refusal(Kind.CONFLICT, reason);
  }

  public static Refusal invalid(FieldError reason) {
    return new Refusal(Kind.INVALID, reason);
  }

  /** The field at fault ({@link FieldError#field}). */
  public String field() {
    return reason.field();
  }

  /** What is wrong and what would be accepted ({@link FieldError#message}). */
  public String detail() {
    return reason.message();
  }
}
