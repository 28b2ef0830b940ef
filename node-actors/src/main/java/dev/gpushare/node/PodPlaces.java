package dev.gpushare.node;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.ServiceException;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * This member's memory of where pods live, in front of the cluster-wide index ({@link PodIndex}). A
 * pod is bound to one node for life, so a remembered place goes stale only when the pod is deleted
 * (and its name perhaps taken by a new pod, with another uid): the node's arbiter then answers
 * NOT_FOUND for the remembered key, and the request runs once more on the index's answer. The
 * memory only saves the index's ask (a sharded entity that may live on another member, and that
 * recovers from the journal after it was passivated); it never decides anything: every request is
 * still answered by the pod's own node.
 *
 * <p>Bounded: past {@code limit} places the memory starts over.
 */
final class PodPlaces {
  /** The places one member remembers at most (about 200 bytes each). */
  static final int LIMIT = 50_000;

  private final Function<String, CompletionStage<Optional<Placed>>> index;
  private final int limit;
  private final Map<String, Placed> places = new ConcurrentHashMap<>();

  /** {@code index}: the index's answer for a {@code namespace/name}. */
  PodPlaces(Function<String, CompletionStage<Optional<Placed>>> index, int limit) {
    this.index = index;
    this.limit = limit;
  }

  /** The index's answer for {@code ref} ({@code namespace/name}), remembered. */
  CompletionStage<Optional<Placed>> lookup(String ref) {
    return index
        .apply(ref)
        .thenApply(
            p -> {
              if (p.isEmpty()) {
                places.remove(ref);
              } else {
                remember(p.get());
              }
              return p;
            });
  }

  /**
   * Runs {@code op} on the pod {@code ref}: on the remembered place when there is one, else on the
   * index's answer ({@code notFound} when it has none). When {@code op} fails with NOT_FOUND on a
   * remembered place, the place is forgotten and {@code op} runs once more on the index's answer.
   * So {@code op} must fail with NOT_FOUND before it writes anything for a pod its node does not
   * hold, as every arbiter command does.
   */
  <T> CompletionStage<T> onPod(
      String ref,
      Supplier<? extends RuntimeException> notFound,
      Function<Placed, CompletionStage<T>> op) {
    Placed known = places.get(ref);
    if (known == null) {
      return fresh(ref, notFound, op);
    }
    return applied(op, known)
        .handle(
            (v, e) -> {
              if (e == null) {
                return CompletableFuture.completedFuture(v);
              }
              if (unwrapped(e) instanceof ServiceException se
                  && se.kind() == ServiceException.Kind.NOT_FOUND) {
                forget(known.key());
                return fresh(ref, notFound, op);
              }
              return CompletableFuture.<T>failedFuture(e);
            })
        .thenCompose(s -> s);
  }

  private <T> CompletionStage<T> fresh(
      String ref,
      Supplier<? extends RuntimeException> notFound,
      Function<Placed, CompletionStage<T>> op) {
    return lookup(ref)
        .thenCompose(
            p -> {
              if (p.isEmpty()) {
                throw notFound.get();
              }
              return op.apply(p.get());
            });
  }

  /** Remembers where a pod lives. */
  void remember(Placed p) {
    if (places.size() >= limit) {
      places.clear();
    }
    places.put(p.key().ref(), p);
  }

  /** Forgets the pod's place, unless its name is remembered for another pod (another uid). */
  void forget(PodKey key) {
    places.computeIfPresent(key.ref(), (ref, p) -> p.key().uid().equals(key.uid()) ? null : p);
  }

  /** How many places are remembered (for tests). */
  int size() {
    return places.size();
  }

  private static <T> CompletionStage<T> applied(Function<Placed, CompletionStage<T>> op, Placed p) {
    try {
      return op.apply(p);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private static Throwable unwrapped(Throwable e) {
    Throwable cause = e;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }
}
