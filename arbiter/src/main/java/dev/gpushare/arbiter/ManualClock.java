package dev.gpushare.arbiter;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/** A clock that moves only when told; never backwards. Thread-safe. */
public final class ManualClock implements ArbiterClock {
  private volatile Instant now;

  public ManualClock(Instant start) {
    this.now = Objects.requireNonNull(start);
  }

  @Override
  public Instant now() {
    return now;
  }

  @Override
  public boolean manual() {
    return true;
  }

  public synchronized Instant advance(Duration by) {
    if (by.isNegative()) {
      throw new IllegalArgumentException("a clock cannot move backwards: " + by);
    }
    now = now.plus(by);
    return now;
  }

  /** Moves to {@code instant} if that is later than now; earlier instants are ignored. */
  public synchronized Instant advanceTo(Instant instant) {
    if (instant.isAfter(now)) {
      now = instant;
    }
    return now;
  }
}
