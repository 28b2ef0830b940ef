package dev.gpushare.persistence;

import dev.gpushare.arbiter.HistoryTags;
import dev.gpushare.arbiter.JsonSerializable;
import java.util.List;
import java.util.Set;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;

/**
 * An entity of any persistence id that journals what it is told, tagged as the product tags: a
 * {@link Decision} with the history tag of each pod it names (as the node's arbiter), a {@link
 * Note} with its record's pod's tag when the entity is {@code tagged} (as a pod's own record),
 * nothing else (an index, or a journal written before tags).
 */
final class Journaled
    extends EventSourcedBehaviorWithEnforcedReplies<Journaled.Append, JsonSerializable, Integer> {

  record Append(JsonSerializable event, ActorRef<Done> replyTo) implements JsonSerializable {}

  /** An arbiter's decision about pods ({@code ns/name/uid}). */
  record Decision(String what, List<String> pods) implements JsonSerializable {}

  /** A line of a pod's own record. */
  record Note(String text) implements JsonSerializable {}

  private final String recordTag;

  static Behavior<Append> create(String persistenceId, String recordTag) {
    return new Journaled(persistenceId, recordTag);
  }

  private Journaled(String persistenceId, String recordTag) {
    super(PersistenceId.ofUniqueId(persistenceId));
    this.recordTag = recordTag;
  }

  @Override
  public Integer emptyState() {
    return 0;
  }

  @Override
  public Set<String> tagsFor(JsonSerializable event) {
    if (event instanceof Decision d) {
      return HistoryTags.ofEntityIds(d.pods());
    }
    if (event instanceof Note && recordTag != null) {
      return Set.of(recordTag);
    }
    return Set.of();
  }

  @Override
  public CommandHandlerWithReply<Append, JsonSerializable, Integer> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onAnyCommand(
            (state, c) ->
                Effect().persist(c.event()).thenReply(c.replyTo(), after -> Done.getInstance()));
  }

  @Override
  public EventHandler<Integer, JsonSerializable> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent((state, e) -> state + 1);
  }
}
