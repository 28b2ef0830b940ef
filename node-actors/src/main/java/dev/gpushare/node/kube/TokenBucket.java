package dev.gpushare.node.kube;

import java.util.function.LongSupplier;

/**
 * A token bucket: {@code qps} tokens a second, at most {@code burst} saved up. Every API request
 * takes one token; {@link #reserve} says how long the caller must wait before sending. A request
 * that finds the bucket empty takes its token on credit and waits for it, so requests go out in the
 * order they asked and never faster than {@code qps} on average, and an idle writer may send {@code
 * burst} at once. The clock is injected ({@code System::nanoTime} in production) so that tests need
 * no sleeps.
 */
final class TokenBucket {
  private final double perNano;
  private final int burst;
  private final LongSupplier nanoTime;
  private double tokens;
  private long last;

  TokenBucket(double qps, int burst, LongSupplier nanoTime) {
    if (!(qps > 0) || Double.isInfinite(qps)) {
      throw new IllegalArgumentException("qps is " + qps + "; want a finite number above 0");
    }
    if (burst < 1) {
      throw new IllegalArgumentException("burst is " + burst + "; want an integer of at least 1");
    }
    this.perNano = qps / 1e9;
    this.burst = burst;
    this.nanoTime = nanoTime;
    this.tokens = burst;
    this.last = nanoTime.getAsLong();
  }

  /** Takes a token; answers how many nanoseconds to wait before using it (0: at once). */
  synchronized long reserve() {
    long now = nanoTime.getAsLong();
    tokens = Math.min(burst, tokens + (now - last) * perNano);
    last = now;
    tokens -= 1;
    return tokens >= 0 ? 0 : (long) Math.ceil(-tokens / perNano);
  }
}
