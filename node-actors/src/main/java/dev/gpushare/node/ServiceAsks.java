package dev.gpushare.node;

import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.node.api.ServiceException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.japi.function.Function;

/**
 * The service's asks of its entities, typed, with the one mapping of an arbiter's refusal to the
 * API's errors. Every ask goes to one entity and completes on the actor system's dispatcher.
 */
final class ServiceAsks {

  /** Where a pod lives: its node and full key. */
  record Placed(String node, PodKey key) {}

  private final Entities entities;
  private final Duration timeout;

  /** This member's memory of where pods live ({@link #onPod}). */
  private final PodPlaces places = new PodPlaces(this::index, PodPlaces.LIMIT);

  ServiceAsks(Entities entities, Duration timeout) {
    this.entities = entities;
    this.timeout = timeout;
  }

  /** Nodes known to the directory (a crash may leave one listed but never registered). */
  CompletionStage<List<String>> nodeNames() {
    return entities
        .directory()
        .<NodeDirectory.Nodes>ask(NodeDirectory.GetNodes::new, timeout)
        .thenApply(NodeDirectory.Nodes::names);
  }

  /** Nodes that are registered: what users see. */
  CompletionStage<List<String>> registeredNodes() {
    return nodeNames()
        .thenCompose(names -> all(names.stream().map(this::nodeRecord).toList()))
        .thenApply(
            records ->
                records.stream()
                    .filter(NodeActor.Record::registered)
                    .map(r -> r.manifest().name())
                    .toList());
  }

  CompletionStage<NodeActor.Record> nodeRecord(String name) {
    return entities.node(name).ask(NodeActor.GetRecord::new, timeout);
  }

  /** One snapshot of the node's arbiter. */
  CompletionStage<NodeArbiter.BookView> book(String node) {
    return entities.arbiter(node).ask(NodeArbiter.GetBook::new, timeout);
  }

  /** One pod's decision state from its node's arbiter (NOT_FOUND as an outcome, not thrown). */
  CompletionStage<NodeArbiter.Outcome> decided(Placed p) {
    return entities
        .arbiter(p.node())
        .ask(r -> new NodeArbiter.GetPod(p.key().entityId(), r), timeout);
  }

  /** The pod's own record: its Events and conditions. */
  CompletionStage<PodActor.Record> podRecord(Placed p) {
    return entities.pod(p.node(), p.key()).ask(PodActor.GetRecord::new, timeout);
  }

  /**
   * The pod that goes by the name, from the cluster-wide index (and remembered, see {@link
   * #onPod}). A name Kubernetes would refuse (such as one with a {@code |}, which no persistence id
   * may hold) names no pod: empty at once.
   */
  CompletionStage<Optional<Placed>> lookup(String namespace, String name) {
    if (!KubernetesNames.isPodRef(namespace, name)) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return places.lookup(namespace + "/" + name);
  }

  private CompletionStage<Optional<Placed>> index(String ref) {
    return entities
        .podIndex(ref)
        .<PodIndex.Entry>ask(PodIndex.Get::new, timeout)
        .thenApply(e -> e.free() ? Optional.empty() : Optional.of(new Placed(e.node(), e.key())));
  }

  /**
   * Runs {@code op} on the pod that goes by the name, where this member remembers it or where the
   * index says ({@code notFound} when it has none): {@link PodPlaces#onPod}.
   */
  <T> CompletionStage<T> onPod(
      String namespace,
      String name,
      Supplier<? extends RuntimeException> notFound,
      java.util.function.Function<Placed, CompletionStage<T>> op) {
    if (!KubernetesNames.isPodRef(namespace, name)) {
      return lookup(namespace, name)
          .thenCompose(
              none -> {
                throw notFound.get();
              });
    }
    return places.onPod(namespace + "/" + name, notFound, op);
  }

  /** Remembers where a pod lives (after its create). */
  void remember(Placed p) {
    places.remember(p);
  }

  /** Forgets the pod's place (it was deleted), unless the name is remembered for another pod. */
  void forget(PodKey key) {
    places.forget(key);
  }

  /**
   * A command to the node's arbiter, answered once its round is written; a refusal fails the stage
   * with the API's error: NOT_FOUND, or CONFLICT naming the pod's policy label.
   */
  CompletionStage<NodeArbiter.Outcome> decide(
      String node, Function<ActorRef<NodeArbiter.Outcome>, NodeArbiter.Command> command) {
    return entities
        .arbiter(node)
        .ask(command, timeout)
        .thenApply(
            outcome -> {
              if (outcome.ok()) {
                return outcome;
              }
              throw ServiceException.refused(outcome.refusal());
            });
  }

  static CompletionStage<Done> done() {
    return CompletableFuture.completedFuture(Done.getInstance());
  }

  static <T> CompletionStage<List<T>> all(List<? extends CompletionStage<T>> stages) {
    List<CompletableFuture<T>> futures =
        stages.stream().map(CompletionStage::toCompletableFuture).toList();
    return CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new))
        .thenApply(v -> futures.stream().map(CompletableFuture::join).toList());
  }
}
