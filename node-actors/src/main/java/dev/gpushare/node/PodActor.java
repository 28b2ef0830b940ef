package dev.gpushare.node;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * One pod's lifecycle (ARCHITECTURE.md §2): the status its node's arbiter decided (Hibernation,
 * Ready, Running; device; since when), and its history — the Kubernetes Events and conditions users
 * see (SPEC §7). The arbiter is the authority on transitions; this actor records what it is told,
 * in order, and ignores a notice older than what it already has, so re-delivery and the re-sync
 * after a crash are harmless.
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

  /**
   * A status the arbiter decided. The event type names the lifecycle step, so that the journal
   * reads as the pod's history; each carries the whole status.
   */
  public sealed interface StatusEvent extends Event {
    PodStatus status();
  }

  /** The pod was bound and its spec seen (first status). */
  public record SpecSeen(PodStatus status) implements StatusEvent {}

  /** Hibernation → Ready. */
  public record DemandRaised(PodStatus status) implements StatusEvent {}

  /** Ready → Hibernation. */
  public record DemandWithdrawn(PodStatus status) implements StatusEvent {}

  /** → Running on a device (share-pool grant). */
  public record Granted(PodStatus status) implements StatusEvent {}

  /** Running → Hibernation. */
  public record Released(PodStatus status) implements StatusEvent {}

  /** Running → Ready: preempted while it still has demand. */
  public record Preempted(PodStatus status) implements StatusEvent {}

  /** Pending → Running (static pinning). */
  public record Pinned(PodStatus status) implements StatusEvent {}

  /** The same state at a newer revision (a re-sync after recovery). */
  public record StatusSynced(PodStatus status) implements StatusEvent {}

  public record EventRecorded(EventNote event) implements Event {}

  public record ConditionSet(ConditionNote condition) implements Event {}

  public record Deleted(long revision) implements Event {}

  /** What the pod knows of itself; {@code status} is {@code null} until the arbiter first spoke. */
  public record Record(
      PodStatus status, List<EventNote> events, List<ConditionNote> conditions, boolean deleted)
      implements JsonSerializable {
    public Record {
      events = List.copyOf(events);
      conditions = List.copyOf(conditions);
    }

    long revision() {
      return status == null ? -1 : status.revision();
    }

    Record withStatus(PodStatus s) {
      return new Record(s, events, conditions, deleted);
    }

    Record withEvent(EventNote e) {
      List<EventNote> next = new ArrayList<>(events);
      next.add(e);
      if (next.size() > MAX_EVENTS) {
        next = next.subList(next.size() - MAX_EVENTS, next.size());
      }
      return new Record(status, next, conditions, deleted);
    }

    Record withCondition(ConditionNote c) {
      List<ConditionNote> next = new ArrayList<>();
      for (ConditionNote old : conditions) {
        if (!old.type().equals(c.type())) {
          next.add(old);
        }
      }
      next.add(c);
      return new Record(status, events, next, deleted);
    }
  }

  /** Who hears of every change (the API's watch and long-poll). */
  public interface Listener {
    void changed(PodKey key, Record record);
  }

  public static PersistenceId persistenceId(PodKey key) {
    return PersistenceId.of("Pod", key.entityId(), "|");
  }

  public static Behavior<Command> create(PodKey key, Listener listener) {
    return new PodActor(key, listener);
  }

  private final PodKey key;
  private final Listener listener;

  private PodActor(PodKey key, Listener listener) {
    super(
        persistenceId(key),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.key = key;
    this.listener = listener;
  }

  @Override
  public Record emptyState() {
    return new Record(null, List.of(), List.of(), false);
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(100, 2);
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
    if (n.status() != null && n.status().revision() < r.revision()) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    List<Event> events = new ArrayList<>();
    // Recorded whenever newer, even if nothing users see changed: the revision seen must advance
    // so that a delayed older notice is recognised as stale.
    if (n.status() != null && n.status().revision() > r.revision()) {
      events.add(statusEvent(r.status(), n.status()));
    }
    for (EventNote e : n.events()) {
      if (!r.events().contains(e)) {
        events.add(new EventRecorded(e));
      }
    }
    for (ConditionNote cond : n.conditions()) {
      if (!r.conditions().contains(cond)) {
        events.add(new ConditionSet(cond));
      }
    }
    if (n.deleted() && !r.deleted()) {
      events.add(new Deleted(n.status() == null ? r.revision() : n.status().revision()));
    }
    if (events.isEmpty()) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    return Effect()
        .persist(events)
        .thenRun(
            after -> {
              if (visiblyChanged(r, after)) {
                listener.changed(key, after);
              }
            })
        .thenReply(c.replyTo(), after -> Done.getInstance());
  }

  /** The lifecycle step from {@code before} to {@code after}. */
  static StatusEvent statusEvent(PodStatus before, PodStatus after) {
    if (before == null) {
      return new SpecSeen(after);
    }
    PodState from = before.state();
    PodState to = after.state();
    if (from == to) {
      return new StatusSynced(after);
    }
    if (to == PodState.READY) {
      return from == PodState.RUNNING ? new Preempted(after) : new DemandRaised(after);
    }
    if (to == PodState.RUNNING) {
      return from == PodState.PENDING ? new Pinned(after) : new Granted(after);
    }
    if (to == PodState.HIBERNATION) {
      return from == PodState.RUNNING ? new Released(after) : new DemandWithdrawn(after);
    }
    return new StatusSynced(after);
  }

  private static boolean visiblyChanged(Record before, Record after) {
    return !sameStatus(after.status(), before.status())
        || !after.events().equals(before.events())
        || !after.conditions().equals(before.conditions())
        || after.deleted() != before.deleted();
  }

  /** Equal in everything users see; the revision alone does not make a change. */
  private static boolean sameStatus(PodStatus a, PodStatus b) {
    if (a == null || b == null) {
      return a == b;
    }
    return true
        && a.state() == b.state()
        && Objects.equals(a.gpu(), b.gpu())
        && Objects.equals(a.gpuUuid(), b.gpuUuid())
        && Objects.equals(a.since(), b.since())
        && Objects.equals(a.spec(), b.spec())
        && Objects.equals(a.node(), b.node());
  }

  @Override
  public EventHandler<Record, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(StatusEvent.class, (r, e) -> r.withStatus(e.status()))
        .onEvent(EventRecorded.class, (r, e) -> r.withEvent(e.event()))
        .onEvent(ConditionSet.class, (r, e) -> r.withCondition(e.condition()))
        .onEvent(Deleted.class, (r, e) -> new Record(r.status(), r.events(), r.conditions(), true))
        .build();
  }
}
