package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonValue;

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

  @Override
  public String toString() {
    return display;
  }
}
