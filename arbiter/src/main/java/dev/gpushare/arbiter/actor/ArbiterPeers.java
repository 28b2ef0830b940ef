package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.Share;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * The actors a {@link NodeArbiter} works with, seen as asynchronous calls: the GPU actors that keep
 * the capacity ledgers (and refuse anything that would break the 100 % invariant), and the pod
 * actors that follow the arbiter's decisions. Node-actors wires them to sharded entities; tests
 * wire them to fakes.
 */
public interface ArbiterPeers {

  /** Reserve {@code share} of GPU {@code gpuUuid} for {@code pod} under {@code decisionId}. */
  CompletionStage<LedgerReply> reserve(String gpuUuid, String decisionId, String pod, Share share);

  /** Free the reservation made under {@code decisionId}; freeing twice is harmless. */
  CompletionStage<Done> free(String gpuUuid, String decisionId);

  CompletionStage<LedgerSnapshot> ledger(String gpuUuid);

  /** Tell a pod what the arbiter decided; completes once the pod has recorded it. */
  CompletionStage<Done> notifyPod(PodKey key, PodNotice notice);

  /** A GPU actor's answer to a reservation. */
  record LedgerReply(boolean reserved, String reason) implements JsonSerializable {
    public static final LedgerReply RESERVED = new LedgerReply(true, null);

    public static LedgerReply refused(String reason) {
      return new LedgerReply(false, reason);
    }
  }

  /** One reservation in a GPU's ledger. */
  record LedgerEntry(String pod, Share share) implements JsonSerializable {}

  /** A GPU's ledger: reservations by decision id. */
  record LedgerSnapshot(String uuid, boolean healthy, Map<String, LedgerEntry> reservations)
      implements JsonSerializable {
    public Share used() {
      return reservations.values().stream().map(LedgerEntry::share).reduce(Share.NONE, Share::plus);
    }
  }

  /**
   * What a pod is told: its status as the arbiter decided it, Events and conditions to record, and
   * whether it is gone.
   */
  record PodNotice(
      PodStatus status,
      List<PodNotes.EventNote> events,
      List<PodNotes.ConditionNote> conditions,
      boolean deleted)
      implements JsonSerializable {

    public static PodNotice of(PodStatus status) {
      return new PodNotice(status, List.of(), List.of(), false);
    }
  }
}
