package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
  static final Duration INITIAL = Duration.ofMillis(100);
  static final Duration MAX = Duration.ofSeconds(30);

  /** To the millisecond: a jitter just below 1 takes 99.99995 ms of 100. */
  static void assertEqualsMs(long expected, double actualMs) {
    assertEquals(expected, Math.round(actualMs));
  }

  static void assertEqualsMs(long expected, double actualMs, String message) {
    assertEquals(expected, Math.round(actualMs), message);
  }

  @Test
  void doublesFromTheInitialWaitUpToTheCap() {
    Backoff full = new Backoff(INITIAL, MAX, () -> 0.999999);
    assertEqualsMs(100, full.delay(1, null).toNanos() / 1e6);
    assertEqualsMs(200, full.delay(2, null).toNanos() / 1e6);
    assertEqualsMs(400, full.delay(3, null).toNanos() / 1e6);
    assertEqualsMs(25_600, full.delay(9, null).toNanos() / 1e6);
    assertEqualsMs(30_000, full.delay(10, null).toNanos() / 1e6);
    assertEqualsMs(30_000, full.delay(1_000, null).toNanos() / 1e6, "no overflow");
  }

  @Test
  void jitterTakesBetweenHalfAndAllOfTheWait() {
    assertEqualsMs(200, new Backoff(INITIAL, MAX, () -> 0.0).delay(3, null).toNanos() / 1e6);
    assertEqualsMs(300, new Backoff(INITIAL, MAX, () -> 0.5).delay(3, null).toNanos() / 1e6);
  }

  @Test
  void retryAfterRaisesTheWaitButNotAboveTheCap() {
    Backoff b = new Backoff(INITIAL, MAX, () -> 0.0);
    assertEqualsMs(5_000, b.delay(1, Duration.ofSeconds(5)).toNanos() / 1e6);
    assertEqualsMs(30_000, b.delay(1, Duration.ofMinutes(5)).toNanos() / 1e6);
  }

  @Test
  void aCapBelowTheInitialWaitIsTheWait() {
    assertEqualsMs(
        50,
        new Backoff(INITIAL, Duration.ofMillis(50), () -> 0.999999).delay(1, null).toNanos() / 1e6);
  }
}
