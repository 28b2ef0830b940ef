package dev.gpushare.http.extender;

import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.gpu.SimulatedGpuBackend.SimulatedProcess;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import dev.gpushare.node.api.Views.ShareView;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The arbiter as the extender sees it: nodes and pods to read, nothing else (every other call
 * fails). {@link #calls} records what was read.
 */
final class StubService implements GpuShareService {
  final List<NodeView> nodes = new CopyOnWriteArrayList<>();
  final List<PodView> pods = new CopyOnWriteArrayList<>();
  final List<String> calls = new CopyOnWriteArrayList<>();
  volatile Throwable failWith;

  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  void reset() {
    nodes.clear();
    pods.clear();
    calls.clear();
    failWith = null;
  }

  // ---- building views ----

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
        null);
  }

  // ---- GpuShareService ----

  private <T> CompletionStage<T> answer(String call, T value) {
    calls.add(call);
    Throwable f = failWith;
    return f == null ? CompletableFuture.completedFuture(value) : CompletableFuture.failedFuture(f);
  }

  @Override
  public boolean ready() {
    return true;
  }

  @Override
  public CompletionStage<List<NodeView>> nodes() {
    return answer("nodes", List.copyOf(nodes));
  }

  @Override
  public CompletionStage<NodeView> node(String name) {
    throw new UnsupportedOperationException("node");
  }

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    throw new UnsupportedOperationException("queue");
  }

  @Override
  public CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    throw new UnsupportedOperationException("putNode");
  }

  @Override
  public CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    throw new UnsupportedOperationException("patchNode");
  }

  @Override
  public CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    throw new UnsupportedOperationException("setGpuHealth");
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(
      String node, int index, List<SimulatedProcess> processes) {
    throw new UnsupportedOperationException("scriptGpu");
  }

  @Override
  public CompletionStage<PodView> createPod(PodManifest manifest) {
    throw new UnsupportedOperationException("createPod");
  }

  @Override
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    throw new UnsupportedOperationException("deletePod");
  }

  @Override
  public CompletionStage<List<PodView>> pods(Optional<String> node) {
    return answer("pods", List.copyOf(pods));
  }

  @Override
  public CompletionStage<PodView> pod(String namespace, String name) {
    throw new UnsupportedOperationException("pod");
  }

  @Override
  public CompletionStage<PodView> demand(String namespace, String name) {
    throw new UnsupportedOperationException("demand");
  }

  @Override
  public CompletionStage<PodView> release(String namespace, String name) {
    throw new UnsupportedOperationException("release");
  }

  @Override
  public CompletionStage<PodView> awaitGrant(String namespace, String name, Duration timeout) {
    throw new UnsupportedOperationException("awaitGrant");
  }

  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    throw new UnsupportedOperationException("watch");
  }

  @Override
  public CompletionStage<PodView> ensurePod(PodManifest manifest) {
    throw new UnsupportedOperationException("ensurePod");
  }

  @Override
  public CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    throw new UnsupportedOperationException("forgetPod");
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    return () -> {};
  }

  @Override
  public ClockView clock() {
    return new ClockView(T0, false);
  }

  @Override
  public CompletionStage<ClockView> advance(Duration by) {
    throw new UnsupportedOperationException("advance");
  }

  @Override
  public GpuShareMetrics metrics() {
    return new GpuShareMetrics();
  }
}
