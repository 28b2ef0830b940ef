package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ReadyQueueTest {
  static final Instant T = Instant.parse("2026-01-01T00:00:00Z");

  @Test
  void pods_join_the_tail_and_positions_are_one_based() {
    ReadyQueue q = ReadyQueue.EMPTY.enqueue("d", T).enqueue("b", T.plusSeconds(1));
    assertEquals("d", q.head().orElseThrow().pod());
    assertEquals(Optional.of(1), q.position("d"));
    assertEquals(Optional.of(2), q.position("b"));
    assertEquals(Optional.empty(), q.position("x"));
  }

  @Test
  void a_redelivered_demand_keeps_the_original_place() {
    ReadyQueue q = ReadyQueue.EMPTY.enqueue("a", T).enqueue("b", T.plusSeconds(1));
    assertSame(q, q.enqueue("a", T.plusSeconds(5)));
  }

  @Test
  void leaving_and_coming_back_goes_to_the_tail() {
    ReadyQueue q = ReadyQueue.EMPTY.enqueue("a", T).enqueue("b", T.plusSeconds(1));
    q = q.remove("a").enqueue("a", T.plusSeconds(2));
    assertEquals(Optional.of(2), q.position("a"));
    assertFalse(q.remove("a").contains("a"));
  }

  @Test
  void a_clock_that_stepped_back_never_jumps_the_queue() {
    ReadyQueue q = ReadyQueue.EMPTY.enqueue("a", T.plusSeconds(10)).enqueue("b", T);
    assertEquals(T.plusSeconds(10), q.entry("b").orElseThrow().enteredAt());
    assertEquals(Optional.of(2), q.position("b"));
  }
}
