package dev.gpushare.gpu;

import dev.gpushare.arbiter.JsonSerializable;
import java.time.Duration;
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
 * One GPU's own facts (ARCHITECTURE.md §2): its identity as the backend reports it (index, UUID,
 * model, memory) and its health. Who holds a share of it is not kept here: that is a decision, and
 * its node's {@code NodeArbiter} is the single writer of decisions — the telemetry and the
 * enforcement contract read the holders from the arbiter's book.
 *
 * <p>Journals written before 0.2 also hold {@code Reserved} and {@code Freed} events (the ledger
 * this actor kept then); they are read and ignored.
 */
public final class GpuActor
    extends EventSourcedBehaviorWithEnforcedReplies<
        GpuActor.Command, GpuActor.Event, GpuActor.State> {

  public sealed interface Command extends JsonSerializable {}

  /** What the backend reports of the device (discovery, or the same again at start-up). */
  public record Describe(GpuDevice device, ActorRef<Done> replyTo) implements Command {}

  public record GetState(ActorRef<State> replyTo) implements Command {}

  public record SetHealth(boolean healthy, ActorRef<Done> replyTo) implements Command {}

  public sealed interface Event extends JsonSerializable {}

  public record Discovered(GpuDevice device) implements Event {}

  public record HealthChanged(boolean healthy) implements Event {}

  /** Written before 0.2 (a ledger reservation); read and ignored. */
  public record Reserved(String decisionId, String pod, Object share) implements Event {}

  /** Written before 0.2 (a ledger free); read and ignored. */
  public record Freed(String decisionId) implements Event {}

  public record State(GpuDevice device, boolean healthy) implements JsonSerializable {}

  public static PersistenceId persistenceId(String node, String uuid) {
    return PersistenceId.ofUniqueId("Gpu|" + node + "|" + uuid);
  }

  public static Behavior<Command> create(String node, String uuid) {
    return new GpuActor(node, uuid);
  }

  private GpuActor(String node, String uuid) {
    super(
        persistenceId(node, uuid),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
  }

  @Override
  public State emptyState() {
    return new State(null, true);
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
        .onEvent(Discovered.class, (s, e) -> new State(e.device(), s.healthy()))
        .onEvent(HealthChanged.class, (s, e) -> new State(s.device(), e.healthy()))
        .onEvent(Reserved.class, (s, e) -> s)
        .onEvent(Freed.class, (s, e) -> s)
        .build();
  }
}
