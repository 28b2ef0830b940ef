package dev.gpushare.arbiter;

/**
 * Whether a pod may be bound to a node (SPEC §2, §3): the one home of node admission, used by the
 * node's actor when a pod is bound and by the embedded scheduler when it picks a node.
 *
 * <ul>
 *   <li>a pod that shares a GPU needs the node's policy in force to be its own, and the sum of the
 *       requests of the node's shared pods, with its own, within the node's allocatable;
 *   <li>a pod that holds whole GPUs ({@code nvidia.com/gpu}) needs a node that does not share, with
 *       that many whole GPUs not held by others;
 *   <li>a pod that uses no GPU goes anywhere.
 * </ul>
 */
public final class NodeAdmission {
  private NodeAdmission() {}

  /**
   * SPEC §2: {@code gpu-core.percentage} and {@code gpu-memory.percentage} = 100 × healthy GPUs.
   */
  public static Share allocatable(int healthyGpus) {
    return new Share(100 * healthyGpus, 100 * healthyGpus);
  }

  /**
   * What the node looks like to admission.
   *
   * @param active the policy in force
   * @param requested the sum of the requests of the shared pods bound to it
   * @param gpus how many GPUs it has; {@code wholeGpusHeld} of them held by exclusive pods
   */
  public record NodeState(
      String node,
      SharePolicy active,
      int healthyGpus,
      Share requested,
      int gpus,
      int wholeGpusHeld) {}

  /**
   * Why {@code pod} may not be bound to {@code node}, naming the field at fault; null: it may. A
   * policy label that is not the node's is {@link Refusal.Kind#INVALID} (the pod's own fault); no
   * room, whole GPUs on a sharing node or too few free are {@link Refusal.Kind#CONFLICT}.
   */
  public static Refusal refusal(NodeState node, PodSharing pod) {
    if (pod instanceof PodSharing.Shared shared) {
      return refusal(node, shared);
    }
    if (pod instanceof PodSharing.Exclusive exclusive) {
      return refusal(node, exclusive);
    }
    return null;
  }

  private static Refusal refusal(NodeState node, PodSharing.Shared pod) {
    if (pod.policy() != node.active()) {
      return Refusal.invalid(
          new FieldError(
              "metadata.labels[" + SharePolicy.LABEL + "]",
              pod.policy().label(),
              "the pod's gpu-share-policy "
                  + pod.policy()
                  + " must equal the policy in force on node "
                  + node.node()
                  + ", which is "
                  + node.active()));
    }
    Share allocatable = allocatable(node.healthyGpus());
    Share after = node.requested().plus(pod.requests());
    if (after.core() > allocatable.core() || after.memory() > allocatable.memory()) {
      return Refusal.conflict(
          new FieldError(
              "spec.containers.resources.requests",
              pod.requests().toString(),
              "node "
                  + node.node()
                  + " has only "
                  + allocatable.minus(node.requested())
                  + " of its "
                  + allocatable
                  + " allocatable left for requests; pods fit a node by the sum of their"
                  + " requests"));
    }
    return null;
  }

  private static Refusal refusal(NodeState node, PodSharing.Exclusive pod) {
    if (node.active().sharing()) {
      return Refusal.conflict(
          new FieldError(
              "spec.containers.resources.limits[nvidia.com/gpu]",
              Integer.toString(pod.gpus()),
              "node "
                  + node.node()
                  + " shares its GPUs (policy "
                  + node.active()
                  + "); a pod holding whole GPUs (nvidia.com/gpu) cannot be placed on it"));
    }
    int free = node.gpus() - node.wholeGpusHeld();
    if (pod.gpus() > free) {
      return Refusal.conflict(
          new FieldError(
              "spec.containers.resources.limits[nvidia.com/gpu]",
              Integer.toString(pod.gpus()),
              "node " + node.node() + " has only " + free + " whole GPUs free"));
    }
    return null;
  }
}
