package dev.gpushare.node;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.GpuShareReader.ChangeListener;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.pubsub.Topic;

/**
 * Changes travel cluster-wide: what a member publishes (a node or a pod changed, a node's pod
 * usage, a pod's compute-limiter report) goes to every member over the {@link Changes#TOPIC} topic,
 * and what any member published is heard here and told to the subscribed listeners (the Kubernetes
 * writer, the API's watchers) and to the pods' waiters ({@link PodWatches}). A listener that fails
 * is logged and does not stop the others.
 */
final class ChangeFanOut {
  private final ActorSystem<?> system;
  private final ActorRef<Topic.Command<Changes.Change>> changes;
  private final PodWatches watches;
  private final List<ChangeListener> subscribers = new CopyOnWriteArrayList<>();

  /** The latest GPU telemetry of each node's Running pods, as its sampling member published it. */
  private final Map<String, Map<String, Changes.PodUsageReport>> usage = new ConcurrentHashMap<>();

  /** The latest compute-limiter report of each pod, from whichever member took it. */
  private final ComputeReports compute = new ComputeReports();

  /** This fan-out's name in the reports it publishes, so that it skips its own when heard. */
  private final String origin = UUID.randomUUID().toString();

  ChangeFanOut(
      ActorSystem<?> system, ActorRef<Topic.Command<Changes.Change>> changes, PodWatches watches) {
    this.system = system;
    this.changes = changes;
    this.watches = watches;
  }

  AutoCloseable subscribe(ChangeListener listener) {
    subscribers.add(listener);
    return () -> subscribers.remove(listener);
  }

  /** Tells every member, this one included. */
  void publish(Changes.Change change) {
    changes.tell(Topic.publish(change));
  }

  void nodeChanged(String node) {
    publish(new Changes.NodeChanged(node));
  }

  /** A change published on any member, heard here. */
  void heard(Changes.Change change) {
    if (change instanceof Changes.PodChanged p) {
      if (p.deleted()) {
        compute.deleted(p.key().entityId());
      }
      podChangedHere(p.key(), p.deleted());
    } else if (change instanceof Changes.NodeChanged n) {
      nodeChangedHere(n.node());
    } else if (change instanceof Changes.UsageChanged u) {
      usage.put(u.node(), u.pods());
    } else if (change instanceof Changes.ComputeReported c && !c.origin().equals(origin)) {
      compute.put(c);
    }
  }

  /**
   * A pod's compute-limiter report taken here: kept at once (the answer shows it) and published to
   * the other members.
   */
  void computeReported(String node, String pod, ComputeReport report, Instant at) {
    Changes.ComputeReported c =
        new Changes.ComputeReported(
            origin,
            node,
            pod,
            report.aimPercent(),
            report.measuredPercent(),
            report.heldSeconds(),
            at);
    compute.put(c);
    publish(c);
  }

  /** The latest compute-limiter report of the pod with entity id {@code pod}, or null. */
  Changes.ComputeReported compute(String pod) {
    return compute.get(pod);
  }

  /** How many pods have a compute-limiter report kept here. */
  int computeReports() {
    return compute.size();
  }

  /** The latest usage report of the pod with entity id {@code pod} on {@code node}, or null. */
  Changes.PodUsageReport usage(String node, String pod) {
    return usage.getOrDefault(node, Map.of()).get(pod);
  }

  private void nodeChangedHere(String node) {
    for (ChangeListener l : subscribers) {
      try {
        l.nodeChanged(node);
      } catch (RuntimeException e) {
        system.log().warn("a change listener failed on node {}: {}", node, e.toString());
      }
    }
  }

  private void podChangedHere(PodKey key, boolean deleted) {
    for (ChangeListener l : subscribers) {
      try {
        l.podChanged(key.namespace(), key.name(), deleted);
      } catch (RuntimeException e) {
        system.log().warn("a change listener failed on pod {}: {}", key.ref(), e.toString());
      }
    }
    watches.changed(key.ref(), deleted);
  }
}
