package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.NodeAdmission;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.Share;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The node for a pod created through the API (API.md, {@code POST /v1/pods}): {@code spec.nodeName}
 * when given, if it is registered and its admission takes the pod (else the refusal the bind would
 * give, before anything is written), or the embedded scheduler's pick: among nodes whose policy in
 * force takes the pod and whose allocatable has room for its requests, the fullest one (best fit),
 * ties by name.
 */
final class EmbeddedScheduler {
  private final ServiceAsks asks;

  EmbeddedScheduler(ServiceAsks asks) {
    this.asks = asks;
  }

  CompletionStage<String> chooseNode(String nodeName, PodKey key, PodSharing spec) {
    if (nodeName != null && !nodeName.isEmpty()) {
      if (!KubernetesNames.isDns1123Subdomain(nodeName)) {
        return CompletableFuture.failedFuture(
            ServiceException.invalid(
                List.of(
                    FieldErrors.of(
                        "spec.nodeName", nodeName, KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED))));
      }
      return asks.nodeRecord(nodeName)
          .thenCompose(
              record -> {
                if (!record.registered()) {
                  return asks.registeredNodes()
                      .thenApply(
                          names -> {
                            throw ServiceException.of(
                                Kind.NOT_FOUND,
                                new FieldError(
                                    "spec.nodeName",
                                    nodeName,
                                    "spec.nodeName is \""
                                        + nodeName
                                        + "\"; no such node (known: "
                                        + String.join(", ", names)
                                        + ")"));
                          });
                }
                // A pod bound already (a create repeated with its uid) is answered by the bind.
                Refusal refusal =
                    record.bound().containsKey(key.entityId())
                        ? null
                        : NodeAdmission.refusal(record.admissionState(), spec);
                if (refusal != null) {
                  throw ServiceException.refused(refusal);
                }
                return CompletableFuture.completedFuture(nodeName);
              });
    }
    return asks.nodeNames()
        .thenCompose(names -> all(names.stream().map(asks::nodeRecord).toList()))
        .thenApply(
            records -> {
              List<String> reasons = new ArrayList<>();
              NodeActor.Record best = null;
              int bestRoom = Integer.MAX_VALUE;
              for (NodeActor.Record r : records) {
                String why = unfit(r, spec);
                if (why != null) {
                  reasons.add(r.manifest().name() + ": " + why);
                  continue;
                }
                Share free = NodeAdmission.allocatable(r.healthyGpus()).minus(r.requested());
                int room = free.core() + free.memory();
                if (room < bestRoom) {
                  best = r;
                  bestRoom = room;
                }
              }
              if (best == null) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "spec.nodeName",
                        null,
                        "no node can take the pod: "
                            + (reasons.isEmpty() ? "no nodes" : String.join("; ", reasons))));
              }
              return best.manifest().name();
            });
  }

  /** Why the embedded scheduler cannot place {@code spec} on {@code r}: node admission's word. */
  private static String unfit(NodeActor.Record r, PodSharing spec) {
    if (!r.registered()) {
      return "not registered";
    }
    Refusal refusal = NodeAdmission.refusal(r.admissionState(), spec);
    return refusal == null ? null : refusal.detail();
  }
}
