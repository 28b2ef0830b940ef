package dev.gpushare.node.kube;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.pekko.Done;

/**
 * The writer's work: keys waiting to be synced, each at most once, in priority order (ARCHITECTURE
 * §4 "Kubernetes writes"). Several workers {@link #take} from it; a key is never given to two
 * workers at once — marked again while in flight, it waits until that pass is {@link #done}.
 *
 * <p>A key is due a short {@code window} after it was first marked: marks within the window fold
 * into one pass, and a decision undone within it costs no request (the pass finds nothing to
 * change). A mark never postpones a key already waiting and never lowers its priority; it can raise
 * it. A retry ({@link #retry}) waits at least its back-off, whatever marks come meanwhile.
 *
 * <p>Among due keys the lowest priority number goes first, then the one due first. Thread-safe.
 */
final class WorkQueue<K> {
  private final long windowNanos;
  private final LongSupplier nanoTime;
  private final Object lock = new Object();

  private final Map<K, Entry<K>> queued = new HashMap<>();
  private final TreeSet<Entry<K>> order = new TreeSet<>(WorkQueue::compare);
  private final Set<K> inFlight = new HashSet<>();
  private final List<CompletableFuture<Done>> idleWaiters = new ArrayList<>();
  private final java.util.function.IntConsumer pending;
  private long seq;
  private boolean closed;

  private record Entry<K>(K key, int priority, long due, long seq, long notBefore) {}

  /**
   * @param pending told the number of keys waiting or in flight whenever it changes
   */
  WorkQueue(long windowNanos, LongSupplier nanoTime, java.util.function.IntConsumer pending) {
    this.windowNanos = windowNanos;
    this.nanoTime = nanoTime;
    this.pending = pending;
  }

  private static int compare(Entry<?> a, Entry<?> b) {
    if (a.priority != b.priority) {
      return Integer.compare(a.priority, b.priority);
    }
    if (a.due != b.due) {
      return a.due - b.due < 0 ? -1 : 1;
    }
    return Long.compare(a.seq, b.seq);
  }

  /** Asks for a pass over {@code key} at {@code priority} (0 first), due after the window. */
  void mark(K key, int priority) {
    synchronized (lock) {
      if (closed) {
        return;
      }
      Entry<K> old = queued.get(key);
      long now = nanoTime.getAsLong();
      Entry<K> next;
      if (old == null) {
        next = new Entry<>(key, priority, now + windowNanos, seq++, now);
      } else if (priority < old.priority) {
        next = new Entry<>(key, priority, old.due, old.seq, old.notBefore);
      } else {
        return;
      }
      put(old, next);
    }
  }

  /** After a failed pass: try {@code key} again, not before {@code delayNanos} from now. */
  void retry(K key, int priority, long delayNanos) {
    synchronized (lock) {
      if (closed) {
        return;
      }
      Entry<K> old = queued.get(key);
      long at = nanoTime.getAsLong() + delayNanos;
      int p = old == null ? priority : Math.min(priority, old.priority);
      long due = old == null ? at : Math.max(at, old.due);
      put(old, new Entry<>(key, p, due, old == null ? seq++ : old.seq, at));
    }
  }

  private void put(Entry<K> old, Entry<K> next) {
    if (old != null) {
      order.remove(old);
    }
    queued.put(next.key, next);
    order.add(next);
    pending.accept(queued.size() + inFlight.size());
    lock.notifyAll();
  }

  /** Drops {@code key} if it waits (its object is gone); a pass in flight runs to its end. */
  void forget(K key) {
    List<CompletableFuture<Done>> done;
    synchronized (lock) {
      Entry<K> old = queued.remove(key);
      if (old != null) {
        order.remove(old);
      }
      pending.accept(queued.size() + inFlight.size());
      done = idle();
    }
    done.forEach(f -> f.complete(Done.getInstance()));
  }

  /** A taken key with the priority it was taken at. */
  record Taken<K>(K key, int priority) {}

  /**
   * The next due key not in flight, waiting as long as there is none; {@code null} once closed.
   *
   * @throws InterruptedException when the worker is interrupted
   */
  Taken<K> take() throws InterruptedException {
    synchronized (lock) {
      while (!closed) {
        if (Thread.interrupted()) {
          throw new InterruptedException();
        }
        long now = nanoTime.getAsLong();
        long wait = Long.MAX_VALUE;
        for (Entry<K> e : order) {
          if (inFlight.contains(e.key)) {
            continue;
          }
          long start = Math.max(e.due, e.notBefore);
          if (start - now <= 0) {
            order.remove(e);
            queued.remove(e.key);
            inFlight.add(e.key);
            return new Taken<>(e.key, e.priority);
          }
          wait = Math.min(wait, start - now);
        }
        if (wait == Long.MAX_VALUE) {
          lock.wait();
        } else {
          TimeUnit.NANOSECONDS.timedWait(lock, wait);
        }
      }
      return null;
    }
  }

  /** The pass over {@code key} ended; a mark that came meanwhile may go now. */
  void done(K key) {
    List<CompletableFuture<Done>> done;
    synchronized (lock) {
      inFlight.remove(key);
      pending.accept(queued.size() + inFlight.size());
      lock.notifyAll();
      done = idle();
    }
    done.forEach(f -> f.complete(Done.getInstance()));
  }

  /** Completes when nothing waits and nothing is in flight (a back-off keeps it pending). */
  CompletableFuture<Done> idleFuture() {
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(
            new java.util.concurrent.CancellationException("KubeWriter is closed"));
      }
      if (queued.isEmpty() && inFlight.isEmpty()) {
        return CompletableFuture.completedFuture(Done.getInstance());
      }
      CompletableFuture<Done> f = new CompletableFuture<>();
      idleWaiters.add(f);
      return f;
    }
  }

  int size() {
    synchronized (lock) {
      return queued.size();
    }
  }

  /** Wakes every worker with {@code null}; pending waiters fail. */
  void close() {
    List<CompletableFuture<Done>> pending;
    synchronized (lock) {
      closed = true;
      queued.clear();
      order.clear();
      pending = new ArrayList<>(idleWaiters);
      idleWaiters.clear();
      lock.notifyAll();
    }
    pending.forEach(
        f ->
            f.completeExceptionally(
                new java.util.concurrent.CancellationException("KubeWriter closed")));
  }

  private List<CompletableFuture<Done>> idle() {
    if (!queued.isEmpty() || !inFlight.isEmpty() || idleWaiters.isEmpty()) {
      return List.of();
    }
    List<CompletableFuture<Done>> done = new ArrayList<>(idleWaiters);
    idleWaiters.clear();
    return done;
  }
}
