package dev.gpushare.node.kube;

import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.GpuShareReader.ChangeListener;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * <p><b>How.</b> A change only marks its object dirty; one worker thread of its own ({@code
 * gpushare-kube-writer}) drains dirty objects one at a time, and for each reads the object from the
 * API server and the arbiter's <em>latest</em> view, computes the desired state with the pure
 * builders and writes only what differs — so a burst of changes to one object costs one pass (two
 * when the burst overlaps a pass in flight), and a pass that finds nothing to change costs one
 * read. Status is replaced through the status subresource with the resource version just read
 * (optimistic locking); a 409 re-reads and recomputes at once (up to {@value #MAX_CONFLICTS} times,
 * then backs off). Metadata is changed with JSON patches. Every request, reads included, waits for
 * a token of a {@link TokenBucket} ({@code qps}, {@code burst}). 429, 5xx, timeouts and I/O errors
 * put the object back with exponential back-off and jitter ({@link Backoff}, up to {@code
 * maxBackoff}, longer if the server says Retry-After); other 4xx are logged and that write is
 * dropped until the next change. Events carry stable names ({@link KubeEvents#name}), so an Event
 * is never written twice, not even by the next writer after a fail-over; Events older than {@link
 * #EVENT_TTL} (the API server's default Event lifetime) are not written at all.
 *
 * <p>Give it a client built with {@link #clientConfig} (no retries inside fabric8): fabric8 retries
 * 429 and 5xx on its own by default, out of reach of the rate limit. Threads: the listener calls
 * only take a short lock; all API requests are blocking calls on the worker thread. Host it as a
 * cluster singleton: {@link #start()} when it starts, {@link #close()} when it stops.
 */
public final class KubeWriter implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KubeWriter.class);

  public static final String GPU_INDEX_ANNOTATION = "gpushare.dev/gpu-index";
  public static final String GPU_UUID_ANNOTATION = "gpushare.dev/gpu-uuid";

  static final Duration INITIAL_BACKOFF = Duration.ofMillis(100);
  static final Duration VIEW_TIMEOUT = Duration.ofSeconds(10);
  static final int MAX_CONFLICTS = 5;

  /** kube-apiserver's default {@code --event-ttl}: older Events would be gone already. */
  static final Duration EVENT_TTL = Duration.ofHours(1);

  /** What a change marks dirty: one node, one pod, or everything the arbiter knows (on start). */
  sealed interface Target permits NodeTarget, PodTarget, Everything {}

  record NodeTarget(String name) implements Target {}

  record PodTarget(String namespace, String name) implements Target {}

  record Everything() implements Target {}

  private final KubernetesClient client;
  private final GpuShareReader service;
  private final KubeSyncSettings settings;
  private final TokenBucket bucket;
  private final Backoff backoff;
  private final AtomicLong requests = new AtomicLong();
  private final GpuShareMetrics metrics;

  private final Object lock = new Object();
  // target → when it may be synced (System.nanoTime); insertion order breaks ties
  private final Map<Target, Long> dirty = new LinkedHashMap<>();
  private final List<CompletableFuture<Done>> waiters = new ArrayList<>();
  private Target inFlight;
  private boolean running;
  private boolean stopped;
  private Thread worker;
  private volatile AutoCloseable subscription;

  private final Map<Target, Integer> attempts = new ConcurrentHashMap<>();
  private final Map<Target, Set<String>> eventsWritten = new ConcurrentHashMap<>();

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
    this.bucket = new TokenBucket(settings.qps(), settings.burst(), nanoTime);
    this.backoff = new Backoff(INITIAL_BACKOFF, settings.maxBackoff(), jitter);
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
   * Subscribes to the service, marks everything it knows dirty (a full reconcile: after a fail-over
   * nothing is assumed written) and starts the worker.
   *
   * @throws IllegalStateException when started before, or closed
   */
  public KubeWriter start() {
    synchronized (lock) {
      if (worker != null || stopped) {
        throw new IllegalStateException(
            "KubeWriter is " + (stopped ? "closed" : "started") + "; want a new one to start");
      }
      running = true;
      worker = new Thread(this::work, "gpushare-kube-writer");
      worker.setDaemon(true);
    }
    subscription = service.subscribe(new Listener());
    mark(new Everything());
    worker.start();
    return this;
  }

  /** Marks every node and pod the arbiter knows dirty, as on start. */
  public void resync() {
    mark(new Everything());
  }

  /**
   * The node changed in the API server (an informer saw it): check it. The arbiter announces only
   * its own changes; this catches others' — a kubelet that zeroes extended resources when it
   * re-registers, a user who edits a condition. A check that finds nothing to change costs one
   * read.
   */
  public void markNode(String name) {
    mark(new NodeTarget(name));
  }

  /** The pod changed in the API server: check it, as {@link #markNode}. */
  public void markPod(String namespace, String name) {
    mark(new PodTarget(namespace, name));
  }

  /**
   * Completes when no object is dirty and no pass is in flight: everything marked so far is
   * written, found unchanged, or refused for good (and logged). Objects waiting out a back-off keep
   * it pending. Completes exceptionally when the writer is closed first.
   */
  public CompletionStage<Done> flushed() {
    synchronized (lock) {
      if (stopped) {
        return CompletableFuture.failedFuture(new CancellationException("KubeWriter is closed"));
      }
      if (dirty.isEmpty() && inFlight == null) {
        return CompletableFuture.completedFuture(Done.getInstance());
      }
      CompletableFuture<Done> f = new CompletableFuture<>();
      waiters.add(f);
      return f;
    }
  }

  /** API requests sent so far, reads included (a metric; tests use it too). */
  public long requestsSent() {
    return requests.get();
  }

  /**
   * Unsubscribes and stops the worker; a pass in flight is abandoned (the next writer redoes it).
   */
  @Override
  public void close() {
    Thread w;
    List<CompletableFuture<Done>> pending;
    synchronized (lock) {
      running = false;
      stopped = true;
      w = worker;
      pending = new ArrayList<>(waiters);
      waiters.clear();
      lock.notifyAll();
    }
    if (subscription != null) {
      try {
        subscription.close();
      } catch (Exception e) {
        LOG.warn("unsubscribing from the service failed: {}", e.toString());
      }
    }
    if (w != null) {
      w.interrupt();
      try {
        w.join(TimeUnit.SECONDS.toMillis(10));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    pending.forEach(f -> f.completeExceptionally(new CancellationException("KubeWriter closed")));
  }

  // ---- dirty set ----

  private final class Listener implements ChangeListener {
    @Override
    public void nodeChanged(String node) {
      mark(new NodeTarget(node));
    }

    @Override
    public void podChanged(String namespace, String name, boolean deleted) {
      PodTarget target = new PodTarget(namespace, name);
      if (deleted) {
        forget(target);
      } else {
        mark(target);
      }
    }
  }

  private void mark(Target target) {
    synchronized (lock) {
      if (!dirty.containsKey(target)) {
        dirty.put(target, System.nanoTime());
        lock.notifyAll();
      }
    }
  }

  /** A deleted pod: nothing left to write for it. */
  private void forget(Target target) {
    List<CompletableFuture<Done>> done;
    synchronized (lock) {
      dirty.remove(target);
      done = idleWaiters();
    }
    attempts.remove(target);
    eventsWritten.remove(target);
    done.forEach(f -> f.complete(Done.getInstance()));
  }

  /** Under {@link #lock}: the waiters to complete if the writer is idle now. */
  private List<CompletableFuture<Done>> idleWaiters() {
    if (!dirty.isEmpty() || inFlight != null || waiters.isEmpty()) {
      return List.of();
    }
    List<CompletableFuture<Done>> done = new ArrayList<>(waiters);
    waiters.clear();
    return done;
  }

  private void work() {
    while (true) {
      Target target;
      synchronized (lock) {
        target = null;
        while (running && target == null) {
          Map.Entry<Target, Long> next = earliest();
          long now = System.nanoTime();
          try {
            if (next == null) {
              lock.wait();
            } else if (next.getValue() - now <= 0) {
              target = next.getKey();
              dirty.remove(target);
              inFlight = target;
            } else {
              TimeUnit.NANOSECONDS.timedWait(lock, next.getValue() - now);
            }
          } catch (InterruptedException e) {
            return;
          }
        }
        if (!running) {
          return;
        }
      }
      Duration retryIn;
      try {
        retryIn = sync(target);
      } catch (Stopped e) {
        return;
      }
      List<CompletableFuture<Done>> done;
      synchronized (lock) {
        inFlight = null;
        if (retryIn != null) {
          dirty.merge(target, System.nanoTime() + retryIn.toNanos(), Math::max);
        }
        done = idleWaiters();
      }
      done.forEach(f -> f.complete(Done.getInstance()));
    }
  }

  private Map.Entry<Target, Long> earliest() {
    Map.Entry<Target, Long> best = null;
    for (Map.Entry<Target, Long> e : dirty.entrySet()) {
      if (best == null || e.getValue() - best.getValue() < 0) {
        best = e;
      }
    }
    return best;
  }

  // ---- one pass ----

  /** Syncs one object; answers when to try again, or {@code null} when it is done. */
  private Duration sync(Target target) {
    for (int conflicts = 1; ; conflicts++) {
      try {
        if (target instanceof NodeTarget n) {
          syncNode(n);
        } else if (target instanceof PodTarget p) {
          syncPod(p);
        } else {
          syncEverything();
        }
        attempts.remove(target);
        return null;
      } catch (Conflict c) {
        if (conflicts < MAX_CONFLICTS) {
          LOG.debug("{}: conflict, reading again", c.getMessage());
          continue;
        }
        LOG.info("{}: {} conflicts in a row; backing off", c.getMessage(), conflicts);
        return later(target, null);
      } catch (Gone g) {
        LOG.debug("{}: gone", g.getMessage());
        attempts.remove(target);
        eventsWritten.remove(target);
        return null;
      } catch (Retry r) {
        Duration wait = later(target, r.after);
        LOG.info("{}; retrying in {} ms", r.getMessage(), wait.toMillis());
        return wait;
      } catch (Stopped s) {
        throw s;
      } catch (RuntimeException e) {
        Duration wait = later(target, null);
        LOG.warn("syncing {} failed; retrying in {} ms", target, wait.toMillis(), e);
        return wait;
      }
    }
  }

  private Duration later(Target target, Duration retryAfter) {
    int attempt = attempts.merge(target, 1, Integer::sum);
    return backoff.delay(attempt, retryAfter);
  }

  private void syncEverything() {
    List<NodeView> nodes = view("list the arbiter's nodes", service.nodes());
    List<PodView> pods = view("list the arbiter's pods", service.pods(Optional.empty()));
    if (nodes != null) {
      nodes.forEach(n -> mark(new NodeTarget(n.name())));
    }
    if (pods != null) {
      pods.forEach(p -> mark(new PodTarget(p.namespace(), p.name())));
    }
  }

  private void syncNode(NodeTarget target) {
    String name = target.name();
    String what = "node " + name;
    Node node = call("read " + what, () -> client.nodes().withName(name).get());
    if (node == null) {
      return;
    }
    NodeView view = view("the arbiter's view of " + what, service.node(name));
    if (view == null) {
      return;
    }
    NodeStatusMode mode = settings.mode();
    NodeStatus desired = NodeWrites.desiredStatus(node, view, mode);
    if (mode == NodeStatusMode.VIRTUAL) {
      Optional<JsonPatch> record = NodeWrites.recordOwnAllocatable(node, desired);
      if (record.isPresent()) {
        Node patched = patchNode(node, record.get(), "record the own allocatable of " + what);
        if (patched == null) {
          return;
        }
        node = patched;
        desired = NodeWrites.desiredStatus(node, view, mode);
      }
    }
    if (!NodeWrites.sameStatus(node.getStatus(), desired)) {
      Node next = new NodeBuilder(node).withStatus(desired).build();
      Node written =
          write(
              "node",
              "write the status of " + what,
              () -> client.nodes().resource(next).lockResourceVersion().updateStatus());
      if (written != null) {
        node = written;
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
        patchNode(node, forget.get(), "remove the own-allocatable annotation of " + what);
      }
    }
    writeEvents(target, KubeEvents.node(name, node.getMetadata().getUid()), view.events());
  }

  /** On the object as read: without it, fabric8 would read the node again first. */
  private Node patchNode(Node node, JsonPatch patch, String what) {
    return write(
        "node",
        what,
        () -> client.nodes().resource(node).patch(PatchContext.of(PatchType.JSON), patch.json()));
  }

  private void syncPod(PodTarget target) {
    String ns = target.namespace();
    String name = target.name();
    String what = "pod " + ns + "/" + name;
    Pod pod = call("read " + what, () -> client.pods().inNamespace(ns).withName(name).get());
    if (pod == null) {
      eventsWritten.remove(target);
      return;
    }
    PodView view = view("the arbiter's view of " + what, service.pod(ns, name));
    if (view == null) {
      eventsWritten.remove(target);
      return;
    }
    String uid = pod.getMetadata().getUid();
    if (view.uid() != null && uid != null && !view.uid().equals(uid)) {
      LOG.debug("{}: the API server has uid {}, the arbiter {}; waiting", what, uid, view.uid());
      return;
    }
    Optional<JsonPatch> annotations = PodWrites.annotationPatch(pod, view);
    if (annotations.isPresent()) {
      String patch = annotations.get().json();
      Pod read = pod;
      Pod patched =
          write(
              "pod",
              "annotate " + what + " with its device",
              () ->
                  client
                      .pods()
                      .inNamespace(ns)
                      .resource(read)
                      .patch(PatchContext.of(PatchType.JSON), patch));
      if (patched != null) {
        pod = patched;
      }
    }
    List<PodCondition> conditions = PodWrites.desiredConditions(pod, view);
    List<PodCondition> current = pod.getStatus() == null ? null : pod.getStatus().getConditions();
    if (!PodWrites.sameConditions(current, conditions)) {
      Pod next =
          new PodBuilder(pod).editOrNewStatus().withConditions(conditions).endStatus().build();
      write(
          "pod",
          "write the conditions of " + what,
          () -> client.pods().inNamespace(ns).resource(next).lockResourceVersion().updateStatus());
    }
    writeEvents(target, KubeEvents.pod(ns, name, uid != null ? uid : view.uid()), view.events());
  }

  private void writeEvents(Target target, ObjectReference regarding, List<EventView> events) {
    if (events == null || events.isEmpty()) {
      return;
    }
    Set<String> written = eventsWritten.computeIfAbsent(target, t -> ConcurrentHashMap.newKeySet());
    Instant now = now();
    for (EventView e : events) {
      String name = KubeEvents.name(regarding, e);
      if (written.contains(name)) {
        continue;
      }
      if (e.time() != null && e.time().isBefore(now.minus(EVENT_TTL))) {
        written.add(name);
        continue;
      }
      Event event = KubeEvents.desired(regarding, e, settings.reportingInstance(), now);
      try {
        write(
            "event",
            "write Event " + e.reason() + " on " + regarding.getName(),
            () -> client.resource(event).create());
      } catch (Conflict exists) {
        LOG.debug("Event {} exists already", name);
      }
      written.add(name);
    }
  }

  private Instant now() {
    try {
      return service.clock().now();
    } catch (RuntimeException e) {
      return Instant.now();
    }
  }

  // ---- requests ----

  /**
   * A write of an object of {@code kind} ({@code node}, {@code pod}, {@code event}, the label of
   * {@code gpushare_kubernetes_write_errors_total}). A request that the server refused for good is
   * logged, and the pass goes on without it; every failure is counted.
   */
  private <T> T write(String kind, String what, Supplier<T> request) {
    try {
      return call(what, request, () -> metrics.kubernetesWrite(kind));
    } catch (Rejected r) {
      metrics.kubernetesWriteError(kind, "rejected");
      LOG.warn("{}; dropped until the next change", r.getMessage());
      return null;
    } catch (Retry r) {
      metrics.kubernetesWriteError(kind, "retry");
      throw r;
    } catch (Conflict c) {
      // An Event's 409 means it exists already (written before a fail-over): no error.
      if (!"event".equals(kind)) {
        metrics.kubernetesWriteError(kind, "conflict");
      }
      throw c;
    } catch (Gone | Stopped g) {
      throw g;
    } catch (RuntimeException e) {
      metrics.kubernetesWriteError(kind, "error");
      throw e;
    }
  }

  private <T> T call(String what, Supplier<T> request) {
    return call(what, request, () -> {});
  }

  /** {@code request} once the rate limit lets it go; {@code sent} is told just before it goes. */
  private <T> T call(String what, Supplier<T> request, Runnable sent) {
    long wait = bucket.reserve();
    if (wait > 0) {
      try {
        TimeUnit.NANOSECONDS.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Stopped();
      }
    }
    requests.incrementAndGet();
    sent.run();
    try {
      return request.get();
    } catch (KubernetesClientException e) {
      throw classify(what, e);
    }
  }

  private static RuntimeException classify(String what, KubernetesClientException e) {
    int code = e.getCode();
    String detail =
        what
            + " failed with "
            + (code == 0 ? "no response" : "HTTP " + code)
            + ": "
            + (e.getStatus() != null && e.getStatus().getMessage() != null
                ? e.getStatus().getMessage()
                : e.getMessage());
    if (code == 409) {
      return new Conflict(what);
    }
    if (code == 404) {
      return new Gone(what);
    }
    if (code == 0 || code == 408 || code == 429 || code >= 500) {
      Integer seconds =
          e.getStatus() == null || e.getStatus().getDetails() == null
              ? null
              : e.getStatus().getDetails().getRetryAfterSeconds();
      return new Retry(detail, seconds == null ? null : Duration.ofSeconds(seconds));
    }
    return new Rejected(detail);
  }

  private <T> T view(String what, CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(VIEW_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Stopped();
    } catch (TimeoutException e) {
      throw new Retry(what + " took longer than " + VIEW_TIMEOUT, null);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      while (cause instanceof CompletionException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      if (cause instanceof ServiceException s && s.kind() == ServiceException.Kind.NOT_FOUND) {
        return null;
      }
      throw new Retry(what + " failed: " + cause, null);
    }
  }

  /** 409: read again and recompute. */
  private static final class Conflict extends RuntimeException {
    Conflict(String what) {
      super(what, null, false, false);
    }
  }

  /** 404 on a write: the object is gone; nothing left to do. */
  private static final class Gone extends RuntimeException {
    Gone(String what) {
      super(what, null, false, false);
    }
  }

  /** 429, 5xx, timeouts: try again later. */
  private static final class Retry extends RuntimeException {
    final Duration after;

    Retry(String detail, Duration after) {
      super(detail, null, false, false);
      this.after = after;
    }
  }

  /** Any other 4xx: this write is wrong as it stands; log it and move on. */
  private static final class Rejected extends RuntimeException {
    Rejected(String detail) {
      super(detail, null, false, false);
    }
  }

  /** The writer was closed during a wait. */
  private static final class Stopped extends RuntimeException {
    Stopped() {
      super("stopped", null, false, false);
    }
  }
}
