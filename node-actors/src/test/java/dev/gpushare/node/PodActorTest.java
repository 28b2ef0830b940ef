package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import dev.gpushare.node.PodActor.Command;
import dev.gpushare.node.PodActor.ConditionSet;
import dev.gpushare.node.PodActor.Deleted;
import dev.gpushare.node.PodActor.DemandRaised;
import dev.gpushare.node.PodActor.Event;
import dev.gpushare.node.PodActor.EventRecorded;
import dev.gpushare.node.PodActor.GetRecord;
import dev.gpushare.node.PodActor.Granted;
import dev.gpushare.node.PodActor.Noted;
import dev.gpushare.node.PodActor.Notice;
import dev.gpushare.node.PodActor.Record;
import dev.gpushare.node.PodActor.SpecSeen;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One pod's own record: the spec seen, the Events and conditions of its arbiter's decisions, its
 * removal — never its decision state, which its arbiter's book holds.
 */
class PodActorTest {
  static final PodKey KEY = new PodKey("team-a", "notebook", "uid-1");
  static final PodSharing SPEC =
      PodSharing.shared(SharePolicy.SHARE_POOL, new Share(10, 10), new Share(100, 100), "main");
  static final Instant T1 = Instant.parse("2026-01-01T00:01:00Z");
  static final Instant T2 = Instant.parse("2026-01-01T00:02:00Z");

  static final Config CONFIG =
      ConfigFactory.parseString(
              "pekko.loglevel = WARNING\n"
                  + "pekko.actor.serialization-bindings {\n"
                  + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                  + "}\n")
          .withFallback(EventSourcedBehaviorTestKit.config());

  static final EventNote PREEMPT =
      new EventNote("Warning", "GPUSharePreempt", "GPU is preempted from a.", T1);
  static final ConditionNote RECLAIM =
      new ConditionNote(
          "Interruption.GPUShareReclaim",
          "True",
          "GPUSharePreempt",
          "GPU is preempted from a.",
          T1);

  /** What the listener heard, and how many events the journal held at that moment. */
  record Heard(PodKey key, boolean deleted, int journalSize) {}

  static final Queue<Heard> heard = new ConcurrentLinkedQueue<>();
  static final Queue<String> resyncs = new ConcurrentLinkedQueue<>();
  static ActorTestKit testKit;
  static EventSourcedBehaviorTestKit<Command, Event, Record> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("pod-actor-test", CONFIG);
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(),
            PodActor.create(
                "n1",
                KEY,
                (key, deleted) ->
                    heard.add(
                        new Heard(
                            key,
                            deleted,
                            kit.persistenceTestKit()
                                .persistedInStorage(PodActor.persistenceId(KEY).id())
                                .size())),
                (node, key) -> resyncs.add(node + ":" + key.entityId())));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshPod() {
    kit.clear();
    heard.clear();
    resyncs.clear();
  }

  @Test
  void aNewPodHasNoStatusAndNoHistory() {
    Record record = kit.<Record>runCommand(GetRecord::new).reply();
    assertNull(record.status());
    assertEquals(List.of(), record.events());
    assertEquals(List.of(), record.conditions());
    assertFalse(record.deleted());
  }

  @Test
  void theFirstNoticeRecordsTheSpecAndEveryNoticeItsEventsAndConditionsInOneEvent() {
    PodStatus running = status(PodState.RUNNING, 2, T1, 5);

    CommandResultWithReply<Command, Event, Record, Done> result =
        notice(new PodNotice(running, List.of(PREEMPT), List.of(RECLAIM), false));

    assertEquals(Done.getInstance(), result.reply());
    assertEquals(
        List.of(new SpecSeen(running), new Noted(5, List.of(PREEMPT), List.of(RECLAIM))),
        result.events());
    assertEquals(new Record(running, List.of(PREEMPT), List.of(RECLAIM), false, 5), result.state());
  }

  @Test
  void aStatusChangeAloneIsNotThePodsToRecord() {
    notice(PodNotice.of(status(PodState.HIBERNATION, null, null, 3)));

    CommandResultWithReply<Command, Event, Record, Done> granted =
        notice(PodNotice.of(status(PodState.RUNNING, 0, T1, 9)));
    assertTrue(granted.hasNoEvents(), "a plain grant writes nothing here: " + granted.events());
    assertTrue(heard.stream().noneMatch(h -> h.journalSize() > 1), "nothing new to show");
  }

  @Test
  void aConditionReplacesAnEarlierOneOfTheSameTypeAndKeepsOthers() {
    ConditionNote fragmented =
        new ConditionNote("GPUShareAllocated", "False", "GPUShareFragmented", "no room", T1);
    ConditionNote reclaimed =
        new ConditionNote(
            "Interruption.GPUShareReclaim",
            "True",
            "GPUSharePreempted",
            "GPU is preempted by b.",
            T1);
    ConditionNote pinned =
        new ConditionNote(
            "GPUShareAllocated", "True", "GPUSharePinned", "pinned to GPU 0 (GPU-x).", T2);
    notice(
        new PodNotice(
            status(PodState.PENDING, null, null, 1),
            List.of(),
            List.of(fragmented, reclaimed),
            false));

    CommandResultWithReply<Command, Event, Record, Done> result =
        notice(
            new PodNotice(status(PodState.RUNNING, 0, T2, 2), List.of(), List.of(pinned), false));

    assertEquals(List.of(reclaimed, pinned), result.state().conditions());
  }

  @Test
  void aNoticeOlderThanWhatTheRecordHoldsIsIgnored() {
    notice(new PodNotice(status(PodState.RUNNING, 1, T2, 7), List.of(PREEMPT), List.of(), false));

    CommandResultWithReply<Command, Event, Record, Done> stale =
        notice(
            new PodNotice(
                status(PodState.READY, null, T1, 6),
                List.of(new EventNote("Warning", "GPUSharePreempted", "old", T1)),
                List.of(),
                false));

    assertEquals(Done.getInstance(), stale.reply(), "answered all the same");
    assertTrue(stale.hasNoEvents());
    assertEquals(List.of(PREEMPT), stale.state().events());
  }

  @Test
  void reDeliveryOfTheSameNoticePersistsNothingAndTellsNoListener() {
    PodNotice notice =
        new PodNotice(
            status(PodState.RUNNING, 0, T1, 3), List.of(PREEMPT), List.of(RECLAIM), false);
    Record first = notice(notice).state();
    heard.clear();

    CommandResultWithReply<Command, Event, Record, Done> again = notice(notice);

    assertEquals(Done.getInstance(), again.reply());
    assertTrue(again.hasNoEvents());
    assertEquals(first, again.state());
    assertTrue(heard.isEmpty(), "nothing changed, nobody is told");

    // A catch-up notice carries everything the arbiter keeps: only what is new is recorded.
    EventNote later = new EventNote("Normal", "GPUShareIdle", "please hibernate", T2);
    CommandResultWithReply<Command, Event, Record, Done> catchup =
        notice(
            new PodNotice(
                status(PodState.RUNNING, 0, T1, 8),
                List.of(PREEMPT, later),
                List.of(RECLAIM),
                false));
    assertEquals(List.of(new Noted(8, List.of(later), List.of())), catchup.events());
  }

  @Test
  void aDeletedNoticeMarksThePodDeletedOnce() {
    PodStatus running = status(PodState.RUNNING, 0, T1, 4);
    notice(PodNotice.of(running));
    PodStatus gone = new PodStatus(KEY, "n1", SPEC, null, null, null, null, 5);

    CommandResultWithReply<Command, Event, Record, Done> deleted =
        notice(new PodNotice(gone, List.of(), List.of(), true));

    assertEquals(List.of(new Deleted(5)), deleted.events());
    assertTrue(deleted.state().deleted());
    assertEquals(running, deleted.state().status(), "the spec seen stays");
    assertEquals(new Heard(KEY, true, 2), heard.stream().reduce((a, b) -> b).orElseThrow());

    assertTrue(notice(new PodNotice(gone, List.of(), List.of(), true)).hasNoEvents());
  }

  @Test
  void aDeletedNoticeWithoutStatusKeepsTheLastStatus() {
    PodStatus running = status(PodState.RUNNING, 0, T1, 4);
    notice(PodNotice.of(running));

    CommandResultWithReply<Command, Event, Record, Done> deleted =
        notice(new PodNotice(null, List.of(), List.of(), true));

    assertEquals(List.of(new Deleted(4)), deleted.events());
    assertEquals(running, deleted.state().status());
    assertTrue(deleted.state().deleted());
  }

  @Test
  void onlyTheMostRecentEventsAreKept() {
    List<EventNote> events = new ArrayList<>();
    for (int i = 0; i < PodActor.MAX_EVENTS + 5; i++) {
      events.add(new EventNote("Normal", "Test", "event " + i, T1.plusSeconds(i)));
    }

    CommandResultWithReply<Command, Event, Record, Done> result =
        notice(new PodNotice(status(PodState.READY, null, T1, 1), events, List.of(), false));

    List<EventNote> kept = result.state().events();
    assertEquals(PodActor.MAX_EVENTS, kept.size());
    assertEquals("event 5", kept.get(0).message(), "the oldest are dropped");
    assertEquals("event " + (PodActor.MAX_EVENTS + 4), kept.get(kept.size() - 1).message());
    assertEquals(kept, kit.restart().state().events(), "and stay dropped after a restart");
  }

  @Test
  void theListenerHearsOfAChangeOnlyOnceItIsPersisted() {
    notice(
        new PodNotice(
            status(PodState.READY, null, T1, 2),
            List.of(new EventNote("Normal", "Test", "hello", T1)),
            List.of(),
            false));

    assertEquals(1, heard.size(), "one notice, one call: " + heard);
    assertEquals(
        new Heard(KEY, false, 2),
        heard.peek(),
        "both events were in the journal when it was called");
  }

  @Test
  void aRestartKeepsTheRecordAndAsksTheArbiterForWhatItMayHaveMissed() {
    notice(
        new PodNotice(
            status(PodState.RUNNING, 3, T1, 2), List.of(PREEMPT), List.of(RECLAIM), false));
    notice(
        new PodNotice(
            status(PodState.HIBERNATION, null, null, 8),
            List.of(new EventNote("Normal", "GPUShareIdleReleased", "released", T2)),
            List.of(),
            false));
    Record before = kit.getState();
    resyncs.clear();

    Record after = kit.restart().state();

    assertEquals(before, after);
    assertEquals(8, after.revision());
    assertEquals(List.of("n1:" + KEY.entityId()), List.copyOf(resyncs));
    assertTrue(
        notice(
                new PodNotice(
                    status(PodState.RUNNING, 3, T1, 5), List.of(), List.of(RECLAIM), false))
            .hasNoEvents(),
        "the recovered revision still rejects a stale notice");
  }

  /** Journals written before 0.2 hold a status event per transition: they still recover. */
  @Test
  void aJournalOfOlderReleasesRecoversItsStatusEventsAndConditions() {
    PodStatus ready = status(PodState.READY, null, T1, 2);
    PodStatus running = status(PodState.RUNNING, 1, T1, 3);
    kit.initialize(
        new SpecSeen(status(PodState.HIBERNATION, null, null, 1)),
        new DemandRaised(ready),
        new Granted(running),
        new EventRecorded(PREEMPT),
        new ConditionSet(RECLAIM));
    assertEquals(new Record(running, List.of(PREEMPT), List.of(RECLAIM), false, 3), kit.getState());

    CommandResultWithReply<Command, Event, Record, Done> next =
        notice(
            new PodNotice(
                status(PodState.READY, null, T2, 4),
                List.of(PREEMPT, new EventNote("Warning", "GPUSharePreempted", "by b", T2)),
                List.of(),
                false));
    assertEquals(
        List.of(
            new Noted(
                4, List.of(new EventNote("Warning", "GPUSharePreempted", "by b", T2)), List.of())),
        next.events());
    assertEquals(next.state(), kit.restart().state());
  }

  /**
   * A view adds to the record what the arbiter's book keeps and the record has not yet followed:
   * each missing Event once, after the recorded ones; each condition replacing its type.
   */
  @Test
  void aRecordFollowsTheBooksLatestNotesWithoutRepeatingThem() {
    EventNote later = new EventNote("Warning", "GPUSharePreempted", "by b", T2);
    ConditionNote allocated =
        new ConditionNote("GPUShareAllocated", "False", "GPUShareFragmented", "no GPU fits", T2);
    Record recorded = new Record(null, List.of(PREEMPT), List.of(RECLAIM), false, 3);

    Record behind = new Record(null, List.of(), List.of(), false, 0);
    assertEquals(
        new Record(null, List.of(PREEMPT, later), List.of(RECLAIM, allocated), false, 0),
        behind.following(List.of(PREEMPT, later), List.of(RECLAIM, allocated)));
    assertEquals(
        new Record(null, List.of(PREEMPT, later), List.of(RECLAIM, allocated), false, 3),
        recorded.following(List.of(PREEMPT, later), List.of(RECLAIM, allocated)));
    assertEquals(recorded, recorded.following(List.of(PREEMPT), List.of(RECLAIM)));
    ConditionNote reclaimedAgain =
        new ConditionNote(RECLAIM.type(), "True", "GPUSharePreempt", "from c", T2);
    assertEquals(
        List.of(reclaimedAgain),
        recorded.following(List.of(), List.of(reclaimedAgain)).conditions(),
        "a condition replaces the recorded one of its type");
  }

  // ---- helpers ----

  private static CommandResultWithReply<Command, Event, Record, Done> notice(PodNotice notice) {
    return kit.runCommand(r -> new Notice(notice, r));
  }

  private static PodStatus status(PodState state, Integer gpu, Instant since, long revision) {
    return new PodStatus(
        KEY, "n1", SPEC, state, gpu, gpu == null ? null : "GPU-" + gpu, since, revision);
  }
}
