package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.AddPod;
import dev.gpushare.arbiter.actor.NodeArbiter.ApplyPolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.Demand;
import dev.gpushare.arbiter.actor.NodeArbiter.Outcome;
import dev.gpushare.arbiter.actor.NodeArbiter.Release;
import dev.gpushare.arbiter.actor.NodeArbiter.RemovePod;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What the arbiter tells its {@link ArbiterMetrics}: decisions, rounds, preemptions, failures. */
class NodeArbiterMetricsTest {
  static final Config CONFIG =
      ConfigFactory.parseString(
              "pekko.loglevel = OFF\n"
                  + "pekko.actor.serialization-bindings {\n"
                  + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                  + "}\n")
          .withFallback(EventSourcedBehaviorTestKit.config());

  static ActorTestKit testKit;
  static PersistenceTestKit journal;
  final FakePeers peers = new FakePeers();
  final ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  final Recorder metrics = new Recorder();
  static int nodes;
  String node;

  /** Records every call, as {@code method:args}. */
  static final class Recorder implements ArbiterMetrics {
    final List<String> calls = new CopyOnWriteArrayList<>();
    final List<Duration> rounds = new CopyOnWriteArrayList<>();

    @Override
    public void decided(String node, String kind) {
      calls.add("decided:" + kind);
    }

    @Override
    public void preempted(String node, PodKey preemptor, List<PodKey> victims) {
      calls.add(
          "preempted:" + preemptor.name() + ">" + victims.stream().map(PodKey::name).toList());
    }

    @Override
    public void roundEnded(String node, Duration elapsed) {
      rounds.add(elapsed);
    }

    @Override
    public void podRemoved(String node, PodKey pod) {
      calls.add("removed:" + pod.name());
    }

    @Override
    public void journalFailed(String node, String operation, Throwable cause) {
      calls.add("journal:" + operation);
    }
  }

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create("arbiter-metrics-test", CONFIG);
    journal = PersistenceTestKit.create(testKit.system());
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshNode() {
    journal.clearAll();
    journal.resetPolicy();
    node = "m" + (++nodes);
  }

  ActorRef<NodeArbiter.Command> spawn() {
    return testKit.spawn(NodeArbiter.create(node, peers, clock, metrics));
  }

  static Outcome ask(
      ActorRef<NodeArbiter.Command> arbiter,
      java.util.function.Function<ActorRef<Outcome>, NodeArbiter.Command> command) {
    TestProbe<Outcome> probe = testKit.createTestProbe();
    arbiter.tell(command.apply(probe.ref()));
    return probe.receiveMessage(Duration.ofSeconds(10));
  }

  static PodKey key(String name) {
    return new PodKey("default", name, "uid-" + name);
  }

  static PodSharing pool() {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(100, 100), new Share(100, 100), "main");
  }

  List<ShareBook.GpuSlot> oneGpu() {
    return List.of(new ShareBook.GpuSlot(0, "GPU-" + node, true));
  }

  @Test
  void decisionsPreemptionsRemovalsAndRoundsAreToldOncePersisted() {
    ActorRef<NodeArbiter.Command> arbiter = spawn();
    ask(arbiter, r -> new SetGpus(oneGpu(), r));
    ask(arbiter, r -> new ApplyPolicy(SharePolicy.SHARE_POOL, new QosConfig(true, 10, "0"), r));
    ask(arbiter, r -> new AddPod(key("a"), pool(), r));
    ask(arbiter, r -> new AddPod(key("b"), pool(), r));
    ask(arbiter, r -> new AddPod(key("c"), pool(), r));
    ask(arbiter, r -> new Demand(key("a").entityId(), r));
    ask(arbiter, r -> new Demand(key("b").entityId(), r));
    ask(arbiter, r -> new Demand(key("c").entityId(), r));
    ask(arbiter, r -> new Release(key("c").entityId(), r));
    clock.advance(Duration.ofMinutes(10).plusSeconds(1));
    ask(arbiter, Tick::new);
    ask(arbiter, r -> new RemovePod(key("a").entityId(), r));

    assertEquals(
        List.of(
            "decided:grant",
            "decided:enqueue",
            "decided:enqueue",
            "decided:withdraw",
            "decided:preempt",
            "preempted:b>[a]",
            "decided:grant",
            "removed:a"),
        metrics.calls);
    // One per command that went through a round (SetGpus … RemovePod), plus the recovery's Tick.
    assertTrue(metrics.rounds.size() >= 11, "rounds: " + metrics.rounds.size());
    assertTrue(metrics.rounds.stream().noneMatch(Duration::isNegative), metrics.rounds.toString());
  }

  @Test
  void aFailedPersistAndAFailedRecoveryAreTold() throws Exception {
    ActorRef<NodeArbiter.Command> arbiter = spawn();
    ask(arbiter, r -> new SetGpus(oneGpu(), r));
    journal.failNextPersisted();
    TestProbe<Outcome> lost = testKit.createTestProbe();
    arbiter.tell(new ApplyPolicy(SharePolicy.SHARE_POOL, QosConfig.DEFAULT, lost.ref()));
    testKit
        .createTestProbe()
        .awaitAssert(
            Duration.ofSeconds(10),
            () -> {
              assertTrue(metrics.calls.contains("journal:persist"), metrics.calls.toString());
              return null;
            });
    // After its back-off the arbiter is back, recovered from the journal.
    assertEquals(Outcome.DONE, ask(arbiter, r -> new SetGpus(oneGpu(), r)));

    testKit.stop(arbiter);
    journal.failNextRead();
    spawn();
    testKit
        .createTestProbe()
        .awaitAssert(
            Duration.ofSeconds(10),
            () -> {
              assertTrue(metrics.calls.contains("journal:recovery"), metrics.calls.toString());
              return null;
            });
  }
}
