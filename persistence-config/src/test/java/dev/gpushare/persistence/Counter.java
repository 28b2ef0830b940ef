package dev.gpushare.persistence;

import dev.gpushare.arbiter.JsonSerializable;
import java.time.Instant;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * A minimal event-sourced entity for the journal tests: {@link Add} persists one {@link Added}
 * event and replies with the new state; a snapshot is taken every four events, so recovery reads
 * both the snapshot store and the journal.
 */
final class Counter
    extends EventSourcedBehaviorWithEnforcedReplies<Counter.Command, Counter.Event, Counter.State> {

  static final String ENTITY_TYPE = "Counter";

  sealed interface Command extends JsonSerializable permits Add, Get {}

  record Add(int amount, Instant at, ActorRef<State> replyTo) implements Command {}

  record Get(ActorRef<State> replyTo) implements Command {}

  sealed interface Event extends JsonSerializable permits Added {}

  record Added(int amount, Instant at) implements Event {}

  record State(long total, int events) implements JsonSerializable {
    State apply(Added added) {
      return new State(total + added.amount(), events + 1);
    }
  }

  static Behavior<Command> create(String id) {
    return new Counter(PersistenceId.of(ENTITY_TYPE, id));
  }

  private Counter(PersistenceId persistenceId) {
    super(persistenceId);
  }

  @Override
  public State emptyState() {
    return new State(0, 0);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, State> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(
            Add.class,
            add ->
                Effect()
                    .persist(new Added(add.amount(), add.at()))
                    .thenReply(add.replyTo(), state -> state))
        .onCommand(Get.class, (state, get) -> Effect().reply(get.replyTo(), state))
        .build();
  }

  @Override
  public EventHandler<State, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onEvent(Added.class, State::apply).build();
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(4, 2);
  }
}
