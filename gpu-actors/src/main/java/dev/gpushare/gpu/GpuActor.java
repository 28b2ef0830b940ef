package dev.gpushare.gpu;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerEntry;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerReply;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerSnapshot;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
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
 * One GPU's capacity ledger (ARCHITECTURE.md §2): which pods hold which shares, by decision id, and
 * the device's health. The 100 % invariant is enforced here, where the resource lives: a
 * reservation that would take core or memory above 100 % is refused whatever the arbiter believes.
 * Reserving or freeing the same decision twice is harmless.
 */
public final class GpuActor
    extends EventSourcedBehaviorWithEnforcedReplies<
        GpuActor.Command, GpuActor.Event, GpuActor.State> {

  public sealed interface Command extends JsonSerializable {}

  /** What the backend reports of the device (discovery, or the same again at start-up). */
  public record Describe(GpuDevice device, ActorRef<Done> replyTo) implements Command {}

  public record Reserve(String decisionId, String pod, Share share, ActorRef<LedgerReply> replyTo)
      implements Command {}

  public record Free(String decisionId, ActorRef<Done> replyTo) implements Command {}

  public record GetLedger(ActorRef<LedgerSnapshot> replyTo) implements Command {}

  public record GetState(ActorRef<State> replyTo) implements Command {}

  public record SetHealth(boolean healthy, ActorRef<Done> replyTo) implements Command {}

  public sealed interface Event extends JsonSerializable {}

  public record Discovered(GpuDevice device) implements Event {}

  public record Reserved(String decisionId, String pod, Share share) implements Event {}

  public record Freed(String decisionId) implements Event {}

  public record HealthChanged(boolean healthy) implements Event {}

  /**
   * @param reservations by decision id
   */
  public record State(GpuDevice device, boolean healthy, Map<String, LedgerEntry> reservations)
      implements JsonSerializable {
    public State {
      reservations = new TreeMap<>(reservations);
    }

    public Share used() {
      return reservations.values().stream().map(LedgerEntry::share).reduce(Share.NONE, Share::plus);
    }

    /** Why {@code share} for {@code pod} cannot be reserved, or {@code null} when it can. */
    String refusal(String decisionId, String pod, Share share) {
      for (Map.Entry<String, LedgerEntry> r : reservations.entrySet()) {
        if (r.getValue().pod().equals(pod)) {
          return "pod " + pod + " already holds this GPU under decision " + r.getKey();
        }
      }
      if (!share.fitsBeside(used())) {
        return "reserving "
            + share
            + " beside "
            + used()
            + " in use would exceed 100% of GPU "
            + (device == null ? "?" : device.index());
      }
      return null;
    }

    State with(String decisionId, LedgerEntry entry) {
      Map<String, LedgerEntry> next = new TreeMap<>(reservations);
      next.put(decisionId, entry);
      return new State(device, healthy, next);
    }

    State without(String decisionId) {
      Map<String, LedgerEntry> next = new TreeMap<>(reservations);
      next.remove(decisionId);
      return new State(device, healthy, next);
    }

    LedgerSnapshot snapshot(String uuid) {
      return new LedgerSnapshot(uuid, healthy, reservations);
    }
  }

  public static PersistenceId persistenceId(String node, String uuid) {
    return PersistenceId.ofUniqueId("Gpu|" + node + "|" + uuid);
  }

  public static Behavior<Command> create(String node, String uuid) {
    return new GpuActor(node, uuid);
  }

  private final String uuid;

  private GpuActor(String node, String uuid) {
    super(
        persistenceId(node, uuid),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.uuid = uuid;
  }

  @Override
  public State emptyState() {
    return new State(null, true, Map.of());
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(100, 2);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Describe.class, this::onDescribe)
        .onCommand(Reserve.class, this::onReserve)
        .onCommand(Free.class, this::onFree)
        .onCommand(GetLedger.class, (s, c) -> Effect().reply(c.replyTo(), s.snapshot(uuid)))
        .onCommand(GetState.class, (s, c) -> Effect().reply(c.replyTo(), s))
        .onCommand(SetHealth.class, this::onSetHealth)
        .build();
  }

  private ReplyEffect<Event, State> onDescribe(State s, Describe c) {
    if (c.device().equals(s.device())) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    return Effect()
        .persist(new Discovered(c.device()))
        .thenReply(c.replyTo(), x -> Done.getInstance());
  }

  private ReplyEffect<Event, State> onReserve(State s, Reserve c) {
    if (s.reservations().containsKey(c.decisionId())) {
      return Effect().reply(c.replyTo(), LedgerReply.RESERVED);
    }
    String refusal = s.refusal(c.decisionId(), c.pod(), c.share());
    if (refusal != null) {
      return Effect().reply(c.replyTo(), LedgerReply.refused(refusal));
    }
    return Effect()
        .persist(new Reserved(c.decisionId(), c.pod(), c.share()))
        .thenReply(c.replyTo(), x -> LedgerReply.RESERVED);
  }

  private ReplyEffect<Event, State> onFree(State s, Free c) {
    if (!s.reservations().containsKey(c.decisionId())) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    return Effect()
        .persist(new Freed(c.decisionId()))
        .thenReply(c.replyTo(), x -> Done.getInstance());
  }

  private ReplyEffect<Event, State> onSetHealth(State s, SetHealth c) {
    if (c.healthy() == s.healthy()) {
      return Effect().reply(c.replyTo(), Done.getInstance());
    }
    return Effect()
        .persist(new HealthChanged(c.healthy()))
        .thenReply(c.replyTo(), x -> Done.getInstance());
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(Discovered.class, (s, e) -> new State(e.device(), s.healthy(), s.reservations()))
        .onEvent(
            Reserved.class, (s, e) -> s.with(e.decisionId(), new LedgerEntry(e.pod(), e.share())))
        .onEvent(Freed.class, (s, e) -> s.without(e.decisionId()))
        .onEvent(
            HealthChanged.class, (s, e) -> new State(s.device(), e.healthy(), s.reservations()))
        .build();
  }
}
