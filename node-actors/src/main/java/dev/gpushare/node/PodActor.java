package dev.gpushare.node;

import dev.gpushare.arbiter.HistoryTags;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * One pod's own record (ARCHITECTURE.md §2): the spec its node's arbiter took, and what users see
 * of the arbiter's decisions on it — the Kubernetes Events and conditions of SPEC §7 (preemption,
 * revocation, pinning) and the telemetry rules' requests. Its decision state (Hibernation, Ready,
 * Running, the GPU) is not kept here: the arbiter's book is its one source.
 *
 * <p>The arbiter tells it what to record after each decision is durable, off the answer's path; a
 * plain grant or release tells it nothing. Notices are ignored when older than what it has
 * (revision) or already recorded (content), so re-delivery is harmless; after a recovery it asks
 * its arbiter for what it may have missed ({@link Catchup}).
 *
 * <p>Journals written before 0.2 also hold one status event per transition ({@code DemandRaised},
 * {@code Granted}, …); they are read into the record's {@code status} and otherwise ignored.
 */
public final class PodActor
    extends EventSourcedBehaviorWithEnforcedReplies<
        PodActor.Command, PodActor.Event, PodActor.Record> {

  /** Most recent Events kept per pod (Kubernetes keeps Events for a limited time too). */
  static final int MAX_EVENTS = 100;

  public sealed interface Command extends JsonSerializable {}

  public record Notice(PodNotice notice, ActorRef<Done> replyTo) implements Command {}

  public record GetRecord(ActorRef<Record> replyTo) implements Command {}

  public sealed interface Event extends JsonSerializable {}

  /** A status the arbiter decided; carries the whole status. */
  public sealed interface StatusEvent extends Event {
    PodStatus status();
  }

  /** The pod was bound and its spec seen. */
  public record SpecSeen(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: Hibernation → Ready. */
  public record DemandRaised(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: Ready → Hibernation. */
  public record DemandWithdrawn(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: → Running on a device (share-pool grant). */
  public record Granted(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: Running → Hibernation. */
  public record Released(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: Running → Ready. */
  public record Preempted(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: Pending → Running (static pinning). */
  public record Pinned(PodStatus status) implements StatusEvent {}

  /** Written before 0.2: the same state at a newer revision. */
  public record StatusSynced(PodStatus status) implements StatusEvent {}

  /**
   * What one of the arbiter's decisions made visible on the pod, at the arbiter's {@code revision}:
   * new Events (appended) and conditions (each replaces the one of its type).
   */
  public record Noted(long revision, List<EventNote> events, List<ConditionNote> conditions)
      implements Event {
    public Noted {
      events = events == null ? List.of() : List.copyOf(events);
      conditions = conditions == null ? List.of() : List.copyOf(conditions);
    }
  }

  /** Written before 0.2 (now inside {@link Noted}): one Event. */
  public record EventRecorded(EventNote event) implements Event {}

  /** Written before 0.2 (now inside {@link Noted}): one condition. */
  public record ConditionSet(ConditionNote condition) implements Event {}

  public record Deleted(long revision) implements Event {}

  /**
   * What the pod knows of itself. {@code status}: as of the spec seen (and, in journals written
   * before 0.2, the latest transition); {@code revision}: the newest arbiter revision recorded.
   */
  public record Record(
      PodStatus status,
      List<EventNote> events,
      List<ConditionNote> conditions,
      boolean deleted,
      long revision)
      implements JsonSerializable {
    public Record {
      events = events == null ? List.of() : List.copyOf(events);
      conditions = conditions == null ? List.of() : List.copyOf(conditions);
      if (status != null && status.revision() > revision) {
        revision = status.revision();
      }
    }

    Record withStatus(PodStatus s) {
      return new Record(s, events, conditions, deleted, revision);
    }

    Record noted(Noted n) {
      Record r = this;
      for (EventNote e : n.events()) {
        r = r.withEvent(e);
      }
      for (ConditionNote c : n.conditions()) {
        r = r.withCondition(c);
      }
      return new Record(
          r.status, r.events, r.conditions, r.deleted, Math.max(revision, n.revision()));
    }

    /**
     * This record with the arbiter's latest {@code events} and {@code conditions} for the pod that
     * it has not recorded yet (it catches up in the arbiter's order, so those are its newest).
     */
    Record following(List<EventNote> latest, List<ConditionNote> current) {
      Record r = this;
      for (EventNote e : latest) {
        if (!r.events.contains(e)) {
          r = r.withEvent(e);
        }
      }
      for (ConditionNote c : current) {
        if (!r.conditions.contains(c)) {
          r = r.withCondition(c);
        }
      }
      return r;
    }

    Record withEvent(EventNote e) {
      List<EventNote> next = new ArrayList<>(events);
      next.add(e);
      if (next.size() > MAX_EVENTS) {
        next = next.subList(next.size() - MAX_EVENTS, next.size());
      }
      return new Record(status, next, conditions, deleted, revision);
    }

    Record withCondition(ConditionNote c) {
      List<ConditionNote> next = new ArrayList<>();
      for (ConditionNote old : conditions) {
        if (!old.type().equals(c.type())) {
          next.add(old);
        }
      }
      next.add(c);
      return new Record(status, events, next, deleted, revision);
    }
  }

  /** Who hears when the record changes in what users see (the API's watch and long-poll). */
  public interface Listener {
    void changed(PodKey key, boolean deleted);
  }

  /** How a recovered pod asks its node's arbiter for what it may have missed. */
  public interface Catchup {
    Catchup NONE = (node, key) -> {};

    void resync(String node, PodKey key);
  }

  public static PersistenceId persistenceId(PodKey key) {
    return PersistenceId.of("Pod", key.entityId(), "|");
  }

  public static Behavior<Command> create(PodKey key, Listener listener) {
    return create(null, key, listener, Catchup.NONE);
  }

  /** The pod {@code key} of {@code node}, asking {@code catchup} after each recovery. */
  public static Behavior<Command> create(
      String node, PodKey key, Listener listener, Catchup catchup) {
    return new PodActor(node, key, listener, catchup);
  }

  private final String node;
  private final PodKey key;
  private final Listener listener;
  private final Catchup catchup;

  private PodActor(String node, PodKey key, Listener listener, Catchup catchup) {
    super(
        persistenceId(key),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.node = node;
    this.key = key;
    this.listener = listener;
    this.catchup = catchup;
  }

  @Override
  public Record emptyState() {
    return new Record(null, List.of(), List.of(), false, -1);
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(100, 2);
  }

  /** Every event of the record carries its pod's history tag ({@link HistoryTags}). */
  @Override
  public Set<String> tagsFor(Event event) {
    return Set.of(HistoryTags.of(key));
  }

  @Override
  public SignalHandler<Record> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(
            RecoveryCompleted.instance(),
            r -> {
              if (node != null && !r.deleted()) {
                catchup.resync(node, key);
              }
            })
        .build();
  }

  @Override
  public CommandHandlerWithReply<Command, Event, Record> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Notice.class, this::onNotice)
        .onCommand(GetRecord.class, (r, c) -> Effect().reply(c.replyTo(), r))
        .build();
  }

  private ReplyEffect<Event, Record> onNotice(Record r, Notice c) {
    PodNotice n = c.notice();
    long revision = n.status() == null ? r.revision() : n.status().revision();
    if (n.status() != null && revision < r.revision()) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    List<Event> events = new ArrayList<>();
    if (r.status() == null && n.status() != null) {
      events.add(new SpecSeen(n.status()));
    }
    List<EventNote> newEvents = n.events().stream().filter(e -> !r.events().contains(e)).toList();
    List<ConditionNote> newConditions =
        n.conditions().stream().filter(cond -> !r.conditions().contains(cond)).toList();
    if (!newEvents.isEmpty() || !newConditions.isEmpty()) {
      events.add(new Noted(revision, newEvents, newConditions));
    }
    if (n.deleted() && !r.deleted()) {
      events.add(new Deleted(revision));
    }
    if (events.isEmpty()) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    return Effect()
        .persist(events)
        .thenRun(
            after -> {
              if (!after.events().equals(r.events())
                  || !after.conditions().equals(r.conditions())
                  || after.deleted() != r.deleted()) {
                listener.changed(key, after.deleted());
              }
            })
        .thenReply(c.replyTo(), after -> Done.getInstance());
  }

  @Override
  public EventHandler<Record, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(StatusEvent.class, (r, e) -> r.withStatus(e.status()))
        .onEvent(Noted.class, Record::noted)
        .onEvent(EventRecorded.class, (r, e) -> r.withEvent(e.event()))
        .onEvent(ConditionSet.class, (r, e) -> r.withCondition(e.condition()))
        .onEvent(
            Deleted.class,
            (r, e) -> new Record(r.status(), r.events(), r.conditions(), true, r.revision()))
        .build();
  }
}
