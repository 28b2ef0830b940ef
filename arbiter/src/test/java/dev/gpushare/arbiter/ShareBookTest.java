package dev.gpushare.arbiter;

import static dev.gpushare.arbiter.Books.T0;
import static dev.gpushare.arbiter.Books.demand;
import static dev.gpushare.arbiter.Books.id;
import static dev.gpushare.arbiter.Books.pinned;
import static dev.gpushare.arbiter.Books.pool;
import static dev.gpushare.arbiter.Books.queueNames;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class ShareBookTest {

  static final QosConfig PREEMPT_60 = new QosConfig(true, 60, "0");

  ShareBook referenceNodeAtT1() {
    ShareBook book = Books.node(2, SharePolicy.SHARE_POOL, QosConfig.DEFAULT);
    book = pool(book, "a", 50, 50);
    book = pool(book, "b", 50, 50);
    book = pool(book, "c", 50, 100);
    book = pool(book, "d", 50, 100);
    book = demand(book, "a", T0);
    book = demand(book, "c", T0.plusSeconds(1));
    book = demand(book, "d", T0.plusSeconds(2));
    return demand(book, "b", T0.plusSeconds(3));
  }

  @Test
  void reference_example_t1_b_waits_behind_d() {
    ShareBook book = referenceNodeAtT1();
    assertEquals(0, book.holdings().get(id("a")).gpu());
    assertEquals(1, book.holdings().get(id("c")).gpu());
    assertEquals(List.of("d", "b"), queueNames(book));
    assertEquals(PodState.READY, book.state(id("b")));
    assertTrue(book.next(T0.plusSeconds(4)).isEmpty(), "the head D fits nowhere: nothing to do");
  }

  @Test
  void reference_example_t2_d_then_b_are_granted() {
    ShareBook book = referenceNodeAtT1();
    Instant t2 = T0.plusSeconds(60);
    book = book.release(id("c"));
    var first = book.next(t2).orElseThrow();
    assertEquals(new ShareBook.Grant(id("d"), 1), first, "phase 1: D gets the free GPU 1");
    book = book.apply(first, t2);
    var second = book.next(t2).orElseThrow();
    assertEquals(new ShareBook.Grant(id("b"), 0), second, "phase 2: B shares GPU 0 with A");
    book = book.apply(second, t2);
    assertTrue(book.queue().isEmpty());
    assertEquals(PodState.HIBERNATION, book.state(id("c")));
    assertTrue(book.violations().isEmpty());
  }

  @Test
  void decision_ids_are_unique_per_node() {
    ShareBook book = referenceNodeAtT1();
    assertEquals("n1#1", book.holdings().get(id("a")).decisionId());
    assertEquals("n1#2", book.holdings().get(id("c")).decisionId());
    assertEquals("n1#3", book.nextDecisionId());
  }

  @Test
  void preemption_sends_the_victim_to_the_tail_and_grants_the_head() {
    ShareBook book = Books.node(1, SharePolicy.SHARE_POOL, PREEMPT_60);
    book = pool(book, "old", 100, 100);
    book = pool(book, "new", 100, 100);
    book = pool(book, "later", 100, 100);
    book = demand(book, "old", T0);
    book = demand(book, "new", T0.plusSeconds(10));
    book = demand(book, "later", T0.plusSeconds(20));
    Instant atLimit = T0.plus(Duration.ofMinutes(60));
    assertTrue(book.next(atLimit).isEmpty(), "exactly the max duration is not more than it");
    assertEquals(book.nextTimer(atLimit).orElseThrow(), atLimit.plusSeconds(1));
    Instant after = atLimit.plusSeconds(1);
    var d = book.next(after).orElseThrow();
    assertEquals(new ShareBook.Preempt(id("new"), 0, List.of(id("old"))), d);
    book = book.apply(d, after).settle(after);
    assertEquals(PodState.RUNNING, book.state(id("new")));
    assertEquals(List.of("later", "old"), queueNames(book));
  }

  @Test
  void without_preempt_enabled_nobody_is_preempted() {
    ShareBook book = Books.node(1, SharePolicy.SHARE_POOL, QosConfig.DEFAULT);
    book = pool(book, "old", 100, 100);
    book = pool(book, "new", 100, 100);
    book = demand(book, "old", T0);
    book = demand(book, "new", T0);
    assertTrue(book.next(T0.plus(Duration.ofDays(10))).isEmpty());
    assertTrue(book.nextTimer(T0).isEmpty());
  }

  @Test
  void static_pods_are_pinned_by_requests_with_best_fit() {
    ShareBook book = Books.node(2, SharePolicy.STATIC, QosConfig.DEFAULT);
    book = pinned(book, "p", 60).settle(T0);
    book = pinned(book, "q", 30).settle(T0);
    book = pinned(book, "r", 50).settle(T0);
    assertEquals(0, book.holdings().get(id("p")).gpu());
    assertEquals(0, book.holdings().get(id("q")).gpu(), "best fit: GPU 0 is left with less room");
    assertEquals(1, book.holdings().get(id("r")).gpu());
    assertEquals(PodState.RUNNING, book.state(id("r")));
    assertTrue(book.queue().isEmpty(), "static has no queue");
  }

  @Test
  void a_fragmented_static_pod_waits_is_told_once_and_is_pinned_when_room_frees() {
    ShareBook book = Books.node(2, SharePolicy.STATIC, QosConfig.DEFAULT);
    book = pinned(book, "p", 60).settle(T0);
    book = pinned(book, "q", 60).settle(T0);
    book = pinned(book, "r", 50);
    var d = book.next(T0).orElseThrow();
    ShareBook.ReportFragmented report = assertInstanceOf(ShareBook.ReportFragmented.class, d);
    assertTrue(report.message().contains("no single GPU has room"), report.message());
    book = book.apply(d, T0);
    assertTrue(book.next(T0).isEmpty(), "reported once");
    assertEquals(PodState.PENDING, book.state(id("r")));
    assertNull(book.status(id("r")).orElseThrow().gpu());
    book = book.removePod(id("q")).settle(T0);
    assertEquals(1, book.holdings().get(id("r")).gpu());
  }
}
