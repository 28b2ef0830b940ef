package dev.gpushare.arbiter;

import static dev.gpushare.arbiter.Books.T0;
import static dev.gpushare.arbiter.Books.demand;
import static dev.gpushare.arbiter.Books.id;
import static dev.gpushare.arbiter.Books.key;
import static dev.gpushare.arbiter.Books.pool;
import static dev.gpushare.arbiter.Books.queueNames;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ShareBook.Checkpoint;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Preemption and idle release of pods that asked for {@code gpushare.dev/preemption: checkpoint}.
 */
class ShareBookCheckpointTest {
  static final QosConfig PREEMPT_60 = new QosConfig(true, 60, "0");
  static final Instant AFTER = T0.plus(Duration.ofMinutes(60)).plusSeconds(1);

  static ShareBook checkpointing(ShareBook book, String name, int limit) {
    return book.addPod(
        key(name),
        PodSharing.shared(
            SharePolicy.SHARE_POOL,
            new Share(limit, limit),
            new Share(limit, limit),
            "c",
            PreemptionMode.CHECKPOINT));
  }

  /**
   * Two GPUs: {@code old} (checkpoint) on 0, {@code other} on 1, {@code new} waiting for all of
   * one.
   */
  static ShareBook twoGpus() {
    ShareBook book = Books.node(2, SharePolicy.SHARE_POOL, PREEMPT_60);
    book = checkpointing(book, "old", 100);
    book = pool(book, "other", 100, 100);
    book = pool(book, "new", 100, 100);
    book = demand(book, "old", T0);
    book = demand(book, "other", T0.plusSeconds(120));
    return demand(book, "new", T0.plusSeconds(200));
  }

  @Test
  void a_checkpoint_victim_keeps_its_share_until_the_member_reports() {
    ShareBook book = twoGpus();
    var d = book.next(AFTER).orElseThrow();
    assertEquals(new ShareBook.Suspend(id("new"), 0, List.of(id("old")), List.of(id("old"))), d);
    book = book.apply(d, AFTER);
    assertEquals(PodState.RUNNING, book.state(id("old")), "still holds GPU 0 while checkpointing");
    assertEquals(Checkpoint.Phase.SUSPENDING, book.members().get(id("old")).checkpoint().phase());
    assertEquals(List.of(id("old")), book.suspending());
    assertTrue(book.next(AFTER.plusSeconds(5)).isEmpty(), "nothing is decided meanwhile");
    assertEquals(AFTER.plus(ShareBook.SUSPEND_TIMEOUT), book.nextTimer(AFTER).orElseThrow());
    assertTrue(book.violations().isEmpty(), book.violations().toString());

    Instant reported = AFTER.plusSeconds(3);
    book = book.suspended(id("old"), true, List.of(77), 5L << 30, reported).settle(reported);
    assertEquals(PodState.RUNNING, book.state(id("new")));
    assertEquals(0, book.holdings().get(id("new")).gpu());
    assertEquals(List.of("old"), queueNames(book), "the victim is Ready at the tail");
    Checkpoint held = book.members().get(id("old")).checkpoint();
    assertEquals(
        new Checkpoint(
            Checkpoint.Phase.HELD, 0, List.of(77), 5L << 30, reported, id("new"), "preempt"),
        held);
    assertEquals(5L << 30, book.checkpointBytes());
    assertEquals(held, book.status(id("old")).orElseThrow().checkpoint());
    assertTrue(book.violations().isEmpty(), book.violations().toString());
  }

  @Test
  void a_held_pod_waits_for_its_own_gpu_even_when_another_is_free() {
    ShareBook book = twoGpus();
    book = book.apply(book.next(AFTER).orElseThrow(), AFTER);
    book = book.suspended(id("old"), true, List.of(77), 1 << 20, AFTER).settle(AFTER);
    Instant later = AFTER.plusSeconds(10);
    book = book.release(id("other")).settle(later); // GPU 1 is free, GPU 0 is new's
    assertEquals(PodState.READY, book.state(id("old")), "GPU 1 is free but the state is on GPU 0");
    book = book.release(id("new")).settle(later);
    assertEquals(PodState.RUNNING, book.state(id("old")));
    assertEquals(0, book.holdings().get(id("old")).gpu(), "restored on the GPU it had");
    assertEquals(
        Checkpoint.Phase.HELD,
        book.members().get(id("old")).checkpoint().phase(),
        "until restored");
    book = book.checkpointCleared(id("old"));
    assertNull(book.members().get(id("old")).checkpoint());
    assertEquals(0, book.checkpointBytes());
    assertTrue(book.violations().isEmpty(), book.violations().toString());
  }

  @Test
  void a_failed_checkpoint_frees_the_share_as_the_signal_contract_does() {
    ShareBook book = twoGpus();
    book = book.apply(book.next(AFTER).orElseThrow(), AFTER);
    book = book.suspended(id("old"), false, List.of(), 0, AFTER).settle(AFTER);
    assertEquals(PodState.RUNNING, book.state(id("new")));
    assertEquals(List.of("old"), queueNames(book));
    assertNull(book.members().get(id("old")).checkpoint(), "no state held: any GPU will do");
  }

  @Test
  void the_wait_for_the_member_is_bounded() {
    ShareBook book = twoGpus();
    book = book.apply(book.next(AFTER).orElseThrow(), AFTER);
    Instant expiry = AFTER.plus(ShareBook.SUSPEND_TIMEOUT);
    assertTrue(book.next(expiry.minusMillis(1)).isEmpty());
    var d = book.next(expiry).orElseThrow();
    assertEquals(new ShareBook.ExpireSuspend(List.of(id("old"))), d);
    book = book.apply(d, expiry).settle(expiry);
    assertEquals(PodState.RUNNING, book.state(id("new")));
    assertEquals(PodState.READY, book.state(id("old")));
    assertNull(book.members().get(id("old")).checkpoint());
    // a late report changes nothing
    assertEquals(book, book.suspended(id("old"), true, List.of(77), 1, expiry.plusSeconds(1)));
  }

  @Test
  void signal_victims_of_the_same_plan_are_preempted_at_once() {
    ShareBook book = Books.node(1, SharePolicy.SHARE_POOL, PREEMPT_60);
    book = checkpointing(book, "ck", 50);
    book = pool(book, "sig", 50, 50);
    book = pool(book, "new", 100, 100);
    book = demand(book, "ck", T0);
    book = demand(book, "sig", T0.plusSeconds(1));
    book = demand(book, "new", T0.plusSeconds(2));
    Instant after = T0.plus(Duration.ofMinutes(61));
    var d = (ShareBook.Suspend) book.next(after).orElseThrow();
    assertEquals(List.of(id("ck")), d.checkpointed());
    book = book.apply(d, after);
    assertEquals(PodState.READY, book.state(id("sig")));
    assertEquals(PodState.RUNNING, book.state(id("ck")));
    assertTrue(book.next(after).isEmpty(), "new waits for ck's checkpoint");
    book = book.suspended(id("ck"), true, List.of(5), 100, after).settle(after);
    assertEquals(PodState.RUNNING, book.state(id("new")));
    assertEquals(List.of("sig", "ck"), queueNames(book));
  }

  @Test
  void an_idle_release_checkpoints_into_hibernation_and_a_pods_own_release_cancels_it() {
    ShareBook book = Books.node(1, SharePolicy.SHARE_POOL, QosConfig.DEFAULT);
    book = checkpointing(book, "nb", 30);
    book = demand(book, "nb", T0);
    book = book.suspendRequested(List.of(id("nb")), 0, null, Checkpoint.IDLE, T0.plusSeconds(5));
    book =
        book.suspended(id("nb"), true, List.of(9), 42, T0.plusSeconds(6)).settle(T0.plusSeconds(6));
    assertEquals(PodState.HIBERNATION, book.state(id("nb")));
    assertEquals(42, book.checkpointBytes());

    ShareBook other = Books.node(1, SharePolicy.SHARE_POOL, QosConfig.DEFAULT);
    other = checkpointing(other, "nb", 30);
    other = demand(other, "nb", T0);
    other = other.suspendRequested(List.of(id("nb")), 0, null, Checkpoint.IDLE, T0);
    other = other.release(id("nb"));
    assertNull(other.members().get(id("nb")).checkpoint(), "the member's report will be refused");
    assertTrue(other.violations().isEmpty(), other.violations().toString());
  }
}
