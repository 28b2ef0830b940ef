package dev.gpushare.http.extender;

import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.ShareView;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The node and pod views of the extender's tests, as the arbiter shows them (the service itself is
 * node-actors' {@code dev.gpushare.node.fake.FakeGpuShareReader}).
 */
final class ExtenderViews {
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private ExtenderViews() {}

  /** A healthy GPU holding {@code core}/{@code memory} percent. */
  static GpuView gpu(int index, int core, int memory) {
    return new GpuView(
        index,
        "GPU-" + index,
        "NVIDIA H800",
        81559,
        Health.HEALTHY,
        new ShareView(core, memory),
        List.of());
  }

  static GpuView unhealthy(int index) {
    return new GpuView(
        index,
        "GPU-" + index,
        "NVIDIA H800",
        81559,
        Health.UNHEALTHY,
        new ShareView(0, 0),
        List.of());
  }

  /** A node whose label and policy in force are {@code policy}, valid. */
  static NodeView node(String name, SharePolicy policy, GpuView... gpus) {
    return node(name, policy.label(), policy, NodeSharing.VALID, NodeSharing.VALID_MESSAGE, gpus);
  }

  static NodeView node(
      String name,
      String label,
      SharePolicy active,
      String reason,
      String message,
      GpuView... gpus) {
    Map<String, String> labels = label == null ? Map.of() : Map.of(SharePolicy.LABEL, label);
    List<NodeCondition> conditions = new ArrayList<>();
    conditions.add(
        new NodeCondition(
            NodeStatusCalculator.CONDITION_VALID,
            NodeSharing.VALID.equals(reason) ? "True" : "False",
            reason,
            message,
            T0,
            T0));
    return new NodeView(
        name,
        labels,
        Map.of(),
        active,
        QosConfig.DEFAULT,
        new NodeStatus(Map.of(), Map.of(), conditions),
        List.of(gpus),
        List.of(),
        List.of());
  }

  /** A sharing pod of {@code policy} with equal core and memory requests and limits. */
  static PodView pod(String name, SharePolicy policy, int request, int limit) {
    return pod(name, policy, PodState.HIBERNATION, request, limit, null);
  }

  /** A share-pool pod of node n1 Running on GPU {@code gpu} with limits {@code limit} %. */
  static PodView running(String name, int limit, int gpu) {
    return pod(
        name, SharePolicy.SHARE_POOL, PodState.RUNNING, 10, limit, new GpuRef(gpu, "GPU-" + gpu));
  }

  private static PodView pod(
      String name, SharePolicy policy, PodState state, int request, int limit, GpuRef gpu) {
    return new PodView(
        "default",
        name,
        "uid-" + name,
        "n1",
        policy,
        state,
        new ShareView(request, request),
        new ShareView(limit, limit),
        gpu,
        null,
        null,
        gpu == null ? null : 1L,
        List.of(),
        List.of(),
        null,
        null,
        null);
  }
}
