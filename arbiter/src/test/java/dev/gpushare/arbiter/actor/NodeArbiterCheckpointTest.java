package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PreemptionMode;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import dev.gpushare.arbiter.actor.NodeArbiter.AddPod;
import dev.gpushare.arbiter.actor.NodeArbiter.ApplyPolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.CheckpointCleared;
import dev.gpushare.arbiter.actor.NodeArbiter.CheckpointReported;
import dev.gpushare.arbiter.actor.NodeArbiter.Command;
import dev.gpushare.arbiter.actor.NodeArbiter.Demand;
import dev.gpushare.arbiter.actor.NodeArbiter.Event;
import dev.gpushare.arbiter.actor.NodeArbiter.Granted;
import dev.gpushare.arbiter.actor.NodeArbiter.Outcome;
import dev.gpushare.arbiter.actor.NodeArbiter.Release;
import dev.gpushare.arbiter.actor.NodeArbiter.ReportRestored;
import dev.gpushare.arbiter.actor.NodeArbiter.ReportSuspended;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.SuspendRequested;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The arbiter's side of {@code gpushare.dev/preemption: checkpoint}: the victim keeps its share
 * until the member reports (the member follows the book: {@code suspending()}, and held pods that
 * hold a share again), the pod's record hears what users see, the pod's next grant is on its own
 * GPU, and the wait for the member is bounded across a restart.
 */
class NodeArbiterCheckpointTest {
  static final String NODE = "n1";
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  static ActorTestKit testKit;
  static final FakePeers peers = new FakePeers();
  static final ManualClock clock = new ManualClock(T0);
  static EventSourcedBehaviorTestKit<Command, Event, ShareBook> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("node-arbiter-checkpoint-test", NodeArbiterTest.CONFIG);
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(), NodeArbiter.create(NODE, peers, clock));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void fresh() {
    kit.clear();
    peers.reset();
  }

  @Test
  void aPreemptedCheckpointPodIsCheckpointedFirstThenQueuedThenRestoredOnItsGpu() {
    node(2, new QosConfig(true, 10, "0"));
    add("old", checkpointPod(100));
    add("other", signalPod(100));
    add("new", signalPod(100));
    demand("old");
    clock.advance(Duration.ofMinutes(5));
    demand("other");
    demand("new");
    Instant now = clock.advance(Duration.ofMinutes(6));

    var tick = run(Tick::new);
    assertEquals(
        List.of(new SuspendRequested("n1#3", id("new"), 0, List.of(id("old")), "preempt", now)),
        tick.events());
    assertEquals(PodState.RUNNING, tick.state().state(id("old")), "old keeps GPU 0 meanwhile");
    assertEquals(List.of(id("old")), tick.state().suspending(), "what the member reads");

    Instant reported = clock.advance(Duration.ofSeconds(2));
    var report = run(r -> new ReportSuspended(id("old"), true, List.of(4242), 3L << 30, null, r));
    assertEquals(
        List.of(
            new CheckpointReported(id("old"), true, List.of(4242), 3L << 30, null, reported),
            new Granted("n1#4", id("new"), 0, reported)),
        report.events());
    PodNotice notice = peers.lastNoticeTo(id("old"));
    String held = PodNotes.checkpointedMessage(3L << 30, 0);
    assertTrue(held.startsWith("GPU state (3.0 GiB) is held in host memory"), held);
    assertEquals(
        List.of(
            new EventNote("Warning", "GPUSharePreempted", "GPU is preempted by new.", reported),
            new EventNote("Normal", "GPUShareCheckpointed", held, reported)),
        notice.events());
    assertEquals(
        new ConditionNote("GPUShareCheckpointed", "True", "GPUShareCheckpointed", held, reported),
        notice.conditions().get(1));
    assertEquals(PodState.READY, notice.status().state());
    assertEquals(ShareBook.Checkpoint.Phase.HELD, notice.status().checkpoint().phase());
    assertEquals(
        "GPUSharePreempt", peers.lastNoticeTo(id("new")).events().get(0).reason(), "preemptor");

    peers.reset();
    clock.advance(Duration.ofMinutes(1));
    var freed = run(r -> new Release(id("other"), r));
    assertEquals(1, freed.events().size(), "GPU 1 frees, but old's state is on GPU 0: it waits");
    assertEquals(PodState.READY, freed.state().state(id("old")));
    Instant back = clock.advance(Duration.ofMinutes(1));
    var regrant = run(r -> new Release(id("new"), r));
    assertEquals(new Granted("n1#5", id("old"), 0, back), regrant.events().get(1));
    assertEquals(
        List.of(4242),
        regrant.state().members().get(id("old")).checkpoint().pids(),
        "Running and still held: the member restores these");

    var restored = run(r -> new ReportRestored(id("old"), null, r));
    assertEquals(List.of(new CheckpointCleared(id("old"), null, back)), restored.events());
    assertNull(restored.state().members().get(id("old")).checkpoint());
    assertEquals("GPUShareRestored", peers.lastNoticeTo(id("old")).conditions().get(0).reason());
    assertTrue(restored.state().violations().isEmpty());
  }

  @Test
  void aFailedCheckpointFallsBackToTheSignalContractAndALateReportIsRefused() {
    node(1, new QosConfig(true, 10, "0"));
    add("old", checkpointPod(100));
    add("new", signalPod(100));
    demand("old");
    demand("new");
    clock.advance(Duration.ofMinutes(11));
    run(Tick::new);
    Instant now = clock.advance(Duration.ofSeconds(1));
    var failed =
        run(
            r ->
                new ReportSuspended(
                    id("old"), false, List.of(), 0, "lock timed out after 10 s", r));
    assertEquals(
        List.of(
            new CheckpointReported(
                id("old"), false, List.of(), 0, "lock timed out after 10 s", now),
            new Granted("n1#3", id("new"), 0, now)),
        failed.events());
    assertEquals(
        new EventNote(
            "Warning",
            "GPUShareCheckpointFailed",
            "GPU state not checkpointed: lock timed out after 10 s; the workload is signalled"
                + " instead (SIGUSR1).",
            now),
        peers.lastNoticeTo(id("old")).events().get(1));

    var late = run(r -> new ReportSuspended(id("old"), true, List.of(1), 1, null, r));
    assertTrue(late.hasNoEvents());
    assertEquals(dev.gpushare.arbiter.Refusal.Kind.CONFLICT, late.reply().refusal().kind());
  }

  @Test
  void withoutAReportTheShareIsFreedAfterTheTimeoutAlsoAcrossARestart() {
    node(1, new QosConfig(true, 10, "0"));
    add("old", checkpointPod(100));
    add("new", signalPod(100));
    demand("old");
    demand("new");
    Instant asked = clock.advance(Duration.ofMinutes(11));
    run(Tick::new);
    kit.restart();
    var view = kit.<NodeArbiter.BookView>runCommand(NodeArbiter.GetBook::new).reply();
    assertEquals(asked.plus(ShareBook.SUSPEND_TIMEOUT), view.nextTimer());
    Instant expired = clock.advanceTo(asked.plus(ShareBook.SUSPEND_TIMEOUT));
    var tick = run(Tick::new);
    assertEquals(
        new CheckpointReported(
            id("old"),
            false,
            List.of(),
            0,
            "the node's member did not report within 60 s",
            expired),
        tick.events().get(0));
    assertEquals(PodState.RUNNING, tick.state().state(id("new")));
  }

  @Test
  void anIdleReleaseOfACheckpointPodIsACheckpointIntoHibernation() {
    node(1, QosConfig.DEFAULT);
    add("nb", checkpointPod(30));
    demand("nb");
    Instant now = clock.advance(Duration.ofMinutes(30));
    var idle = run(r -> new Release(id("nb"), "idle", null, r));
    assertEquals(
        List.of(new SuspendRequested("n1#2", null, 0, List.of(id("nb")), "idle", now)),
        idle.events());
    assertTrue(run(r -> new Release(id("nb"), "idle", null, r)).hasNoEvents(), "once");
    var report = run(r -> new ReportSuspended(id("nb"), true, List.of(7), 512L << 20, null, r));
    assertEquals(PodState.HIBERNATION, report.state().state(id("nb")));
    assertEquals(512L << 20, report.state().checkpointBytes());
  }

  // ---- helpers ----

  private static CommandResultWithReply<Command, Event, ShareBook, Outcome> run(
      Function<ActorRef<Outcome>, Command> command) {
    return kit.runCommand(command);
  }

  private static void node(int gpus, QosConfig qos) {
    run(r -> new SetGpus(NodeArbiterTest.gpus(gpus), r));
    run(r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r));
  }

  private static void add(String name, PodSharing spec) {
    run(r -> new AddPod(key(name), spec, r));
  }

  private static void demand(String name) {
    run(r -> new Demand(id(name), r));
  }

  static PodSharing checkpointPod(int limit) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL,
        new Share(limit, limit),
        new Share(limit, limit),
        "c",
        PreemptionMode.CHECKPOINT);
  }

  static PodSharing signalPod(int limit) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(limit, limit), new Share(limit, limit), "c");
  }

  static PodKey key(String name) {
    return NodeArbiterTest.key(name);
  }

  static String id(String name) {
    return NodeArbiterTest.id(name);
  }
}
