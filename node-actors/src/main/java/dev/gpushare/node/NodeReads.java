package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.QueueEntryView;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * What users see of nodes: the registered nodes, one node, its queue. Each view is its node's
 * record beside one snapshot of its arbiter ({@link BookViews}); a node that is not registered is
 * NOT_FOUND.
 */
final class NodeReads {
  private final ServiceAsks asks;
  private final ReservedPerGpu reserved;

  NodeReads(ServiceAsks asks, ReservedPerGpu reserved) {
    this.asks = asks;
    this.reserved = reserved;
  }

  CompletionStage<List<NodeView>> nodes() {
    return asks.registeredNodes()
        .thenCompose(names -> all(names.stream().map(this::nodeView).toList()));
  }

  CompletionStage<NodeView> node(String name) {
    return knownNode(name).thenCompose(d -> nodeView(name));
  }

  CompletionStage<List<QueueEntryView>> queue(String node) {
    return knownNode(node).thenCompose(d -> asks.book(node)).thenApply(BookViews::queue);
  }

  CompletionStage<NodeView> nodeView(String name) {
    return asks.nodeRecord(name)
        .thenCombine(asks.book(name), (r, b) -> BookViews.node(r, b, reserved));
  }

  /**
   * Fails with NOT_FOUND unless the node is registered. Asks only that node's actor: a node whose
   * member is failing over must not hold up requests about the others.
   */
  CompletionStage<Done> knownNode(String name) {
    if (!KubernetesNames.isDns1123Subdomain(name)) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.NOT_FOUND,
              "node " + name + " not found (not a valid node name)",
              List.of(new FieldError("node", name, "node " + name + " not found"))));
    }
    return asks.nodeRecord(name)
        .thenApply(
            record -> {
              if (!record.registered()) {
                throw new ServiceException(
                    Kind.NOT_FOUND,
                    "node "
                        + name
                        + " not found"
                        + (KubernetesNames.isDns1123Subdomain(name)
                            ? ""
                            : " (not a valid node name)"),
                    List.of(new FieldError("node", name, "node " + name + " not found")));
              }
              return Done.getInstance();
            });
  }

  /** NOT_FOUND: {@code node} has no GPU {@code index}; it has {@code gpus}. */
  static ServiceException noSuchGpu(String node, int index, int gpus) {
    return ServiceException.of(
        Kind.NOT_FOUND,
        new FieldError(
            "index",
            Integer.toString(index),
            "node " + node + " has no GPU " + index + "; its GPUs are 0.." + (gpus - 1)));
  }
}
