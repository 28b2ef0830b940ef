package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Arrays;
import java.util.Optional;

/**
 * A sharing pod's state (SPEC §4). Share-pool pods move between {@code Hibernation}, {@code Ready}
 * and {@code Running}; static pods are {@code Pending} until pinned and {@code Running} from then
 * on.
 */
public enum PodState {
  HIBERNATION("Hibernation"),
  READY("Ready"),
  RUNNING("Running"),
  PENDING("Pending");

  private final String display;

  PodState(String display) {
    this.display = display;
  }

  @JsonValue
  public String display() {
    return display;
  }

  /** The state shown as {@code display} ({@code Running}, …), if any. */
  public static Optional<PodState> fromDisplay(String display) {
    return Arrays.stream(values()).filter(s -> s.display.equals(display)).findFirst();
  }

  @Override
  public String toString() {
    return display;
  }
}
