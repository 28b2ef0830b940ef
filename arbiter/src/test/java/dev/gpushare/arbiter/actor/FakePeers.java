package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.Share;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;

/**
 * The arbiter's peers in memory: one real ledger per GPU uuid that enforces the 100 % invariant and
 * is idempotent by decision id (as {@code GpuActor} is), a record of every pod notice and every
 * free, and switches that make reservations fail, be refused or never be answered. Thread-safe: the
 * arbiter calls it from its own thread, tests read it from theirs.
 */
final class FakePeers implements ArbiterPeers {

  /** A notice as the pod received it. */
  record Notified(PodKey key, PodNotice notice) {}

  /** A free as the GPU received it. */
  record Freed(String uuid, String decisionId) {}

  private final Map<String, Map<String, LedgerEntry>> ledgers = new TreeMap<>();
  private final List<Notified> notices = new ArrayList<>();
  private final List<Freed> frees = new ArrayList<>();
  private int reserveCalls;
  private int capacityRefusals;
  private boolean refuseReserves;
  private boolean failReserves;
  private boolean hangReserves;
  private CompletableFuture<String> hungReservation = new CompletableFuture<>();

  synchronized void reset() {
    ledgers.clear();
    notices.clear();
    frees.clear();
    reserveCalls = 0;
    capacityRefusals = 0;
    refuseReserves = false;
    failReserves = false;
    hangReserves = false;
    hungReservation = new CompletableFuture<>();
  }

  // ---- switches ----

  /** Every reservation is answered "refused" (as a GPU whose ledger disagrees would). */
  synchronized void refuseReserves(boolean on) {
    refuseReserves = on;
  }

  /** Every reservation fails (as an ask that timed out). */
  synchronized void failReserves(boolean on) {
    failReserves = on;
  }

  /**
   * Reservations are recorded in the ledger but never answered: the arbiter's incarnation can be
   * stopped between the GPU's "yes" and the grant's persistence.
   */
  synchronized void hangReserves(boolean on) {
    hangReserves = on;
  }

  /** The decision id of the first reservation recorded while {@link #hangReserves} was on. */
  String awaitHungReservation() throws Exception {
    CompletableFuture<String> hung;
    synchronized (this) {
      hung = hungReservation;
    }
    return hung.get(10, TimeUnit.SECONDS);
  }

  // ---- direct ledger edits (what a crash or a lost write leaves behind) ----

  synchronized void inject(String uuid, String decisionId, String pod, Share share) {
    ledgers
        .computeIfAbsent(uuid, u -> new TreeMap<>())
        .put(decisionId, new LedgerEntry(pod, share));
  }

  synchronized void drop(String uuid, String decisionId) {
    ledgers.getOrDefault(uuid, new TreeMap<>()).remove(decisionId);
  }

  synchronized void clearNotices() {
    notices.clear();
  }

  // ---- what happened ----

  /** Non-empty ledgers by uuid, reservations by decision id. */
  synchronized Map<String, Map<String, LedgerEntry>> ledgers() {
    Map<String, Map<String, LedgerEntry>> copy = new TreeMap<>();
    ledgers.forEach(
        (uuid, ledger) -> {
          if (!ledger.isEmpty()) {
            copy.put(uuid, new TreeMap<>(ledger));
          }
        });
    return copy;
  }

  synchronized List<Notified> notices() {
    return List.copyOf(notices);
  }

  /** Notices the pod {@code entityId} received, oldest first. */
  synchronized List<PodNotice> noticesTo(String entityId) {
    return notices.stream()
        .filter(n -> n.key().entityId().equals(entityId))
        .map(Notified::notice)
        .toList();
  }

  synchronized PodNotice lastNoticeTo(String entityId) {
    List<PodNotice> to = noticesTo(entityId);
    if (to.isEmpty()) {
      throw new AssertionError("pod " + entityId + " received no notice; all: " + notices);
    }
    return to.get(to.size() - 1);
  }

  synchronized List<Freed> frees() {
    return List.copyOf(frees);
  }

  synchronized int reserveCalls() {
    return reserveCalls;
  }

  /** Reservations refused because they would have taken a GPU above 100 %. */
  synchronized int capacityRefusals() {
    return capacityRefusals;
  }

  // ---- ArbiterPeers ----

  @Override
  public synchronized CompletionStage<LedgerReply> reserve(
      String gpuUuid, String decisionId, String pod, Share share) {
    reserveCalls++;
    if (failReserves) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("simulated: GPU " + gpuUuid + " did not answer"));
    }
    if (refuseReserves) {
      return CompletableFuture.completedFuture(LedgerReply.refused("simulated refusal"));
    }
    Map<String, LedgerEntry> ledger = ledgers.computeIfAbsent(gpuUuid, u -> new TreeMap<>());
    if (ledger.containsKey(decisionId)) {
      return CompletableFuture.completedFuture(LedgerReply.RESERVED);
    }
    for (Map.Entry<String, LedgerEntry> r : ledger.entrySet()) {
      if (r.getValue().pod().equals(pod)) {
        return CompletableFuture.completedFuture(
            LedgerReply.refused("pod " + pod + " already holds this GPU under " + r.getKey()));
      }
    }
    Share used = ledger.values().stream().map(LedgerEntry::share).reduce(Share.NONE, Share::plus);
    if (!share.fitsBeside(used)) {
      capacityRefusals++;
      return CompletableFuture.completedFuture(
          LedgerReply.refused(share + " beside " + used + " would exceed 100%"));
    }
    ledger.put(decisionId, new LedgerEntry(pod, share));
    if (hangReserves) {
      hungReservation.complete(decisionId);
      return new CompletableFuture<>();
    }
    return CompletableFuture.completedFuture(LedgerReply.RESERVED);
  }

  @Override
  public synchronized CompletionStage<Done> free(String gpuUuid, String decisionId) {
    frees.add(new Freed(gpuUuid, decisionId));
    Map<String, LedgerEntry> ledger = ledgers.get(gpuUuid);
    if (ledger != null) {
      ledger.remove(decisionId);
    }
    return CompletableFuture.completedFuture(Done.getInstance());
  }

  @Override
  public synchronized CompletionStage<LedgerSnapshot> ledger(String gpuUuid) {
    return CompletableFuture.completedFuture(
        new LedgerSnapshot(
            gpuUuid, true, new TreeMap<>(ledgers.getOrDefault(gpuUuid, new TreeMap<>()))));
  }

  @Override
  public synchronized CompletionStage<Done> notifyPod(PodKey key, PodNotice notice) {
    notices.add(new Notified(key, notice));
    return CompletableFuture.completedFuture(Done.getInstance());
  }
}
