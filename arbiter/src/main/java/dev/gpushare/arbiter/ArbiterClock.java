package dev.gpushare.arbiter;

import java.time.Instant;

/**
 * The one injectable clock. Production uses {@link #system()}; tests and the simulator use a {@link
 * ManualClock}, whose time moves only when told.
 */
public interface ArbiterClock {
  Instant now();

  /** Whether time moves only when told (then timers are driven by whoever advances it). */
  boolean manual();

  static ArbiterClock system() {
    return new ArbiterClock() {
      @Override
      public Instant now() {
        return Instant.now();
      }

      @Override
      public boolean manual() {
        return false;
      }
    };
  }
}
