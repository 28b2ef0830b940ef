package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.SharePolicy;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.Quantity;
import org.junit.jupiter.api.Test;

/** The pure desired-status builder, without a server. */
class NodeWritesTest {

  @Test
  void whatTheServerStoredIsTheSameWhateverTheQuantitysSpelling() {
    Node node = Fixtures.kubeletNode("n");
    var view = Fixtures.nodeView("n", SharePolicy.SHARE_POOL, 16, T0);
    NodeStatus desired = NodeWrites.desiredStatus(node, view, NodeStatusMode.VIRTUAL);
    // the API server canonicalises quantities: 1640Gi may come back as 1760936591360
    Node stored =
        new NodeBuilder(node)
            .withStatus(desired)
            .editStatus()
            .addToAllocatable("memory", new Quantity("1760936591360"))
            .addToAllocatable("alibabacloud.com/gpu-core.percentage", new Quantity("1.6k"))
            .endStatus()
            .build();
    assertTrue(
        NodeWrites.sameStatus(
            stored.getStatus(), NodeWrites.desiredStatus(stored, view, NodeStatusMode.VIRTUAL)));
  }

  @Test
  void kubeletModeLeavesCpuMemoryAndStorageAlone() {
    Node node = Fixtures.kubeletNode("n");
    NodeStatus desired =
        NodeWrites.desiredStatus(
            node, Fixtures.nodeView("n", SharePolicy.SHARE_POOL, 16, T0), NodeStatusMode.KUBELET);
    assertEquals(node.getStatus().getAllocatable().get("cpu"), desired.getAllocatable().get("cpu"));
    assertEquals(
        node.getStatus().getAllocatable().get("memory"), desired.getAllocatable().get("memory"));
    assertFalse(NodeWrites.sameStatus(node.getStatus(), desired));
  }

  @Test
  void virtualModeLeavesTheNodesOwnValuesAloneWhileSharingIsOffAndNothingWasRecorded() {
    Node node = Fixtures.kubeletNode("n");
    node.getStatus().getAllocatable().put("cpu", new Quantity("170"));
    NodeStatus desired =
        NodeWrites.desiredStatus(
            node, Fixtures.nodeView("n", SharePolicy.NONE, 16, T0), NodeStatusMode.VIRTUAL);
    assertEquals("170", desired.getAllocatable().get("cpu").toString());
    assertTrue(NodeWrites.recordOwnAllocatable(node, desired).isEmpty());
  }
}
