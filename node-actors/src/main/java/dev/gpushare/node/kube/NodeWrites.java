package dev.gpushare.node.kube;

import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.node.api.Views.NodeView;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.NodeStatusBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What gpushare wants a node to look like in the API server (SPEC §2), as pure functions of the
 * node as just read and the arbiter's {@link NodeView}; {@link KubeWriter} applies them.
 *
 * <p>gpushare owns, in {@code status}: the two percentage resources in capacity and allocatable
 * (present exactly when the view has them, {@code 100 × healthy GPUs}), and the conditions {@value
 * NodeStatusCalculator#CONDITION_VALID} and {@value NodeStatusCalculator#CONDITION_POLICY}. In
 * {@link NodeStatusMode#VIRTUAL} it also owns allocatable CPU, memory and ephemeral storage while
 * sharing is on, and while the {@link OwnAllocatable} annotation says it changed them. Everything
 * else — other resources, other conditions and their order, addresses, node info — is kept as read.
 *
 * <p>Equality is what the API server would store: quantities by value ({@code 1536Gi} is {@code
 * 1.5Ti}), times to the second, and a condition's {@code lastHeartbeatTime} is ignored (it moves
 * with every computation; writing it alone would be a write per decision).
 */
final class NodeWrites {
  private NodeWrites() {}

  static final Set<String> OUR_CONDITIONS =
      Set.of(NodeStatusCalculator.CONDITION_VALID, NodeStatusCalculator.CONDITION_POLICY);
  static final List<String> PERCENTAGES = List.of(ShareRequestRules.CORE, ShareRequestRules.MEMORY);

  /** The status to hold: {@code current}'s, with gpushare's parts taken from {@code view}. */
  static NodeStatus desiredStatus(Node current, NodeView view, NodeStatusMode mode) {
    NodeStatus status = current.getStatus() == null ? new NodeStatus() : current.getStatus();
    Map<String, Quantity> capacity = copy(status.getCapacity());
    Map<String, Quantity> allocatable = copy(status.getAllocatable());
    Map<String, String> viewCapacity = orEmpty(view.status().capacity());
    Map<String, String> viewAllocatable = orEmpty(view.status().allocatable());
    for (String resource : PERCENTAGES) {
      put(capacity, resource, viewCapacity.get(resource));
      put(allocatable, resource, viewAllocatable.get(resource));
    }
    if (mode == NodeStatusMode.VIRTUAL && ownsOwnAllocatable(current, view)) {
      for (String resource : OwnAllocatable.RECORDED) {
        String wanted = viewAllocatable.get(resource);
        if (wanted != null) {
          put(allocatable, resource, wanted);
        }
      }
    }
    return new NodeStatusBuilder(status)
        .withCapacity(capacity)
        .withAllocatable(allocatable)
        .withConditions(desiredConditions(status.getConditions(), view.status().conditions()))
        .build();
  }

  /** Whether writing {@code desired} over {@code current} would change what the server stores. */
  static boolean sameStatus(NodeStatus current, NodeStatus desired) {
    NodeStatus c = current == null ? new NodeStatus() : current;
    return sameResources(c.getCapacity(), desired.getCapacity())
        && sameResources(c.getAllocatable(), desired.getAllocatable())
        && sameConditions(c.getConditions(), desired.getConditions());
  }

  /**
   * VIRTUAL, before the status write: the patch that records the node's own allocatable, needed
   * when {@code desired} changes a recorded resource and the annotation is absent.
   */
  static Optional<MergePatch> recordOwnAllocatable(Node current, NodeStatus desired) {
    if (hasAnnotation(current)) {
      return Optional.empty();
    }
    Map<String, Quantity> now =
        current.getStatus() == null ? null : current.getStatus().getAllocatable();
    boolean changes =
        OwnAllocatable.RECORDED.stream()
            .anyMatch(r -> !sameQuantity(get(now, r), get(desired.getAllocatable(), r)));
    if (!changes) {
      return Optional.empty();
    }
    // a read-modify-write: the values recorded must be the ones the status write replaces
    return Optional.of(
        new MergePatch()
            .set(
                OwnAllocatable.write(OwnAllocatable.ofStatus(current)),
                "metadata",
                "annotations",
                OwnAllocatable.ANNOTATION)
            .precondition(
                current.getMetadata().getResourceVersion(), "metadata", "resourceVersion"));
  }

  /**
   * The strategic merge patch of the node's status that turns {@code current} into {@code desired}
   * in what gpushare owns — the percentage resources (and in VIRTUAL mode the recorded
   * allocatable), and its conditions, merged by type — or empty when nothing differs. Other
   * resources and conditions are not in it. It carries the resource version only when it replaces
   * the recorded allocatable (a read-modify-write of values another writer may own).
   */
  static Optional<MergePatch> statusPatch(Node current, NodeStatus desired, NodeStatusMode mode) {
    NodeStatus now = current.getStatus() == null ? new NodeStatus() : current.getStatus();
    MergePatch patch = new MergePatch();
    List<String> resources = new ArrayList<>(PERCENTAGES);
    if (mode == NodeStatusMode.VIRTUAL) {
      resources.addAll(OwnAllocatable.RECORDED);
    }
    boolean recorded = false;
    for (String r : resources) {
      for (String field : List.of("capacity", "allocatable")) {
        Map<String, Quantity> is =
            field.equals("capacity") ? now.getCapacity() : now.getAllocatable();
        Map<String, Quantity> want =
            field.equals("capacity") ? desired.getCapacity() : desired.getAllocatable();
        Quantity a = get(is, r);
        Quantity b = get(want, r);
        if (!sameQuantity(a, b)) {
          patch.set(b == null ? null : b.toString(), "status", field, r);
          recorded |= OwnAllocatable.RECORDED.contains(r);
        }
      }
    }
    Map<String, io.fabric8.kubernetes.api.model.NodeCondition> is = new LinkedHashMap<>();
    if (now.getConditions() != null) {
      now.getConditions().forEach(c -> is.put(c.getType(), c));
    }
    List<Object> entries = new ArrayList<>();
    Set<String> wanted = new java.util.HashSet<>();
    for (io.fabric8.kubernetes.api.model.NodeCondition c :
        desired.getConditions() == null
            ? List.<io.fabric8.kubernetes.api.model.NodeCondition>of()
            : desired.getConditions()) {
      if (!OUR_CONDITIONS.contains(c.getType())) {
        continue;
      }
      wanted.add(c.getType());
      io.fabric8.kubernetes.api.model.NodeCondition before = is.get(c.getType());
      if (before == null || !sameCondition(before, c)) {
        entries.add(MergePatch.map(c));
      }
    }
    for (String type : is.keySet()) {
      if (OUR_CONDITIONS.contains(type) && !wanted.contains(type)) {
        entries.add(MergePatch.deleteByType(type));
      }
    }
    if (!entries.isEmpty()) {
      patch.set(entries, "status", "conditions");
    }
    if (!patch.changes()) {
      return Optional.empty();
    }
    if (recorded) {
      patch.precondition(current.getMetadata().getResourceVersion(), "metadata", "resourceVersion");
    }
    return Optional.of(patch);
  }

  /**
   * VIRTUAL, after the status write: the patch that removes the annotation once sharing is off and
   * the node's own values are back in the status. The {@code test} makes it a no-op (refused) if
   * someone rewrote the annotation meanwhile.
   *
   * @throws IllegalArgumentException when the annotation is malformed
   */
  static Optional<JsonPatch> forgetOwnAllocatable(Node current, NodeView view) {
    if (!hasAnnotation(current) || sharing(view)) {
      return Optional.empty();
    }
    Map<String, String> own = OwnAllocatable.recorded(current).orElseThrow();
    Map<String, Quantity> now =
        current.getStatus() == null ? null : current.getStatus().getAllocatable();
    for (Map.Entry<String, String> e : own.entrySet()) {
      if (!sameQuantity(get(now, e.getKey()), e.getValue())) {
        return Optional.empty();
      }
    }
    String path = JsonPatch.annotation(OwnAllocatable.ANNOTATION);
    return Optional.of(
        new JsonPatch()
            .test(path, current.getMetadata().getAnnotations().get(OwnAllocatable.ANNOTATION))
            .remove(path));
  }

  static boolean sharing(NodeView view) {
    return view.policy() != null && view.policy() != SharePolicy.NONE;
  }

  /**
   * In VIRTUAL mode gpushare writes the recorded resources while sharing is on, and while the
   * annotation says it changed them (to restore them); with sharing off and no annotation, they are
   * the node's own and stay untouched.
   */
  private static boolean ownsOwnAllocatable(Node current, NodeView view) {
    return sharing(view) || hasAnnotation(current);
  }

  private static boolean hasAnnotation(Node node) {
    Map<String, String> a = node.getMetadata() == null ? null : node.getMetadata().getAnnotations();
    return a != null && a.get(OwnAllocatable.ANNOTATION) != null;
  }

  /**
   * The current conditions in their order, ours replaced by the view's (or kept as they are when
   * only the heartbeat differs), ours that are new appended.
   */
  private static List<io.fabric8.kubernetes.api.model.NodeCondition> desiredConditions(
      List<io.fabric8.kubernetes.api.model.NodeCondition> current, List<NodeCondition> view) {
    Map<String, io.fabric8.kubernetes.api.model.NodeCondition> ours = new LinkedHashMap<>();
    for (NodeCondition c : view == null ? List.<NodeCondition>of() : view) {
      if (OUR_CONDITIONS.contains(c.type())) {
        ours.put(c.type(), kube(c));
      }
    }
    List<io.fabric8.kubernetes.api.model.NodeCondition> out = new ArrayList<>();
    for (io.fabric8.kubernetes.api.model.NodeCondition c :
        current == null ? List.<io.fabric8.kubernetes.api.model.NodeCondition>of() : current) {
      if (!OUR_CONDITIONS.contains(c.getType())) {
        out.add(c);
        continue;
      }
      io.fabric8.kubernetes.api.model.NodeCondition wanted = ours.remove(c.getType());
      if (wanted != null) {
        out.add(sameCondition(c, wanted) ? c : wanted);
      }
    }
    out.addAll(ours.values());
    return out;
  }

  private static io.fabric8.kubernetes.api.model.NodeCondition kube(NodeCondition c) {
    return new io.fabric8.kubernetes.api.model.NodeCondition(
        KubeTimes.time(c.lastHeartbeatTime()),
        KubeTimes.time(c.lastTransitionTime()),
        c.message(),
        c.reason(),
        c.status(),
        c.type());
  }

  private static boolean sameConditions(
      List<io.fabric8.kubernetes.api.model.NodeCondition> a,
      List<io.fabric8.kubernetes.api.model.NodeCondition> b) {
    List<io.fabric8.kubernetes.api.model.NodeCondition> x = a == null ? List.of() : a;
    List<io.fabric8.kubernetes.api.model.NodeCondition> y = b == null ? List.of() : b;
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

  private static boolean sameCondition(
      io.fabric8.kubernetes.api.model.NodeCondition a,
      io.fabric8.kubernetes.api.model.NodeCondition b) {
    if (!OUR_CONDITIONS.contains(a.getType())) {
      return a.equals(b);
    }
    return Objects.equals(a.getType(), b.getType())
        && Objects.equals(a.getStatus(), b.getStatus())
        && Objects.equals(a.getReason(), b.getReason())
        && Objects.equals(a.getMessage(), b.getMessage())
        && KubeTimes.sameSecond(a.getLastTransitionTime(), b.getLastTransitionTime());
  }

  static boolean sameResources(Map<String, Quantity> a, Map<String, Quantity> b) {
    Map<String, Quantity> x = a == null ? Map.of() : a;
    Map<String, Quantity> y = b == null ? Map.of() : b;
    if (!x.keySet().equals(y.keySet())) {
      return false;
    }
    return x.entrySet().stream().allMatch(e -> sameQuantity(e.getValue(), y.get(e.getKey())));
  }

  static boolean sameQuantity(Quantity a, Quantity b) {
    return sameQuantity(a, b == null ? null : b.toString());
  }

  /** By value, as the server compares them; texts that are not quantities by text. */
  static boolean sameQuantity(Quantity a, String b) {
    if (a == null || b == null) {
      return a == null && b == null;
    }
    try {
      return dev.gpushare.arbiter.Quantity.parse(a.toString())
          .equals(dev.gpushare.arbiter.Quantity.parse(b));
    } catch (IllegalArgumentException e) {
      return a.toString().equals(b);
    }
  }

  private static Quantity get(Map<String, Quantity> map, String key) {
    return map == null ? null : map.get(key);
  }

  private static void put(Map<String, Quantity> resources, String name, String quantity) {
    if (quantity == null) {
      resources.remove(name);
    } else if (!sameQuantity(resources.get(name), quantity)) {
      resources.put(name, new Quantity(quantity));
    }
  }

  private static Map<String, Quantity> copy(Map<String, Quantity> map) {
    return map == null ? new LinkedHashMap<>() : new LinkedHashMap<>(map);
  }

  private static Map<String, String> orEmpty(Map<String, String> map) {
    return map == null ? Map.of() : map;
  }
}
