package dev.gpushare.node.kube;

import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * A hand-written {@link GpuShareService} for the writer: views are whatever the test set, and
 * changes are announced only when the test says so. A hook runs on every node view read (to change
 * the API server between the writer's read and its write), and a gate can hold view reads until the
 * test opens it (to let a burst of changes pile up while a pass is in flight).
 */
final class FakeService implements GpuShareService {
  private final Map<String, NodeView> nodes = new ConcurrentHashMap<>();
  private final Map<String, PodView> pods = new ConcurrentHashMap<>();
  private final List<ChangeListener> listeners = new CopyOnWriteArrayList<>();
  final GpuShareMetrics metrics = new GpuShareMetrics();
  volatile Instant now = Instant.parse("2026-01-01T00:00:00Z");
  volatile Consumer<String> onNodeRead = n -> {};
  private volatile CountDownLatch gate;
  private volatile CountDownLatch held;

  void setNode(NodeView view) {
    nodes.put(view.name(), view);
  }

  void setPod(PodView view) {
    pods.put(view.namespace() + "/" + view.name(), view);
  }

  void removePod(String namespace, String name) {
    pods.remove(namespace + "/" + name);
  }

  void nodeChanged(String node) {
    listeners.forEach(l -> l.nodeChanged(node));
  }

  void podChanged(String namespace, String name, boolean deleted) {
    listeners.forEach(l -> l.podChanged(namespace, name, deleted));
  }

  /** From now on, the next view read waits until {@link #open}; answers a latch it counts down. */
  CountDownLatch closeGate() {
    gate = new CountDownLatch(1);
    held = new CountDownLatch(1);
    return held;
  }

  void open() {
    CountDownLatch g = gate;
    gate = null;
    if (g != null) {
      g.countDown();
    }
  }

  private void pass() {
    CountDownLatch g = gate;
    if (g != null) {
      held.countDown();
      try {
        if (!g.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never opened the gate");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public boolean ready() {
    return true;
  }

  @Override
  public CompletionStage<List<NodeView>> nodes() {
    return CompletableFuture.completedFuture(List.copyOf(nodes.values()));
  }

  @Override
  public CompletionStage<NodeView> node(String name) {
    onNodeRead.accept(name);
    pass();
    NodeView v = nodes.get(name);
    return v == null
        ? CompletableFuture.failedFuture(
            new ServiceException(ServiceException.Kind.NOT_FOUND, "node " + name + " unknown"))
        : CompletableFuture.completedFuture(v);
  }

  @Override
  public CompletionStage<List<PodView>> pods(Optional<String> node) {
    return CompletableFuture.completedFuture(List.copyOf(pods.values()));
  }

  @Override
  public CompletionStage<PodView> pod(String namespace, String name) {
    pass();
    PodView v = pods.get(namespace + "/" + name);
    return v == null
        ? CompletableFuture.failedFuture(
            new ServiceException(
                ServiceException.Kind.NOT_FOUND, "pod " + namespace + "/" + name + " unknown"))
        : CompletableFuture.completedFuture(v);
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  @Override
  public ClockView clock() {
    return new ClockView(now, true);
  }

  // ---- not used by the writer ----

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(
      String node, int index, List<dev.gpushare.gpu.GpuProcess> processes) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> createPod(PodManifest manifest) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> demand(String namespace, String name) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> release(String namespace, String name) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> awaitGrant(String namespace, String name, Duration timeout) {
    throw new UnsupportedOperationException();
  }

  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<PodView> ensurePod(PodManifest manifest) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletionStage<ClockView> advance(Duration by) {
    throw new UnsupportedOperationException();
  }

  @Override
  public GpuShareMetrics metrics() {
    return metrics;
  }
}
