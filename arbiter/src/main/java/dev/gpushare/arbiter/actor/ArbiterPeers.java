package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodStatus;
import java.util.List;

/**
 * Who hears of a {@link NodeArbiter}'s decisions, after they are durable and off the critical path
 * of the answer: the views and watchers of a pod, and the pod's own record (its actor). Both calls
 * are fire-and-forget and must return at once. Node-actors wires them to the change topic and the
 * pod entities; tests wire them to fakes.
 *
 * <p>Delivery is at least once across a crash of either side: the arbiter keeps each pod's latest
 * Events and conditions in its book ({@code ShareBook.Member}), tells them again after its own
 * recovery, and answers {@link NodeArbiter.Resync} when a pod's actor recovers. A pod recognises a
 * notice it already has by its revision and by content.
 */
public interface ArbiterPeers {

  /** {@code pod}'s decision state changed (or it left the node): whoever shows it looks again. */
  void changed(PodKey pod, boolean deleted);

  /** What {@code pod}'s own record keeps: its spec seen, Events and conditions, its removal. */
  void record(PodKey pod, PodNotice notice);

  /**
   * What a pod's record is told: its status as the arbiter decided it (revision = the arbiter's
   * book revision, for ordering), Events and conditions to record, and whether it is gone.
   */
  record PodNotice(
      PodStatus status,
      List<PodNotes.EventNote> events,
      List<PodNotes.ConditionNote> conditions,
      boolean deleted)
      implements JsonSerializable {

    public PodNotice {
      events = events == null ? List.of() : List.copyOf(events);
      conditions = conditions == null ? List.of() : List.copyOf(conditions);
    }

    public static PodNotice of(PodStatus status) {
      return new PodNotice(status, List.of(), List.of(), false);
    }

    public boolean hasNotes() {
      return !events.isEmpty() || !conditions.isEmpty();
    }
  }
}
