package dev.gpushare.node.kube;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * Exponential back-off with jitter, capped: attempt {@code n} (from 1) waits a random time between
 * half and all of {@code min(max, initial × 2^(n−1))}, so that writers that failed together do not
 * retry together. A server's {@code Retry-After} (429) raises the wait, never above the cap.
 */
final class Backoff {
  private final Duration initial;
  private final Duration max;
  private final DoubleSupplier random;

  /**
   * @param random uniform in {@code [0, 1)}
   */
  Backoff(Duration initial, Duration max, DoubleSupplier random) {
    if (initial.isNegative() || initial.isZero()) {
      throw new IllegalArgumentException(
          "initial back-off is " + initial + "; want a duration above 0");
    }
    this.initial = initial.compareTo(max) > 0 ? max : initial;
    this.max = max;
    this.random = random;
  }

  Duration delay(int attempt, Duration retryAfter) {
    if (attempt < 1) {
      throw new IllegalArgumentException("attempt is " + attempt + "; want 1 or more");
    }
    long cap = max.toNanos();
    long base = initial.toNanos();
    for (int i = 1; i < attempt && base < cap; i++) {
      base = Math.min(cap, base * 2);
    }
    base = Math.min(cap, base);
    long jittered = base / 2 + (long) (random.getAsDouble() * (base - base / 2));
    long floor = retryAfter == null ? 0 : Math.min(cap, retryAfter.toNanos());
    return Duration.ofNanos(Math.max(jittered, floor));
  }
}
