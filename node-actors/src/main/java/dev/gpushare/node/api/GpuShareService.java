package dev.gpushare.node.api;

import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * Everything the edges (HTTP API, later the Kubernetes sync and the CLI) may ask of the arbiter.
 * Every stage completes exceptionally with a {@link ServiceException} on refusal; a completed stage
 * means the decision is durable (persisted) and visible to the next read.
 */
public interface GpuShareService {

  /**
   * Whether the journal is recovered and every node's arbiter has reconciled with its bound pods.
   */
  boolean ready();

  /**
   * Why {@code GET /readyz} answers 503, or empty when the service is ready: not {@link #ready()}
   * yet, or (where the service knows its journal's health) the journal cannot write.
   */
  default Optional<String> notReady() {
    return ready()
        ? Optional.empty()
        : Optional.of(
            "the journal is still being recovered or a node's arbiter has not reconciled with its"
                + " bound pods; retry shortly");
  }

  CompletionStage<List<NodeView>> nodes();

  CompletionStage<NodeView> node(String name);

  CompletionStage<List<QueueEntryView>> queue(String node);

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
   * telemetry samples report: the simulator's stand-in for a workload using its GPU. Only on the
   * member that samples the node (embedded mode: the one member; a cluster: the node's own member,
   * CONFLICT elsewhere); NOT_FOUND for an unknown node, INVALID for a bad index or process.
   */
  CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes);

  /** Embedded mode: create a pod; without {@code nodeName} the embedded scheduler places it. */
  CompletionStage<PodView> createPod(PodManifest manifest);

  /** Embedded mode: delete a pod; everything it held is freed. Answers the pod's last view. */
  CompletionStage<PodView> deletePod(String namespace, String name);

  CompletionStage<List<PodView>> pods(Optional<String> node);

  CompletionStage<PodView> pod(String namespace, String name);

  /** Data plane: raise demand (Hibernation → Ready, or straight to Running). */
  CompletionStage<PodView> demand(String namespace, String name);

  /** Data plane: withdraw demand or release the GPU (→ Hibernation). */
  CompletionStage<PodView> release(String namespace, String name);

  /**
   * Data plane: completes as soon as the pod is Running, else at the timeout; the view either way.
   */
  CompletionStage<PodView> awaitGrant(String namespace, String name, Duration timeout);

  /** Data plane: the pod's view now and after every change; completes when the pod is deleted. */
  Source<PodView, NotUsed> watch(String namespace, String name);

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
   * Hears of every change users could see in Kubernetes: a node's labels, config, conditions or
   * GPUs, and a pod's state, device, Events or conditions. Calls come from internal threads and
   * must return quickly; {@code close()} the handle to stop.
   */
  AutoCloseable subscribe(ChangeListener listener);

  /** See {@link #subscribe}. */
  interface ChangeListener {
    void nodeChanged(String node);

    void podChanged(String namespace, String name, boolean deleted);
  }

  ClockView clock();

  /**
   * Manual clock only: move time forward; timers due in between fire in order, and every decision
   * they cause is durable before the stage completes.
   */
  CompletionStage<ClockView> advance(Duration by);

  /**
   * This runtime's metrics: the counters and histograms of what happened here (decisions and their
   * latency, preemptions, journal and Kubernetes write errors), in a registry of its own.
   */
  GpuShareMetrics metrics();

  /**
   * Everything {@code GET /metrics} shows, as of now: the state gauges computed from {@link
   * #nodes()} and {@link #pods(Optional)}, then the event metrics of {@link #metrics()}.
   */
  default CompletionStage<MetricSnapshots> scrapeMetrics() {
    return nodes().thenCombine(pods(Optional.empty()), (n, p) -> metrics().scrape(n, p));
  }

  /**
   * How the arbiters pick a GPU inside a node ({@code gpushare.placement}): the scheduler extender
   * scores a node on the GPU this choice takes.
   */
  default dev.gpushare.arbiter.GpuChoice gpuChoice() {
    return dev.gpushare.arbiter.GpuChoice.BEST_FIT;
  }
}
