package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The rate limit, on a clock the test moves. */
class TokenBucketTest {
  final AtomicLong now = new AtomicLong(1_000_000_000L);

  TokenBucket bucket(double qps, int burst) {
    return new TokenBucket(qps, burst, now::get);
  }

  /** Takes a token and waits as told (moves the clock). Answers the wait in milliseconds. */
  long send(TokenBucket b) {
    long wait = b.reserve();
    now.addAndGet(wait);
    return TimeUnit.NANOSECONDS.toMillis(wait);
  }

  @Test
  void anIdleWriterSendsABurstAtOnceThenQpsOnAverage() {
    TokenBucket b = bucket(20, 40);
    for (int i = 0; i < 40; i++) {
      assertEquals(0, send(b), "request " + (i + 1) + " of the burst");
    }
    for (int i = 0; i < 20; i++) {
      assertEquals(50, send(b), "after the burst, one every 50 ms at 20 QPS");
    }
  }

  @Test
  void idleTimeRefillsTheBucketButNeverAboveTheBurst() {
    TokenBucket b = bucket(20, 40);
    for (int i = 0; i < 40; i++) {
      send(b);
    }
    now.addAndGet(TimeUnit.SECONDS.toNanos(1)); // 20 tokens back
    for (int i = 0; i < 20; i++) {
      assertEquals(0, send(b));
    }
    assertEquals(50, send(b));

    now.addAndGet(TimeUnit.HOURS.toNanos(1)); // full, but only 40
    for (int i = 0; i < 40; i++) {
      assertEquals(0, send(b));
    }
    assertEquals(50, send(b));
  }

  @Test
  void requestsThatAskTogetherWaitInTurn() {
    TokenBucket b = bucket(10, 1);
    assertEquals(0, b.reserve());
    // three callers ask at the same instant: each waits one period more than the one before
    assertEquals(100, TimeUnit.NANOSECONDS.toMillis(b.reserve()));
    assertEquals(200, TimeUnit.NANOSECONDS.toMillis(b.reserve()));
    assertEquals(300, TimeUnit.NANOSECONDS.toMillis(b.reserve()));
  }

  @Test
  void nonsenseSettingsAreRefusedByName() {
    assertEquals(
        "qps is 0.0; want a finite number above 0",
        assertThrows(IllegalArgumentException.class, () -> bucket(0, 1)).getMessage());
    assertEquals(
        "burst is 0; want an integer of at least 1",
        assertThrows(IllegalArgumentException.class, () -> bucket(1, 0)).getMessage());
  }
}
