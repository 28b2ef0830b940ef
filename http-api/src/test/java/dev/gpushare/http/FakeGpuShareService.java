package dev.gpushare.http;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
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
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * An in-memory stand-in for the arbiter, only to test the HTTP mapping: it keeps nodes and pods in
 * maps, decides nothing, and records what it was asked. {@link #failWith} makes every stage fail.
 */
final class FakeGpuShareService implements GpuShareService {
  volatile boolean ready = true;
  volatile Throwable failWith;
  volatile ManualClock manualClock;
  final Map<String, NodeView> nodes = new TreeMap<>();
  final Map<String, PodView> pods = new TreeMap<>();
  final List<PodManifest> createdPods = new ArrayList<>();
  final List<String> calls = new ArrayList<>();
  volatile Duration lastGrantTimeout;
  volatile Map<String, String> lastLabelPatch;
  volatile Map<String, String> lastAnnotationPatch;
  volatile List<dev.gpushare.gpu.SimulatedGpuBackend.SimulatedProcess> lastScript;
  final GpuShareMetrics metrics = new GpuShareMetrics();

  static final Instant SYSTEM_NOW = Instant.parse("2030-05-01T12:00:00Z");

  synchronized void reset() {
    ready = true;
    failWith = null;
    manualClock = null;
    nodes.clear();
    pods.clear();
    createdPods.clear();
    calls.clear();
    lastGrantTimeout = null;
    lastLabelPatch = null;
    lastAnnotationPatch = null;
    lastScript = null;
  }

  static NodeView node(String name, Map<String, String> labels, Map<String, String> annotations) {
    return new NodeView(
        name,
        labels,
        annotations,
        SharePolicy.SHARE_POOL,
        QosConfig.DEFAULT,
        new NodeStatus(Map.of("nvidia.com/gpu", "2"), Map.of("nvidia.com/gpu", "2"), List.of()),
        List.of(
            new GpuView(
                0,
                "GPU-0",
                "NVIDIA H800",
                81559,
                Health.HEALTHY,
                new ShareView(50, 50),
                List.of("default/a")),
            new GpuView(
                1,
                "GPU-1",
                "NVIDIA H800",
                81559,
                Health.UNHEALTHY,
                new ShareView(0, 0),
                List.of())),
        List.of(new QueueEntryView("default/d", 1, 3, new ShareView(100, 100))),
        List.of());
  }

  static PodView pod(String namespace, String name, String node, String state) {
    return new PodView(
        namespace,
        name,
        "uid-" + name,
        node,
        SharePolicy.SHARE_POOL,
        PodState.fromDisplay(state).orElseThrow(),
        new ShareView(50, 50),
        new ShareView(100, 100),
        state.equals("Running") ? new GpuRef(1, "GPU-1") : null,
        state.equals("Ready") ? 1 : null,
        state.equals("Ready") ? 3L : null,
        null,
        List.of(),
        List.of(),
        null,
        null);
  }

  private <T> CompletionStage<T> answer(String call, Supplier<T> value) {
    synchronized (this) {
      calls.add(call);
    }
    if (failWith != null) {
      return CompletableFuture.failedFuture(failWith);
    }
    try {
      synchronized (this) {
        return CompletableFuture.completedFuture(value.get());
      }
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private static ServiceException notFound(String what) {
    return ServiceException.of(
        Kind.NOT_FOUND, new FieldError("name", what, "name: " + what + " does not exist"));
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
    return answer(
        "node " + name,
        () -> Optional.ofNullable(nodes.get(name)).orElseThrow(() -> notFound("node " + name)));
  }

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    return answer(
        "queue " + node,
        () ->
            Optional.ofNullable(nodes.get(node))
                .orElseThrow(() -> notFound("node " + node))
                .queue());
  }

  @Override
  public CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    return answer(
        "putNode " + manifest.name(),
        () -> {
          boolean created = !nodes.containsKey(manifest.name());
          NodeView view = node(manifest.name(), manifest.labels(), manifest.annotations());
          nodes.put(manifest.name(), view);
          return new PutNodeResult(created, view);
        });
  }

  @Override
  public CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    return answer(
        "setGpuHealth " + node + " " + index + " " + healthy,
        () -> Optional.ofNullable(nodes.get(node)).orElseThrow(() -> notFound("node " + node)));
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(
      String node,
      int index,
      List<dev.gpushare.gpu.SimulatedGpuBackend.SimulatedProcess> processes) {
    return answer(
        "scriptGpu " + node + " " + index + " " + processes,
        () -> {
          NodeView view =
              Optional.ofNullable(nodes.get(node)).orElseThrow(() -> notFound("node " + node));
          lastScript = processes;
          return view;
        });
  }

  @Override
  public CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return answer(
        "patchNode " + name,
        () -> {
          NodeView current =
              Optional.ofNullable(nodes.get(name)).orElseThrow(() -> notFound("node " + name));
          lastLabelPatch = labels;
          lastAnnotationPatch = annotations;
          NodeView patched =
              node(
                  name, merge(current.labels(), labels), merge(current.annotations(), annotations));
          nodes.put(name, patched);
          return patched;
        });
  }

  private static Map<String, String> merge(Map<String, String> current, Map<String, String> patch) {
    Map<String, String> result = new TreeMap<>(current);
    patch.forEach(
        (k, v) -> {
          if (v == null) {
            result.remove(k);
          } else {
            result.put(k, v);
          }
        });
    return result;
  }

  @Override
  public CompletionStage<PodView> createPod(PodManifest manifest) {
    return answer(
        "createPod " + manifest.namespace() + "/" + manifest.name(),
        () -> {
          String key = manifest.namespace() + "/" + manifest.name();
          if (pods.containsKey(key)) {
            throw ServiceException.of(
                Kind.CONFLICT,
                new FieldError(
                    "metadata.name",
                    manifest.name(),
                    "metadata.name: pod " + key + " exists already"));
          }
          createdPods.add(manifest);
          PodView view =
              pod(
                  manifest.namespace(),
                  manifest.name(),
                  manifest.nodeName() == null ? "node-1" : manifest.nodeName(),
                  "Hibernation");
          pods.put(key, view);
          return view;
        });
  }

  @Override
  public CompletionStage<PodView> ensurePod(PodManifest manifest) {
    return createPod(manifest);
  }

  @Override
  public CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    return answer("forgetPod " + namespace + "/" + name, () -> false);
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    return () -> {};
  }

  @Override
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    return answer(
        "deletePod " + namespace + "/" + name,
        () ->
            Optional.ofNullable(pods.remove(namespace + "/" + name))
                .orElseThrow(() -> notFound("pod " + namespace + "/" + name)));
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
    return answer("pod " + namespace + "/" + name, () -> existing(namespace, name));
  }

  private PodView existing(String namespace, String name) {
    return Optional.ofNullable(pods.get(namespace + "/" + name))
        .orElseThrow(() -> notFound("pod " + namespace + "/" + name));
  }

  private PodView moveTo(String namespace, String name, String state) {
    PodView current = existing(namespace, name);
    PodView moved = pod(namespace, name, current.node(), state);
    pods.put(namespace + "/" + name, moved);
    return moved;
  }

  @Override
  public CompletionStage<PodView> demand(String namespace, String name) {
    return answer("demand " + namespace + "/" + name, () -> moveTo(namespace, name, "Ready"));
  }

  @Override
  public CompletionStage<PodView> release(String namespace, String name) {
    return answer(
        "release " + namespace + "/" + name, () -> moveTo(namespace, name, "Hibernation"));
  }

  @Override
  public CompletionStage<PodView> awaitGrant(String namespace, String name, Duration timeout) {
    return answer(
        "awaitGrant " + namespace + "/" + name,
        () -> {
          lastGrantTimeout = timeout;
          return existing(namespace, name);
        });
  }

  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    PodView now;
    synchronized (this) {
      now = pods.get(namespace + "/" + name);
    }
    return Source.from(
        List.of(
            now,
            pod(namespace, name, now.node(), "Ready"),
            pod(namespace, name, now.node(), "Running")));
  }

  @Override
  public ClockView clock() {
    ManualClock clock = manualClock;
    return clock == null ? new ClockView(SYSTEM_NOW, false) : new ClockView(clock.now(), true);
  }

  @Override
  public CompletionStage<ClockView> advance(Duration by) {
    return answer(
        "advance " + by,
        () -> {
          ManualClock clock = manualClock;
          if (clock == null) {
            throw new ServiceException(Kind.CONFLICT, "system clock");
          }
          return new ClockView(clock.advance(by), true);
        });
  }

  @Override
  public GpuShareMetrics metrics() {
    return metrics;
  }
}
