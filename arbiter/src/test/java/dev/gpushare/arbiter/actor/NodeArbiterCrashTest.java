package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import dev.gpushare.arbiter.actor.NodeArbiter.AddPod;
import dev.gpushare.arbiter.actor.NodeArbiter.ApplyPolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.Demand;
import dev.gpushare.arbiter.actor.NodeArbiter.Event;
import dev.gpushare.arbiter.actor.NodeArbiter.GetPod;
import dev.gpushare.arbiter.actor.NodeArbiter.Granted;
import dev.gpushare.arbiter.actor.NodeArbiter.Outcome;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The arbiter's incarnation dies at each step after a decision's write — before the answer, and
 * after the answer before its followers heard it — and its supervisor starts a new one from the
 * journal (what a crashed member's successor does). Nothing acknowledged is lost, the followers
 * catch up, and every read shows exactly what the journal holds.
 */
class NodeArbiterCrashTest {
  static ActorTestKit testKit;
  static PersistenceTestKit journal;
  static int nodes;
  final ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  final AtomicBoolean dieAfterWrite = new AtomicBoolean();
  final AtomicBoolean dieBeforeFollowers = new AtomicBoolean();
  final FakePeers heard = new FakePeers();
  String node;

  /** The incarnation's followers, that die with it once armed. */
  final ArbiterPeers peers =
      new ArbiterPeers() {
        @Override
        public void changed(PodKey pod, boolean deleted) {
          crashIf(dieBeforeFollowers);
          heard.changed(pod, deleted);
        }

        @Override
        public void record(PodKey pod, PodNotice notice) {
          crashIf(dieBeforeFollowers);
          heard.record(pod, notice);
        }
      };

  /** Told after the write, before any answer: dies there once armed. */
  final ArbiterMetrics metrics =
      new ArbiterMetrics() {
        @Override
        public void roundEnded(String node, Duration elapsed) {
          crashIf(dieAfterWrite);
        }
      };

  static void crashIf(AtomicBoolean armed) {
    if (armed.compareAndSet(true, false)) {
      throw new IllegalStateException("simulated crash of this incarnation");
    }
  }

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create("arbiter-crash-test", NodeArbiterMetricsTest.CONFIG);
    journal = PersistenceTestKit.create(testKit.system());
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshNode() {
    journal.clearAll();
    node = "c" + (++nodes);
  }

  @Test
  void aCrashAfterTheWriteBeforeTheAnswerKeepsTheDecisionAndItIsNotTakenTwice() {
    ActorRef<NodeArbiter.Command> arbiter = sharePoolNode(new QosConfig(false, 120, "0"));
    ask(arbiter, r -> new AddPod(key("a"), pool(50), r));

    dieAfterWrite.set(true);
    TestProbe<Outcome> unanswered = testKit.createTestProbe();
    arbiter.tell(new Demand(key("a").entityId(), unanswered.ref()));
    unanswered.expectNoMessage(Duration.ofMillis(500));

    // The new incarnation holds the grant the journal holds; asking again changes nothing.
    Outcome read = awaitPod(arbiter, "a");
    assertEquals(PodState.RUNNING, read.status().state());
    assertEquals(0, read.status().gpu());
    Outcome again = ask(arbiter, r -> new Demand(key("a").entityId(), r));
    assertEquals(read.status().gpu(), again.status().gpu());
    assertEquals(1, grants(), "one grant in the journal");
    assertEquals(fold(), bookOf(arbiter), "the read is the journal");
  }

  @Test
  void aCrashAfterTheAnswerBeforeThePodsHeardIsCaughtUpByTheNextIncarnation() {
    ActorRef<NodeArbiter.Command> arbiter = sharePoolNode(new QosConfig(true, 10, "0"));
    ask(arbiter, r -> new AddPod(key("old"), pool(100), r));
    ask(arbiter, r -> new AddPod(key("new"), pool(100), r));
    ask(arbiter, r -> new Demand(key("old").entityId(), r));
    ask(arbiter, r -> new Demand(key("new").entityId(), r));
    Instant at = clock.advance(Duration.ofMinutes(11));
    heard.reset();

    dieBeforeFollowers.set(true);
    assertEquals(Outcome.DONE, ask(arbiter, Tick::new), "answered: the preemption is durable");

    assertEquals(PodState.RUNNING, awaitPod(arbiter, "new").status().state());
    assertEquals(PodState.READY, awaitPod(arbiter, "old").status().state());
    PodNotice victim = awaitNotice("old");
    assertEquals(List.of(PodNotes.victimEvent(key("new"), at)), victim.events());
    assertEquals(List.of(PodNotes.victimCondition(key("new"), at)), victim.conditions());
    assertEquals(List.of(PodNotes.preemptorEvent(key("old"), at)), awaitNotice("new").events());
    assertTrue(heard.changesOf(key("old").entityId()) >= 1, "the views heard of it too");
    assertEquals(fold(), bookOf(arbiter));
  }

  // ---- helpers ----

  ActorRef<NodeArbiter.Command> sharePoolNode(QosConfig qos) {
    ActorRef<NodeArbiter.Command> arbiter =
        testKit.spawn(NodeArbiter.create(node, peers, clock, metrics));
    ask(
        arbiter,
        r -> new SetGpus(List.of(new ShareBook.GpuSlot(0, "GPU-" + node + "-0", true)), r));
    ask(arbiter, r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r));
    return arbiter;
  }

  Outcome awaitPod(ActorRef<NodeArbiter.Command> arbiter, String name) {
    return ask(arbiter, r -> new GetPod(key(name).entityId(), r));
  }

  ShareBook bookOf(ActorRef<NodeArbiter.Command> arbiter) {
    TestProbe<NodeArbiter.BookView> probe = testKit.createTestProbe();
    arbiter.tell(new NodeArbiter.GetBook(probe.ref()));
    return probe.receiveMessage(Duration.ofSeconds(10)).book();
  }

  PodNotice awaitNotice(String name) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (System.nanoTime() < deadline) {
      List<PodNotice> to = heard.noticesTo(key(name).entityId());
      if (!to.isEmpty()) {
        return to.get(to.size() - 1);
      }
      Thread.onSpinWait();
    }
    throw new AssertionError("no notice for " + name + ": " + heard.notices());
  }

  long grants() {
    return events().stream().filter(e -> e instanceof Granted).count();
  }

  List<Event> events() {
    return journal.persistedInStorage(NodeArbiter.persistenceId(node).id()).stream()
        .map(e -> (Event) e)
        .toList();
  }

  ShareBook fold() {
    ShareBook book = ShareBook.empty(node);
    for (Event e : events()) {
      book = NodeArbiter.apply(book, e);
    }
    return book;
  }

  static Outcome ask(
      ActorRef<NodeArbiter.Command> arbiter, Function<ActorRef<Outcome>, NodeArbiter.Command> c) {
    TestProbe<Outcome> probe = testKit.createTestProbe();
    arbiter.tell(c.apply(probe.ref()));
    return probe.receiveMessage(Duration.ofSeconds(10));
  }

  static PodKey key(String name) {
    return new PodKey("default", name, "uid-" + name);
  }

  static PodSharing pool(int limit) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(10, 10), new Share(limit, limit), "main");
  }
}
