package dev.gpushare.node;

import dev.gpushare.arbiter.PodState;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.OverflowStrategy;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The data plane's waiting (API.md "Data plane"): the long poll that returns once a pod is Running
 * and the watch that sends one view per change users can see. Both look again whenever this member
 * hears that the pod changed (a durable decision of its arbiter, or its record's Events), from any
 * member; each look is a fresh view, so what they send is always one snapshot of the arbiter.
 */
final class PodWatches {
  private final ActorSystem<?> system;
  private final Map<String, List<Consumer<Boolean>>> listeners = new ConcurrentHashMap<>();

  PodWatches(ActorSystem<?> system) {
    this.system = system;
  }

  /** The pod {@code ref} ({@code ns/name}) changed; {@code deleted}: it is gone. */
  void changed(String ref, boolean deleted) {
    List<Consumer<Boolean>> list = listeners.get(ref);
    if (list != null) {
      list.forEach(l -> l.accept(deleted));
    }
  }

  /** The view once the pod is Running, or the view at {@code wait}, whichever comes first. */
  CompletionStage<PodView> awaitRunning(
      String ref, Duration wait, Supplier<CompletionStage<PodView>> view) {
    CompletableFuture<PodView> result = new CompletableFuture<>();
    Consumer<Boolean> onChange = deleted -> completeIfRunning(view.get(), result);
    listen(ref, onChange);
    result.whenComplete((v, e) -> unlisten(ref, onChange));
    completeIfRunning(view.get(), result);
    system
        .scheduler()
        .scheduleOnce(
            wait,
            () ->
                view.get()
                    .whenComplete(
                        (v, e) -> {
                          if (e != null) {
                            result.completeExceptionally(e);
                          } else {
                            result.complete(v);
                          }
                        }),
            system.executionContext());
    return result;
  }

  private static void completeIfRunning(
      CompletionStage<PodView> view, CompletableFuture<PodView> result) {
    view.whenComplete(
        (v, e) -> {
          if (e != null) {
            result.completeExceptionally(e);
          } else if (v.state() == PodState.RUNNING) {
            result.complete(v);
          }
        });
  }

  /**
   * The pod's view now, then one per change users can see, until it is gone. Every view, the first
   * included, is fetched after the one before it, so the stream never shows an older view after a
   * newer one: a pod's own workload acts on it (libgpushare.so follows the pod by this stream
   * alone), and a stale first view arriving after a change would read as the pod leaving Running.
   */
  Source<PodView, NotUsed> watch(String ref, Supplier<CompletionStage<PodView>> view) {
    return Source.<PodView>queue(64, OverflowStrategy.dropHead())
        .mapMaterializedValue(
            queue -> {
              // A change that shows nothing new sends nothing.
              AtomicReference<PodView> last = new AtomicReference<>();
              // The first look waits until the listener below is in place, so that a change in
              // between is seen by it or by the first look (or both: then it shows nothing new).
              CompletableFuture<Done> listening = new CompletableFuture<>();
              AtomicReference<CompletableFuture<Done>> chain =
                  new AtomicReference<>(
                      listening
                          .thenCompose(d -> view.get().toCompletableFuture())
                          .handle(
                              (v, e) -> {
                                if (v != null) {
                                  last.set(v);
                                  queue.offer(v);
                                } else {
                                  queue.fail(e);
                                }
                                return Done.getInstance();
                              }));
              Consumer<Boolean> onChange =
                  deleted ->
                      chain.updateAndGet(
                          previous ->
                              previous
                                  .thenCompose(d -> view.get().toCompletableFuture())
                                  .handle(
                                      (v, e) -> {
                                        if (v != null && !v.equals(last.getAndSet(v))) {
                                          queue.offer(v);
                                        }
                                        if (deleted || e != null) {
                                          queue.complete();
                                        }
                                        return Done.getInstance();
                                      }));
              listen(ref, onChange);
              queue.watchCompletion().whenComplete((d, e) -> unlisten(ref, onChange));
              listening.complete(Done.getInstance());
              return NotUsed.getInstance();
            });
  }

  private void listen(String ref, Consumer<Boolean> listener) {
    listeners.computeIfAbsent(ref, r -> new CopyOnWriteArrayList<>()).add(listener);
  }

  private void unlisten(String ref, Consumer<Boolean> listener) {
    List<Consumer<Boolean>> list = listeners.get(ref);
    if (list != null) {
      list.remove(listener);
    }
  }
}
