package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The node's ready queue (SPEC §5): strict FIFO by the time a pod entered Ready. Only the head is
 * considered for placement; pods behind a head that cannot be placed wait too (head-of-line
 * blocking). Immutable: every change returns a new queue, in O(log n) — entries are kept by their
 * order of entering and indexed by pod, so joining, leaving, the head and a position do not grow
 * with the queue. Serialized as its {@code entries}, oldest first.
 */
@JsonAutoDetect(
    getterVisibility = JsonAutoDetect.Visibility.NONE,
    isGetterVisibility = JsonAutoDetect.Visibility.NONE,
    fieldVisibility = JsonAutoDetect.Visibility.NONE)
public final class ReadyQueue implements JsonSerializable {

  /** A waiting pod, by entity id ({@code ns/name/uid}), and when it entered Ready. */
  public record Entry(String pod, Instant enteredAt) implements JsonSerializable {}

  public static final ReadyQueue EMPTY =
      new ReadyQueue(PersistentSortedMap.empty(), PersistentSortedMap.empty(), 0);

  /** Entries by their order of entering (a sequence number of this queue value). */
  private final PersistentSortedMap<Long, Entry> byOrder;

  /** Each queued pod's sequence number. */
  private final PersistentSortedMap<String, Long> orderOf;

  private final long next;

  private ReadyQueue(
      PersistentSortedMap<Long, Entry> byOrder,
      PersistentSortedMap<String, Long> orderOf,
      long next) {
    this.byOrder = byOrder;
    this.orderOf = orderOf;
    this.next = next;
  }

  /** The queue of {@code entries}, oldest first (as serialized). */
  @JsonCreator
  public static ReadyQueue of(@JsonProperty("entries") List<Entry> entries) {
    ReadyQueue q = EMPTY;
    for (Entry e : entries == null ? List.<Entry>of() : entries) {
      if (!q.contains(e.pod())) {
        q = q.append(e);
      }
    }
    return q;
  }

  /** Oldest first. O(n): for views and serialization, not for decisions. */
  @JsonProperty("entries")
  public List<Entry> entries() {
    return new ArrayList<>(byOrder.values());
  }

  /**
   * Joins the tail. A pod already queued keeps its place (re-delivered demand is harmless). A clock
   * that stepped back never puts a pod ahead of one that entered before it: the entry time is at
   * least the tail's.
   */
  public ReadyQueue enqueue(String pod, Instant at) {
    if (contains(pod)) {
      return this;
    }
    Map.Entry<Long, Entry> tail = byOrder.last();
    Instant tailAt = tail == null ? at : tail.getValue().enteredAt();
    return append(new Entry(pod, at.isBefore(tailAt) ? tailAt : at));
  }

  private ReadyQueue append(Entry e) {
    return new ReadyQueue(byOrder.plus(next, e), orderOf.plus(e.pod(), next), next + 1);
  }

  public ReadyQueue remove(String pod) {
    Long order = orderOf.get(pod);
    if (order == null) {
      return this;
    }
    return new ReadyQueue(byOrder.minus(order), orderOf.minus(pod), next);
  }

  public Optional<Entry> head() {
    Map.Entry<Long, Entry> first = byOrder.first();
    return first == null ? Optional.empty() : Optional.of(first.getValue());
  }

  public boolean contains(String pod) {
    return orderOf.containsKey(pod);
  }

  /** 1-based position, or empty when the pod is not queued. */
  public Optional<Integer> position(String pod) {
    Long order = orderOf.get(pod);
    return order == null ? Optional.empty() : Optional.of(byOrder.rank(order) + 1);
  }

  public Optional<Entry> entry(String pod) {
    Long order = orderOf.get(pod);
    return order == null ? Optional.empty() : Optional.of(byOrder.get(order));
  }

  public int size() {
    return byOrder.size();
  }

  public boolean isEmpty() {
    return byOrder.isEmpty();
  }

  /** Equal when the entries are, in the same order. */
  @Override
  public boolean equals(Object o) {
    return o instanceof ReadyQueue q
        && q.size() == size()
        && List.copyOf(byOrder.values()).equals(List.copyOf(q.byOrder.values()));
  }

  @Override
  public int hashCode() {
    return List.copyOf(byOrder.values()).hashCode();
  }

  @Override
  public String toString() {
    return "ReadyQueue" + entries();
  }
}
