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
 * <p>Among due keys the lowest priority number goes first, then the one due first; a key gains one
 * priority level for every {@code agingNanos} it has been due, so that when the budget cannot keep
 * up, node status and Events are delayed but never starved by a stream of pod decisions (measured:
 * without aging, a saturated writer wrote no node status and no Event for minutes). Thread-safe.
 */
final class WorkQueue<K> {
  private final long windowNanos;
  private final long agingNanos;
  private final LongSupplier nanoTime;
  private final Object lock = new Object();

  private final Map<K, Entry<K>> queued = new HashMap<>();

  /** Per priority, its entries by due time (then first marked). */
  private final java.util.TreeMap<Integer, TreeSet<Entry<K>>> classes = new java.util.TreeMap<>();

  private final Set<K> inFlight = new HashSet<>();
  private final List<CompletableFuture<Done>> idleWaiters = new ArrayList<>();
  private final java.util.function.IntConsumer pending;
  private long seq;
  private boolean closed;

  private record Entry<K>(K key, int priority, long due, long seq, long notBefore) {}

  /**
   * @param agingNanos how long a due key waits to gain one priority level: under a saturated budget
   *     lower priorities are delayed, never starved
   * @param pending told the number of keys waiting or in flight whenever it changes
   */
  WorkQueue(
      long windowNanos,
      long agingNanos,
      LongSupplier nanoTime,
      java.util.function.IntConsumer pending) {
    this.windowNanos = windowNanos;
    this.agingNanos = agingNanos;
    this.nanoTime = nanoTime;
    this.pending = pending;
  }

  private static int compare(Entry<?> a, Entry<?> b) {
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
      unorder(old);
    }
    queued.put(next.key, next);
    classes.computeIfAbsent(next.priority, p -> new TreeSet<>(WorkQueue::compare)).add(next);
    pending.accept(queued.size() + inFlight.size());
    lock.notifyAll();
  }

  /** Drops {@code key} if it waits (its object is gone); a pass in flight runs to its end. */
  void forget(K key) {
    List<CompletableFuture<Done>> done;
    synchronized (lock) {
      Entry<K> old = queued.remove(key);
      if (old != null) {
        unorder(old);
      }
      pending.accept(queued.size() + inFlight.size());
      done = idle();
    }
    done.forEach(f -> f.complete(Done.getInstance()));
  }

  private void unorder(Entry<K> e) {
    TreeSet<Entry<K>> c = classes.get(e.priority);
    if (c != null && c.remove(e) && c.isEmpty()) {
      classes.remove(e.priority);
    }
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
        Entry<K> best = null;
        double bestRank = Double.MAX_VALUE;
        // per priority, its oldest due entry not in flight
        for (TreeSet<Entry<K>> c : classes.values()) {
          for (Entry<K> x : c) {
            if (inFlight.contains(x.key)) {
              continue;
            }
            long start = Math.max(x.due, x.notBefore);
            if (start - now > 0) {
              wait = Math.min(wait, start - now);
              if (x.due - now > 0) {
                break; // the rest of this priority is due later still
              }
              continue;
            }
            double rank = x.priority - (double) (now - x.due) / agingNanos;
            if (rank < bestRank) {
              bestRank = rank;
              best = x;
            }
            break;
          }
        }
        if (best != null) {
          unorder(best);
          queued.remove(best.key);
          inFlight.add(best.key);
          return new Taken<>(best.key, best.priority);
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
      classes.clear();
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
