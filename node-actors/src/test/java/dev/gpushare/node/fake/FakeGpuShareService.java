package dev.gpushare.node.fake;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.ComputeLimitView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodProcessesView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import dev.gpushare.node.api.Views.ShareView;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The {@link FakeGpuShareReader} with the writer and data-plane parts, for the tests of the edges
 * that take the whole service (the HTTP API): writes change the views in memory without deciding
 * anything (a created pod is Hibernation, {@code demand} makes it Ready, {@code release}
 * Hibernation), and what they were given is kept for the test ({@link #createdPods}, {@link
 * #lastScript}, {@link #lastLabelPatch}, {@link #lastGrantTimeout}, {@link #lastComputeReport}).
 * Every call is recorded in {@link #calls} ({@code "createPod default/a"}, {@code "demand
 * default/a"}, …).
 */
public class FakeGpuShareService extends FakeGpuShareReader implements GpuShareService {
  public final List<PodManifest> createdPods = new CopyOnWriteArrayList<>();
  public volatile Duration lastGrantTimeout;
  public volatile Map<String, String> lastLabelPatch;
  public volatile Map<String, String> lastAnnotationPatch;
  public volatile List<GpuProcess> lastScript;
  public volatile ComputeReport lastComputeReport;

  @Override
  public void reset() {
    super.reset();
    lastComputeReport = null;
    createdPods.clear();
    lastGrantTimeout = null;
    lastLabelPatch = null;
    lastAnnotationPatch = null;
    lastScript = null;
  }

  /** Adds a Hibernation pod {@code namespace/name} on {@code node}. */
  public void addPod(String namespace, String name, String node) {
    setPod(pod(namespace, name, node, "Hibernation"));
  }

  // ---- views ----

  /**
   * A share-pool node with two H800s (GPU 0 healthy, half taken by {@code default/a}; GPU 1
   * unhealthy) and one queued pod {@code default/d}.
   */
  public static NodeView node(
      String name, Map<String, String> labels, Map<String, String> annotations) {
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

  /**
   * A share-pool pod in {@code state} (50 % requested, 100 % limits; Running on GPU 1, Ready at
   * place 1 of 3 in the queue).
   */
  public static PodView pod(String namespace, String name, String node, String state) {
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
        null,
        null);
  }

  // ---- GpuShareWriter ----

  @Override
  public synchronized CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
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
    return answer("setGpuHealth " + node + " " + index + " " + healthy, () -> existingNode(node));
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes) {
    return answer(
        "scriptGpu " + node + " " + index + " " + processes,
        () -> {
          NodeView view = existingNode(node);
          lastScript = processes;
          return view;
        });
  }

  @Override
  public synchronized CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return answer(
        "patchNode " + name,
        () -> {
          NodeView current = existingNode(name);
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
  public synchronized CompletionStage<PodView> createPod(PodManifest manifest) {
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
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    return answer(
        "deletePod " + namespace + "/" + name,
        () -> {
          PodView gone = existingPod(namespace, name);
          pods.remove(namespace + "/" + name);
          return gone;
        });
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

  // ---- GpuShareDataPlane ----

  private synchronized PodView moveTo(String namespace, String name, String state) {
    PodView current = existingPod(namespace, name);
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
          return existingPod(namespace, name);
        });
  }

  /**
   * Keeps {@code report} as {@link #lastComputeReport} (no value is checked) and answers the pod
   * with a {@code library} compute limit showing it, at the clock's time; kept in {@link #pods}.
   */
  @Override
  public CompletionStage<PodView> reportCompute(
      String namespace, String name, ComputeReport report) {
    return answer(
        "reportCompute " + namespace + "/" + name,
        () -> {
          PodView current = existingPod(namespace, name);
          lastComputeReport = report;
          ManualClock clock = manualClock;
          PodView reported =
              current.withComputeLimit(
                  new ComputeLimitView(
                      ComputeLimitMode.LIBRARY,
                      current.limits() == null ? null : current.limits().core(),
                      report.heldSeconds(),
                      report.measuredPercent(),
                      clock == null ? SYSTEM_NOW : clock.now()));
          pods.put(namespace + "/" + name, reported);
          return reported;
        });
  }

  /** The pod's GPU, the PIDs {@link #hostPids} scripts for it (none unless scripted). */
  @Override
  public CompletionStage<PodProcessesView> processes(String namespace, String name) {
    return answer(
        "processes " + namespace + "/" + name,
        () -> {
          PodView current = existingPod(namespace, name);
          return new PodProcessesView(
              namespace,
              name,
              current.gpu(),
              current.gpu() == null
                  ? List.of()
                  : hostPids.getOrDefault(namespace + "/" + name, List.of()),
              null);
        });
  }

  /** What {@link #processes} answers per pod ("ns/name"). */
  public final Map<String, List<Long>> hostPids = new java.util.concurrent.ConcurrentHashMap<>();

  /** The pod's view now, then Ready, then Running. */
  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    PodView now = pods.get(namespace + "/" + name);
    return Source.from(
        List.of(
            now,
            pod(namespace, name, now.node(), "Ready"),
            pod(namespace, name, now.node(), "Running")));
  }
}
