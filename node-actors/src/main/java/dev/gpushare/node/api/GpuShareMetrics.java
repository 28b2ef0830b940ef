package dev.gpushare.node.api;

import dev.gpushare.arbiter.GpuLoad;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.actor.ArbiterMetrics;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.QueueEntryView;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot.InfoDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The runtime's Prometheus metrics (README "Metrics"), with the Prometheus Java client: one {@link
 * PrometheusRegistry} per runtime (several actor systems may run in one JVM), never the default
 * registry.
 *
 * <p><b>Events</b> are counted where they happen, in the registry: the arbiter's decisions and
 * their latency ({@link ArbiterMetrics}, told by each node's arbiter on the member that hosts it),
 * preemptions per pod, journal failures and failed Kubernetes writes. They count from this member's
 * start: each member counts what its own arbiters and its own Kubernetes writer did.
 *
 * <p><b>State</b> (queue, GPUs, pods) is not kept here: {@link #scrape} builds it from the
 * service's node and pod views at scrape time, so a scrape always shows the state as it is now.
 *
 * <p>Thread-safe: the arbiters call in from their actors, the Kubernetes writer from its thread,
 * scrapes from the HTTP server.
 */
public final class GpuShareMetrics implements ArbiterMetrics {

  /** The decision kinds of {@link ArbiterMetrics#decided}, each node's series start at zero. */
  public static final List<String> DECISION_KINDS =
      List.of(
          "enqueue",
          "withdraw",
          "grant",
          "release",
          "revoke",
          "preempt",
          "pin",
          "pin_deferred",
          "suspend",
          "checkpoint",
          "checkpoint_failed",
          "restore",
          "checkpoint_dropped");

  /** The entity named in journal errors of the node arbiters. */
  public static final String ARBITER_ENTITY = "NodeArbiter";

  /** The operations of {@link ArbiterMetrics#journalFailed}. */
  public static final List<String> JOURNAL_OPERATIONS =
      List.of("recovery", "persist", "persist_rejected", "snapshot");

  /** The object kinds of {@link #kubernetesWriteError}. */
  public static final List<String> KUBERNETES_KINDS = List.of("node", "pod", "event");

  /** The reasons of {@link #kubernetesWriteError}. */
  public static final List<String> KUBERNETES_REASONS =
      List.of("rejected", "retry", "conflict", "error");

  /** The HTTP methods of {@link #httpRequest}; any other is counted as {@code other}. */
  public static final List<String> HTTP_METHODS =
      List.of("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");

  /**
   * HTTP latency buckets, seconds: most answers take milliseconds, a grant long poll up to its
   * timeout (300 s at most).
   */
  static final double[] HTTP_BUCKETS = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300
  };

  /** Round latency buckets, seconds: a round persists a few events and asks a few actors. */
  static final double[] DURATION_BUCKETS = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30
  };

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter decisions;
  private final Histogram decisionDuration;
  private final Counter podPreemptions;
  private final Counter journalErrors;
  private final Counter kubernetesWriteErrors;
  private final Counter kubernetesWrites;
  private volatile Gauge kubernetesBacklog;
  private final Counter httpRequests;
  private final Histogram httpDuration;
  private final Gauge ungranted;

  /** Per node this member samples, the label values of its ungranted series last set. */
  private final Map<String, Set<List<String>>> ungrantedSeries = new ConcurrentHashMap<>();

  private final Set<String> nodesSeen = ConcurrentHashMap.newKeySet();
  private volatile DataDirectoryGauges dataDirectory;

  public GpuShareMetrics() {
    decisions =
        Counter.builder()
            .name("gpushare_decisions_total")
            .help(
                "Decisions of the node's arbiter persisted on this member, by kind: enqueue,"
                    + " withdraw, grant, release, revoke (telemetry rules: idle or memory),"
                    + " preempt, pin, pin_deferred, and for pods checkpointed instead of signalled"
                    + " suspend, checkpoint, checkpoint_failed, restore, checkpoint_dropped.")
            .labelNames("node", "kind")
            .register(registry);
    decisionDuration =
        Histogram.builder()
            .name("gpushare_decision_duration_seconds")
            .help(
                "Time from a command's arrival at the node's arbiter to the end of the decision"
                    + " round that answers it (every decision it caused persisted and carried"
                    + " out).")
            .labelNames("node")
            .classicOnly()
            .classicUpperBounds(DURATION_BUCKETS)
            .register(registry);
    podPreemptions =
        Counter.builder()
            .name("gpushare_pod_preemptions_total")
            .help(
                "Preemptions per pod: role=victim, the pod lost its share; role=preemptor, the pod"
                    + " took a victim's share (one per victim). Dropped when the pod is deleted.")
            .labelNames("namespace", "pod", "role")
            .register(registry);
    journalErrors =
        Counter.builder()
            .name("gpushare_journal_errors_total")
            .help(
                "Journal failures seen by persistent entities on this member, by entity and"
                    + " operation: recovery, persist, persist_rejected, snapshot.")
            .labelNames("entity", "operation")
            .register(registry);
    kubernetesWriteErrors =
        Counter.builder()
            .name("gpushare_kubernetes_write_errors_total")
            .help(
                "Failed writes to the Kubernetes API server, by object kind (node, pod, event) and"
                    + " reason: rejected (4xx, dropped until the next change), retry (429, 5xx,"
                    + " timeout, no response; retried with back-off), conflict (409 on a status"
                    + " write; read again), error (anything else).")
            .labelNames("kind", "reason")
            .register(registry);
    kubernetesWrites =
        Counter.builder()
            .name("gpushare_kubernetes_writes_total")
            .help(
                "Writes the Kubernetes writer attempted against the API server, by object kind"
                    + " (node, pod, event); each retry counts again. With"
                    + " gpushare_kubernetes_write_errors_total, the share that failed.")
            .labelNames("kind")
            .register(registry);
    httpRequests =
        Counter.builder()
            .name("gpushare_http_requests_total")
            .help(
                "Requests the HTTP API answered, by method, route (the path's template, e.g."
                    + " /v1/namespaces/{namespace}/pods/{name}; other for paths the API does not"
                    + " have) and status code; counted when the response starts (a watch stream"
                    + " when its stream opens).")
            .labelNames("method", "route", "code")
            .register(registry);
    httpDuration =
        Histogram.builder()
            .name("gpushare_http_request_duration_seconds")
            .help(
                "Time from a request's arrival to the start of its response, by method and route"
                    + " (a long poll's wait included; a watch stream up to its opening).")
            .labelNames("method", "route")
            .classicOnly()
            .classicUpperBounds(HTTP_BUCKETS)
            .register(registry);
    ungranted =
        Gauge.builder()
            .name("gpushare_pod_ungranted_gpu_processes")
            .help(
                "Processes of a pod on a GPU the pod does not hold (latest telemetry sample of the"
                    + " member that samples the node): a program libgpushare.so could not enter,"
                    + " such as a static or musl binary. Absent when there are none.")
            .labelNames("namespace", "pod", "node", "gpu")
            .register(registry);
    for (String operation : JOURNAL_OPERATIONS) {
      journalErrors.initLabelValues(ARBITER_ENTITY, operation);
    }
  }

  /**
   * The latest telemetry sample of {@code node} (on the member that samples it): per pod, per GPU
   * it does not hold, how many of its processes use that GPU; series no longer there are dropped.
   */
  public void ungrantedUse(String node, Map<PodKey, Map<Integer, Integer>> processes) {
    Set<List<String>> now = new java.util.HashSet<>();
    processes.forEach(
        (pod, byGpu) ->
            byGpu.forEach(
                (gpu, count) -> {
                  List<String> labels =
                      List.of(pod.namespace(), pod.name(), node, Integer.toString(gpu));
                  now.add(labels);
                  ungranted.labelValues(labels.toArray(String[]::new)).set(count);
                }));
    Set<List<String>> before = ungrantedSeries.put(node, now);
    if (before != null) {
      for (List<String> labels : before) {
        if (!now.contains(labels)) {
          ungranted.remove(labels.toArray(String[]::new));
        }
      }
    }
  }

  /** The registry of the event metrics (counters and histograms); see {@link #scrape}. */
  public PrometheusRegistry registry() {
    return registry;
  }

  // ---- events ----

  @Override
  public void decided(String node, String kind) {
    seen(node);
    decisions.labelValues(node, kind).inc();
  }

  @Override
  public void preempted(String node, PodKey preemptor, List<PodKey> victims) {
    for (PodKey victim : victims) {
      podPreemptions.labelValues(victim.namespace(), victim.name(), "victim").inc();
    }
    podPreemptions
        .labelValues(preemptor.namespace(), preemptor.name(), "preemptor")
        .inc(victims.size());
  }

  @Override
  public void roundEnded(String node, Duration elapsed) {
    seen(node);
    decisionDuration.labelValues(node).observe(elapsed.toNanos() / 1e9);
  }

  @Override
  public void podRemoved(String node, PodKey pod) {
    podPreemptions.remove(pod.namespace(), pod.name(), "victim");
    podPreemptions.remove(pod.namespace(), pod.name(), "preemptor");
  }

  @Override
  public void journalFailed(String node, String operation, Throwable cause) {
    journalError(ARBITER_ENTITY, operation);
  }

  /** A persistent entity's journal failed it ({@code operation} as in the metric's help). */
  public void journalError(String entity, String operation) {
    journalErrors.labelValues(entity, operation).inc();
  }

  /**
   * The Kubernetes writer exists on this member: its write and error series start at zero for every
   * object kind and reason, so that rates and {@code increase} work from its first write.
   */
  public void kubernetesWriterStarted() {
    synchronized (this) {
      if (kubernetesBacklog == null) {
        kubernetesBacklog =
            Gauge.builder()
                .name("gpushare_kubernetes_writer_backlog")
                .help(
                    "Work the Kubernetes writer has not finished: objects and Events marked and not yet"
                        + " written or found unchanged, those being written included. 0 when the API"
                        + " server shows everything decided.")
                .register(registry);
      }
    }
    kubernetesBacklog.set(0);
    for (String kind : KUBERNETES_KINDS) {
      kubernetesWrites.initLabelValues(kind);
      for (String reason : KUBERNETES_REASONS) {
        kubernetesWriteErrors.initLabelValues(kind, reason);
      }
    }
  }

  /** The Kubernetes writer's unfinished work: waiting and in flight. */
  public void kubernetesWriterBacklog(int work) {
    Gauge g = kubernetesBacklog;
    if (g != null) {
      g.set(work);
    }
  }

  /** The Kubernetes writer sends a write of an object of {@code kind} (node, pod, event). */
  public void kubernetesWrite(String kind) {
    kubernetesWrites.labelValues(kind).inc();
  }

  /** A write to the API server failed: {@code kind} and {@code reason} as in the metric's help. */
  public void kubernetesWriteError(String kind, String reason) {
    kubernetesWriteErrors.labelValues(kind, reason).inc();
  }

  /**
   * The HTTP API answered a request: {@code route} is a bounded template ({@code other} for paths
   * the API does not have), {@code elapsed} the time to the response's start. A method outside
   * {@link #HTTP_METHODS} is counted as {@code other}, so that no client can grow the label set.
   */
  public void httpRequest(String method, String route, int code, Duration elapsed) {
    String m = HTTP_METHODS.contains(method) ? method : "other";
    httpRequests.labelValues(m, route, Integer.toString(code)).inc();
    httpDuration.labelValues(m, route).observe(elapsed.toNanos() / 1e9);
  }

  /** The size of a file system, and what of it this process may still use. */
  public record DiskSpace(long availableBytes, long sizeBytes) {}

  /**
   * The process's data directory, shown at each scrape: {@code space} reads its file system's space
   * (empty when it cannot be read: no series then), {@code minFreeBytes} is the free space under
   * which the journal refuses writes ({@code 0}: no such minimum, no series).
   */
  public void dataDirectory(Supplier<Optional<DiskSpace>> space, long minFreeBytes) {
    this.dataDirectory = new DataDirectoryGauges(space, minFreeBytes);
  }

  private record DataDirectoryGauges(Supplier<Optional<DiskSpace>> space, long minFreeBytes) {}

  /** A node's decision series start at zero, so that rates work from its first decision. */
  private void seen(String node) {
    if (nodesSeen.add(node)) {
      for (String kind : DECISION_KINDS) {
        decisions.initLabelValues(node, kind);
      }
    }
  }

  // ---- a scrape ----

  /**
   * Everything {@code GET /metrics} shows: this member's readiness ({@code ready}: whether {@code
   * /readyz} answers 200) and data directory, the state of these views, then the event metrics.
   */
  public MetricSnapshots scrape(List<NodeView> nodes, List<PodView> pods, boolean ready) {
    MetricSnapshots.Builder all = MetricSnapshots.builder();
    member(ready).forEach(all::metricSnapshot);
    state(nodes, pods).forEach(all::metricSnapshot);
    registry.scrape().forEach(all::metricSnapshot);
    return all.build();
  }

  /** The member's own gauges: readiness, and its data directory's space where it has one. */
  private List<MetricSnapshot> member(boolean ready) {
    List<MetricSnapshot> out = new ArrayList<>();
    out.add(
        gauge(
                "gpushare_member_ready",
                "1 while this member's /readyz answers 200 (recovered, reconciled, the journal"
                    + " writes), else 0.")
            .dataPoint(point(Labels.EMPTY, ready ? 1 : 0))
            .build());
    DataDirectoryGauges dir = dataDirectory;
    if (dir == null) {
      return out;
    }
    Optional<DiskSpace> space = dir.space().get();
    if (space.isPresent()) {
      out.add(
          gauge(
                  "gpushare_data_directory_available_bytes",
                  "Bytes of the data directory's file system this process may still use.")
              .dataPoint(point(Labels.EMPTY, space.get().availableBytes()))
              .build());
      out.add(
          gauge(
                  "gpushare_data_directory_size_bytes",
                  "Size of the data directory's file system, bytes.")
              .dataPoint(point(Labels.EMPTY, space.get().sizeBytes()))
              .build());
    }
    if (dir.minFreeBytes() > 0) {
      out.add(
          gauge(
                  "gpushare_data_directory_min_free_bytes",
                  "The free space under which the H2 journal refuses writes"
                      + " (gpushare.journal.min-free-space).")
              .dataPoint(point(Labels.EMPTY, dir.minFreeBytes()))
              .build());
    }
    return out;
  }

  /** The state gauges of these node and pod views (sorted, so equal input gives equal output). */
  public static List<MetricSnapshot> state(List<NodeView> nodes, List<PodView> pods) {
    List<NodeView> sortedNodes =
        nodes.stream().sorted(Comparator.comparing(NodeView::name)).toList();
    List<PodView> sortedPods =
        pods.stream()
            .sorted(Comparator.comparing((PodView p) -> p.namespace() + "/" + p.name()))
            .toList();
    List<PodView> sharing = sortedPods.stream().filter(p -> p.state() != null).toList();
    List<MetricSnapshot> out = new ArrayList<>();

    // ---- per node ----
    GaugeSnapshot.Builder queue =
        gauge("gpushare_queue_length", "Pods waiting in the node's ready queue.");
    GaugeSnapshot.Builder headWaiting =
        gauge(
            "gpushare_queue_head_waiting_seconds",
            "Seconds the head of the node's ready queue has been waiting; 0 when the queue is"
                + " empty.");
    GaugeSnapshot.Builder headFitting =
        gauge(
            "gpushare_queue_head_fitting_gpus",
            "Healthy GPUs of the node with room now for the share of its ready queue's head (the"
                + " arbiter's fit rule); 0 when the queue is empty.");
    Map<String, PodView> byRef =
        sortedPods.stream()
            .collect(
                java.util.stream.Collectors.toMap(
                    p -> p.namespace() + "/" + p.name(), Function.identity(), (a, b) -> a));
    for (NodeView node : sortedNodes) {
      Labels labels = Labels.of("node", node.name());
      List<QueueEntryView> entries = listOf(node.queue());
      queue.dataPoint(point(labels, entries.size()));
      QueueEntryView head = entries.isEmpty() ? null : entries.get(0);
      headWaiting.dataPoint(point(labels, head == null ? 0 : head.waitingSeconds()));
      headFitting.dataPoint(point(labels, head == null ? 0 : fitting(node, head, byRef)));
    }
    out.add(queue.build());
    out.add(headWaiting.build());
    out.add(headFitting.build());

    out.add(
        gpuGauge(
            sortedNodes,
            "gpushare_gpu_core_in_use_percent",
            "Sum of the core limits of the pods holding the GPU, in percent of the GPU.",
            g -> g.inUse() == null ? 0 : g.inUse().core()));
    out.add(
        gpuGauge(
            sortedNodes,
            "gpushare_gpu_memory_in_use_percent",
            "Sum of the memory limits of the pods holding the GPU, in percent of the GPU.",
            g -> g.inUse() == null ? 0 : g.inUse().memory()));
    out.add(
        gpuGauge(
            sortedNodes,
            "gpushare_gpu_shares_in_use",
            "Shares in use on the GPU: the pods holding a share of it.",
            g -> listOf(g.pods()).size()));
    out.add(
        gpuGauge(
            sortedNodes,
            "gpushare_gpu_healthy",
            "1 when the GPU is healthy, else 0.",
            g -> g.health() == Health.HEALTHY ? 1 : 0));

    // Every state of every node is written, zeros included, so that series do not come and go.
    Map<String, Map<String, Integer>> counts = new TreeMap<>();
    for (NodeView node : sortedNodes) {
      Map<String, Integer> byState = counts.computeIfAbsent(node.name(), n -> new TreeMap<>());
      for (PodState state : PodState.values()) {
        byState.put(state.display(), 0);
      }
    }
    for (PodView pod : sharing) {
      counts
          .computeIfAbsent(nodeOf(pod), n -> new TreeMap<>())
          .merge(pod.state().display(), 1, Integer::sum);
    }
    GaugeSnapshot.Builder podCounts =
        gauge("gpushare_pods", "Pods that share a GPU, by node and state.");
    counts.forEach(
        (node, byState) ->
            byState.forEach(
                (state, count) ->
                    podCounts.dataPoint(point(Labels.of("node", node, "state", state), count))));
    out.add(podCounts.build());

    // ---- per sharing pod ----
    GaugeSnapshot.Builder state =
        gauge(
            "gpushare_pod_state",
            "1 for the pod's state (Pending, Hibernation, Ready, Running), 0 for the others;"
                + " pods that share a GPU.");
    for (PodView p : sharing) {
      for (PodState s : PodState.values()) {
        state.dataPoint(point(podLabels(p).add("state", s.display()), s == p.state() ? 1 : 0));
      }
    }
    out.add(state.build());

    GaugeSnapshot.Builder position =
        gauge(
            "gpushare_pod_queue_position", "A Ready pod's position in its node's queue, 1-based.");
    GaugeSnapshot.Builder waiting =
        gauge("gpushare_pod_waiting_seconds", "Seconds a Ready pod has been waiting for a GPU.");
    GaugeSnapshot.Builder running =
        gauge(
            "gpushare_pod_running_seconds",
            "Seconds a Running pod has held its GPU share (this Running period).");
    GaugeSnapshot.Builder coreLimit =
        gauge("gpushare_pod_core_limit_percent", "The pod's GPU core limit, percent of a GPU.");
    GaugeSnapshot.Builder memoryLimit =
        gauge("gpushare_pod_memory_limit_percent", "The pod's GPU memory limit, percent of a GPU.");
    InfoSnapshot.Builder device =
        InfoSnapshot.builder()
            .name("gpushare_pod_device")
            .help(
                "The device a pod holds: its real index on the node (gpu) and UUID; value 1,"
                    + " absent while it holds none.");
    for (PodView p : sharing) {
      Labels labels = podLabels(p);
      if (p.queuePosition() != null) {
        position.dataPoint(point(labels, p.queuePosition()));
      }
      if (p.waitingSeconds() != null) {
        waiting.dataPoint(point(labels, p.waitingSeconds()));
      }
      if (p.runningSeconds() != null) {
        running.dataPoint(point(labels, p.runningSeconds()));
      }
      if (p.limits() != null) {
        coreLimit.dataPoint(point(labels, p.limits().core()));
        memoryLimit.dataPoint(point(labels, p.limits().memory()));
      }
      if (p.gpu() != null) {
        device.dataPoint(InfoDataPointSnapshot.builder().labels(deviceLabels(p)).build());
      }
    }
    out.add(position.build());
    out.add(waiting.build());
    out.add(running.build());
    out.add(coreLimit.build());
    out.add(memoryLimit.build());
    out.add(device.build());

    // A Running pod's latest GPU telemetry (SPEC §7): absent until its member's first sample.
    List<PodView> used =
        sortedPods.stream().filter(p -> p.usage() != null && p.gpu() != null).toList();
    GaugeSnapshot.Builder memoryUsed =
        gauge(
            "gpushare_pod_gpu_memory_used_mib",
            "GPU memory used by a Running pod's processes, MiB (latest telemetry sample).");
    GaugeSnapshot.Builder memoryLimitMib =
        gauge(
            "gpushare_pod_gpu_memory_limit_mib",
            "A Running pod's GPU memory limit in MiB on its device (latest telemetry sample).");
    GaugeSnapshot.Builder utilization =
        gauge(
            "gpushare_pod_gpu_utilization_percent",
            "SM utilisation of a Running pod: kind=absolute of the whole GPU, kind=relative to the"
                + " pod's core limit (SPEC 7).");
    for (PodView p : used) {
      Labels labels = deviceLabels(p);
      memoryUsed.dataPoint(point(labels, p.usage().memoryUsedMiB()));
      memoryLimitMib.dataPoint(point(labels, p.usage().memoryLimitMiB()));
      if (p.usage().absoluteUtilization() != null) {
        utilization.dataPoint(
            point(labels.add("kind", "absolute"), p.usage().absoluteUtilization()));
      }
      if (p.usage().relativeUtilization() != null) {
        utilization.dataPoint(
            point(labels.add("kind", "relative"), p.usage().relativeUtilization()));
      }
    }
    out.add(memoryUsed.build());
    out.add(memoryLimitMib.build());
    out.add(utilization.build());

    // A pod's compute limiter (libgpushare.so, issue 26): absent until its library's first report.
    List<PodView> limited =
        sharing.stream()
            .filter(p -> p.computeLimit() != null && p.computeLimit().reportedAt() != null)
            .toList();
    GaugeSnapshot.Builder aim =
        gauge(
            "gpushare_pod_compute_aim_percent",
            "The utilisation the pod's compute limiter aims at, percent of one GPU: its core limit"
                + " (pods whose library reported, on nodes where the library limits).");
    GaugeSnapshot.Builder measured =
        gauge(
            "gpushare_pod_compute_measured_percent",
            "The pod's share of its GPU's time its compute limiter last measured, percent of one"
                + " GPU (latest report).");
    CounterSnapshot.Builder held =
        CounterSnapshot.builder()
            .name("gpushare_pod_compute_held_seconds")
            .help(
                "Seconds the pod's kernel launches were held back by its compute limiter, since"
                    + " its library state began (latest report).");
    for (PodView p : limited) {
      Labels labels = podLabels(p);
      Views.ComputeLimitView c = p.computeLimit();
      if (c.aimPercent() != null) {
        aim.dataPoint(point(labels, c.aimPercent()));
      }
      if (c.measuredPercent() != null) {
        measured.dataPoint(point(labels, c.measuredPercent()));
      }
      held.dataPoint(
          CounterDataPointSnapshot.builder().labels(labels).value(c.heldSeconds()).build());
    }
    out.add(aim.build());
    out.add(measured.build());
    out.add(held.build());
    return out;
  }

  /**
   * How many of {@code node}'s GPUs the queue's {@code head} fits now, by the arbiter's own rule
   * ({@link ShareBook#fitting}) over the GPUs as the node view shows them: health and the shares in
   * use. A head whose CUDA state is checkpointed waits for the GPU it had.
   */
  private static int fitting(NodeView node, QueueEntryView head, Map<String, PodView> pods) {
    if (head.limits() == null) {
      return 0;
    }
    List<GpuLoad> loads =
        listOf(node.gpus()).stream()
            .map(
                g ->
                    new GpuLoad(
                        g.index(),
                        g.health() == Health.HEALTHY,
                        g.inUse() == null
                            ? Map.of()
                            : Map.of("in-use", new Share(g.inUse().core(), g.inUse().memory()))))
            .toList();
    PodView pod = pods.get(head.pod());
    OptionalInt restoreOn =
        pod == null || pod.checkpoint() == null
            ? OptionalInt.empty()
            : OptionalInt.of(pod.checkpoint().gpu());
    return ShareBook.fitting(
        loads, new Share(head.limits().core(), head.limits().memory()), restoreOn);
  }

  private static GaugeSnapshot gpuGauge(
      List<NodeView> nodes, String name, String help, ToDoubleFunction<GpuView> value) {
    GaugeSnapshot.Builder gauge = gauge(name, help);
    for (NodeView node : nodes) {
      List<GpuView> gpus =
          listOf(node.gpus()).stream().sorted(Comparator.comparingInt(GpuView::index)).toList();
      for (GpuView gpu : gpus) {
        gauge.dataPoint(
            point(
                Labels.of(
                    "node",
                    node.name(),
                    "gpu",
                    Integer.toString(gpu.index()),
                    "uuid",
                    Objects.requireNonNullElse(gpu.uuid(), "")),
                value.applyAsDouble(gpu)));
      }
    }
    return gauge.build();
  }

  private static Labels podLabels(PodView p) {
    return Labels.of("namespace", p.namespace(), "pod", p.name(), "node", nodeOf(p));
  }

  private static Labels deviceLabels(PodView p) {
    return podLabels(p)
        .add("gpu", Integer.toString(p.gpu().index()))
        .add("uuid", Objects.requireNonNullElse(p.gpu().uuid(), ""));
  }

  private static String nodeOf(PodView p) {
    return Objects.requireNonNullElse(p.node(), "");
  }

  private static GaugeSnapshot.Builder gauge(String name, String help) {
    return GaugeSnapshot.builder().name(name).help(help);
  }

  private static GaugeDataPointSnapshot point(Labels labels, double value) {
    return GaugeDataPointSnapshot.builder().labels(labels).value(value).build();
  }

  private static <T> List<T> listOf(List<T> list) {
    return list == null ? List.of() : list;
  }
}
