package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.PreemptionMode;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.ReadyQueue;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
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
import dev.gpushare.arbiter.actor.NodeArbiter.GetPod;
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
import dev.gpushare.arbiter.actor.NodeArbiter.Resync;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import dev.gpushare.arbiter.actor.NodeArbiter.Withdrawn;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The NodeArbiter actor against in-memory peers ({@link FakePeers}), with the
 * EventSourcedBehaviorTestKit: every command, event and the state go through Jackson.
 *
 * <p>The arbiter answers a command once the round it joined is written. The kit fits that: {@code
 * runCommand(replyTo -> …)} waits for the reply (up to {@code single-expect-default}, 10 s here),
 * then reads the state and every event persisted since the command was sent, so a result holds the
 * whole round. Group commit (several commands in one write) is shown by holding a write in the
 * journal ({@link PersistenceTestKit}'s policy) while more commands arrive.
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

  @Test
  void aCheckpointedPodsModeIsJournalledThroughPekkosSerializerAndSurvivesARestart() {
    sharePoolNode(1, QosConfig.DEFAULT);
    PodSharing checkpointed =
        PodSharing.shared(
            SharePolicy.SHARE_POOL,
            new Share(50, 50),
            new Share(50, 50),
            "main",
            PreemptionMode.CHECKPOINT);
    // the kit round-trips every event and state through jackson-json, as the journal does
    CommandResultWithReply<Command, Event, ShareBook, Outcome> add =
        run(r -> new AddPod(key("a"), checkpointed, r));
    assertEquals(List.of(new PodAdded(key("a"), checkpointed)), add.events());
    demand("a");
    ShareBook after = kit.restart().state();
    assertEquals(checkpointed, after.members().get(id("a")).spec());
  }

  // ---- share-pool ----

  @Test
  void demandOnAFreeGpuIsOneGrantEventAndTellsThePodsRecordNothing() {
    sharePoolNode(2, QosConfig.DEFAULT);
    add("a", pool(30, 40));
    Instant now = clock.now();

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("a");

    assertEquals(List.of(new Granted("n1#1", id("a"), 0, now)), demand.events());
    assertStatus(demand.reply(), PodState.RUNNING, 0);
    assertEquals(uuid(0), demand.reply().status().gpuUuid());
    assertNull(demand.reply().queuePosition());
    assertEquals(now, demand.reply().at());
    assertEquals(now, demand.reply().status().since());
    ShareBook.Holding holding = demand.state().holdings().get(id("a"));
    assertEquals(new ShareBook.Holding("n1#1", 0, new Share(40, 40), now, false), holding);
    assertEquals(
        List.of(PodState.HIBERNATION),
        states(peers.noticesTo(id("a"))),
        "the pod's record heard of its spec; a plain grant gives it nothing to keep");
    assertEquals(2, peers.changesOf(id("a")), "the views heard: added, granted");
    assertBookHolds();
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

    assertEquals(1, b.reply().queuePosition());

    clock.advance(Duration.ofSeconds(5));
    release("a");
    assertEquals(3, peers.changesOf(id("b")), "the views of a pod that waits hear each step");
    assertStatus(kit.getState().status(id("b")).orElseThrow(), PodState.RUNNING, 0);
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
    assertEquals(List.of(new Granted("n1#1", id("a"), 0, t1)), a.events());
    assertStatus(a.reply(), PodState.RUNNING, 0);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> c = demand("c");
    assertEquals(List.of(new Granted("n1#2", id("c"), 1, t1)), c.events());
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

    assertEquals(new Share(100, 100), book.loads().get(0).used());
    assertEquals(new Share(100, 100), book.loads().get(1).used());
    assertBookHolds();
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
    assertBookHolds();
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
    assertEquals(Share.NONE, release.state().loads().get(0).used(), "the share is freed at once");

    CommandResultWithReply<Command, Event, ShareBook, Outcome> again = release("a");
    assertTrue(again.hasNoEvents(), "releasing a hibernating pod changes nothing");
    assertStatus(again.reply(), PodState.HIBERNATION, null);
    assertBookHolds();
  }

  @Test
  void demandOrReleaseOfAStaticPodIsAConflictAndPersistsNothing() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("s", pinnedSpec(30));

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("s");
    assertEquals(Refusal.Kind.CONFLICT, demand.reply().refusal().kind());
    assertTrue(demand.reply().detail().contains("default/s"), demand.reply().detail());
    assertTrue(demand.reply().detail().contains("static pod"), demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("s");
    assertEquals(Refusal.Kind.CONFLICT, release.reply().refusal().kind());
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
    assertEquals(Refusal.Kind.CONFLICT, demand.reply().refusal().kind());
    assertEquals(
        "cannot raise demand for pod default/p: node n1 has policy static, not share-pool",
        demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> plain = demand("plain");
    assertEquals(Refusal.Kind.CONFLICT, plain.reply().refusal().kind());
    assertTrue(plain.reply().detail().contains("gpu-core.percentage"), plain.reply().detail());
    assertTrue(plain.hasNoEvents());
  }

  @Test
  void demandOrReleaseOfAnUnknownPodIsNotFoundAndPersistsNothing() {
    sharePoolNode(1, QosConfig.DEFAULT);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> demand = demand("ghost");
    assertEquals(Refusal.Kind.NOT_FOUND, demand.reply().refusal().kind());
    assertNull(demand.reply().status());
    assertTrue(demand.reply().detail().contains(id("ghost")), demand.reply().detail());
    assertTrue(demand.hasNoEvents());

    CommandResultWithReply<Command, Event, ShareBook, Outcome> release = release("ghost");
    assertEquals(Refusal.Kind.NOT_FOUND, release.reply().refusal().kind());
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
    assertBookHolds();
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
    assertEquals(new Share(60, 60), remove.state().holdings().get(id("s3")).share());
    assertEquals(new Share(60, 60), remove.state().holdings().get(id("s2")).share());
    assertStatus(peers.lastNoticeTo(id("s3")).status(), PodState.RUNNING, 0);
    assertBookHolds();
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
    assertEquals(Share.WHOLE, remove.state().loads().get(0).used(), "b holds what a held");
    PodNotice gone = peers.lastNoticeTo(id("a"));
    assertTrue(gone.deleted());
    assertTrue(gone.status().revision() > revision, "newer than anything the pod heard before");

    CommandResultWithReply<Command, Event, ShareBook, Outcome> again =
        run(r -> new RemovePod(id("a"), r));
    assertEquals(Outcome.DONE, again.reply());
    assertTrue(again.hasNoEvents());
    assertBookHolds();
  }

  @Test
  void reconcileAddsTheMissingPodsAndRemovesTheExtraOnes() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    add("b", pool(50, 50));
    demand("a");
    peers.reset();
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
    assertTrue(reconcile.state().holdings().isEmpty(), "the removed pod's share is freed");
    assertEquals(PodState.HIBERNATION, reconcile.state().state(id("b")));
    assertStatus(peers.lastNoticeTo(id("c")).status(), PodState.HIBERNATION, null);

    assertTrue(
        run(r ->
                new Reconcile(
                    List.of(
                        new BoundPod(key("b"), pool(50, 50)), new BoundPod(key("c"), pool(20, 20))),
                    r))
            .hasNoEvents(),
        "reconciling again changes nothing");
    assertBookHolds();
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
    peers.reset();

    run(r -> new Reconcile(List.of(), r));

    List<PodNotice> toA = peers.noticesTo(id("a"));
    assertEquals(1, toA.size(), "one notice: " + toA);
    assertTrue(toA.get(0).deleted(), "the pod removed by Reconcile is told it is deleted");
    assertNull(toA.get(0).status().state());
    assertTrue(toA.get(0).status().revision() > revision);
    assertTrue(kit.getState().holdings().isEmpty());
  }

  // ---- recovery ----

  @Test
  void afterARestartTheBookIsIdenticalAndEveryPodsViewsHearOfItAgain() {
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
    peers.reset();

    ShareBook after = kit.restart().state();
    assertEquals(before, after);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> tick = run(Tick::new);
    assertTrue(tick.hasNoEvents(), "nothing new to decide");
    assertEquals(before, tick.state());
    assertEquals(List.of("d", "b"), queueNames(tick.state()), "FIFO order survives");
    for (String pod : List.of("a", "b", "c", "d")) {
      assertTrue(peers.changesOf(id(pod)) >= 1, pod + " is shown again");
    }
    assertEquals(List.of(), peers.notices(), "no pod has notes to catch up on");
    assertBookHolds();
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
    assertEquals(Refusal.Kind.CONFLICT, dropped.reply().refusal().kind());
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
    assertEquals(
        Refusal.Kind.CONFLICT,
        swapped.reply().refusal().kind(),
        "another device under the same index");
    assertTrue(swapped.hasNoEvents());

    assertEquals(Outcome.DONE, run(r -> new RemovePod(id("b"), r)).reply());
    CommandResultWithReply<Command, Event, ShareBook, Outcome> shrunk =
        run(r -> new SetGpus(gpus(1), r));
    assertEquals(Outcome.DONE, shrunk.reply(), "nothing held on GPU 1 any more");
    assertEquals(List.of(new GpusSet(gpus(1))), shrunk.events());
    assertBookHolds();
  }

  // ---- one writer: group commit, followers, reads ----

  @Test
  void commandsThatArriveDuringAWriteAreDecidedTogetherAndWrittenInOneWrite() throws Exception {
    // An arbiter of its own (the kit waits for each command's write; this test holds one).
    String node = "g1";
    ActorRef<Command> arbiter = testKit.spawn(NodeArbiter.create(node, peers, clock));
    TestProbe<Outcome> setUp = testKit.createTestProbe();
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      slots.add(new ShareBook.GpuSlot(i, "GPU-g1-" + i, true));
    }
    arbiter.tell(new SetGpus(slots, setUp.ref()));
    arbiter.tell(new ApplyPolicy(SharePolicy.SHARE_POOL, QosConfig.DEFAULT, setUp.ref()));
    for (String p : List.of("a", "b", "c", "d", "e")) {
      arbiter.tell(new AddPod(key(p), pool(10, 50), setUp.ref()));
    }
    setUp.receiveSeveralMessages(7);

    PersistenceTestKit journal = PersistenceTestKit.create(testKit.system());
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    List<Integer> writes = new CopyOnWriteArrayList<>();
    journal.withPolicy(
        new ProcessingPolicy<JournalOperation>() {
          @Override
          public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
            if (op instanceof WriteEvents w && persistenceId.equals("NodeArbiter|" + node)) {
              writes.add(w.getBatch().size());
              if (writes.size() == 1) {
                holding.countDown();
                try {
                  release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            }
            return ProcessingSuccess.getInstance();
          }
        });
    try {
      TestProbe<Outcome> first = testKit.createTestProbe();
      arbiter.tell(new Demand(id("a"), first.ref()));
      assertTrue(holding.await(10, TimeUnit.SECONDS), "a's grant is being written");
      List<TestProbe<Outcome>> rest = new ArrayList<>();
      for (String p : List.of("b", "c", "d", "e")) {
        TestProbe<Outcome> probe = testKit.createTestProbe();
        rest.add(probe);
        arbiter.tell(new Demand(id(p), probe.ref()));
      }
      first.expectNoMessage(Duration.ofMillis(100));
      release.countDown();

      assertStatus(first.receiveMessage(), PodState.RUNNING, 0);
      List<Integer> gpus = new ArrayList<>();
      for (TestProbe<Outcome> probe : rest) {
        Outcome o = probe.receiveMessage();
        assertEquals(PodState.RUNNING, o.status().state(), o.toString());
        gpus.add(o.status().gpu());
      }
      assertEquals(List.of(0, 1, 1, 2), gpus, "best fit, one decision after another");
      assertEquals(List.of(1, 4), writes, "a's grant alone, then the four that waited together");
      TestProbe<BookView> book = testKit.createTestProbe();
      arbiter.tell(new GetBook(book.ref()));
      assertEquals(List.of(), book.receiveMessage().book().violations());
    } finally {
      journal.resetPolicy();
      release.countDown();
      testKit.stop(arbiter);
    }
  }

  @Test
  void theFollowersHearOnlyAfterTheWriteAndAReadIsOneSnapshot() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(60, 60));
    add("b", pool(60, 60));
    demand("a");
    clock.advance(Duration.ofSeconds(7));
    demand("b");
    clock.advance(Duration.ofSeconds(5));

    Outcome b = kit.<Outcome>runCommand(r -> new GetPod(id("b"), r)).reply();
    assertStatus(b, PodState.READY, null);
    assertEquals(1, b.queuePosition());
    assertEquals(clock.now(), b.at());
    Outcome a = kit.<Outcome>runCommand(r -> new GetPod(id("a"), r)).reply();
    assertStatus(a, PodState.RUNNING, 0);
    assertNull(a.queuePosition());
    assertEquals(
        Refusal.Kind.NOT_FOUND,
        kit.<Outcome>runCommand(r -> new GetPod(id("x"), r)).reply().refusal().kind());
  }

  @Test
  void aRevocationCarriesItsEventIntoTheJournalAndThePodsRecord() {
    sharePoolNode(1, QosConfig.DEFAULT);
    add("a", pool(50, 50));
    demand("a");
    Instant now = clock.advance(Duration.ofMinutes(3));
    EventNote idle = PodNotes.idleReleasedEvent(Duration.ofMinutes(3), now);

    CommandResultWithReply<Command, Event, ShareBook, Outcome> revoked =
        run(r -> new Release(id("a"), "idle", idle, r));
    assertEquals(List.of(new Released(id("a"), now, "idle", idle)), revoked.events());
    assertStatus(revoked.reply(), PodState.HIBERNATION, null);
    assertEquals(List.of(idle), peers.lastNoticeTo(id("a")).events());
    assertEquals(List.of(idle), revoked.state().members().get(id("a")).events());
  }

  @Test
  void afterARestartEveryPodWithNotesIsToldThemAgainAndAResyncAnswersOnePod() {
    sharePoolNode(1, new QosConfig(true, 10, "0"));
    add("a", pool(100, 100));
    add("b", pool(100, 100));
    add("c", pool(10, 10));
    demand("a");
    demand("b");
    Instant now = clock.advance(Duration.ofMinutes(11));
    run(Tick::new);
    ShareBook before = kit.getState();
    assertStatus(before.status(id("b")).orElseThrow(), PodState.RUNNING, 0);
    peers.reset();

    // As if the previous incarnation had stopped after its write, before any notice went out.
    assertEquals(before, kit.restart().state());
    run(Tick::new);
    PodNotice victim = peers.lastNoticeTo(id("a"));
    assertEquals(List.of(PodNotes.victimEvent(key("b"), now)), victim.events());
    assertEquals(List.of(PodNotes.victimCondition(key("b"), now)), victim.conditions());
    assertStatus(victim.status(), PodState.READY, null);
    assertEquals(
        List.of(PodNotes.preemptorEvent(key("a"), now)), peers.lastNoticeTo(id("b")).events());
    assertEquals(List.of(), peers.noticesTo(id("c")), "c has nothing to catch up on");

    peers.reset();
    kit.runCommand(new Resync(id("a")));
    assertEquals(victim, peers.lastNoticeTo(id("a")));
    kit.runCommand(new Resync(id("nobody")));
    assertEquals(1, peers.notices().size(), "an unknown pod is ignored");
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

  /** Invariants 1–3 as the book shows them. */
  static void assertBookHolds() {
    assertEquals(List.of(), kit.getState().violations());
  }
}
