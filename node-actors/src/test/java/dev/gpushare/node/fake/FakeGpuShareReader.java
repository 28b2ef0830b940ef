package dev.gpushare.node.fake;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.QueueEntryView;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * An in-memory {@link GpuShareReader} for the tests of its readers (routes, the scheduler extender,
 * the Kubernetes status writer): it shows the node and pod views the test put in {@link #nodes} and
 * {@link #pods} (keyed by name and by {@code namespace/name}, in key order), decides nothing, and
 * records every read in {@link #calls} ({@code "nodes"}, {@code "node n1"}, {@code "pods *"},
 * {@code "pods n1"}, {@code "pod default/a"}, {@code "queue n1"}).
 *
 * <p>Handles for the test: {@link #failWith} makes every stage fail; {@link #ready}; {@link
 * #manualClock} (absent: a system clock at {@link #SYSTEM_NOW}); {@link #nodeChanged} and {@link
 * #podChanged} announce changes to the subscribers; {@link #onNodeRead} runs on every node read,
 * and {@link #closeGate} holds node and pod reads until {@link #open}. Thread-safe: reads may come
 * from any thread while the test changes the views.
 */
public class FakeGpuShareReader implements GpuShareReader {
  /** The time the clock shows while {@link #manualClock} is not set. */
  public static final Instant SYSTEM_NOW = Instant.parse("2030-05-01T12:00:00Z");

  public volatile boolean ready = true;
  public volatile Throwable failWith;
  public volatile ManualClock manualClock;
  public volatile GpuChoice gpuChoice = GpuChoice.BEST_FIT;
  public volatile Consumer<String> onNodeRead = n -> {};
  public final Map<String, NodeView> nodes = new ConcurrentSkipListMap<>();
  public final Map<String, PodView> pods = new ConcurrentSkipListMap<>();
  public final List<String> calls = new CopyOnWriteArrayList<>();
  public final GpuShareMetrics metrics = new GpuShareMetrics();
  private final List<ChangeListener> listeners = new CopyOnWriteArrayList<>();
  private volatile CountDownLatch gate;
  private volatile CountDownLatch held;

  /** Back to a ready service with no nodes, pods, calls, failure, hook or manual clock. */
  public void reset() {
    ready = true;
    failWith = null;
    manualClock = null;
    gpuChoice = GpuChoice.BEST_FIT;
    onNodeRead = n -> {};
    nodes.clear();
    pods.clear();
    calls.clear();
    open();
  }

  /** Shows {@code view} as its node from now on. */
  public void setNode(NodeView view) {
    nodes.put(view.name(), view);
  }

  /** Shows {@code view} as its pod from now on. */
  public void setPod(PodView view) {
    pods.put(view.namespace() + "/" + view.name(), view);
  }

  public void removePod(String namespace, String name) {
    pods.remove(namespace + "/" + name);
  }

  /** Tells every subscriber that {@code node} changed. */
  public void nodeChanged(String node) {
    listeners.forEach(l -> l.nodeChanged(node));
  }

  /** Tells every subscriber that pod {@code namespace/name} changed (or was deleted). */
  public void podChanged(String namespace, String name, boolean deleted) {
    listeners.forEach(l -> l.podChanged(namespace, name, deleted));
  }

  /**
   * From now on, node and pod reads wait until {@link #open}; answers a latch that the first read
   * held counts down.
   */
  public CountDownLatch closeGate() {
    held = new CountDownLatch(1);
    gate = new CountDownLatch(1);
    return held;
  }

  /** Lets held and later reads through. */
  public void open() {
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

  /**
   * Records {@code call}, then answers {@code value} (computed now), or fails with {@link
   * #failWith} or with what {@code value} threw.
   */
  protected final <T> CompletionStage<T> answer(String call, Supplier<T> value) {
    calls.add(call);
    Throwable f = failWith;
    if (f != null) {
      return CompletableFuture.failedFuture(f);
    }
    try {
      return CompletableFuture.completedFuture(value.get());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** The NOT_FOUND refusal of an unknown {@code what} ({@code "node n1"}, {@code "pod ns/a"}). */
  protected static ServiceException notFound(String what) {
    return ServiceException.of(
        Kind.NOT_FOUND, new FieldError("name", what, "name: " + what + " does not exist"));
  }

  /** The view of node {@code name}, or NOT_FOUND. */
  protected final NodeView existingNode(String name) {
    return Optional.ofNullable(nodes.get(name)).orElseThrow(() -> notFound("node " + name));
  }

  /** The view of pod {@code namespace/name}, or NOT_FOUND. */
  protected final PodView existingPod(String namespace, String name) {
    return Optional.ofNullable(pods.get(namespace + "/" + name))
        .orElseThrow(() -> notFound("pod " + namespace + "/" + name));
  }

  @Override
  public boolean ready() {
    return ready;
  }

  @Override
  public CompletionStage<List<NodeView>> nodes() {
    return answer("nodes", () -> List.copyOf(nodes.values()));
  }

  @Override
  public CompletionStage<NodeView> node(String name) {
    onNodeRead.accept(name);
    pass();
    return answer("node " + name, () -> existingNode(name));
  }

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    return answer("queue " + node, () -> existingNode(node).queue());
  }

  @Override
  public CompletionStage<List<PodView>> pods(Optional<String> node) {
    return answer(
        "pods " + node.orElse("*"),
        () ->
            pods.values().stream()
                .filter(p -> node.isEmpty() || node.get().equals(p.node()))
                .toList());
  }

  @Override
  public CompletionStage<PodView> pod(String namespace, String name) {
    pass();
    return answer("pod " + namespace + "/" + name, () -> existingPod(namespace, name));
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    listeners.add(listener);
    return () -> listeners.remove(listener);
  }

  @Override
  public ClockView clock() {
    ManualClock clock = manualClock;
    return clock == null ? new ClockView(SYSTEM_NOW, false) : new ClockView(clock.now(), true);
  }

  @Override
  public GpuShareMetrics metrics() {
    return metrics;
  }

  @Override
  public GpuChoice gpuChoice() {
    return gpuChoice;
  }
}
