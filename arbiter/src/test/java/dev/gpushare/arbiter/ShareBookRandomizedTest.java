package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Drives one node's book through seeded random mixes of demand, release, delete, clock advance,
 * config change and new pods, and checks ARCHITECTURE.md invariants 1–3 after every step, against
 * an independent record of what the test did:
 *
 * <ol>
 *   <li>no GPU above 100 % of core or memory limits;
 *   <li>a pod holds at most one grant, and a grant is neither lost (a Running pod stays Running on
 *       the same GPU until it releases, is deleted or is preempted) nor duplicated;
 *   <li>the queue is FIFO by the time of entering Ready: the relative order of waiting pods never
 *       changes and newcomers join the tail;
 * </ol>
 *
 * and that the arbiter is never idle while it has something to do: after settling, the head fits no
 * GPU and, with preemption on, no candidate set would make room.
 */
class ShareBookRandomizedTest {

  @ParameterizedTest
  @ValueSource(longs = {1, 7, 42, 2026})
  void invariants_hold_after_every_step_of_12000_random_operations(long seed) {
    Random random = new Random(seed);
    Instant now = Books.T0;
    ShareBook book = Books.node(4, SharePolicy.SHARE_POOL, new QosConfig(true, 30, "0"));
    List<String> pods = new ArrayList<>();
    int created = 0;
    int preemptions = 0;
    int grants = 0;
    for (int step = 0; step < 12_000; step++) {
      ShareBook before = book;
      List<String> released = new ArrayList<>();
      int op = random.nextInt(100);
      if (op < 8 || pods.size() < 6) {
        String name = "p" + created++;
        int request = 1 + random.nextInt(100);
        int limit = request + random.nextInt(101 - request);
        book = Books.pool(book, name, request, limit);
        pods.add(Books.id(name));
      } else if (op < 50) {
        String pod = pods.get(random.nextInt(pods.size()));
        if (book.state(pod) == PodState.HIBERNATION) {
          book = book.enqueue(pod, now);
        }
      } else if (op < 75) {
        String pod = pods.get(random.nextInt(pods.size()));
        if (book.state(pod) == PodState.RUNNING) {
          book = book.release(pod);
          released.add(pod);
        } else if (book.state(pod) == PodState.READY) {
          book = book.withdraw(pod);
        }
      } else if (op < 82) {
        String pod = pods.remove(random.nextInt(pods.size()));
        book = book.removePod(pod);
        released.add(pod);
      } else if (op < 95) {
        now = now.plus(Duration.ofMinutes(random.nextInt(20)));
      } else {
        book =
            book.withPolicy(
                SharePolicy.SHARE_POOL,
                new QosConfig(random.nextBoolean(), 1 + random.nextInt(60), "0"));
      }
      ShareBook changed = book;
      ShareBook settled = changed;
      for (var d = settled.next(now); d.isPresent(); d = settled.next(now)) {
        if (d.get() instanceof ShareBook.Preempt p) {
          preemptions++;
          released.addAll(p.victims());
          for (String victim : p.victims()) {
            assertTrue(
                Preemption.isCandidate(
                    settled.holdings().get(victim).since(), now, settled.qos().podMaxDuration()),
                "step " + step + ": a victim must have run longer than the max duration");
          }
        } else if (d.get() instanceof ShareBook.Grant g) {
          grants++;
          assertEquals(
              settled.queue().head().orElseThrow().pod(), g.pod(), "only the head is granted");
        }
        settled = settled.apply(d.get(), now);
      }
      book = settled;
      check(step, before, changed, book, released, now);
    }
    assertTrue(grants > 1000, "the mix exercised grants: " + grants);
    assertTrue(preemptions > 20, "the mix exercised preemption: " + preemptions);
  }

  private static void check(
      int step,
      ShareBook before,
      ShareBook changed,
      ShareBook after,
      List<String> released,
      Instant now) {
    List<String> violations = after.violations();
    if (!violations.isEmpty()) {
      fail("step " + step + ": " + violations);
    }
    // 2: grants are not lost
    before
        .holdings()
        .forEach(
            (pod, h) -> {
              if (!released.contains(pod)) {
                ShareBook.Holding now2 = after.holdings().get(pod);
                if (now2 == null
                    || now2.gpu() != h.gpu()
                    || !now2.decisionId().equals(h.decisionId())) {
                  fail("step " + step + ": grant of " + pod + " was lost or moved");
                }
              }
            });
    // 2: decision ids are not duplicated
    Map<String, String> byDecision = new HashMap<>();
    after
        .holdings()
        .forEach(
            (pod, h) -> {
              String other = byDecision.put(h.decisionId(), pod);
              if (other != null) {
                fail("step " + step + ": decision " + h.decisionId() + " held twice");
              }
            });
    // 3: FIFO: survivors keep their relative order; newcomers are at the tail
    List<String> oldOrder = changed.queue().entries().stream().map(ReadyQueue.Entry::pod).toList();
    List<String> newOrder = after.queue().entries().stream().map(ReadyQueue.Entry::pod).toList();
    List<String> survivors = newOrder.stream().filter(oldOrder::contains).toList();
    List<String> expected = oldOrder.stream().filter(newOrder::contains).toList();
    assertEquals(expected, survivors, "step " + step + ": queue order changed");
    assertEquals(
        survivors,
        newOrder.subList(0, survivors.size()),
        "step " + step + ": newcomer not at tail");
    // nothing left undone
    after
        .queue()
        .head()
        .ifPresent(
            head -> {
              Share limits = after.members().get(head.pod()).shared().limits();
              assertTrue(
                  Placement.bestFit(after.loads(), limits).isEmpty(),
                  "step " + step + ": the head fits but waits");
              if (after.qos().preemptEnabled()) {
                assertTrue(
                    Preemption.choose(
                            after.loads(),
                            after.runningSince(),
                            limits,
                            now,
                            after.qos().podMaxDuration())
                        .filter(p -> !p.victims().isEmpty())
                        .isEmpty(),
                    "step " + step + ": a preemption was due but not made");
              }
            });
  }
}
