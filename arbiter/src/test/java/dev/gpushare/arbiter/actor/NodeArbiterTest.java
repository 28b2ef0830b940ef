package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.ReadyQueue;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerEntry;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import dev.gpushare.arbiter.actor.NodeArbiter.AddPod;
import dev.gpushare.arbiter.actor.NodeArbiter.ApplyPolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.BookView;
import dev.gpushare.arbiter.actor.NodeArbiter.BoundPod;
import dev.gpushare.arbiter.actor.NodeArbiter.Command;
import dev.gpushare.arbiter.actor.NodeArbiter.Demand;
import dev.gpushare.arbiter.actor.NodeArbiter.Enqueued;
import dev.gpushare.arbiter.actor.NodeArbiter.Event;
import dev.gpushare.arbiter.actor.NodeArbiter.GetBook;
import dev.gpushare.arbiter.actor.NodeArbiter.GpusSet;
import dev.gpushare.arbiter.actor.NodeArbiter.Granted;
import dev.gpushare.arbiter.actor.NodeArbiter.Outcome;
import dev.gpushare.arbiter.actor.NodeArbiter.PinDeferred;
import dev.gpushare.arbiter.actor.NodeArbiter.Pinned;
import dev.gpushare.arbiter.actor.NodeArbiter.PodAdded;
import dev.gpushare.arbiter.actor.NodeArbiter.PodRemoved;
import dev.gpushare.arbiter.actor.NodeArbiter.PolicyApplied;
import dev.gpushare.arbiter.actor.NodeArbiter.Preempted;
import dev.gpushare.arbiter.actor.NodeArbiter.Reconcile;
import dev.gpushare.arbiter.actor.NodeArbiter.Release;
import dev.gpushare.arbiter.actor.NodeArbiter.Released;
import dev.gpushare.arbiter.actor.NodeArbiter.RemovePod;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import dev.gpushare.arbiter.actor.NodeArbiter.Withdrawn;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResult;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NodeArbiter actor against in-memory peers ({@link FakePeers}), with the
 * EventSourcedBehaviorTestKit: every command, event and the state go through Jackson.
 *
 * <p>The arbiter answers a command only when the round it started has ended (each step is an
 * asynchronous call piped back to itself). The kit fits that: {@code runCommand(replyTo -> …)}
 * waits for the reply (up to {@code single-expect-default}, 10 s here), then reads the state and
 * every event persisted since the command was sent, so a result holds the whole round. Internal
 * step results ({@code StepDone}, which carry a {@code Supplier}) never go through {@code
 * runCommand}, so they are not serialized; they never leave the actor.
 */
class NodeArbiterTest {
  static final String NODE = "n1";
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  static final Config CONFIG =
      ConfigFactory.parseString(
              "pekko.loglevel = WARNING\n"
                  + "pekko.actor.testkit.typed.single-expect-default = 10s\n"
                  + "pekko.actor.serialization-bindings {\n"
                  + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                  + "}\n")
          .withFallback(EventSourcedBehaviorTestKit.config());

  static ActorTestKit testKit;
  static final FakePeers peers = new FakePeers();
  static final ManualClock clock = new ManualClock(T0);
  static EventSourcedBehaviorTestKit<Command, Event, ShareBook> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("node-arbiter-test", CONFIG);
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(), NodeArbiter.create(NODE, peers, clock));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshArbiterAndPeers() {
    kit.clear();
    peers.reset();
  }

  // ---- node set-up ----

  @Test
  void setGpusAndApplyPolicyArePersistedOnceAndAnsweredDone() {
    CommandResultWithReply<Command, Event, ShareBook, Outcome> set =
        run(r -> new SetGpus(gpus(2), r));
    assertEquals(Outcome.DONE, set.reply());
    assertEquals(List.of(new GpusSet(gpus(2))), set.events());
    assertEquals(gpus(2), set.state().gpus());

    assertTrue(run(r -> new SetGpus(gpus(2), r)).hasNoEvents(), "the same GPUs again");

    QosConfig qos = new QosConfig(true, 30, "1Ti");
    CommandResultWithReply<Command, Event, ShareBook, Outcome> apply =
        run(r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r));
    assertEquals(Outcome.DONE, apply.reply());
    assertEquals(List.of(new PolicyApplied(SharePolicy.SHARE_POOL, qos)), apply.events());
    assertEquals(SharePolicy.SHARE_POOL, apply.state().policy());
    assertEquals(qos, apply.state().qos());

    assertTrue(
        run(r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r)).hasNoEvents(),
        "the same policy again");
  }

  @Test
  void anAddedSharePoolPodStartsInHibernationAndIsToldSo() {
    sharePoolNode(1, QosConfig.DEFAULT);
    CommandResultWithReply<Command, Event, ShareBook, Outcome> add =
        run(r -> new AddPod(key("a"), pool(50, 50), r));

    assertEquals(List.of(new PodAdded(key("a"), pool(50, 50))), add.events());
    assertStatus(add.reply(), PodState.HIBERNATION, null);
    assertTrue(add.state().isMember(id("a")));
    assertEquals(add.reply().status(), peers.lastNoticeTo(id("a")).status());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> again =
        run(r -> new AddPod(key("a"), pool(50, 50), r));
    assertTrue(again.hasNoEvents());
    assertStatus(again.reply(), PodState.HIBERNATION, null);
  }

  // ---- share-pool ----

  @Test
  void demandOnAFreeGpuIsEnqueuedThenGrantedAndReservedOnTheGpu() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(30, 40));
    Instant now = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("a");

    assertEquals(
        List.of(new Enqueued(id("a"), now), new Granted("n1#1", id("a"), 0, now)), demand.events());
    assertStatus(demand.reply(), PodState.RUNNING, 0);
    assertEquals(uuid(0), demand.reply().status().gpuUuid());
    assertEquals(now, demand.reply().status().since());
    ShareBook.Holding holding = demand.state().holdings().get(id("a"));
    assertEquals(new ShareBook.Holding("n1#1", 0, new Share(40, 40), now, false), holding);
    assertEquals(
        Map.of(uuid(0), Map.of("n1#1", new LedgerEntry(id("a"), new Share(40, 40)))),
        peers.ledgers(),
        "the GPU holds the pod's limits under the grant's decision id");
    assertEquals(
        List.of(PodState.HIBERNATION, PodState.RUNNING),
        states(peers.noticesTo(id("a"))),
        "granted at once: Enqueued and Granted are one write, and the pod is told once");
    assertLedgersMatchTheBook();
  }

  @Test
  void aDemandBehindOthersIsToldItIsReadyThenRunning() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(60, 60));
    add("b", pool(60, 60));
    demand("a");
    Instant queued = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> b = demand("b");
    assertEquals(List.of(new Enqueued(id("b"), queued)), b.events(), "no room: queued alone");
    assertStatus(b.reply(), PodState.READY, null);

    clock.advance(Duration.ofSeconds(5));
    release("a");
    assertEquals(
        List.of(PodState.HIBERNATION, PodState.READY, PodState.RUNNING),
        states(peers.noticesTo(id("b"))),
        "a pod that waits hears each step");
  }

  /** SPEC §5 "The reference example (must be reproduced exactly)". */
  @Test
  void theReferenceExampleOfSpecSection5IsReproducedExactly() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    add("b", pool(50, 50));
    add("c", pool(50, 100));
    add("d", pool(50, 100));
    Instant t1 = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> a = demand("a");
    assertEquals(
        List.of(new Enqueued(id("a"), t1), new Granted("n1#1", id("a"), 0, t1)), a.events());
    assertStatus(a.reply(), PodState.RUNNING, 0);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> c = demand("c");
    assertEquals(
        List.of(new Enqueued(id("c"), t1), new Granted("n1#2", id("c"), 1, t1)), c.events());
    assertStatus(c.reply(), PodState.RUNNING, 1);

    // D's limit of 100 would compete with A on GPU 0: D waits.
    CommandResultWithReply<Command, Event, ShareBook, Outcome> d = demand("d");
    assertEquals(List.of(new Enqueued(id("d"), t1)), d.events());
    assertStatus(d.reply(), PodState.READY, null);

    // GPU 0 has room for B, but B is behind D: head-of-line blocking.
    CommandResultWithReply<Command, Event, ShareBook, Outcome> b = demand("b");
    assertEquals(List.of(new Enqueued(id("b"), t1)), b.events());
    assertStatus(b.reply(), PodState.READY, null);
    assertEquals(List.of("d", "b"), queueNames(b.state()));

    // T2: C hibernates; D gets GPU 1 (phase 1), then B shares GPU 0 with A (phase 2).
    Instant t2 = clock.advance(Duration.ofMinutes(1));
    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("c");
    assertStatus(release.reply(), PodState.HIBERNATION, null);
    assertEquals(
        List.of(
            new Released(id("c"), t2),
            new Granted("n1#3", id("d"), 1, t2),
            new Granted("n1#4", id("b"), 0, t2)),
        release.events());
    ShareBook book = release.state();
    assertEquals(List.of(), queueNames(book));
    assertEquals(0, book.holdings().get(id("a")).gpu());
    assertEquals(0, book.holdings().get(id("b")).gpu());
    assertEquals(1, book.holdings().get(id("d")).gpu());
    assertFalse(book.holdings().containsKey(id("c")));

    assertEquals(
        Map.of(
            uuid(0),
            Map.of(
                "n1#1", new LedgerEntry(id("a"), new Share(50, 50)),
                "n1#4", new LedgerEntry(id("b"), new Share(50, 50))),
            uuid(1),
            Map.of("n1#3", new LedgerEntry(id("d"), new Share(100, 100)))),
        peers.ledgers());
    assertEquals(0, peers.capacityRefusals(), "the arbiter never asked a GPU for too much");
    assertStatus(peers.lastNoticeTo(id("d")).status(), PodState.RUNNING, 1);
    assertStatus(peers.lastNoticeTo(id("b")).status(), PodState.RUNNING, 0);
    assertStatus(peers.lastNoticeTo(id("c")).status(), PodState.HIBERNATION, null);
    assertLedgersMatchTheBook();
  }

  @Test
  void demandingTwiceIsHarmlessWhetherReadyOrRunning() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    demand("a");
    demand("b");

    CommandResultWithReply<Command, Event, ShareBook, Outcome> running = demand("a");
    assertTrue(running.hasNoEvents());
    assertStatus(running.reply(), PodState.RUNNING, 0);

    ReadyQueue queue = kit.getState().queue();
    CommandResultWithReply<Command, Event, ShareBook, Outcome> ready = demand("b");
    assertTrue(ready.hasNoEvents());
    assertStatus(ready.reply(), PodState.READY, null);
    assertEquals(queue, ready.state().queue(), "the pod keeps its place");
    assertLedgersMatchTheBook();
  }

  @Test
  void releaseFreesTheShareAndWithdrawLeavesTheQueue() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    demand("a");
    demand("b");
    Instant now = clock.advance(Duration.ofSeconds(5));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> withdraw = release("b");
    assertEquals(List.of(new Withdrawn(id("b"), now)), withdraw.events());
    assertStatus(withdraw.reply(), PodState.HIBERNATION, null);
    assertTrue(withdraw.state().queue().isEmpty());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("a");
    assertEquals(List.of(new Released(id("a"), now)), release.events());
    assertStatus(release.reply(), PodState.HIBERNATION, null);
    assertTrue(release.state().holdings().isEmpty());
    assertEquals(Map.of(), peers.ledgers(), "the share is freed at once");
    assertTrue(peers.frees().contains(new FakePeers.Freed(uuid(0), "n1#1")));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> again = release("a");
    assertTrue(again.hasNoEvents(), "releasing a hibernating pod changes nothing");
    assertStatus(again.reply(), PodState.HIBERNATION, null);
    assertLedgersMatchTheBook();
  }

  @Test
  void demandOrReleaseOfAStaticPodIsAConflictAndPersistsNothing() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("s", pinnedSpec(30));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("s");
    assertEquals("CONFLICT", demand.reply().error());
    assertTrue(demand.reply().detail().contains("default/s"), demand.reply().detail());
    assertTrue(demand.reply().detail().contains("static pod"), demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("s");
    assertEquals("CONFLICT", release.reply().error());
    assertTrue(release.hasNoEvents());
    assertTrue(kit.getState().queue().isEmpty());
  }

  @Test
  void demandOnANodeOfAnotherPolicyOrForAPlainPodIsAConflict() {
    kit.<Outcome>runCommand(r -> new SetGpus(gpus(1), r));
    kit.<Outcome>runCommand(r -> new ApplyPolicy(SharePolicy.STATIC, QosConfig.DEFAULT, r));
    add("p", pool(30, 30));
    add("plain", PodSharing.PLAIN);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("p");
    assertEquals("CONFLICT", demand.reply().error());
    assertEquals(
        "cannot raise demand for pod default/p: node n1 has policy static, not share-pool",
        demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> plain = demand("plain");
    assertEquals("CONFLICT", plain.reply().error());
    assertTrue(plain.reply().detail().contains("gpu-core.percentage"), plain.reply().detail());
    assertTrue(plain.hasNoEvents());
  }

  @Test
  void demandOrReleaseOfAnUnknownPodIsNotFoundAndPersistsNothing() {
    sharePoolNode(1, QosConfig.DEFAULT);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("ghost");
    assertEquals("NOT_FOUND", demand.reply().error());
    assertNull(demand.reply().status());
    assertTrue(demand.reply().detail().contains(id("ghost")), demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("ghost");
    assertEquals("NOT_FOUND", release.reply().error());
    assertTrue(release.hasNoEvents());
  }

  // ---- preemption ----

  @Test
  void aWaitingPodPreemptsAPodRunningLongerThanTheMaxDurationWhichRejoinsTheTail() {
    sharePoolNode(1, new QosConfig(true, 10, "0"));
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    add("c", pool(100, 100));
    Instant aSince = clock.now();
    demand("a");
    clock.advance(Duration.ofMinutes(1));
    demand("b");
    clock.advance(Duration.ofMinutes(1));
    demand("c");

    BookView view = kit.<BookView>runCommand(GetBook::new).reply();
    assertEquals(
        aSince.plus(Duration.ofMinutes(10)).plusSeconds(1),
        view.nextTimer(),
        "the arbiter must look again once A has run for more than 10 minutes");

    clock.advanceTo(aSince.plus(Duration.ofMinutes(10)));
    assertTrue(run(Tick::new).hasNoEvents(), "exactly 10 minutes is not more than 10");

    Instant now = clock.advance(Duration.ofSeconds(1));
    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertEquals(Outcome.DONE, tick.reply());
    assertEquals(
        List.of(
            new Preempted("n1#2", id("b"), 0, List.of(id("a")), now),
            new Granted("n1#3", id("b"), 0, now)),
        tick.events());
    assertEquals(List.of("c", "a"), queueNames(tick.state()), "the victim rejoins the tail");
    assertEquals(
        Map.of(uuid(0), Map.of("n1#3", new LedgerEntry(id("b"), new Share(100, 100)))),
        peers.ledgers());
    assertTrue(peers.frees().contains(new FakePeers.Freed(uuid(0), "n1#1")));

    PodNotice victim =
        peers.noticesTo(id("a")).stream()
            .filter(n -> !n.events().isEmpty())
            .findFirst()
            .orElseThrow();
    assertEquals(
        List.of(new EventNote("Warning", "GPUSharePreempted", "GPU is preempted by b.", now)),
        victim.events());
    assertEquals(
        List.of(
            new ConditionNote(
                "Interruption.GPUShareReclaim",
                "True",
                "GPUSharePreempted",
                "GPU is preempted by b.",
                now)),
        victim.conditions());
    assertStatus(victim.status(), PodState.READY, null);

    PodNotice preemptor =
        peers.noticesTo(id("b")).stream()
            .filter(n -> !n.events().isEmpty())
            .findFirst()
            .orElseThrow();
    assertEquals(
        List.of(new EventNote("Warning", "GPUSharePreempt", "GPU is preempted from a.", now)),
        preemptor.events());
    assertEquals(
        List.of(
            new ConditionNote(
                "Interruption.GPUShareReclaim",
                "True",
                "GPUSharePreempt",
                "GPU is preempted from a.",
                now)),
        preemptor.conditions());
    assertStatus(peers.lastNoticeTo(id("b")).status(), PodState.RUNNING, 0);
    assertLedgersMatchTheBook();
  }

  @Test
  void withoutPreemptionAWaitingPodWaitsHoweverLongOthersRun() {
    sharePoolNode(1, new QosConfig(false, 10, "0"));
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    demand("a");
    demand("b");
    clock.advance(Duration.ofHours(5));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertTrue(tick.hasNoEvents());
    assertEquals(List.of("b"), queueNames(tick.state()));
    assertNull(kit.<BookView>runCommand(GetBook::new).reply().nextTimer());
  }

  // ---- static ----

  @Test
  void staticPodsArePinnedByRequestsAndAFragmentedNodeSaysWhyOnce() {
    kit.<Outcome>runCommand(r -> new SetGpus(gpus(2), r));
    kit.<Outcome>runCommand(r -> new ApplyPolicy(SharePolicy.STATIC, QosConfig.DEFAULT, r));
    Instant now = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> s1 = add("s1", pinnedSpec(60));
    assertEquals(
        List.of(new PodAdded(key("s1"), pinnedSpec(60)), new Pinned("n1#1", id("s1"), 0, now)),
        s1.events());
    assertStatus(s1.reply(), PodState.RUNNING, 0);
    assertEquals(
        List.of(
            new ConditionNote(
                "GPUShareAllocated",
                "True",
                "GPUSharePinned",
                "pinned to GPU 0 (" + uuid(0) + ").",
                now)),
        peers.lastNoticeTo(id("s1")).conditions());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> s2 = add("s2", pinnedSpec(60));
    assertEquals(new Pinned("n1#2", id("s2"), 1, now), s2.events().get(1));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> s3 = add("s3", pinnedSpec(60));
    String message =
        "no single GPU has room for requests of core 60%, memory 60%: the roomiest is GPU 0"
            + " with core 40%, memory 40% free; the node has core 80%, memory 80% free in total"
            + " but a pod's share must lie on one GPU. It will be pinned when capacity frees.";
    assertEquals(
        List.of(new PodAdded(key("s3"), pinnedSpec(60)), new PinDeferred(id("s3"), message, now)),
        s3.events());
    assertStatus(s3.reply(), PodState.PENDING, null);
    PodNotice fragmented = peers.lastNoticeTo(id("s3"));
    assertEquals(
        List.of(new EventNote("Warning", "GPUShareFragmented", message, now)), fragmented.events());
    assertEquals(
        List.of(
            new ConditionNote("GPUShareAllocated", "False", "GPUShareFragmented", message, now)),
        fragmented.conditions());

    assertTrue(run(Tick::new).hasNoEvents(), "the fragmentation is reported once");

    Instant later = clock.advance(Duration.ofMinutes(3));
    CommandResultWithReply<Command, Event, ShareBook, Outcome> remove =
        run(r -> new RemovePod(id("s1"), r));
    assertEquals(
        List.of(new PodRemoved(id("s1"), later), new Pinned("n1#3", id("s3"), 0, later)),
        remove.events(),
        "capacity freed: the deferred pod is pinned");
    assertEquals(
        Map.of(
            uuid(0), Map.of("n1#3", new LedgerEntry(id("s3"), new Share(60, 60))),
            uuid(1), Map.of("n1#2", new LedgerEntry(id("s2"), new Share(60, 60)))),
        peers.ledgers(),
        "pinned pods hold their requests");
    assertStatus(peers.lastNoticeTo(id("s3")).status(), PodState.RUNNING, 0);
    assertLedgersMatchTheBook();
  }

  // ---- pods coming and going ----

  @Test
  void removingARunningPodFreesItsShareTellsItItIsDeletedAndLetsTheNextOneIn() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    demand("a");
    demand("b");
    long revision = kit.getState().revision();
    Instant now = clock.advance(Duration.ofSeconds(30));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> remove =
        run(r -> new RemovePod(id("a"), r));
    assertEquals(Outcome.DONE, remove.reply());
    assertEquals(
        List.of(new PodRemoved(id("a"), now), new Granted("n1#2", id("b"), 0, now)),
        remove.events());
    assertFalse(remove.state().isMember(id("a")));
    assertTrue(peers.frees().contains(new FakePeers.Freed(uuid(0), "n1#1")));
    assertEquals(
        Map.of(uuid(0), Map.of("n1#2", new LedgerEntry(id("b"), new Share(100, 100)))),
        peers.ledgers());
    PodNotice gone = peers.lastNoticeTo(id("a"));
    assertTrue(gone.deleted());
    assertTrue(gone.status().revision() > revision, "newer than anything the pod heard before");

    CommandResultWithReply<Command, Event, ShareBook, Outcome> again =
        run(r -> new RemovePod(id("a"), r));
    assertEquals(Outcome.DONE, again.reply());
    assertTrue(again.hasNoEvents());
    assertLedgersMatchTheBook();
  }

  @Test
  void reconcileAddsTheMissingPodsAndRemovesTheExtraOnes() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    add("b", pool(50, 50));
    demand("a");
    peers.clearNotices();
    Instant now = clock.advance(Duration.ofSeconds(1));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> reconcile =
        run(
            r ->
                new Reconcile(
                    List.of(
                        new BoundPod(key("b"), pool(50, 50)), new BoundPod(key("c"), pool(20, 20))),
                    r));
    assertEquals(Outcome.DONE, reconcile.reply());
    assertEquals(
        List.of(new PodRemoved(id("a"), now), new PodAdded(key("c"), pool(20, 20))),
        reconcile.events());
    assertEquals(List.of(id("b"), id("c")), List.copyOf(reconcile.state().members().keySet()));
    assertEquals(Map.of(), peers.ledgers(), "the removed pod's share is freed");
    assertStatus(peers.lastNoticeTo(id("b")).status(), PodState.HIBERNATION, null);
    assertStatus(peers.lastNoticeTo(id("c")).status(), PodState.HIBERNATION, null);

    assertTrue(
        run(r ->
                new Reconcile(
                    List.of(
                        new BoundPod(key("b"), pool(50, 50)), new BoundPod(key("c"), pool(20, 20))),
                    r))
            .hasNoEvents(),
        "reconciling again changes nothing");
    assertLedgersMatchTheBook();
  }

  /**
   * Like RemovePod: the pod's actor must hear it is gone, or it keeps its last status (Running on a
   * share just freed) and watches on it never end.
   */
  @Test
  void reconcileTellsARemovedPodItIsDeleted() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    demand("a");
    long revision = kit.getState().revision();
    peers.clearNotices();

    run(r -> new Reconcile(List.of(), r));

    List<PodNotice> toA = peers.noticesTo(id("a"));
    assertEquals(1, toA.size(), "one notice: " + toA);
    assertTrue(toA.get(0).deleted(), "the pod removed by Reconcile is told it is deleted");
    assertNull(toA.get(0).status().state());
    assertTrue(toA.get(0).status().revision() > revision);
    assertEquals(Map.of(), peers.ledgers());
  }

  // ---- reservations the GPU refuses or never answers ----

  @Test
  void aRefusedReservationPersistsNoGrantAndThePodStaysReady() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    peers.refuseReserves(true);
    Instant now = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("a");
    assertEquals(List.of(new Enqueued(id("a"), now)), demand.events());
    assertStatus(demand.reply(), PodState.READY, null);
    assertTrue(demand.state().holdings().isEmpty());
    assertTrue(peers.reserveCalls() >= 1);
    assertTrue(
        states(peers.noticesTo(id("a"))).stream().noneMatch(s -> s == PodState.RUNNING),
        "the pod is never told it runs");
    assertEquals(Map.of(), peers.ledgers());

    peers.refuseReserves(false);
    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertEquals(List.of(new Granted("n1#1", id("a"), 0, now)), tick.events());
    assertLedgersMatchTheBook();
  }

  @Test
  void aFailedReservationPersistsNoGrantAndIsRetriedOnTheNextLook() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    peers.failReserves(true);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("a");
    assertEquals(1, demand.events().size());
    assertStatus(demand.reply(), PodState.READY, null);
    assertTrue(demand.state().holdings().isEmpty());

    peers.failReserves(false);
    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertEquals(1, tick.events().size());
    assertTrue(tick.events().get(0) instanceof Granted);
    assertStatus(peers.lastNoticeTo(id("a")).status(), PodState.RUNNING, 0);
    assertLedgersMatchTheBook();
  }

  // ---- recovery ----

  @Test
  void afterARestartTheBookIsIdenticalAndEveryPodHearsItsStatusAgain() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    add("b", pool(50, 50));
    add("c", pool(50, 100));
    add("d", pool(50, 100));
    demand("a");
    demand("c");
    demand("d");
    demand("b");
    ShareBook before = kit.getState();
    Map<String, Map<String, LedgerEntry>> ledgers = peers.ledgers();
    peers.clearNotices();

    ShareBook after = kit.restart().state();
    assertEquals(before, after);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertTrue(tick.hasNoEvents(), "nothing new to decide");
    assertEquals(before, tick.state());
    assertEquals(List.of("d", "b"), queueNames(tick.state()), "FIFO order survives");
    assertEquals(ledgers, peers.ledgers(), "the ledgers agreed: nothing freed or restored");
    for (String pod : List.of("a", "b", "c", "d")) {
      assertEquals(before.status(id(pod)).orElseThrow(), peers.lastNoticeTo(id(pod)).status());
    }
    assertLedgersMatchTheBook();
  }

  @Test
  void afterARestartAReservationTheArbiterNeverPersistedIsFreed() throws Exception {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    peers.hangReserves(true);
    TestProbe<Outcome> never = testKit.createTestProbe();

    CommandResult<Command, Event, ShareBook> demand =
        kit.runCommand(new Demand(id("a"), never.ref()));
    assertTrue(
        demand.events().isEmpty(),
        "a demand granted at once persists nothing before the GPU answers (Enqueued and Granted"
            + " are written together)");
    String decision = peers.awaitHungReservation();
    assertEquals(
        Map.of(uuid(0), Map.of(decision, new LedgerEntry(id("a"), new Share(50, 50)))),
        peers.ledgers(),
        "the GPU said yes");
    assertTrue(kit.getState().holdings().isEmpty(), "the grant was never persisted");

    // The arbiter stops between the GPU's answer and persisting the grant: the demand was never
    // answered, so nothing of it is promised.
    peers.hangReserves(false);
    kit.restart();
    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);

    assertTrue(
        peers.frees().contains(new FakePeers.Freed(uuid(0), decision)),
        "the unpersisted reservation is freed: " + peers.frees());
    assertEquals(PodState.HIBERNATION, tick.state().state(id("a")));
    assertTrue(tick.state().holdings().isEmpty());
    assertLedgersMatchTheBook();

    // The client asks again and is granted, under the same decision id (it was never persisted).
    CommandResultWithReply<Command, Event, ShareBook, Outcome> again = demand("a");
    assertStatus(again.reply(), PodState.RUNNING, 0);
    assertEquals(
        new ShareBook.Holding("n1#1", 0, new Share(50, 50), clock.now(), false),
        again.state().holdings().get(id("a")));
    assertLedgersMatchTheBook();
  }

  @Test
  void afterARestartAHoldingMissingFromTheLedgerIsRestoredAndAStrangerIsFreed() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    add("b", pool(50, 50));
    demand("a");
    peers.drop(uuid(0), "n1#1");
    peers.inject(uuid(1), "n1#99", "default/ghost/uid-ghost", new Share(30, 30));
    peers.clearNotices();

    kit.restart();
    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);

    assertTrue(tick.hasNoEvents());
    assertEquals(
        Map.of(uuid(0), Map.of("n1#1", new LedgerEntry(id("a"), new Share(50, 50)))),
        peers.ledgers(),
        "the persisted holding is back and the reservation nobody persisted is gone");
    assertStatus(peers.lastNoticeTo(id("a")).status(), PodState.RUNNING, 0);
    assertStatus(peers.lastNoticeTo(id("b")).status(), PodState.HIBERNATION, null);
    assertLedgersMatchTheBook();
  }

  @Test
  void aGpuListThatStrandsAHoldingIsRefusedAndPersistsNothing() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    demand("a");
    demand("b");
    assertEquals(1, kit.getState().holdings().get(id("b")).gpu());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> dropped =
        run(r -> new SetGpus(gpus(1), r));
    assertEquals("CONFLICT", dropped.reply().error());
    assertEquals(
        "GPU 1 ("
            + uuid(1)
            + ") of node n1 is held by default/b; it cannot be removed while in use",
        dropped.reply().detail());
    assertTrue(dropped.hasNoEvents());
    assertEquals(gpus(2), dropped.state().gpus());

    List<ShareBook.GpuSlot> replaced =
        List.of(gpus(2).get(0), new ShareBook.GpuSlot(1, "GPU-other", true));
    CommandResultWithReply<Command, Event, ShareBook, Outcome> swapped =
        run(r -> new SetGpus(replaced, r));
    assertEquals("CONFLICT", swapped.reply().error(), "another device under the same index");
    assertTrue(swapped.hasNoEvents());

    assertEquals(Outcome.DONE, run(r -> new RemovePod(id("b"), r)).reply());
    CommandResultWithReply<Command, Event, ShareBook, Outcome> shrunk =
        run(r -> new SetGpus(gpus(1), r));
    assertEquals(Outcome.DONE, shrunk.reply(), "nothing held on GPU 1 any more");
    assertEquals(List.of(new GpusSet(gpus(1))), shrunk.events());
    assertLedgersMatchTheBook();
  }

  // ---- helpers ----

  private static CommandResultWithReply<Command, Event, ShareBook, Outcome> run(
      Function<ActorRef<Outcome>, Command> command) {
    return kit.runCommand(command);
  }

  private static void sharePoolNode(int gpus, QosConfig qos) {
    run(r -> new SetGpus(gpus(gpus), r));
    run(r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r));
  }

  private static CommandResultWithReply<Command, Event, ShareBook, Outcome> add(
      String name, PodSharing spec) {
    return run(r -> new AddPod(key(name), spec, r));
  }

  private static CommandResultWithReply<Command, Event, ShareBook, Outcome> demand(String name) {
    return run(r -> new Demand(id(name), r));
  }

  private static CommandResultWithReply<Command, Event, ShareBook, Outcome> release(String name) {
    return run(r -> new Release(id(name), r));
  }

  static PodKey key(String name) {
    return new PodKey("default", name, "uid-" + name);
  }

  static String id(String name) {
    return key(name).entityId();
  }

  static String uuid(int index) {
    return "GPU-" + NODE + "-" + index;
  }

  static List<ShareBook.GpuSlot> gpus(int count) {
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      slots.add(new ShareBook.GpuSlot(i, uuid(i), true));
    }
    return slots;
  }

  static PodSharing pool(int request, int limit) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(request, request), new Share(limit, limit), "main");
  }

  static PodSharing pinnedSpec(int request) {
    return PodSharing.shared(
        SharePolicy.STATIC, new Share(request, request), new Share(100, 100), "main");
  }

  static List<String> queueNames(ShareBook book) {
    return book.queue().entries().stream().map(e -> e.pod().split("/")[1]).toList();
  }

  static List<PodState> states(List<PodNotice> notices) {
    return notices.stream().map(n -> n.status().state()).toList();
  }

  static void assertStatus(Outcome outcome, PodState state, Integer gpu) {
    assertTrue(outcome.ok(), "unexpected error: " + outcome);
    assertStatus(outcome.status(), state, gpu);
  }

  static void assertStatus(PodStatus status, PodState state, Integer gpu) {
    assertEquals(state, status.state(), "state of " + status);
    assertEquals(gpu, status.gpu(), "gpu of " + status);
  }

  /** Invariants 1 and 2 across actor and GPUs: the ledgers hold exactly what the book holds. */
  static void assertLedgersMatchTheBook() {
    ShareBook book = kit.getState();
    assertEquals(List.of(), book.violations());
    Map<String, Map<String, LedgerEntry>> expected = new TreeMap<>();
    book.holdings()
        .forEach(
            (pod, h) ->
                expected
                    .computeIfAbsent(book.slot(h.gpu()).orElseThrow().uuid(), u -> new TreeMap<>())
                    .put(h.decisionId(), new LedgerEntry(pod, h.share())));
    assertEquals(expected, peers.ledgers());
  }
}
