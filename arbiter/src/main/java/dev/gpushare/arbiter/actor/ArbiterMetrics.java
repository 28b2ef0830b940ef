package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.PodKey;
import java.time.Duration;
import java.util.List;

/**
 * What a {@link NodeArbiter} tells about itself as it works, for metrics: every method has a no-op
 * default, and {@link #NONE} does nothing at all. Calls come from the arbiter's actor, one at a
 * time per node but concurrently across nodes, and must return quickly.
 *
 * <p>Only what happens in this incarnation is told: a decision is reported once its event is
 * persisted, never again when the journal is replayed.
 */
public interface ArbiterMetrics {

  /** Does nothing. */
  ArbiterMetrics NONE = new ArbiterMetrics() {};

  /**
   * A decision of {@code node}'s arbiter was persisted. {@code kind}, after the persisted event:
   * {@code enqueue} (Enqueued), {@code withdraw} (Withdrawn), {@code grant} (Granted), {@code
   * release} (Released by the pod), {@code revoke} (Released by the telemetry rules: idle or
   * memory), {@code preempt} (Preempted), {@code pin} (Pinned), {@code pin_deferred} (PinDeferred),
   * {@code suspend} (SuspendRequested), {@code checkpoint} and {@code checkpoint_failed}
   * (CheckpointReported, held or not), {@code restore} and {@code checkpoint_dropped}
   * (CheckpointCleared).
   */
  default void decided(String node, String kind) {}

  /** {@code preemptor} took the GPU share of {@code victims} (persisted). */
  default void preempted(String node, PodKey preemptor, List<PodKey> victims) {}

  /**
   * A command's round is written (or found nothing to write) and its answer goes out next: {@code
   * elapsed} runs from the command's arrival at the arbiter (time spent waiting for an earlier
   * round's write included) to the end of its own round's write.
   */
  default void roundEnded(String node, Duration elapsed) {}

  /** The pod left the node (persisted): what is kept about it may be dropped. */
  default void podRemoved(String node, PodKey pod) {}

  /**
   * The journal failed the arbiter: {@code operation} {@code recovery} (RecoveryFailed), {@code
   * persist} (JournalPersistFailed), {@code persist_rejected} (JournalPersistRejected) or {@code
   * snapshot} (SnapshotFailed). The arbiter restarts with back-off after the first three.
   */
  default void journalFailed(String node, String operation, Throwable cause) {}
}
