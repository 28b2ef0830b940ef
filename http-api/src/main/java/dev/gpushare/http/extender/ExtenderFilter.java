package dev.gpushare.http.extender;

import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The extender's filter (SPEC §8: policy match, exclusive pods, per-GPU fit), pure: one node's
 * verdict for one pod from what the arbiter shows of the node ({@link NodeView}: the policy in
 * force, its conditions and its GPUs' shares in use). Rules, in order:
 *
 * <ol>
 *   <li>a pod that asks for no GPU passes every node;
 *   <li>a pod holding whole GPUs ({@code nvidia.com/gpu}) passes nodes the arbiter does not know
 *       and nodes whose policy in force is {@code none}; a node that shares its GPUs refuses it
 *       (unresolvable: preemption cannot change a node's model);
 *   <li>a pod that shares a GPU is refused by a node the arbiter does not know (unresolvable), by a
 *       node whose sharing is off while pods hold exclusive GPUs ({@code ExclusiveGPUPodsPresent};
 *       resolvable: once they are gone sharing takes effect), by a node of another policy in force
 *       (unresolvable), and by a node where no single healthy GPU can hold it beside what that GPU
 *       already holds (resolvable): in share-pool the pod's <b>limits</b> beside the limits held
 *       (the arbiter reserves limits, SPEC §5 "Fit"), in static its <b>requests</b> beside the
 *       requests pinned (SPEC §6).
 * </ol>
 *
 * Every refusal says which rule, what the node has and what the pod needs.
 */
public final class ExtenderFilter {
  private ExtenderFilter() {}

  /** One node's answer: passes, or refused with a reason, resolvable by preemption or not. */
  public record Verdict(boolean passes, String reason, boolean unresolvable) {
    static final Verdict PASS = new Verdict(true, null, false);

    static Verdict refused(String reason) {
      return new Verdict(false, reason, false);
    }

    static Verdict unresolvable(String reason) {
      return new Verdict(false, reason, true);
    }
  }

  /**
   * The verdict on {@code nodeName} for a valid pod.
   *
   * @param node what the arbiter shows of the node; {@code null} when it does not know it
   */
  public static Verdict verdict(PodSharing pod, String nodeName, NodeView node) {
    if (pod instanceof PodSharing.Shared shared) {
      return shared(shared, nodeName, node);
    }
    if (pod instanceof PodSharing.Exclusive exclusive) {
      return exclusive(exclusive, nodeName, node);
    }
    return Verdict.PASS;
  }

  /** Every node's verdict, by name in {@code names}' order. */
  public static Map<String, Verdict> verdicts(
      PodSharing pod, List<String> names, Map<String, NodeView> known) {
    Map<String, Verdict> out = new LinkedHashMap<>();
    for (String name : names) {
      out.put(name, verdict(pod, name, known.get(name)));
    }
    return out;
  }

  private static Verdict exclusive(PodSharing.Exclusive pod, String nodeName, NodeView node) {
    if (node == null) {
      return Verdict.PASS;
    }
    SharePolicy active = policy(node);
    if (!active.sharing()) {
      return Verdict.PASS;
    }
    return Verdict.unresolvable(
        "node "
            + nodeName
            + " shares its GPUs (gpu share policy "
            + active
            + " in force); the pod asks for "
            + pod.gpus()
            + " whole GPU(s) ("
            + ShareRequestRules.EXCLUSIVE_GPU
            + "): pods holding whole GPUs only go to nodes with gpu share policy none (SPEC §2, §8)");
  }

  private static Verdict shared(PodSharing.Shared pod, String nodeName, NodeView node) {
    SharePolicy wanted = pod.policy();
    if (node == null) {
      return Verdict.unresolvable(
          "node "
              + nodeName
              + " is not managed by gpushare (the arbiter knows no node of that name); the pod"
              + " shares a GPU ("
              + wanted
              + ") and only goes to GPU-HPN nodes with gpu share policy "
              + wanted
              + " in force");
    }
    SharePolicy active = policy(node);
    NodeCondition valid = condition(node, NodeStatusCalculator.CONDITION_VALID);
    String labelled = node.labels() == null ? null : node.labels().get(SharePolicy.LABEL);
    if (active == SharePolicy.NONE
        && valid != null
        && NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT.equals(valid.reason())) {
      return Verdict.refused(
          "node "
              + nodeName
              + " has sharing off while pods hold exclusive GPUs ("
              + NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT
              + ": "
              + valid.message()
              + "); the pod shares a GPU ("
              + wanted
              + ") and cannot go there until those pods are gone");
    }
    if (active != wanted) {
      StringBuilder b =
          new StringBuilder("node ")
              .append(nodeName)
              .append(" has gpu share policy ")
              .append(active)
              .append(" in force");
      if (labelled != null && !labelled.equals(active.label())) {
        b.append(" (its label ").append(SharePolicy.LABEL).append(" asks for ").append(labelled);
        if (valid != null && !valid.reason().equals(NodeSharing.VALID)) {
          b.append(", not in force: ").append(valid.reason());
        }
        b.append(')');
      }
      b.append("; the pod's label ")
          .append(SharePolicy.LABEL)
          .append(" is ")
          .append(wanted)
          .append(": a pod only goes to nodes of its own sharing model (SPEC §3)");
      return Verdict.unresolvable(b.toString());
    }
    return perGpuFit(pod, nodeName, node);
  }

  /** The share a GPU must hold for {@code pod}: limits in share-pool, requests in static. */
  static Share need(PodSharing.Shared pod) {
    return pod.held();
  }

  /** What the share-pool and static models reserve on a GPU, for messages. */
  static String needName(PodSharing.Shared pod) {
    return pod.policy() == SharePolicy.SHARE_POOL
        ? "limits (share-pool reserves limits on a GPU)"
        : "requests (static pins requests on a GPU)";
  }

  private static Verdict perGpuFit(PodSharing.Shared pod, String nodeName, NodeView node) {
    Share need = need(pod);
    List<String> seen = new ArrayList<>();
    List<GpuView> gpus = node.gpus() == null ? List.of() : node.gpus();
    for (GpuView gpu : gpus) {
      if (!healthy(gpu)) {
        seen.add("GPU " + gpu.index() + " is " + gpu.health());
        continue;
      }
      Share used = used(gpu);
      if (need.fitsBeside(used)) {
        return Verdict.PASS;
      }
      seen.add(
          "GPU " + gpu.index() + " holds core " + used.core() + "%, memory " + used.memory() + "%");
    }
    String what =
        "the pod's " + needName(pod) + ", core " + need.core() + "%, memory " + need.memory() + "%";
    if (gpus.isEmpty()) {
      return Verdict.refused("node " + nodeName + " has no GPU; " + what + " need one GPU");
    }
    return Verdict.refused(
        "no healthy GPU of node "
            + nodeName
            + " can hold "
            + what
            + ", beside what it holds (core and memory each at most 100%): "
            + String.join("; ", seen));
  }

  static boolean healthy(GpuView gpu) {
    return gpu.health() == Health.HEALTHY;
  }

  static Share used(GpuView gpu) {
    return gpu.inUse() == null ? Share.NONE : new Share(gpu.inUse().core(), gpu.inUse().memory());
  }

  static SharePolicy policy(NodeView node) {
    return node.policy() == null ? SharePolicy.NONE : node.policy();
  }

  private static NodeCondition condition(NodeView node, String type) {
    if (node.status() == null || node.status().conditions() == null) {
      return null;
    }
    return node.status().conditions().stream()
        .filter(c -> type.equals(c.type()))
        .findFirst()
        .orElse(null);
  }
}
