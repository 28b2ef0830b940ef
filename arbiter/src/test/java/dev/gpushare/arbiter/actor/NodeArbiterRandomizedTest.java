package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.AddPod;
import dev.gpushare.arbiter.actor.NodeArbiter.ApplyPolicy;
import dev.gpushare.arbiter.actor.NodeArbiter.Command;
import dev.gpushare.arbiter.actor.NodeArbiter.Demand;
import dev.gpushare.arbiter.actor.NodeArbiter.Event;
import dev.gpushare.arbiter.actor.NodeArbiter.Outcome;
import dev.gpushare.arbiter.actor.NodeArbiter.Release;
import dev.gpushare.arbiter.actor.NodeArbiter.RemovePod;
import dev.gpushare.arbiter.actor.NodeArbiter.SetGpus;
import dev.gpushare.arbiter.actor.NodeArbiter.Tick;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Invariants 1–3 as properties of the single writer's journal: random demands, releases, removals,
 * health changes, time passing (preemption) and restarts, through the real actor with every
 * command, event and book round-tripped through Jackson. After every command the book holds them;
 * afterwards <em>every prefix</em> of the journal, folded from nothing as recovery folds it, holds
 * them too, and the whole journal folds to exactly the book the actor had.
 */
class NodeArbiterRandomizedTest {
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  static ActorTestKit testKit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("node-arbiter-randomized", NodeArbiterTest.CONFIG);
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @Test
  void everyPrefixOfTheJournalHoldsTheInvariantsAndTheWholeOneIsTheBook() {
    for (long seed = 1; seed <= 12; seed++) {
      run(seed);
    }
  }

  private void run(long seed) {
    Random random = new Random(seed);
    String node = "r" + seed;
    ManualClock clock = new ManualClock(T0);
    EventSourcedBehaviorTestKit<Command, Event, ShareBook> kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(), NodeArbiter.create(node, new FakePeers(), clock));
    List<Event> journal = new ArrayList<>();
    Function<Function<ActorRef<Outcome>, Command>, Outcome> run =
        command -> {
          CommandResultWithReply<Command, Event, ShareBook, Outcome> r = kit.runCommand(command);
          journal.addAll(r.events());
          assertEquals(List.of(), r.state().violations(), "seed " + seed + " after " + r.events());
          Outcome o = r.reply();
          if (o.ok() && o.status() != null && o.status().state() == PodState.RUNNING) {
            assertTrue(
                r.state().holdings().containsKey(o.status().key().entityId()),
                "answered Running, so held: " + o);
          }
          return o;
        };
    int gpus = 2 + random.nextInt(3);
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (int i = 0; i < gpus; i++) {
      slots.add(new ShareBook.GpuSlot(i, "GPU-" + node + "-" + i, true));
    }
    run.apply(r -> new SetGpus(slots, r));
    QosConfig qos = new QosConfig(random.nextBoolean(), 1 + random.nextInt(5), "0");
    run.apply(r -> new ApplyPolicy(SharePolicy.SHARE_POOL, qos, r));
    List<PodKey> pods = new ArrayList<>();
    List<PodSharing> specs = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      pods.add(new PodKey("default", "p" + i, "u" + i));
      int limit = 10 * (1 + random.nextInt(10));
      specs.add(
          PodSharing.shared(
              SharePolicy.SHARE_POOL,
              new Share(Math.min(10, limit), Math.min(10, limit)),
              new Share(limit, limit),
              "main"));
      int p = i;
      run.apply(r -> new AddPod(pods.get(p), specs.get(p), r));
    }
    for (int step = 0; step < 160; step++) {
      int p = random.nextInt(pods.size());
      String id = pods.get(p).entityId();
      int op = random.nextInt(100);
      if (op < 40) {
        run.apply(r -> new Demand(id, r));
      } else if (op < 65) {
        run.apply(r -> new Release(id, r));
      } else if (op < 80) {
        clock.advance(Duration.ofSeconds(30 + random.nextInt(240)));
        run.apply(Tick::new);
      } else if (op < 86) {
        run.apply(r -> new RemovePod(id, r));
        run.apply(r -> new AddPod(pods.get(p), specs.get(p), r));
      } else if (op < 94) {
        List<ShareBook.GpuSlot> flipped = new ArrayList<>(kit.getState().gpus());
        int g = random.nextInt(flipped.size());
        ShareBook.GpuSlot was = flipped.get(g);
        flipped.set(g, new ShareBook.GpuSlot(was.index(), was.uuid(), !was.healthy()));
        run.apply(r -> new SetGpus(flipped, r));
      } else {
        ShareBook before = kit.getState();
        assertEquals(before, kit.restart().state(), "seed " + seed + ": recovery rebuilds it");
      }
    }

    ShareBook folded = ShareBook.empty(node);
    for (int i = 0; i < journal.size(); i++) {
      folded = NodeArbiter.apply(folded, journal.get(i));
      assertEquals(
          List.of(), folded.violations(), "seed " + seed + ", prefix of " + (i + 1) + " events");
    }
    assertEquals(kit.getState(), folded, "seed " + seed + ": the journal is the book");
    assertEquals(folded, kit.restart().state());
  }
}
