package dev.gpushare.node.kube;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.NodeSharing.SharingConfig;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodConditionView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.ShareView;
import dev.gpushare.node.fake.FakeGpuShareReader;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The reference GPU-HPN node (SPEC §2, deploy/examples/node-status-reference.yaml) and its pods.
 */
final class Fixtures {
  private Fixtures() {}

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  /**
   * The in-memory service the writer reads, its clock at {@link #T0}: views are whatever the test
   * sets, and changes are announced only when the test says so.
   */
  static FakeGpuShareReader service() {
    FakeGpuShareReader service = new FakeGpuShareReader();
    service.manualClock = new ManualClock(T0);
    return service;
  }

  static final String KUBELET_TIME = "2025-12-31T23:00:00Z";

  static final Map<String, String> OWN_CAPACITY =
      Map.of(
          "cpu", "176",
          "memory", "1800Gi",
          "nvidia.com/gpu", "16",
          "ephemeral-storage", "6Ti",
          "pods", "110");
  static final Map<String, String> OWN_ALLOCATABLE =
      Map.of(
          "cpu", "176",
          "memory", "1800Gi",
          "nvidia.com/gpu", "16",
          "ephemeral-storage", "4608Gi",
          "pods", "110");

  /** The node as a kubelet reports it: its own resources and its own conditions. */
  static Node kubeletNode(String name) {
    return new NodeBuilder()
        .withNewMetadata()
        .withName(name)
        .addToLabels(SharePolicy.LABEL, "share-pool")
        .addToLabels("alibabacloud.com/node-type", "reserved")
        .endMetadata()
        .withNewStatus()
        .withCapacity(quantities(OWN_CAPACITY))
        .withAllocatable(quantities(OWN_ALLOCATABLE))
        .addNewCondition()
        .withType("MemoryPressure")
        .withStatus("False")
        .withReason("KubeletHasSufficientMemory")
        .withMessage("kubelet has sufficient memory available")
        .withLastHeartbeatTime(KUBELET_TIME)
        .withLastTransitionTime(KUBELET_TIME)
        .endCondition()
        .addNewCondition()
        .withType("Ready")
        .withStatus("True")
        .withReason("KubeletReady")
        .withMessage("kubelet is posting ready status")
        .withLastHeartbeatTime(KUBELET_TIME)
        .withLastTransitionTime(KUBELET_TIME)
        .endCondition()
        .addNewAddress()
        .withType("InternalIP")
        .withAddress("10.0.0.7")
        .endAddress()
        .endStatus()
        .build();
  }

  static final QosConfig REFERENCE_QOS = new QosConfig(true, 120, "1.5Ti");

  /**
   * The arbiter's view of the node with {@code policy} active, computed from the node's own
   * resources by the real {@link NodeStatusCalculator}.
   */
  static NodeView nodeView(String name, SharePolicy policy, int healthyGpus, Instant now) {
    return nodeView(name, policy, healthyGpus, now, List.of(), OWN_ALLOCATABLE, List.of());
  }

  /**
   * @param previous the conditions shown so far (they keep their transition times)
   * @param ownAllocatable the node's own allocatable, as the informers hand it to the arbiter
   */
  static NodeView nodeView(
      String name,
      SharePolicy policy,
      int healthyGpus,
      Instant now,
      List<NodeCondition> previous,
      Map<String, String> ownAllocatable,
      List<EventView> events) {
    NodeManifest manifest =
        new NodeManifest(
            name,
            Map.of(SharePolicy.LABEL, policy.label()),
            Map.of(),
            new TreeMap<>(OWN_CAPACITY),
            new TreeMap<>(ownAllocatable));
    SharingConfig config =
        new SharingConfig(
            policy, REFERENCE_QOS, policy, NodeSharing.VALID, NodeSharing.VALID_MESSAGE);
    return new NodeView(
        name,
        manifest.labels(),
        manifest.annotations(),
        policy,
        REFERENCE_QOS,
        NodeStatusCalculator.desired(
            manifest, healthyGpus, config, ReservedPerGpu.DEFAULT, previous, now),
        List.of(),
        List.of(),
        events);
  }

  /** A share-pool pod as the kubelet shows it: scheduled, ready. */
  static Pod kubeletPod(String namespace, String name, String uid, String node) {
    return new PodBuilder()
        .withNewMetadata()
        .withNamespace(namespace)
        .withName(name)
        .withUid(uid)
        .addToLabels(SharePolicy.LABEL, "share-pool")
        .addToLabels("alibabacloud.com/compute-class", "gpu-hpn")
        .endMetadata()
        .withNewSpec()
        .withNodeName(node)
        .addNewContainer()
        .withName("main")
        .withImage("busybox")
        .endContainer()
        .endSpec()
        .withNewStatus()
        .withPhase("Running")
        .addNewCondition()
        .withType("PodScheduled")
        .withStatus("True")
        .withLastTransitionTime(KUBELET_TIME)
        .endCondition()
        .addNewCondition()
        .withType("Ready")
        .withStatus("True")
        .withLastTransitionTime(KUBELET_TIME)
        .endCondition()
        .endStatus()
        .build();
  }

  static PodView podView(
      String namespace,
      String name,
      String uid,
      String node,
      String state,
      GpuRef gpu,
      List<PodConditionView> conditions,
      List<EventView> events) {
    return new PodView(
        namespace,
        name,
        uid,
        node,
        SharePolicy.SHARE_POOL,
        PodState.fromDisplay(state).orElseThrow(),
        new ShareView(50, 50),
        new ShareView(50, 50),
        gpu,
        null,
        null,
        null,
        conditions,
        events,
        null,
        null,
        null);
  }

  static PodView running(String namespace, String name, String uid, String node, int gpu) {
    return podView(namespace, name, uid, node, "Running", gpu(gpu), List.of(), List.of());
  }

  static GpuRef gpu(int index) {
    return new GpuRef(index, String.format("GPU-%08d-0000-0000-0000-000000000000", index));
  }

  static EventView event(PodNotes.EventNote note) {
    return new EventView(note.type(), note.reason(), note.message(), note.time(), PodNotes.SOURCE);
  }

  static PodConditionView condition(PodNotes.ConditionNote note) {
    return new PodConditionView(
        note.type(), note.status(), note.reason(), note.message(), note.time());
  }

  static Map<String, Quantity> quantities(Map<String, String> texts) {
    Map<String, Quantity> out = new TreeMap<>();
    texts.forEach((k, v) -> out.put(k, new Quantity(v)));
    return out;
  }

  static String text(Map<String, Quantity> resources, String name) {
    Quantity q = resources == null ? null : resources.get(name);
    return q == null ? null : q.toString();
  }
}
