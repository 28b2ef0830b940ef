package dev.gpushare.node;

import dev.gpushare.arbiter.JsonSerializable;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;

/**
 * The nodes this arbiter knows, so that a restart recovers every one of them (their entities start
 * lazily and must be woken).
 */
public final class NodeDirectory
    extends EventSourcedBehaviorWithEnforcedReplies<
        NodeDirectory.Command, NodeDirectory.Event, NodeDirectory.Nodes> {

  public sealed interface Command extends JsonSerializable {}

  public record Add(String node, ActorRef<Done> replyTo) implements Command {}

  public record GetNodes(ActorRef<Nodes> replyTo) implements Command {}

  public sealed interface Event extends JsonSerializable {}

  public record NodeAdded(String node) implements Event {}

  public record Nodes(List<String> names) implements JsonSerializable {
    public Nodes {
      names = List.copyOf(new TreeSet<>(names));
    }
  }

  public static Behavior<Command> create() {
    return new NodeDirectory();
  }

  private NodeDirectory() {
    super(PersistenceId.ofUniqueId("NodeDirectory"));
  }

  @Override
  public Nodes emptyState() {
    return new Nodes(List.of());
  }

  @Override
  public CommandHandlerWithReply<Command, Event, Nodes> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(GetNodes.class, (s, c) -> Effect().reply(c.replyTo(), s))
        .onCommand(
            Add.class,
            (s, c) ->
                s.names().contains(c.node())
                    ? Effect().reply(c.replyTo(), Done.getInstance())
                    : Effect()
                        .persist(new NodeAdded(c.node()))
                        .thenReply(c.replyTo(), x -> Done.getInstance()))
        .build();
  }

  @Override
  public EventHandler<Nodes, Event> eventHandler() {
    return newEventHandlerBuilder()
        .forAnyState()
        .onEvent(
            NodeAdded.class,
            (s, e) -> {
              Set<String> names = new TreeSet<>(s.names());
              names.add(e.node());
              return new Nodes(List.copyOf(names));
            })
        .build();
  }
}
