package dev.gpushare.node.api;

import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * What changes the arbiter's nodes and pods from the control plane: the embedded mode's admin
 * calls, the Kubernetes sync's mirror of the API server, and the manual clock. The part of {@link
 * GpuShareService} the writers take (the Kubernetes source). Every stage completes exceptionally
 * with a {@link ServiceException} on refusal; a completed stage means the decision is durable
 * (persisted) and visible to the next read.
 */
public interface GpuShareWriter {

  /** Embedded mode: register or replace a simulated node. */
  CompletionStage<PutNodeResult> putNode(NodeManifest manifest);

  /**
   * Embedded mode: merge-patch labels and annotations ({@code null} value = remove), as {@code
   * kubectl label} / {@code kubectl annotate} do.
   */
  CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations);

  /**
   * Embedded mode: the simulated GPU {@code index} of {@code node} fails ({@code healthy = false})
   * or comes back. An unhealthy GPU takes no new shares and does not count in the node's percentage
   * capacity; pods already on it keep their share.
   */
  CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy);

  /**
   * A simulated GPU's compute processes from now on (each of a pod, by UID), which the next
   * telemetry samples report: the stand-in for a workload using its GPU. Only on the member that
   * samples the node (embedded mode: the one member; a cluster: the node's own member, CONFLICT
   * elsewhere); NOT_FOUND for an unknown node, INVALID for a bad index or process.
   */
  CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes);

  /** Embedded mode: create a pod; without {@code nodeName} the embedded scheduler places it. */
  CompletionStage<PodView> createPod(PodManifest manifest);

  /** Embedded mode: delete a pod; everything it held is freed. Answers the pod's last view. */
  CompletionStage<PodView> deletePod(String namespace, String name);

  /**
   * Kubernetes mode: make the pod known exactly as the API server has it — created if absent, left
   * alone when the same uid is already known (a relist or resync is harmless), and replaced when a
   * pod of the same name but another uid is known (deleted and recreated meanwhile).
   */
  CompletionStage<PodView> ensurePod(PodManifest manifest);

  /**
   * Kubernetes mode: forget the pod if it is the one with {@code uid} ({@code null}: whatever uid);
   * answers whether a pod was removed. Unknown pods are no error (a delete seen twice).
   */
  CompletionStage<Boolean> forgetPod(String namespace, String name, String uid);

  /**
   * Manual clock only: move time forward; timers due in between fire in order, and every decision
   * they cause is durable before the stage completes.
   */
  CompletionStage<ClockView> advance(Duration by);
}
