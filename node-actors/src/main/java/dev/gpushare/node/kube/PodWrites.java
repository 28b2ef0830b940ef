package dev.gpushare.node.kube;

import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.node.api.Views.PodConditionView;
import dev.gpushare.node.api.Views.PodView;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * What gpushare wants a pod to look like in the API server (SPEC §7), as pure functions of the pod
 * as the writer's cache holds it and the arbiter's {@link PodView}: the patches that bring it in
 * line, which {@link KubeWriter} sends.
 *
 * <p>gpushare owns the annotations {@code gpushare.dev/gpu-index} (the device's real index on the
 * node) and {@code gpushare.dev/gpu-uuid}, present exactly while the pod has a device, and the pod
 * conditions of the types it writes ({@value PodNotes#RECLAIM_CONDITION}, {@value
 * PodNotes#ALLOCATED_CONDITION}): each as the view has it, removed when the view has none of that
 * type. The kubelet's conditions and everything else are never in a patch. Conditions compare
 * without {@code lastProbeTime} and with times to the second.
 */
final class PodWrites {
  private PodWrites() {}

  static final String GPU_INDEX = KubeWriter.GPU_INDEX_ANNOTATION;
  static final String GPU_UUID = KubeWriter.GPU_UUID_ANNOTATION;

  static final Set<String> OUR_CONDITIONS =
      Set.of(PodNotes.RECLAIM_CONDITION, PodNotes.ALLOCATED_CONDITION);

  /** The annotations gpushare wants on the pod: both while it has a device, none otherwise. */
  static Map<String, String> desiredAnnotations(PodView view) {
    Map<String, String> out = new TreeMap<>();
    if (view.gpu() != null) {
      out.put(GPU_INDEX, String.valueOf(view.gpu().index()));
      if (view.gpu().uuid() != null) {
        out.put(GPU_UUID, view.gpu().uuid());
      }
    }
    return out;
  }

  /**
   * The JSON merge patch that brings the pod's annotations in line, or empty when they already are.
   * It carries the pod's uid, so that it never lands on a pod recreated under the same name (the
   * API server refuses to change a uid), and touches no other annotation.
   */
  static Optional<MergePatch> annotationPatch(Pod current, PodView view) {
    Map<String, String> now = current.getMetadata().getAnnotations();
    Map<String, String> wanted = desiredAnnotations(view);
    MergePatch patch = new MergePatch();
    for (String key : List.of(GPU_INDEX, GPU_UUID)) {
      String value = wanted.get(key);
      String is = now == null ? null : now.get(key);
      if (!Objects.equals(value, is)) {
        patch.set(value, "metadata", "annotations", key);
      }
    }
    return withUid(current, patch);
  }

  /**
   * The strategic merge patch of the pod's status that brings gpushare's conditions in line, or
   * empty when they already are: the view's conditions that differ, and a delete directive for each
   * of ours the view no longer has. The kubelet's conditions are merged by type and never touched.
   */
  static Optional<MergePatch> conditionsPatch(Pod current, PodView view) {
    Map<String, PodCondition> now = new LinkedHashMap<>();
    if (current.getStatus() != null && current.getStatus().getConditions() != null) {
      current.getStatus().getConditions().forEach(c -> now.put(c.getType(), c));
    }
    List<Object> entries = new ArrayList<>();
    Set<String> wantedTypes = new java.util.HashSet<>();
    for (PodConditionView c :
        view.conditions() == null ? List.<PodConditionView>of() : view.conditions()) {
      wantedTypes.add(c.type());
      PodCondition wanted = kube(c);
      PodCondition is = now.get(c.type());
      if (is == null || !sameCondition(is, wanted)) {
        entries.add(MergePatch.map(wanted));
      }
    }
    for (String type : now.keySet()) {
      if (OUR_CONDITIONS.contains(type) && !wantedTypes.contains(type)) {
        entries.add(MergePatch.deleteByType(type));
      }
    }
    MergePatch patch = new MergePatch();
    if (!entries.isEmpty()) {
      patch.set(entries, "status", "conditions");
    }
    return withUid(current, patch);
  }

  private static Optional<MergePatch> withUid(Pod current, MergePatch patch) {
    if (!patch.changes()) {
      return Optional.empty();
    }
    if (current.getMetadata().getUid() != null) {
      patch.precondition(current.getMetadata().getUid(), "metadata", "uid");
    }
    return Optional.of(patch);
  }

  private static boolean sameCondition(PodCondition a, PodCondition b) {
    return Objects.equals(a.getType(), b.getType())
        && Objects.equals(a.getStatus(), b.getStatus())
        && Objects.equals(a.getReason(), b.getReason())
        && Objects.equals(a.getMessage(), b.getMessage())
        && KubeTimes.sameSecond(a.getLastTransitionTime(), b.getLastTransitionTime());
  }

  private static PodCondition kube(PodConditionView c) {
    PodCondition out = new PodCondition();
    out.setType(c.type());
    out.setStatus(c.status());
    out.setReason(c.reason());
    out.setMessage(c.message());
    out.setLastTransitionTime(KubeTimes.time(c.lastTransitionTime()));
    return out;
  }
}
