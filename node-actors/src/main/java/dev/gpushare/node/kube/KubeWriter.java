package dev.gpushare.node.kube;

import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.GpuShareReader.ChangeListener;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.kube.KubeCalls.Conflict;
import dev.gpushare.node.kube.KubeCalls.Gone;
import dev.gpushare.node.kube.KubeCalls.Retry;
import dev.gpushare.node.kube.KubeCalls.Stopped;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The only writer to the API server (ARCHITECTURE.md §2 {@code KubeSync}, §4 "Kubernetes writes"):
 * keeps nodes and pods in Kubernetes in line with what the arbiter decided, as {@link
 * GpuShareReader} shows it.
 *
 * <p><b>What it writes.</b> Nodes: the status parts of {@link NodeWrites} — the percentage
 * resources ({@code 100 × healthy GPUs}, removed when the policy is {@code none}) and the
 * conditions {@code GPUSharePolicyValid} and {@code GPUSharePolicy} (SPEC §2), plus node Events.
 * How CPU, memory and ephemeral storage are reserved depends on {@link NodeStatusMode}: on ordinary
 * nodes ({@code KUBELET}) the kubelet owns those allocatable values and rewrites them, so gpushare
 * never writes them — the reservation is made by the resource requests of the gpushare DaemonSet
 * pod on the node, which the scheduler subtracts like any pod's; on virtual nodes ({@code VIRTUAL})
 * nobody else writes them, so gpushare writes them as SPEC §2 computes, after recording the node's
 * own values in {@link OwnAllocatable#ANNOTATION}. Pods: {@value #GPU_INDEX_ANNOTATION} and {@value
 * #GPU_UUID_ANNOTATION} while the pod has a device (real index and UUID), the conditions of {@link
 * PodWrites} ({@code Interruption.GPUShareReclaim}, {@code GPUShareAllocated}), and every recorded
 * Event as an {@code events.k8s.io/v1} Event from reporting controller {@code gpushare} (SPEC §7,
 * {@link KubeEvents}).
 *
 * <p><b>Reads.</b> None before a write: what the API server holds comes from the writer's own
 * informers ({@link KubeCache}, objects trimmed to what it reads). An object is read afresh only
 * after a 409.
 *
 * <p><b>Writes.</b> Patches that carry only gpushare's fields and no resource version (a JSON merge
 * patch of the pod's annotations, strategic merge patches of pod and node status, merged by
 * condition type), as kube-scheduler and the kubelet write status; they land whatever else changed
 * meanwhile. Only VIRTUAL mode's replacement of the node's own allocatable (a read-modify-write)
 * carries the resource version it read. A pass that finds nothing to change sends nothing.
 *
 * <p><b>Order.</b> A change marks work — an object's state, or its Events — in a {@link WorkQueue}:
 * one entry per key, never two workers on one key, due {@value #WINDOW_MILLIS} ms after the first
 * mark (a decision undone within that window costs no request). {@value #WORKERS} workers take due
 * work in priority order: {@link #DECISIONS} (pod conditions and annotations: preemption,
 * revocation, grants, releases), then {@link #NODE_STATUS}, then {@link #EVENTS}, then {@link
 * #DRIFT} (the periodic resync and others' changes to what gpushare owns). Every request waits for
 * a token of one shared {@link TokenBucket} ({@code qps}, {@code burst}). 429, 5xx, timeouts and
 * I/O errors put the work back with exponential back-off and jitter ({@link Backoff}, up to {@code
 * maxBackoff}, longer if the server says Retry-After); other 4xx are logged and that write is
 * dropped until the next change. Events are written as series under stable names ({@link
 * KubeEvents}), and a writer lists the ones written before it started, so an Event is never written
 * twice, not even by the next writer after a fail-over; Events older than {@link #EVENT_TTL} (the
 * API server's default Event lifetime) are not written at all.
 *
 * <p>Give it a client built with {@link #clientConfig} (no retries inside fabric8): fabric8 retries
 * 429 and 5xx on its own by default, out of reach of the rate limit. Threads: the listener calls
 * only take a short lock; all API requests are blocking calls on the workers. Host it as a cluster
 * singleton: {@link #start()} when it starts, {@link #close()} when it stops.
 */
public final class KubeWriter implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KubeWriter.class);

  public static final String GPU_INDEX_ANNOTATION = "gpushare.dev/gpu-index";
  public static final String GPU_UUID_ANNOTATION = "gpushare.dev/gpu-uuid";

  static final Duration INITIAL_BACKOFF = Duration.ofMillis(100);
  static final int MAX_CONFLICTS = 5;

  /** Workers: enough to keep the budget busy while some wait on the arbiter's answers. */
  static final int WORKERS = 4;

  /** A key is due this long after its first mark: marks within it fold into one pass. */
  static final long WINDOW_MILLIS = 50;

  /** A due key gains one priority level per this many milliseconds of waiting (no starvation). */
  static final long AGING_MILLIS = 1000;

  /** Priorities, first first. */
  static final int DECISIONS = 0;

  static final int NODE_STATUS = 1;
  static final int EVENTS = 2;
  static final int DRIFT = 3;

  /** kube-apiserver's default {@code --event-ttl}: older Events would be gone already. */
  static final Duration EVENT_TTL = Duration.ofHours(1);

  /** What a change marks: one node, one pod, or everything the arbiter knows (on start). */
  sealed interface Target permits NodeTarget, PodTarget, Everything {}

  record NodeTarget(String name) implements Target {}

  record PodTarget(String namespace, String name) implements Target {}

  record Everything() implements Target {}

  /** A unit of work: an object's state, or its Events. */
  record Work(Target target, boolean events) {}

  private final KubernetesClient client;
  private final GpuShareReader service;
  private final KubeSyncSettings settings;
  private final KubeCalls calls;
  private final Backoff backoff;
  private final AtomicLong reads = new AtomicLong();
  private final GpuShareMetrics metrics;
  private final KubeCache cache;
  private final WorkQueue<Work> queue;
  private final List<Thread> workers = new ArrayList<>();

  private final Object lock = new Object();
  private boolean started;
  private boolean stopped;
  private volatile AutoCloseable subscription;

  private final Map<Work, Integer> attempts = new ConcurrentHashMap<>();

  /** Per object, the series written: name → count. */
  private final Map<Target, Map<String, Integer>> eventsWritten = new ConcurrentHashMap<>();

  /** gpushare's Events the API server held when this writer started: name → count. */
  private final Map<String, Integer> eventsFound = new ConcurrentHashMap<>();

  /** Work whose object the cache did not have yet, with the priority it had. */
  private final Map<Target, Integer> awaitingCache = new ConcurrentHashMap<>();

  public KubeWriter(KubernetesClient client, GpuShareReader service, KubeSyncSettings settings) {
    this(
        client,
        service,
        settings,
        System::nanoTime,
        () -> ThreadLocalRandom.current().nextDouble());
  }

  /**
   * @param nanoTime the rate limiter's clock
   * @param jitter the back-off's random numbers, uniform in {@code [0, 1)}
   */
  KubeWriter(
      KubernetesClient client,
      GpuShareReader service,
      KubeSyncSettings settings,
      LongSupplier nanoTime,
      DoubleSupplier jitter) {
    this.client = client;
    this.service = service;
    this.metrics = service.metrics();
    metrics.kubernetesWriterStarted();
    this.settings = settings;
    this.calls =
        new KubeCalls(new TokenBucket(settings.qps(), settings.burst(), nanoTime), metrics);
    this.backoff = new Backoff(INITIAL_BACKOFF, settings.maxBackoff(), jitter);
    this.queue =
        new WorkQueue<>(
            TimeUnit.MILLISECONDS.toNanos(WINDOW_MILLIS),
            TimeUnit.MILLISECONDS.toNanos(AGING_MILLIS),
            System::nanoTime,
            metrics::kubernetesWriterBacklog);
    this.cache = new KubeCache(client, new CacheChanges());
    Config config = client.getConfiguration();
    Integer retries = config == null ? null : config.getRequestRetryBackoffLimit();
    if (retries != null && retries > 0) {
      LOG.warn(
          "the Kubernetes client retries failed requests itself (requestRetryBackoffLimit is {});"
              + " want 0 (KubeWriter.clientConfig), so that every request counts against the rate"
              + " limit and back-off is the writer's",
          retries);
    }
  }

  /** {@code base} without fabric8's own retries: the writer retries, rate limited. */
  public static Config clientConfig(Config base) {
    return new ConfigBuilder(base).withRequestRetryBackoffLimit(0).build();
  }

  /**
   * Subscribes to the service, marks everything it knows (a full reconcile: after a fail-over
   * nothing is assumed written), starts the informers, and the workers once they have listed.
   *
   * @throws IllegalStateException when started before, or closed
   */
  public KubeWriter start() {
    synchronized (lock) {
      if (started || stopped) {
        throw new IllegalStateException(
            "KubeWriter is " + (stopped ? "closed" : "started") + "; want a new one to start");
      }
      started = true;
    }
    subscription = service.subscribe(new Listener());
    queue.mark(new Work(new Everything(), false), DRIFT);
    // off the Kubernetes client's event loop, which the informers' start completes on: blocking
    // calls there would wait for themselves
    Thread starter = new Thread(this::startWorkers, "gpushare-kube-writer-start");
    starter.setDaemon(true);
    starter.start();
    return this;
  }

  /** Waits for the informers' first lists, finds the Events written before, starts the workers. */
  private void startWorkers() {
    try {
      cache.start().toCompletableFuture().get();
    } catch (InterruptedException e) {
      return;
    } catch (Exception e) {
      LOG.error("the writer's informers did not start; nothing is written", e);
      return;
    }
    findEvents();
    synchronized (lock) {
      if (stopped) {
        return;
      }
      for (int i = 0; i < WORKERS; i++) {
        Thread t = new Thread(this::work, "gpushare-kube-writer-" + i);
        t.setDaemon(true);
        workers.add(t);
        t.start();
      }
    }
  }

  /**
   * The Events gpushare wrote before this writer started (by an earlier singleton, before a
   * fail-over): listed once, page by page, so that none is written again — not even refused as
   * existing. If the list fails, an Event written before is refused as existing (409), and that is
   * all.
   */
  private void findEvents() {
    String next = null;
    try {
      do {
        String page = next;
        var list =
            calls.call(
                "list gpushare's Events",
                () ->
                    client
                        .events()
                        .v1()
                        .events()
                        .inAnyNamespace()
                        .withField("reportingController", KubeEvents.REPORTING_CONTROLLER)
                        .list(
                            new io.fabric8.kubernetes.api.model.ListOptionsBuilder()
                                .withLimit(500L)
                                .withContinue(page)
                                .build()));
        list.getItems()
            .forEach(
                e ->
                    eventsFound.put(
                        e.getMetadata().getName(),
                        e.getSeries() == null || e.getSeries().getCount() == null
                            ? 1
                            : e.getSeries().getCount()));
        next = list.getMetadata() == null ? null : list.getMetadata().getContinue();
      } while (next != null && !next.isEmpty());
      LOG.debug("{} Events of gpushare found", eventsFound.size());
    } catch (RuntimeException e) {
      LOG.warn(
          "listing gpushare's Events failed ({}); an Event written before is refused as existing",
          e.getMessage());
    }
  }

  /** Checks every node and pod the arbiter knows against the cache, as on start. */
  public void resync() {
    queue.mark(new Work(new Everything(), false), DRIFT);
  }

  /**
   * Completes when no work waits and no pass is in flight: everything marked so far is written,
   * found unchanged, or refused for good (and logged). Work waiting out a back-off keeps it
   * pending. Completes exceptionally when the writer is closed first.
   */
  public CompletionStage<Done> flushed() {
    return queue.idleFuture();
  }

  /** API requests sent so far, reads included (a metric; tests use it too). */
  public long requestsSent() {
    return calls.sent();
  }

  /** Reads of single objects sent so far (only after a 409); the informers' lists not counted. */
  public long readsSent() {
    return reads.get();
  }

  /** Objects the writer's cache holds (trimmed). */
  public int cachedObjects() {
    return cache.size();
  }

  /** Work waiting (not in flight). */
  public int backlog() {
    return queue.size();
  }

  /**
   * Unsubscribes and stops the workers; passes in flight are abandoned (the next writer redoes
   * them).
   */
  @Override
  public void close() {
    List<Thread> ws;
    synchronized (lock) {
      stopped = true;
      ws = new ArrayList<>(workers);
    }
    queue.close();
    if (subscription != null) {
      try {
        subscription.close();
      } catch (Exception e) {
        LOG.warn("unsubscribing from the service failed: {}", e.toString());
      }
    }
    ws.forEach(Thread::interrupt);
    for (Thread w : ws) {
      try {
        w.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    cache.close();
  }

  // ---- what marks work ----

  private final class Listener implements ChangeListener {
    @Override
    public void nodeChanged(String node) {
      NodeTarget target = new NodeTarget(node);
      queue.mark(new Work(target, false), NODE_STATUS);
      queue.mark(new Work(target, true), EVENTS);
    }

    @Override
    public void podChanged(String namespace, String name, boolean deleted) {
      PodTarget target = new PodTarget(namespace, name);
      if (deleted) {
        forget(target);
      } else {
        queue.mark(new Work(target, false), DECISIONS);
        queue.mark(new Work(target, true), EVENTS);
      }
    }
  }

  private final class CacheChanges implements KubeCache.Changes {
    @Override
    public void node(String name, KubeCache.Change change) {
      changed(new NodeTarget(name), change);
    }

    @Override
    public void pod(String namespace, String name, KubeCache.Change change) {
      changed(new PodTarget(namespace, name), change);
    }

    private void changed(Target target, KubeCache.Change change) {
      switch (change) {
        case ADDED -> {
          Integer priority = awaitingCache.remove(target);
          if (priority != null) {
            queue.mark(new Work(target, false), priority);
          }
        }
        case OWNED -> queue.mark(new Work(target, false), DRIFT);
        case DELETED -> {
          if (target instanceof PodTarget) {
            forget(target);
          } else {
            awaitingCache.remove(target);
          }
        }
      }
    }
  }

  /** A deleted pod: nothing left to write for it. */
  private void forget(Target target) {
    for (boolean events : new boolean[] {false, true}) {
      Work w = new Work(target, events);
      queue.forget(w);
      attempts.remove(w);
    }
    eventsWritten.remove(target);
    awaitingCache.remove(target);
  }

  private void work() {
    while (true) {
      WorkQueue.Taken<Work> taken;
      try {
        taken = queue.take();
      } catch (InterruptedException e) {
        return;
      }
      if (taken == null) {
        return;
      }
      Duration retryIn;
      try {
        retryIn = sync(taken.key(), taken.priority());
      } catch (Stopped e) {
        queue.done(taken.key());
        return;
      }
      if (retryIn != null) {
        queue.retry(taken.key(), taken.priority(), retryIn.toNanos());
      }
      queue.done(taken.key());
    }
  }

  // ---- one pass ----

  /** Syncs one unit of work; answers when to try again, or {@code null} when it is done. */
  private Duration sync(Work work, int priority) {
    Target target = work.target();
    for (int conflicts = 1; ; conflicts++) {
      try {
        if (target instanceof NodeTarget n) {
          if (work.events()) {
            syncNodeEvents(n);
          } else {
            syncNode(n, priority);
          }
        } else if (target instanceof PodTarget p) {
          if (work.events()) {
            syncPodEvents(p);
          } else {
            syncPod(p, priority);
          }
        } else {
          syncEverything();
        }
        attempts.remove(work);
        return null;
      } catch (Conflict c) {
        if (conflicts < MAX_CONFLICTS) {
          LOG.debug("{}: conflict, reading again", c.getMessage());
          try {
            readAfresh(target);
          } catch (Gone gone) {
            return null;
          } catch (Retry r) {
            return later(work, r.after);
          }
          continue;
        }
        LOG.info("{}: {} conflicts in a row; backing off", c.getMessage(), conflicts);
        return later(work, null);
      } catch (Gone g) {
        LOG.debug("{}: gone", g.getMessage());
        attempts.remove(work);
        return null;
      } catch (Retry r) {
        Duration wait = later(work, r.after);
        LOG.info("{}; retrying in {} ms", r.getMessage(), wait.toMillis());
        return wait;
      } catch (Stopped s) {
        throw s;
      } catch (RuntimeException e) {
        Duration wait = later(work, null);
        LOG.warn("syncing {} failed; retrying in {} ms", work, wait.toMillis(), e);
        return wait;
      }
    }
  }

  private Duration later(Work work, Duration retryAfter) {
    int attempt = attempts.merge(work, 1, Integer::sum);
    return backoff.delay(attempt, retryAfter);
  }

  /** After a 409: the object as the API server holds it now, into the cache (one read). */
  private void readAfresh(Target target) {
    reads.incrementAndGet();
    if (target instanceof NodeTarget n) {
      Node node =
          calls.call("read node " + n.name(), () -> client.nodes().withName(n.name()).get());
      if (node != null) {
        cache.wrote(node);
      }
    } else if (target instanceof PodTarget p) {
      Pod pod =
          calls.call(
              "read pod " + p.namespace() + "/" + p.name(),
              () -> client.pods().inNamespace(p.namespace()).withName(p.name()).get());
      if (pod != null) {
        cache.wrote(pod);
      }
    }
  }

  private void syncEverything() {
    List<NodeView> nodes = KubeCalls.view("list the arbiter's nodes", service.nodes());
    List<PodView> pods = KubeCalls.view("list the arbiter's pods", service.pods(Optional.empty()));
    if (nodes != null) {
      nodes.forEach(
          n -> {
            queue.mark(new Work(new NodeTarget(n.name()), false), DRIFT);
            queue.mark(new Work(new NodeTarget(n.name()), true), DRIFT);
          });
    }
    if (pods != null) {
      pods.forEach(
          p -> {
            queue.mark(new Work(new PodTarget(p.namespace(), p.name()), false), DRIFT);
            queue.mark(new Work(new PodTarget(p.namespace(), p.name()), true), DRIFT);
          });
    }
  }

  private void syncNode(NodeTarget target, int priority) {
    String name = target.name();
    String what = "node " + name;
    NodeView view = KubeCalls.view("the arbiter's view of " + what, service.node(name));
    if (view == null) {
      return;
    }
    Node node = cache.node(name).orElse(null);
    if (node == null) {
      awaitingCache.merge(target, priority, Math::min);
      return;
    }
    NodeStatusMode mode = settings.mode();
    NodeStatus desired = NodeWrites.desiredStatus(node, view, mode);
    if (mode == NodeStatusMode.VIRTUAL) {
      Optional<MergePatch> record = NodeWrites.recordOwnAllocatable(node, desired);
      if (record.isPresent()) {
        Node read = node;
        Node patched =
            patch(
                "node",
                "record the own allocatable of " + what,
                () ->
                    client
                        .nodes()
                        .resource(read)
                        .patch(PatchContext.of(PatchType.JSON_MERGE), record.get().json()));
        if (patched == null) {
          return;
        }
        node = KubeCache.trim(patched);
        desired = NodeWrites.desiredStatus(node, view, mode);
      }
    }
    Optional<MergePatch> status = NodeWrites.statusPatch(node, desired, mode);
    if (status.isPresent()) {
      String json = status.get().json();
      Node read = node;
      Node written =
          patch(
              "node",
              "write the status of " + what,
              () ->
                  client
                      .nodes()
                      .resource(read)
                      .subresource("status")
                      .patch(PatchContext.of(PatchType.STRATEGIC_MERGE), json));
      if (written != null) {
        node = KubeCache.trim(written);
      }
    }
    if (mode == NodeStatusMode.VIRTUAL) {
      Optional<JsonPatch> forget;
      try {
        forget = NodeWrites.forgetOwnAllocatable(node, view);
      } catch (IllegalArgumentException malformed) {
        LOG.warn("{}: {}; left as it is", what, malformed.getMessage());
        forget = Optional.empty();
      }
      if (forget.isPresent()) {
        String json = forget.get().json();
        Node read = node;
        patch(
            "node",
            "remove the own-allocatable annotation of " + what,
            () -> client.nodes().resource(read).patch(PatchContext.of(PatchType.JSON), json));
      }
    }
  }

  private void syncNodeEvents(NodeTarget target) {
    String name = target.name();
    NodeView view = KubeCalls.view("the arbiter's view of node " + name, service.node(name));
    if (view == null) {
      return;
    }
    String uid = cache.node(name).map(n -> n.getMetadata().getUid()).orElse(null);
    writeEvents(target, KubeEvents.node(name, uid), view.events());
  }

  private void syncPod(PodTarget target, int priority) {
    String ns = target.namespace();
    String name = target.name();
    String what = "pod " + ns + "/" + name;
    PodView view = KubeCalls.view("the arbiter's view of " + what, service.pod(ns, name));
    if (view == null) {
      return;
    }
    Pod pod = cache.pod(ns, name).orElse(null);
    if (pod == null) {
      awaitingCache.merge(target, priority, Math::min);
      return;
    }
    String uid = pod.getMetadata().getUid();
    if (view.uid() != null && uid != null && !view.uid().equals(uid)) {
      LOG.debug("{}: the API server has uid {}, the arbiter {}; waiting", what, uid, view.uid());
      awaitingCache.merge(target, priority, Math::min);
      return;
    }
    Pod read = pod;
    Optional<MergePatch> annotations = PodWrites.annotationPatch(pod, view);
    if (annotations.isPresent()) {
      String json = annotations.get().json();
      patch(
          "pod",
          "annotate " + what + " with its device",
          () ->
              client
                  .pods()
                  .inNamespace(ns)
                  .resource(read)
                  .patch(PatchContext.of(PatchType.JSON_MERGE), json));
    }
    Optional<MergePatch> conditions = PodWrites.conditionsPatch(pod, view);
    if (conditions.isPresent()) {
      String json = conditions.get().json();
      patch(
          "pod",
          "write the conditions of " + what,
          () ->
              client
                  .pods()
                  .inNamespace(ns)
                  .resource(read)
                  .subresource("status")
                  .patch(PatchContext.of(PatchType.STRATEGIC_MERGE), json));
    }
  }

  private void syncPodEvents(PodTarget target) {
    String ns = target.namespace();
    String name = target.name();
    PodView view =
        KubeCalls.view("the arbiter's view of pod " + ns + "/" + name, service.pod(ns, name));
    if (view == null) {
      eventsWritten.remove(target);
      return;
    }
    String uid = cache.pod(ns, name).map(p -> p.getMetadata().getUid()).orElse(view.uid());
    writeEvents(target, KubeEvents.pod(ns, name, uid), view.events());
  }

  /** A patch whose answer — the object as now stored — goes into the cache. */
  private <T extends HasMetadata> T patch(String kind, String what, Supplier<T> request) {
    T written = calls.write(kind, what, request);
    if (written != null) {
      cache.wrote(written);
    }
    return written;
  }

  /**
   * Writes the object's Events as series ({@link KubeEvents#series}): a new series is created, a
   * series that occurred again since it was written gets its count patched, and one written already
   * — by this writer, or by an earlier one ({@link #findEvents}) — costs nothing.
   */
  private void writeEvents(Target target, ObjectReference regarding, List<EventView> events) {
    if (events == null || events.isEmpty()) {
      return;
    }
    Map<String, Integer> written =
        eventsWritten.computeIfAbsent(target, t -> new ConcurrentHashMap<>());
    Instant now = now();
    for (KubeEvents.Series series : KubeEvents.series(regarding, events, now)) {
      String name = series.name();
      Integer have = written.get(name);
      if (have == null) {
        have = eventsFound.remove(name);
      }
      if (have != null && have >= series.count()) {
        written.put(name, have);
        continue;
      }
      if (series.last().isBefore(now.minus(EVENT_TTL))) {
        written.put(name, series.count());
        continue;
      }
      String what = "write Event " + series.first().reason() + " on " + regarding.getName();
      if (have == null) {
        Event event = KubeEvents.desired(regarding, series, settings.reportingInstance(), now);
        try {
          calls.write("event", what, () -> client.resource(event).create());
        } catch (Conflict exists) {
          // written before this writer started, and not found then (the list failed)
          LOG.debug("Event {} exists already", name);
          if (series.count() > 1) {
            patchSeries(event.getMetadata().getNamespace(), series, what);
          }
        }
      } else {
        String namespace =
            regarding.getNamespace() == null
                ? KubeEvents.CLUSTER_EVENTS_NAMESPACE
                : regarding.getNamespace();
        patchSeries(namespace, series, what);
      }
      written.put(name, series.count());
    }
  }

  private void patchSeries(String namespace, KubeEvents.Series series, String what) {
    calls.write(
        "event",
        what + " (" + series.count() + " times)",
        () ->
            client
                .events()
                .v1()
                .events()
                .inNamespace(namespace)
                .withName(series.name())
                .patch(PatchContext.of(PatchType.JSON_MERGE), KubeEvents.seriesPatch(series)));
  }

  private Instant now() {
    try {
      return service.clock().now();
    } catch (RuntimeException e) {
      return Instant.now();
    }
  }
}
