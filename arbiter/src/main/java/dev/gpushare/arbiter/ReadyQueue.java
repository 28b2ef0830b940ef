package dev.gpushare.arbiter;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The node's ready queue (SPEC §5): strict FIFO by the time a pod entered Ready. Only the head is
 * considered for placement; pods behind a head that cannot be placed wait too (head-of-line
 * blocking). Immutable: every change returns a new queue.
 *
 * @param entries oldest first
 */
public record ReadyQueue(List<Entry> entries) implements JsonSerializable {

  /** A waiting pod, by entity id ({@code ns/name/uid}), and when it entered Ready. */
  public record Entry(String pod, Instant enteredAt) implements JsonSerializable {}

  public static final ReadyQueue EMPTY = new ReadyQueue(List.of());

  public ReadyQueue {
    entries = List.copyOf(entries);
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
    List<Entry> next = new ArrayList<>(entries);
    Instant tail = entries.isEmpty() ? at : entries.get(entries.size() - 1).enteredAt();
    next.add(new Entry(pod, at.isBefore(tail) ? tail : at));
    return new ReadyQueue(next);
  }

  public ReadyQueue remove(String pod) {
    if (!contains(pod)) {
      return this;
    }
    return new ReadyQueue(entries.stream().filter(e -> !e.pod().equals(pod)).toList());
  }

  public Optional<Entry> head() {
    return entries.isEmpty() ? Optional.empty() : Optional.of(entries.get(0));
  }

  public boolean contains(String pod) {
    return entries.stream().anyMatch(e -> e.pod().equals(pod));
  }

  /** 1-based position, or empty when the pod is not queued. */
  public Optional<Integer> position(String pod) {
    for (int i = 0; i < entries.size(); i++) {
      if (entries.get(i).pod().equals(pod)) {
        return Optional.of(i + 1);
      }
    }
    return Optional.empty();
  }

  public Optional<Entry> entry(String pod) {
    return entries.stream().filter(e -> e.pod().equals(pod)).findFirst();
  }

  public int size() {
    return entries.size();
  }

  public boolean isEmpty() {
    return entries.isEmpty();
  }
}
