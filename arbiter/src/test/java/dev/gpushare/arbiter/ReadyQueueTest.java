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

  @Test
  void a_queue_serializes_as_its_entries_oldest_first_and_reads_back_equal() throws Exception {
    com.fasterxml.jackson.databind.ObjectMapper json =
        new com.fasterxml.jackson.databind.ObjectMapper().findAndRegisterModules();
    ReadyQueue q =
        ReadyQueue.EMPTY.enqueue("a", T).enqueue("b", T.plusSeconds(1)).enqueue("c", T).remove("b");
    String written = json.writeValueAsString(q);
    assertEquals(
        "{\"entries\":[{\"pod\":\"a\",\"enteredAt\":"
            + json.writeValueAsString(T)
            + "},{\"pod\":\"c\",\"enteredAt\":"
            + json.writeValueAsString(T.plusSeconds(1))
            + "}]}",
        written,
        "the shape 0.1 wrote (a record of entries), so old snapshots read back");
    ReadyQueue read = json.readValue(written, ReadyQueue.class);
    assertEquals(q, read);
    assertEquals(Optional.of(2), read.position("c"));
    assertEquals(q.enqueue("d", T).entries(), read.enqueue("d", T).entries());
  }
}
