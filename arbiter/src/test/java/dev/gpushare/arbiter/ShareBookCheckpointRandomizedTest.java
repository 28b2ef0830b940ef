package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ShareBook.Checkpoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Seeded random mixes of checkpoint and signal pods, demands, releases, deletions, time, idle
 * releases and the member's reports (held, failed, restored, dropped, late), checking after every
 * settled step invariants 1–3 as the book sees them ({@link ShareBook#violations()}: no GPU above
 * 100 %, no pod both queued and holding, a suspending pod still holds its share, a held pod runs
 * only on the GPU its state is on) and that nothing waits forever: a suspension always ends by the
 * timeout.
 */
class ShareBookCheckpointRandomizedTest {

  @ParameterizedTest
  @ValueSource(longs = {3, 11, 99, 2026})
  void invariants_hold_with_checkpoints_after_every_step(long seed) {
    Random random = new Random(seed);
    Instant now = Books.T0;
    ShareBook book = Books.node(3, SharePolicy.SHARE_POOL, new QosConfig(true, 5, "0"));
    List<String> pods = new ArrayList<>();
    int created = 0;
    int suspended = 0;
    int heldGrants = 0;
    for (int step = 0; step < 8_000; step++) {
      int op = random.nextInt(100);
      if (op < 8 || pods.size() < 5) {
        String name = "p" + created++;
        int limit = 10 + random.nextInt(91);
        book =
            book.addPod(
                Books.key(name),
                PodSharing.shared(
                    SharePolicy.SHARE_POOL,
                    new Share(limit / 2, limit / 2),
                    new Share(limit, limit),
                    "c",
                    random.nextBoolean() ? PreemptionMode.CHECKPOINT : PreemptionMode.SIGNAL));
        pods.add(Books.id(name));
      } else if (op < 40) {
        String pod = pods.get(random.nextInt(pods.size()));
        if (book.state(pod) == PodState.HIBERNATION) {
          book = book.enqueue(pod, now);
        }
      } else if (op < 55) {
        String pod = pods.get(random.nextInt(pods.size()));
        if (book.state(pod) == PodState.RUNNING) {
          book = book.release(pod);
        } else if (book.state(pod) == PodState.READY) {
          book = book.withdraw(pod);
        }
      } else if (op < 60) {
        book = book.removePod(pods.remove(random.nextInt(pods.size())));
      } else if (op < 75) {
        now = now.plus(Duration.ofSeconds(random.nextInt(400)));
      } else if (op < 80) {
        // an idle release of a Running checkpoint pod
        String pod = pods.get(random.nextInt(pods.size()));
        ShareBook.Member m = book.members().get(pod);
        if (book.state(pod) == PodState.RUNNING && m.wantsCheckpoint() && m.checkpoint() == null) {
          book =
              book.suspendRequested(
                  List.of(pod), book.holdings().get(pod).gpu(), null, Checkpoint.IDLE, now);
        }
      } else {
        // the member's reports, in any order, some late
        for (String pod : List.copyOf(pods)) {
          ShareBook.Member m = book.members().get(pod);
          Checkpoint c = m == null ? null : m.checkpoint();
          if (c == null) {
            if (random.nextInt(10) == 0) {
              ShareBook late = book.suspended(pod, true, List.of(1), 1, now);
              assertEquals(book, late, "a late report changes nothing");
            }
          } else if (c.phase() == Checkpoint.Phase.SUSPENDING && random.nextBoolean()) {
            book = book.suspended(pod, random.nextInt(4) > 0, List.of(7), 1 << 20, now);
            suspended++;
          } else if (c.phase() == Checkpoint.Phase.HELD
              && book.holdings().containsKey(pod)
              && random.nextBoolean()) {
            assertEquals(c.gpu(), book.holdings().get(pod).gpu(), "granted on its own GPU");
            heldGrants++;
            book = book.checkpointCleared(pod);
          }
        }
      }
      book = book.settle(now);
      assertTrue(book.violations().isEmpty(), "step " + step + ": " + book.violations());
      for (String pod : book.suspending()) {
        Instant deadline =
            book.members().get(pod).checkpoint().since().plus(ShareBook.SUSPEND_TIMEOUT);
        assertTrue(
            book.nextTimer(now).orElseThrow().compareTo(deadline) <= 0,
            "the arbiter looks again by the deadline");
      }
      ShareBook expired = book.settle(now.plus(ShareBook.SUSPEND_TIMEOUT));
      for (String pod : book.suspending()) {
        Checkpoint then = book.members().get(pod).checkpoint();
        Checkpoint later =
            expired.members().get(pod) == null ? null : expired.members().get(pod).checkpoint();
        assertTrue(
            later == null
                || later.phase() != Checkpoint.Phase.SUSPENDING
                || later.since().isAfter(then.since()),
            "every suspension ends by the timeout (a new one may begin): " + pod);
      }
      assertTrue(expired.violations().isEmpty(), expired.violations().toString());
    }
    assertTrue(suspended > 50, "suspensions reported: " + suspended);
    assertTrue(heldGrants > 10, "held pods granted again: " + heldGrants);
  }
}
