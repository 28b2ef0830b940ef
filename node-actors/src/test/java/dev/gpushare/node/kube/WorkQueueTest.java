package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The writer's work queue on a manual clock: order, window, one worker per key, back-off. */
class WorkQueueTest {
  static final long MS = 1_000_000L;

  final AtomicLong now = new AtomicLong(1_000 * MS);
  final AtomicInteger pending = new AtomicInteger();
  final WorkQueue<String> queue = new WorkQueue<>(50 * MS, 1000 * MS, now::get, pending::set);
  final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void tearDown() {
    queue.close();
    pool.shutdownNow();
  }

  /** What a worker takes now, or {@code null} when nothing is due (it would wait). */
  String takeNow() throws Exception {
    Future<WorkQueue.Taken<String>> f = pool.submit(queue::take);
    try {
      WorkQueue.Taken<String> t = f.get(300, TimeUnit.MILLISECONDS);
      return t == null ? null : t.key() + "@" + t.priority();
    } catch (TimeoutException waiting) {
      f.cancel(true);
      return null;
    }
  }

  @Test
  void nothingIsDueWithinTheWindowAndMarksFoldIntoOne() throws Exception {
    queue.mark("pod-a", 0);
    queue.mark("pod-a", 0);
    assertEquals(1, pending.get());
    assertNull(takeNow(), "within the window");
    now.addAndGet(50 * MS);
    assertEquals("pod-a@0", takeNow());
    queue.done("pod-a");
    assertEquals(0, pending.get());
    assertNull(takeNow(), "one pass for both marks");
  }

  @Test
  void dueWorkGoesInPriorityOrderThenOldestFirst() throws Exception {
    queue.mark("drift", 3);
    queue.mark("events", 2);
    queue.mark("node", 1);
    queue.mark("grant-1", 0);
    queue.mark("grant-2", 0);
    now.addAndGet(60 * MS);
    List<String> order = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      String t = takeNow();
      order.add(t);
      queue.done(t.substring(0, t.indexOf('@')));
    }
    assertEquals(List.of("grant-1@0", "grant-2@0", "node@1", "events@2", "drift@3"), order);
  }

  @Test
  void lowerPrioritiesAgeSoThatASaturatedWriterDelaysThemButNeverStarvesThem() throws Exception {
    queue.mark("node-status", 1);
    now.addAndGet(50 * MS);
    // a stream of fresh decisions: each goes first while the node status has waited < 1 s more
    queue.mark("grant-1", 0);
    now.addAndGet(50 * MS);
    assertEquals("grant-1@0", takeNow());
    queue.done("grant-1");
    now.addAndGet(1100 * MS); // the node status has now been due 1.15 s
    queue.mark("grant-2", 0);
    now.addAndGet(50 * MS);
    assertEquals("node-status@1", takeNow(), "due 1.2 s: it outranks a decision due 0 s");
    queue.done("node-status");
    assertEquals("grant-2@0", takeNow());
  }

  @Test
  void aMarkRaisesPriorityButNeverPostponesOrLowersIt() throws Exception {
    queue.mark("a", 3);
    queue.mark("b", 3);
    now.addAndGet(40 * MS);
    queue.mark("b", 0); // raised, still due at its first mark's window
    queue.mark("a", 3);
    now.addAndGet(10 * MS);
    assertEquals("b@0", takeNow());
    queue.mark("a", 5);
    assertEquals("a@3", takeNow());
  }

  @Test
  void aKeyInFlightIsNeverGivenToASecondWorker() throws Exception {
    queue.mark("pod-a", 0);
    now.addAndGet(50 * MS);
    assertEquals("pod-a@0", takeNow());
    queue.mark("pod-a", 0); // changed again while its pass runs
    now.addAndGet(50 * MS);
    assertNull(takeNow(), "not while the first pass is in flight");
    assertEquals(2, pending.get(), "waiting and in flight");
    queue.done("pod-a");
    assertEquals("pod-a@0", takeNow(), "then once more");
  }

  @Test
  void aRetryWaitsOutItsBackOffWhateverMarksCome() throws Exception {
    queue.mark("node", 1);
    now.addAndGet(50 * MS);
    assertEquals("node@1", takeNow());
    queue.retry("node", 1, 400 * MS);
    queue.done("node");
    queue.mark("node", 0);
    now.addAndGet(399 * MS);
    assertNull(takeNow(), "still backing off");
    now.addAndGet(MS);
    assertEquals("node@0", takeNow(), "then at the raised priority");
  }

  @Test
  void idleCompletesWhenNothingWaitsOrRunsAndForgetDropsWaitingWork() throws Exception {
    CompletableFuture<Done> idle = queue.idleFuture();
    assertTrue(idle.isDone());
    queue.mark("gone", 0);
    queue.mark("kept", 0);
    CompletableFuture<Done> later = queue.idleFuture();
    queue.forget("gone");
    assertFalse(later.isDone());
    now.addAndGet(50 * MS);
    assertEquals("kept@0", takeNow());
    assertFalse(later.isDone(), "in flight");
    queue.done("kept");
    assertTrue(later.isDone());
  }
}
