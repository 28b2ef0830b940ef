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
import dev.gpushare.node.PodActor.Notice;
import dev.gpushare.node.PodActor.Preempted;
import dev.gpushare.node.PodActor.Record;
import dev.gpushare.node.PodActor.Released;
import dev.gpushare.node.PodActor.SpecSeen;
import dev.gpushare.node.PodActor.StatusSynced;
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

/** One pod's record of what its arbiter decided, and the history users see. */
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

  /** What the listener heard, and how many events the journal held at that moment. */
  record Heard(PodKey key, Record record, int journalSize) {}

  static final Queue<Heard> heard = new ConcurrentLinkedQueue<>();
  static ActorTestKit testKit;
  static EventSourcedBehaviorTestKit<Command, Event, Record> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("pod-actor-test", CONFIG);
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(),
            PodActor.create(
                KEY,
                (key, record) ->
                    heard.add(
                        new Heard(
                            key,
                            record,
                            kit.persistenceTestKit()
                                .persistedInStorage(PodActor.persistenceId(KEY).id())
                                .size()))));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshPod() {
    kit.clear();
    heard.clear();
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
  void aNoticeAppliesTheStatusAndRecordsItsEventsAndConditions() {
    PodStatus running = status(PodState.RUNNING, 2, T1, 5);
    EventNote event = new EventNote("Warning", "GPUSharePreempt", "GPU is preempted from a.", T1);
    ConditionNote condition =
        new ConditionNote(
            "Interruption.GPUShareReclaim",
            "True",
            "GPUSharePreempt",
            "GPU is preempted from a.",
            T1);

    CommandResultWithReply<Command, Event, Record, Done> result =
        notice(new PodNotice(running, List.of(event), List.of(condition), false));

    assertEquals(Done.getInstance(), result.reply());
    assertEquals(
        List.of(new SpecSeen(running), new EventRecorded(event), new ConditionSet(condition)),
        result.events());
    assertEquals(new Record(running, List.of(event), List.of(condition), false), result.state());
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
  void aStaleNoticeIsIgnored() {
    PodStatus running = status(PodState.RUNNING, 1, T2, 7);
    notice(PodNotice.of(running));

    CommandResultWithReply<Command, Event, Record, Done> stale =
        notice(
            new PodNotice(
                status(PodState.READY, null, T1, 6),
                List.of(new EventNote("Warning", "GPUSharePreempted", "old", T1)),
                List.of(),
                false));

    assertEquals(Done.getInstance(), stale.reply(), "answered all the same");
    assertTrue(stale.hasNoEvents());
    assertEquals(running, stale.state().status());
    assertEquals(List.of(), stale.state().events());
  }

  @Test
  void reDeliveryOfTheSameNoticePersistsNothingAndTellsNoListener() {
    PodNotice notice =
        new PodNotice(
            status(PodState.RUNNING, 0, T1, 3),
            List.of(new EventNote("Warning", "GPUSharePreempt", "GPU is preempted from a.", T1)),
            List.of(
                new ConditionNote(
                    "Interruption.GPUShareReclaim",
                    "True",
                    "GPUSharePreempt",
                    "GPU is preempted from a.",
                    T1)),
            false);
    Record first = notice(notice).state();
    heard.clear();

    CommandResultWithReply<Command, Event, Record, Done> again = notice(notice);

    assertEquals(Done.getInstance(), again.reply());
    assertTrue(again.hasNoEvents());
    assertEquals(first, again.state());
    assertTrue(heard.isEmpty(), "nothing changed, nobody is told");
  }

  @Test
  void aNewerRevisionOfTheSameStatusIsRecordedOnceAndItsRepeatPersistsNothing() {
    notice(PodNotice.of(status(PodState.READY, null, T1, 3)));

    CommandResultWithReply<Command, Event, Record, Done> resync =
        notice(PodNotice.of(status(PodState.READY, null, T1, 9)));
    assertEquals(9, resync.state().status().revision(), "the newest revision seen is kept");

    CommandResultWithReply<Command, Event, Record, Done> repeat =
        notice(PodNotice.of(status(PodState.READY, null, T1, 9)));
    assertTrue(repeat.hasNoEvents(), "re-delivery persists nothing");
  }

  /**
   * After Hibernation (rev 5) and a notice rev 7 that changes nothing users see, a delayed notice
   * rev 6 Ready is stale and ignored: the newest revision seen is kept even when nothing else
   * changed.
   */
  @Test
  void aNoticeOlderThanTheNewestSeenIsIgnoredEvenWhenTheNewestChangedNothing() {
    notice(PodNotice.of(status(PodState.HIBERNATION, null, null, 5)));
    notice(PodNotice.of(status(PodState.HIBERNATION, null, null, 7)));

    CommandResultWithReply<Command, Event, Record, Done> delayed =
        notice(PodNotice.of(status(PodState.READY, null, T1, 6)));

    assertTrue(
        delayed.hasNoEvents(),
        "rev 6 arrived after rev 7 and must be ignored: " + delayed.events());
    assertEquals(PodState.HIBERNATION, delayed.state().status().state());
  }

  @Test
  void theJournalNamesEachLifecycleStep() {
    PodStatus hibernating = status(PodState.HIBERNATION, null, null, 1);
    PodStatus ready = status(PodState.READY, null, T1, 2);
    PodStatus running = status(PodState.RUNNING, 1, T1, 3);
    PodStatus requeued = status(PodState.READY, null, T1, 4);
    PodStatus granted = status(PodState.RUNNING, 0, T1, 5);
    PodStatus released = status(PodState.HIBERNATION, null, null, 6);
    assertEquals(List.of(new SpecSeen(hibernating)), notice(PodNotice.of(hibernating)).events());
    assertEquals(List.of(new DemandRaised(ready)), notice(PodNotice.of(ready)).events());
    assertEquals(List.of(new Granted(running)), notice(PodNotice.of(running)).events());
    assertEquals(List.of(new Preempted(requeued)), notice(PodNotice.of(requeued)).events());
    assertEquals(List.of(new Granted(granted)), notice(PodNotice.of(granted)).events());
    assertEquals(List.of(new Released(released)), notice(PodNotice.of(released)).events());
  }

  @Test
  void aDeletedNoticeMarksThePodDeletedOnce() {
    notice(PodNotice.of(status(PodState.RUNNING, 0, T1, 4)));
    PodStatus gone = new PodStatus(KEY, "n1", SPEC, null, null, null, null, 5);

    CommandResultWithReply<Command, Event, Record, Done> deleted =
        notice(new PodNotice(gone, List.of(), List.of(), true));

    assertEquals(List.of(new StatusSynced(gone), new Deleted(5)), deleted.events());
    assertTrue(deleted.state().deleted());
    assertEquals(gone, deleted.state().status());

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
    CommandResultWithReply<Command, Event, Record, Done> result =
        notice(
            new PodNotice(
                status(PodState.READY, null, T1, 2),
                List.of(new EventNote("Normal", "Test", "hello", T1)),
                List.of(),
                false));

    assertEquals(1, heard.size(), "one notice, one call: " + heard);
    Heard call = heard.peek();
    assertEquals(KEY, call.key());
    assertEquals(result.state(), call.record(), "the listener sees the record after the change");
    assertEquals(2, call.journalSize(), "both events were in the journal when it was called");
  }

  @Test
  void aRestartKeepsTheRecord() {
    notice(
        new PodNotice(
            status(PodState.RUNNING, 3, T1, 2),
            List.of(new EventNote("Warning", "GPUSharePreempt", "GPU is preempted from a.", T1)),
            List.of(
                new ConditionNote(
                    "Interruption.GPUShareReclaim",
                    "True",
                    "GPUSharePreempt",
                    "GPU is preempted from a.",
                    T1)),
            false));
    notice(PodNotice.of(status(PodState.HIBERNATION, null, null, 8)));
    Record before = kit.getState();

    Record after = kit.restart().state();

    assertEquals(before, after);
    assertEquals(PodState.HIBERNATION, after.status().state());
    assertTrue(
        notice(PodNotice.of(status(PodState.RUNNING, 3, T1, 2))).hasNoEvents(),
        "the recovered revision still rejects a stale notice");
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
