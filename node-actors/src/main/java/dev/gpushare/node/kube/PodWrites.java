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
 * as just read and the arbiter's {@link PodView}; {@link KubeWriter} applies them.
 *
 * <p>gpushare owns the annotations {@code gpushare.dev/gpu-index} (the device's real index on the
 * node) and {@code gpushare.dev/gpu-uuid}, present exactly while the pod has a device, and the pod
 * conditions of the types it writes ({@value PodNotes#RECLAIM_CONDITION}, {@value
 * PodNotes#ALLOCATED_CONDITION}): each as the view has it, removed when the view has none of that
 * type. The kubelet's conditions and everything else are kept as read. Conditions compare without
 * {@code lastProbeTime} and with times to the second.
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
   * The metadata patch that brings the pod's annotations in line, or empty when they already are.
   * It tests the pod's uid first, so that it never lands on a pod recreated under the same name.
   */
  static Optional<JsonPatch> annotationPatch(Pod current, PodView view) {
    Map<String, String> now = current.getMetadata().getAnnotations();
    Map<String, String> wanted = desiredAnnotations(view);
    JsonPatch patch = new JsonPatch();
    if (current.getMetadata().getUid() != null) {
      patch.test("/metadata/uid", current.getMetadata().getUid());
    }
    if (now == null || now.isEmpty()) {
      // fabric8 shows an absent map as empty; adding the whole map works either way, where adding
      // one key to an absent map would fail
      if (!wanted.isEmpty()) {
        patch.add("/metadata/annotations", wanted);
      }
    } else {
      for (String key : List.of(GPU_INDEX, GPU_UUID)) {
        String value = wanted.get(key);
        if (value == null && now.containsKey(key)) {
          patch.remove(JsonPatch.annotation(key));
        } else if (value != null && !value.equals(now.get(key))) {
          patch.add(JsonPatch.annotation(key), value);
        }
      }
    }
    return patch.changes() ? Optional.of(patch) : Optional.empty();
  }

  /**
   * The conditions to hold: the current ones in their order, ours replaced by the view's (kept as
   * they are when equal), ours the view no longer has dropped, ours that are new appended.
   */
  static List<PodCondition> desiredConditions(Pod current, PodView view) {
    Map<String, PodCondition> ours = new LinkedHashMap<>();
    for (PodConditionView c :
        view.conditions() == null ? List.<PodConditionView>of() : view.conditions()) {
      ours.put(c.type(), kube(c));
    }
    List<PodCondition> now =
        current.getStatus() == null || current.getStatus().getConditions() == null
            ? List.of()
            : current.getStatus().getConditions();
    List<PodCondition> out = new ArrayList<>();
    for (PodCondition c : now) {
      boolean owned = OUR_CONDITIONS.contains(c.getType()) || ours.containsKey(c.getType());
      if (!owned) {
        out.add(c);
        continue;
      }
      PodCondition wanted = ours.remove(c.getType());
      if (wanted != null) {
        out.add(sameCondition(c, wanted) ? c : wanted);
      }
    }
    out.addAll(ours.values());
    return out;
  }

  static boolean sameConditions(List<PodCondition> a, List<PodCondition> b) {
    List<PodCondition> x = a == null ? List.of() : a;
    List<PodCondition> y = b == null ? List.of() : b;
    if (x.size() != y.size()) {
      return false;
    }
    for (int i = 0; i < x.size(); i++) {
      if (!sameCondition(x.get(i), y.get(i))) {
        return false;
      }
    }
    return true;
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
