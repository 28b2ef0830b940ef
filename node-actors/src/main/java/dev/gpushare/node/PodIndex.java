package dev.gpushare.node;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;

/**
 * Which pod goes by a name ({@code ns/name}) and on which node it is bound: the cluster-wide index
 * the API uses to find a pod, one small persistent entity per name. A claim makes the name unique
 * across members (two creates of one name on two members cannot both win); the claim is released
 * when the pod is deleted. The node's {@link NodeActor} stays the authority on what is bound: a
 * claim whose pod never got bound (a crash between the two) is taken over by the next create.
 */
public final class PodIndex
    extends EventSourcedBehaviorWithEnforcedReplies<
        PodIndex.Command, PodIndex.Event, PodIndex.Entry> {

  public sealed interface Command extends JsonSerializable {}

  /** Claim the name for {@code key} on {@code node}; answered with the entry now in force. */
  public record Claim(String node, PodKey key, boolean takeOver, ActorRef<Entry> replyTo)
      implements Command {}

  /** Give up the name if {@code uid} holds it. */
  public record Release(String uid, ActorRef<Done> replyTo) implements Command {}

  public record Get(ActorRef<Entry> replyTo) implements Command {}

  public sealed interface Event extends JsonSerializable {}

  public record Claimed(String node, PodKey key) implements Event {}

  public record Released(String uid) implements Event {}

  /** The pod holding the name, or {@code node == null} when the name is free. */
  public record Entry(String node, PodKey key) implements JsonSerializable {
    public static final Entry FREE = new Entry(null, null);

    public boolean free() {
      return node == null;
    }
  }

  public static Behavior<Command> create(String ref) {
    return new PodIndex(ref);
  }

  private PodIndex(String ref) {
    super(PersistenceId.of("PodIndex", ref, "|"));
  }

  @Override
  public Entry emptyState() {
    return Entry.FREE;
  }

  @Override
  public CommandHandlerWithReply<Command, Event, Entry> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(Get.class, (s, c) -> Effect().reply(c.replyTo(), s))
        .onCommand(
            Claim.class,
            (s, c) -> {
              boolean same = !s.free() && s.key().uid().equals(c.key().uid());
              if (same || (!s.free() && !c.takeOver())) {
                return Effect().reply(c.replyTo(), s);
              }
              return Effect()
                  .persist(new Claimed(c.node(), c.key()))
                  .thenReply(c.replyTo(), after -> after);
            })
        .onCommand(
            Release.class,
            (s, c) ->
                !s.free() && s.key().uid().equals(c.uid())
                    ? Effect()
                        .persist(new Released(c.uid()))
                        .thenReply(c.replyTo(), after -> Done.getInstance())
                    : Effect().reply(c.replyTo(), Done.getInstance()))
        .build();
  }

  @Override
  public EventHandler<Entry, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(Claimed.class, (s, e) -> new Entry(e.node(), e.key()))
        .onEvent(Released.class, (s, e) -> Entry.FREE)
        .build();
  }
}
