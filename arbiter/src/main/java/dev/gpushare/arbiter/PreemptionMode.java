package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What happens to a share-pool pod's CUDA processes when it is preempted or its GPU is released for
 * idleness, from the pod annotation {@link #ANNOTATION}: {@link #SIGNAL} (the default, the contract
 * since 0.1: SIGUSR1, then SIGTERM, SIGKILL) or {@link #CHECKPOINT} (the node's member checkpoints
 * them to host memory and restores them at the pod's next grant on the same GPU, falling back to
 * the signal contract on any failure).
 */
public enum PreemptionMode {
  /** Signal the pod's processes: SIGUSR1, then SIGTERM, SIGKILL. The default. */
  SIGNAL("signal"),
  /** Checkpoint the pod's CUDA processes to host memory; restore them at the next grant. */
  CHECKPOINT("checkpoint");

  /** The pod annotation that chooses the mode; absent means {@link #SIGNAL}. */
  public static final String ANNOTATION = "gpushare.dev/preemption";

  private final String value;

  PreemptionMode(String value) {
    this.value = value;
  }

  /** The annotation value, as users write it: {@code signal} or {@code checkpoint}. */
  @JsonValue
  public String value() {
    return value;
  }

  /**
   * The mode written as {@code value}, exactly (case-sensitive, nothing trimmed).
   *
   * @throws IllegalArgumentException for any other text, naming it and the accepted values
   */
  @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
  public static PreemptionMode of(String value) {
    for (PreemptionMode mode : values()) {
      if (mode.value.equals(value)) {
        return mode;
      }
    }
    throw new IllegalArgumentException(
        "unknown preemption mode "
            + (value == null ? "null" : FieldErrors.quote(value))
            + ": want "
            + accepted());
  }

  /** {@code "checkpoint" or "signal"}: for error messages. */
  public static String accepted() {
    return FieldErrors.quote(CHECKPOINT.value) + " or " + FieldErrors.quote(SIGNAL.value);
  }

  @Override
  public String toString() {
    return value;
  }
}
