package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.PodView;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * What users see of pods: each view's decision state from its node's arbiter (one snapshot per node
 * for a list), the pod's own record (Events, conditions) beside it, and a Running share's GPU use
 * from the latest telemetry its sampling member published ({@link ChangeFanOut}), and a sharing
 * pod's compute limit with its library's latest report. A pod is found by name in the cluster-wide
 * index; one that is not there, still being created or gone is NOT_FOUND.
 */
final class PodReads {
  private final ServiceAsks asks;
  private final NodeReads nodes;
  private final ChangeFanOut fanOut;
  private final Optional<String> mpsRoot;
  private final ComputeLimitMode computeLimit;

  PodReads(
      ServiceAsks asks,
      NodeReads nodes,
      ChangeFanOut fanOut,
      Optional<String> mpsRoot,
      ComputeLimitMode computeLimit) {
    this.asks = asks;
    this.nodes = nodes;
    this.fanOut = fanOut;
    this.mpsRoot = mpsRoot;
    this.computeLimit = computeLimit;
  }

  CompletionStage<List<PodView>> pods(Optional<String> node) {
    CompletionStage<List<String>> names =
        node.isPresent()
            ? nodes.knownNode(node.get()).thenApply(d -> List.of(node.get()))
            : asks.registeredNodes();
    // Each node's arbiter is the authority on its pods: one snapshot per node, and each pod's own
    // record (Events, conditions) beside it.
    return names
        .thenCompose(each -> all(each.stream().map(this::podsOf).toList()))
        .thenApply(
            perNode ->
                perNode.stream()
                    .flatMap(List::stream)
                    .sorted(Comparator.comparing((PodView v) -> v.namespace() + "/" + v.name()))
                    .toList());
  }

  /** The pods of one node, from one snapshot of its arbiter's book. */
  private CompletionStage<List<PodView>> podsOf(String node) {
    return asks.book(node)
        .thenCombine(asks.nodeRecord(node), (b, r) -> Map.entry(b, r))
        .thenCompose(
            br -> {
              NodeArbiter.BookView b = br.getKey();
              List<CompletionStage<PodView>> views = new ArrayList<>();
              for (ShareBook.Member m : b.book().members().values()) {
                NodeArbiter.Outcome decided =
                    NodeArbiter.Outcome.of(b.book(), m.key().entityId(), b.now());
                views.add(
                    asks.podRecord(new Placed(node, m.key()))
                        .thenApply(
                            rec ->
                                withGpuUse(
                                    BookViews.pod(m.key(), node, decided, rec), br.getValue())));
              }
              return all(views);
            });
  }

  CompletionStage<PodView> pod(String namespace, String name) {
    return onPod(namespace, name, this::podView);
  }

  /**
   * {@code op} on the pod that goes by the name, found where this member remembers it or in the
   * index ({@link ServiceAsks#onPod}); NOT_FOUND when none does.
   */
  <T> CompletionStage<T> onPod(
      String namespace, String name, Function<Placed, CompletionStage<T>> op) {
    return asks.onPod(namespace, name, () -> podNotFound(namespace, name), op);
  }

  /** Where the pod that goes by the name lives; NOT_FOUND when none does. */
  CompletionStage<Placed> placed(String namespace, String name) {
    return asks.lookup(namespace, name)
        .thenApply(
            p -> {
              if (p.isEmpty()) {
                throw podNotFound(namespace, name);
              }
              return p.get();
            });
  }

  /**
   * The pod's view; NOT_FOUND while the pod is still being created (its name is claimed but its
   * node's arbiter has not taken it yet) or after it is gone.
   */
  CompletionStage<PodView> podView(Placed p) {
    return maybePodView(p)
        .thenApply(v -> v.orElseThrow(() -> podNotFound(p.key().namespace(), p.key().name())));
  }

  /** The pod's view with the decision state {@code decided} the arbiter answered with. */
  CompletionStage<PodView> podView(Placed p, NodeArbiter.Outcome decided) {
    return answered(p, CompletableFuture.completedFuture(decided), asks.podRecord(p))
        .thenCompose(this::withGpuUse);
  }

  /** The view of the arbiter's answer beside the pod's own record, without telemetry. */
  static CompletionStage<PodView> answered(
      Placed p,
      CompletionStage<NodeArbiter.Outcome> decided,
      CompletionStage<PodActor.Record> record) {
    return decided.thenCombine(record, (o, r) -> BookViews.pod(p.key(), p.node(), o, r));
  }

  private CompletionStage<Optional<PodView>> maybePodView(Placed p) {
    return asks.decided(p)
        .thenCombine(
            asks.podRecord(p), (o, r) -> o.ok() ? BookViews.pod(p.key(), p.node(), o, r) : null)
        .thenCompose(
            v ->
                v == null
                    ? CompletableFuture.completedFuture(Optional.<PodView>empty())
                    : withGpuUse(v).thenApply(Optional::of));
  }

  /**
   * A Running share: its telemetry, and what its workload exports (GPU memory); every share: its
   * compute limit ({@link #withComputeLimit}).
   */
  CompletionStage<PodView> withGpuUse(PodView view) {
    if (view.gpu() == null || view.limits() == null) {
      return CompletableFuture.completedFuture(withComputeLimit(view));
    }
    return asks.nodeRecord(view.node()).thenApply(n -> withGpuUse(view, n));
  }

  /** As {@link #withGpuUse(PodView)} with the node's record at hand. */
  PodView withGpuUse(PodView v, NodeActor.Record node) {
    if (v.gpu() == null || v.limits() == null) {
      return withComputeLimit(v);
    }
    Changes.PodUsageReport u = fanOut.usage(v.node(), entityId(v));
    return withComputeLimit(BookViews.withGpuUse(v, node, u, mpsRoot));
  }

  /**
   * A sharing pod's compute limit as this member enforces it ({@code gpushare.gpu.compute-limit}
   * and {@code mps-root}) with its library's latest report ({@link ChangeFanOut#compute}).
   */
  PodView withComputeLimit(PodView v) {
    return v.withComputeLimit(BookViews.computeLimit(v, computeLimit, fanOut.compute(entityId(v))));
  }

  private static String entityId(PodView v) {
    return new PodKey(v.namespace(), v.name(), v.uid()).entityId();
  }

  private static ServiceException podNotFound(String namespace, String name) {
    return new ServiceException(
        Kind.NOT_FOUND,
        "pod "
            + namespace
            + "/"
            + name
            + " not found"
            + (KubernetesNames.isPodRef(namespace, name)
                ? ""
                : " (not a valid pod name: the namespace is "
                    + KubernetesNames.DNS1123_LABEL_ACCEPTED
                    + ", the name "
                    + KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED
                    + ")"),
        List.of(
            new FieldError("metadata.name", name, "pod " + namespace + "/" + name + " not found")));
  }
}
