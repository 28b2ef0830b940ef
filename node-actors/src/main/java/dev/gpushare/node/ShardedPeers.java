package dev.gpushare.node;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.actor.ArbiterPeers;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * A node arbiter's followers: its pods' actors (sharded entities of the same node) for what their
 * records keep, and the runtime's change listener for everything that shows a pod.
 */
final class ShardedPeers implements ArbiterPeers {
  private final Entities entities;
  private final String node;
  private final PodActor.Listener changes;
  private final ActorSystem<?> system;

  ShardedPeers(Entities entities, String node, PodActor.Listener changes, ActorSystem<?> system) {
    this.entities = entities;
    this.node = node;
    this.changes = changes;
    this.system = system;
  }

  @Override
  public void changed(PodKey pod, boolean deleted) {
    changes.changed(pod, deleted);
  }

  @Override
  public void record(PodKey pod, PodNotice notice) {
    entities.pod(node, pod).tell(new PodActor.Notice(notice, system.ignoreRef()));
  }
}
