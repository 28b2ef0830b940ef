package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;
import static dev.gpushare.node.ServiceAsks.done;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeAdmission;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Quantity;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuActor;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The arbiter's service over its sharded entities: NodeActor (admission, config), NodeArbiter (the
 * single writer of decisions), GpuActors (identity, health) and PodActors (Events, conditions).
 * Every answer comes after the decisions it caused are persisted, and every view takes its decision
 * state from one snapshot of the node's arbiter ({@link BookViews}).
 *
 * <p>Requests that write ({@link #writing}) fail at once with UNAVAILABLE and the reason while the
 * journal cannot write ({@link JournalStatus}), and those in flight when a journal write fails fail
 * then: the entity whose write failed restarts without answering.
 */
final class DefaultGpuShareService implements GpuShareService, PodActor.Listener {

  private final ActorSystem<?> system;
  private final PodWatches watches;
  private final ServiceAsks asks;
  private final Entities entities;
  private final ActorRef<Topic.Command<Changes.Change>> changes;
  private final RuntimeSettings settings;
  private final ArbiterClock clock;
  private final Duration timeout;
  private final List<ChangeListener> subscribers = new CopyOnWriteArrayList<>();
  private final LocalGpus local;
  private final GpuShareMetrics metrics;

  /** The latest GPU telemetry of each node's Running pods, as its sampling member published it. */
  private final Map<String, Map<String, Changes.PodUsageReport>> usage = new ConcurrentHashMap<>();

  /** What this member last published per node it samples. */
  private final Map<String, Map<String, Changes.PodUsageReport>> published =
      new ConcurrentHashMap<>();

  private final JournalStatus journal;

  /** The answers of writing requests not yet answered ({@link #writing}). */
  private final Set<CompletableFuture<?>> writesInFlight = ConcurrentHashMap.newKeySet();

  private volatile boolean ready;

  DefaultGpuShareService(
      ActorSystem<?> system,
      Entities entities,
      ActorRef<Topic.Command<Changes.Change>> changes,
      RuntimeSettings settings,
      ArbiterClock clock,
      LocalGpus local,
      GpuShareMetrics metrics,
      JournalStatus journal) {
    this.system = system;
    this.watches = new PodWatches(system);
    this.asks = new ServiceAsks(entities, settings.askTimeout());
    this.local = local;
    this.metrics = metrics;
    this.entities = entities;
    this.changes = changes;
    this.settings = settings;
    this.clock = clock;
    this.timeout = settings.askTimeout();
    this.journal = journal;
    journal.onWriteFailure(this::writeFailed);
  }

  // ---- start-up ----

  /** Registers configured nodes that are new, then brings every known node in line. */
  CompletionStage<Done> start() {
    CompletionStage<Done> chain = done();
    for (RuntimeSettings.ConfiguredNode sim : settings.nodes()) {
      String name = sim.manifest().name();
      chain =
          chain.thenCompose(
              d ->
                  asks.nodeRecord(name)
                      .thenCompose(
                          record ->
                              record.registered()
                                  ? done()
                                  : register(sim.manifest(), sim.gpuModel(), sim.gpuMemoryMiB())
                                      .thenApply(r -> Done.getInstance())));
    }
    return chain
        .thenCompose(d -> asks.nodeNames())
        .thenCompose(
            names -> {
              CompletionStage<Done> recovery = done();
              for (String node : names) {
                recovery = recovery.thenCompose(d -> recoverPatiently(node, 3));
              }
              return recovery;
            })
        .thenApply(
            d -> {
              ready = true;
              return d;
            });
  }

  /**
   * {@link #recover} at start-up, tried again when an ask times out (in a cluster the node's shard
   * may be moving to this member right now). A node that still does not answer does not stop the
   * start: it recovers on its next message, and {@link #wakeAll} tries again when members change.
   */
  private CompletionStage<Done> recoverPatiently(String node, int attemptsLeft) {
    return recover(node)
        .handle(
            (d, e) -> {
              if (e == null) {
                return done();
              }
              if (attemptsLeft > 1) {
                system
                    .log()
                    .info("node {} did not answer at start ({}); trying again", node, e.toString());
                return recoverPatiently(node, attemptsLeft - 1);
              }
              system
                  .log()
                  .warn(
                      "node {} did not answer at start: {}; it recovers on its next message",
                      node,
                      e.toString());
              return done();
            })
        .thenCompose(x -> x);
  }

  /**
   * Wakes every known node (after a member left the cluster): each arbiter recovers where its shard
   * now lives, reconciles with its bound pods, and re-arms its timers.
   */
  void wakeAll() {
    if (!ready) {
      return;
    }
    asks.nodeNames()
        .thenCompose(
            names -> {
              CompletionStage<Done> chain = done();
              for (String node : names) {
                chain = chain.thenCompose(d -> recover(node));
              }
              return chain;
            })
        .whenComplete(
            (d, e) -> {
              if (e != null) {
                // The directory itself may be moving off the member that left: try again.
                system
                    .log()
                    .info("waking the nodes after a member left: {}; retrying", e.toString());
                system
                    .scheduler()
                    .scheduleOnce(Duration.ofSeconds(5), this::wakeAll, system.executionContext());
              }
            });
  }

  /** After a restart: GPUs described again, the arbiter told the config and the bound pods. */
  private CompletionStage<Done> recover(String node) {
    return asks.nodeRecord(node)
        .thenCompose(
            record -> {
              if (!record.registered()) {
                return done();
              }
              // Every bound pod holds its name in the index (a crash may have lost the claim).
              record
                  .bound()
                  .values()
                  .forEach(
                      b ->
                          entities
                              .podIndex(b.key().ref())
                              .<PodIndex.Entry>ask(
                                  r -> new PodIndex.Claim(node, b.key(), false, r), timeout));
              List<NodeArbiter.BoundPod> bound =
                  record.bound().values().stream()
                      .map(b -> new NodeArbiter.BoundPod(b.key(), b.spec()))
                      .toList();
              return syncArbiter(node, record)
                  .thenCompose(d -> asks.decide(node, r -> new NodeArbiter.Reconcile(bound, r)))
                  .thenApply(o -> Done.getInstance());
            });
  }

  @Override
  public GpuShareMetrics metrics() {
    return metrics;
  }

  @Override
  public dev.gpushare.arbiter.GpuChoice gpuChoice() {
    return Entities.gpuChoice(system);
  }

  @Override
  public boolean ready() {
    return ready;
  }

  @Override
  public Optional<String> notReady() {
    if (!ready) {
      return GpuShareService.super.notReady();
    }
    return journal.unwritable().map(why -> "the journal cannot write: " + why);
  }

  // ---- writes and the journal ----

  /**
   * A request that writes: refused at once while the journal cannot write, failed at once when a
   * journal write fails while it is in flight, and told why when its ask times out meanwhile.
   */
  private <T> CompletionStage<T> writing(Supplier<CompletionStage<T>> write) {
    Optional<String> why = journal.unwritable();
    if (why.isPresent()) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.UNAVAILABLE,
              "the journal cannot write: "
                  + why.get()
                  + "; nothing was changed: retry once GET /readyz answers 200"));
    }
    CompletableFuture<T> answer = new CompletableFuture<>();
    writesInFlight.add(answer);
    CompletionStage<T> stage;
    try {
      stage = write.get();
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    stage.whenComplete(
        (value, error) -> {
          writesInFlight.remove(answer);
          if (error == null) {
            answer.complete(value);
          } else {
            answer.completeExceptionally(whileUnwritable(error));
          }
        });
    return answer;
  }

  /** A journal write failed: the requests in flight will not be answered by their entities. */
  private void writeFailed(String reason) {
    ServiceException failed =
        new ServiceException(
            Kind.UNAVAILABLE,
            reason
                + "; this request is not acknowledged: once GET /readyz answers 200, look whether"
                + " it took effect and retry it if not");
    for (CompletableFuture<?> answer : writesInFlight) {
      writesInFlight.remove(answer);
      answer.completeExceptionally(failed);
    }
  }

  /** An ask that timed out while the journal could not write: say so rather than "unknown". */
  private Throwable whileUnwritable(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    Optional<String> why = journal.unwritable();
    if (!(cause instanceof TimeoutException) || why.isEmpty()) {
      return error;
    }
    return new ServiceException(
        Kind.UNAVAILABLE,
        "no answer in time while the journal cannot write: "
            + why.get()
            + "; the request is not acknowledged: once GET /readyz answers 200, look whether it"
            + " took effect and retry it if not");
  }

  // ---- nodes ----

  @Override
  public CompletionStage<List<NodeView>> nodes() {
    return asks.registeredNodes()
        .thenCompose(names -> all(names.stream().map(this::nodeView).toList()));
  }

  @Override
  public CompletionStage<NodeView> node(String name) {
    return knownNode(name).thenCompose(d -> nodeView(name));
  }

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    return knownNode(node).thenCompose(d -> asks.book(node)).thenApply(BookViews::queue);
  }

  @Override
  public CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    return writing(() -> put(manifest));
  }

  private CompletionStage<PutNodeResult> put(NodeManifest manifest) {
    List<FieldError> errors = NodeStatusCalculator.validateManifest(manifest);
    if (!errors.isEmpty()) {
      return CompletableFuture.failedFuture(ServiceException.invalid(errors));
    }
    String name = manifest.name();
    Map<String, String> labels = manifest.labels() == null ? Map.of() : manifest.labels();
    String model = labels.getOrDefault("nvidia.com/gpu.product", RuntimeSettings.DEFAULT_GPU_MODEL);
    long memory = RuntimeSettings.DEFAULT_GPU_MEMORY_MIB;
    String memoryLabel = labels.get("nvidia.com/gpu.memory");
    if (memoryLabel != null) {
      try {
        memory = Long.parseLong(memoryLabel);
      } catch (NumberFormatException e) {
        return CompletableFuture.failedFuture(
            ServiceException.invalid(
                List.of(
                    new FieldError(
                        "metadata.labels[nvidia.com/gpu.memory]",
                        memoryLabel,
                        "metadata.labels[nvidia.com/gpu.memory] is \""
                            + memoryLabel
                            + "\"; want the GPU memory in MiB, a whole number"))));
      }
    }
    long memoryMiB = memory;
    return asks.nodeRecord(name)
        .thenCompose(
            before -> {
              int gpus = gpuCount(manifest);
              return shrinkConflict(name, before, gpus)
                  .thenCompose(d -> register(manifest, model, memoryMiB))
                  .thenCompose(d -> nodeView(name))
                  .thenApply(view -> new PutNodeResult(!before.registered(), view));
            });
  }

  /** Removing GPUs that hold shares would strand pods: refuse. */
  private CompletionStage<Done> shrinkConflict(String name, NodeActor.Record before, int gpus) {
    if (!before.registered() || gpus >= before.gpus().size()) {
      return done();
    }
    return asks.book(name)
        .thenApply(
            view -> {
              for (var e : view.book().holdings().entrySet()) {
                if (e.getValue().gpu() >= gpus) {
                  throw new ServiceException(
                      Kind.CONFLICT,
                      "status.capacity[nvidia.com/gpu] is \""
                          + gpus
                          + "\" but GPU "
                          + e.getValue().gpu()
                          + " of node "
                          + name
                          + " is held by "
                          + view.book().members().get(e.getKey()).key().ref()
                          + "; free it first or keep at least "
                          + (e.getValue().gpu() + 1)
                          + " GPUs",
                      List.of(
                          new FieldError(
                              "status.capacity[nvidia.com/gpu]",
                              Integer.toString(gpus),
                              "GPU " + e.getValue().gpu() + " is in use")));
                }
              }
              return Done.getInstance();
            });
  }

  private CompletionStage<NodeActor.Record> register(
      NodeManifest manifest, String model, long memoryMiB) {
    String name = manifest.name();
    List<GpuDevice> devices = GpuBackends.fromCapacity(name, gpuCount(manifest), model, memoryMiB);
    return entities
        .directory()
        .<Done>ask(r -> new NodeDirectory.Add(name, r), timeout)
        .thenCompose(
            d ->
                entities
                    .node(name)
                    .<NodeActor.Record>ask(
                        r -> new NodeActor.Register(manifest, devices, r), timeout))
        .thenCompose(record -> syncArbiter(name, record).thenApply(d -> record))
        .whenComplete((r, e) -> nodeChanged(name));
  }

  /** GPUs described to their actors, the arbiter told the GPUs and the config in force. */
  private CompletionStage<Done> syncArbiter(String node, NodeActor.Record record) {
    if (!record.registered()) {
      return done();
    }
    List<CompletionStage<Done>> describes = new ArrayList<>();
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (GpuDevice d : record.gpus()) {
      describes.add(entities.gpu(node, d.uuid()).ask(r -> new GpuActor.Describe(d, r), timeout));
      slots.add(new ShareBook.GpuSlot(d.index(), d.uuid(), record.healthy(d.uuid())));
    }
    return all(describes)
        .thenCompose(d -> asks.decide(node, r -> new NodeArbiter.SetGpus(slots, r)))
        .thenCompose(
            o ->
                asks.decide(
                    node,
                    r ->
                        new NodeArbiter.ApplyPolicy(
                            record.config().active(), record.config().activeQos(), r)))
        .thenApply(o -> Done.getInstance());
  }

  @Override
  public CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return writing(() -> patch(name, labels, annotations));
  }

  private CompletionStage<NodeView> patch(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return knownNode(name)
        .thenCompose(
            d ->
                entities
                    .node(name)
                    .<NodeActor.Record>ask(
                        r -> new NodeActor.Patch(labels, annotations, r), timeout))
        .thenCompose(record -> syncArbiter(name, record))
        .whenComplete((r, e) -> nodeChanged(name))
        .thenCompose(d -> nodeView(name));
  }

  @Override
  public CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    return writing(() -> gpuHealth(node, index, healthy));
  }

  private CompletionStage<NodeView> gpuHealth(String node, int index, boolean healthy) {
    return knownNode(node)
        .thenCompose(d -> asks.nodeRecord(node))
        .thenCompose(
            before -> {
              GpuDevice device =
                  before.gpus().stream()
                      .filter(g -> g.index() == index)
                      .findFirst()
                      .orElseThrow(
                          () ->
                              ServiceException.of(
                                  Kind.NOT_FOUND,
                                  new FieldError(
                                      "index",
                                      Integer.toString(index),
                                      "node "
                                          + node
                                          + " has no GPU "
                                          + index
                                          + "; its GPUs are 0.."
                                          + (before.gpus().size() - 1))));
              return entities
                  .gpu(node, device.uuid())
                  .<Done>ask(r -> new GpuActor.SetHealth(healthy, r), timeout)
                  .thenCompose(
                      d ->
                          entities
                              .node(node)
                              .<NodeActor.Record>ask(
                                  r -> new NodeActor.SetGpuHealth(device.uuid(), healthy, r),
                                  timeout));
            })
        .thenCompose(record -> syncArbiter(node, record))
        .whenComplete((r, e) -> nodeChanged(node))
        .thenCompose(d -> nodeView(node));
  }

  // ---- pods ----

  @Override
  public CompletionStage<PodView> createPod(PodManifest given) {
    return writing(() -> create(given));
  }

  private CompletionStage<PodView> create(PodManifest given) {
    PodManifest m =
        new PodManifest(
            given.namespace() == null || given.namespace().isEmpty()
                ? "default"
                : given.namespace(),
            given.name(),
            given.uid(),
            given.nodeName(),
            given.labels() == null ? Map.of() : given.labels(),
            given.annotations() == null ? Map.of() : given.annotations(),
            given.containers() == null ? List.of() : given.containers());
    Parsed<PodSharing> parsed = ShareRequestRules.validate(m);
    List<FieldError> errors = new ArrayList<>(parsed.ok() ? List.of() : parsed.errors());
    // An empty uid is no uid, as in Kubernetes: one is assigned.
    String uid = m.uid() == null || m.uid().isEmpty() ? null : m.uid();
    if (uid != null && !KubernetesNames.isPodUid(uid)) {
      errors.add(FieldErrors.of("metadata.uid", uid, KubernetesNames.UID_ACCEPTED));
    }
    if (!errors.isEmpty()) {
      return CompletableFuture.failedFuture(ServiceException.invalid(errors));
    }
    String ref = m.namespace() + "/" + m.name();
    PodKey key =
        new PodKey(m.namespace(), m.name(), uid == null ? UUID.randomUUID().toString() : uid);
    PodSharing spec = parsed.value();
    // Every refusal (the rules above, no such node, node admission) comes before the claim of the
    // name: a refused create writes nothing. Only a node that changes between the check and the
    // bind refuses after the claim, which is then released.
    return chooseNode(m.nodeName(), key, spec)
        .thenCompose(node -> claim(ref, node, key).thenApply(d -> node))
        .thenCompose(
            node ->
                bind(node, key, spec)
                    .exceptionallyCompose(
                        e ->
                            entities
                                .podIndex(ref)
                                .<Done>ask(r -> new PodIndex.Release(key.uid(), r), timeout)
                                .thenCompose(d -> CompletableFuture.failedFuture(e))))
        .thenCompose(
            node ->
                asks.decide(node, r -> new NodeArbiter.AddPod(key, spec, r))
                    .thenCompose(o -> podView(new Placed(node, key), o)));
  }

  /**
   * Takes the name {@code ref} for {@code key}. A name held by a pod that its node does not have
   * bound (a create that crashed half-way) is taken over; a live one is a conflict.
   */
  private CompletionStage<Done> claim(String ref, String node, PodKey key) {
    return entities
        .podIndex(ref)
        .<PodIndex.Entry>ask(r -> new PodIndex.Claim(node, key, false, r), timeout)
        .thenCompose(
            entry -> {
              if (entry.key().uid().equals(key.uid())) {
                return done();
              }
              return asks.nodeRecord(entry.node())
                  .thenCompose(
                      holder -> {
                        if (holder.bound().containsKey(entry.key().entityId())) {
                          throw ServiceException.of(
                              Kind.CONFLICT,
                              new FieldError(
                                  "metadata.name",
                                  key.name(),
                                  "pod "
                                      + ref
                                      + " already exists; delete it first or choose another"
                                      + " name"));
                        }
                        return entities
                            .podIndex(ref)
                            .<PodIndex.Entry>ask(
                                r -> new PodIndex.Claim(node, key, true, r), timeout)
                            .thenApply(e -> Done.getInstance());
                      });
            });
  }

  /**
   * The node for a pod: {@code nodeName} when given, if it is registered and its admission takes
   * the pod (else the refusal bind would give, before anything is written), or the embedded
   * scheduler's pick.
   */
  private CompletionStage<String> chooseNode(String nodeName, PodKey key, PodSharing spec) {
    if (nodeName != null && !nodeName.isEmpty()) {
      if (!KubernetesNames.isDns1123Subdomain(nodeName)) {
        return CompletableFuture.failedFuture(
            ServiceException.invalid(
                List.of(
                    FieldErrors.of(
                        "spec.nodeName", nodeName, KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED))));
      }
      return asks.nodeRecord(nodeName)
          .thenCompose(
              record -> {
                if (!record.registered()) {
                  return asks.registeredNodes()
                      .thenApply(
                          names -> {
                            throw ServiceException.of(
                                Kind.NOT_FOUND,
                                new FieldError(
                                    "spec.nodeName",
                                    nodeName,
                                    "spec.nodeName is \""
                                        + nodeName
                                        + "\"; no such node (known: "
                                        + String.join(", ", names)
                                        + ")"));
                          });
                }
                // A pod bound already (a create repeated with its uid) is answered by the bind.
                Refusal refusal =
                    record.bound().containsKey(key.entityId())
                        ? null
                        : NodeAdmission.refusal(record.admissionState(), spec);
                if (refusal != null) {
                  throw ServiceException.refused(refusal);
                }
                return CompletableFuture.completedFuture(nodeName);
              });
    }
    // The embedded scheduler: among nodes whose policy in force takes the pod and whose
    // allocatable has room for its requests, the fullest one (best fit), ties by name.
    return asks.nodeNames()
        .thenCompose(names -> all(names.stream().map(asks::nodeRecord).toList()))
        .thenApply(
            records -> {
              List<String> reasons = new ArrayList<>();
              NodeActor.Record best = null;
              int bestRoom = Integer.MAX_VALUE;
              for (NodeActor.Record r : records) {
                String why = unfit(r, spec);
                if (why != null) {
                  reasons.add(r.manifest().name() + ": " + why);
                  continue;
                }
                Share free = NodeAdmission.allocatable(r.healthyGpus()).minus(r.requested());
                int room = free.core() + free.memory();
                if (room < bestRoom) {
                  best = r;
                  bestRoom = room;
                }
              }
              if (best == null) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "spec.nodeName",
                        null,
                        "no node can take the pod: "
                            + (reasons.isEmpty() ? "no nodes" : String.join("; ", reasons))));
              }
              return best.manifest().name();
            });
  }

  /** Why the embedded scheduler cannot place {@code spec} on {@code r}: node admission's word. */
  private static String unfit(NodeActor.Record r, PodSharing spec) {
    if (!r.registered()) {
      return "not registered";
    }
    Refusal refusal = NodeAdmission.refusal(r.admissionState(), spec);
    return refusal == null ? null : refusal.detail();
  }

  private CompletionStage<String> bind(String node, PodKey key, PodSharing spec) {
    return entities
        .node(node)
        .<NodeActor.BindReply>ask(r -> new NodeActor.Bind(key, spec, r), timeout)
        .thenCompose(
            reply -> {
              if (reply.refusal() != null) {
                throw ServiceException.refused(reply.refusal());
              }
              nodeChanged(node);
              return syncArbiter(node, reply.record()).thenApply(d -> node);
            });
  }

  @Override
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    return writing(() -> placed(namespace, name).thenCompose(this::delete));
  }

  private CompletionStage<PodView> delete(Placed p) {
    return podView(p)
        .thenCompose(
            last ->
                entities
                    .node(p.node())
                    .<NodeActor.Record>ask(r -> new NodeActor.Unbind(p.key(), r), timeout)
                    .thenCompose(
                        record ->
                            asks.decide(
                                    p.node(), r -> new NodeArbiter.RemovePod(p.key().entityId(), r))
                                .thenCompose(o -> syncArbiter(p.node(), record)))
                    .thenApply(
                        d -> {
                          nodeChanged(p.node());
                          return last;
                        })
                    .thenCompose(
                        last2 ->
                            entities
                                .podIndex(p.key().ref())
                                .<Done>ask(r -> new PodIndex.Release(p.key().uid(), r), timeout)
                                .thenApply(d -> last2)));
  }

  @Override
  public CompletionStage<PodView> ensurePod(PodManifest manifest) {
    return writing(() -> ensure(manifest));
  }

  private CompletionStage<PodView> ensure(PodManifest manifest) {
    String namespace =
        manifest.namespace() == null || manifest.namespace().isEmpty()
            ? "default"
            : manifest.namespace();
    return asks.lookup(namespace, manifest.name())
        .thenCompose(
            known -> {
              if (known.isEmpty()) {
                return create(manifest);
              }
              if (manifest.uid() == null || known.get().key().uid().equals(manifest.uid())) {
                return podView(known.get());
              }
              return delete(known.get()).thenCompose(gone -> create(manifest));
            });
  }

  @Override
  public CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    return writing(
        () ->
            asks.lookup(namespace, name)
                .thenCompose(
                    known -> {
                      if (known.isEmpty()
                          || (uid != null && !known.get().key().uid().equals(uid))) {
                        return CompletableFuture.completedFuture(false);
                      }
                      return delete(known.get()).thenApply(last -> true);
                    }));
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    subscribers.add(listener);
    return () -> subscribers.remove(listener);
  }

  private void nodeChanged(String node) {
    changes.tell(Topic.publish(new Changes.NodeChanged(node)));
  }

  /** A change published on any member, heard here. */
  void heard(Changes.Change change) {
    if (change instanceof Changes.PodChanged p) {
      podChanged(p.key(), p.deleted());
    } else if (change instanceof Changes.NodeChanged n) {
      nodeChangedHere(n.node());
    } else if (change instanceof Changes.UsageChanged u) {
      usage.put(u.node(), u.pods());
    }
  }

  // ---- GPU telemetry (GpuTelemetry's side of the service) ----

  /** The registered nodes this member samples ({@link LocalGpus}). */
  CompletionStage<List<String>> sampledNodes() {
    return asks.registeredNodes().thenApply(local::sampled);
  }

  /**
   * The backend to sample {@code node} through, shaped like its registered GPUs. A real backend's
   * devices (real index and UUID) replace the ones derived from the node's capacity first.
   */
  CompletionStage<Optional<dev.gpushare.gpu.GpuBackend>> telemetryBackend(String node) {
    return asks.nodeRecord(node)
        .thenCompose(
            r -> {
              Optional<dev.gpushare.gpu.GpuBackend> real = local.real(node);
              if (real.isEmpty() || !r.registered() || r.gpus().equals(real.get().devices())) {
                return CompletableFuture.completedFuture(local.backend(node, r.gpus()));
              }
              return adoptDevices(node, r, real.get().devices())
                  .thenApply(d -> local.backend(node, real.get().devices()));
            });
  }

  /** The node's GPUs as its real backend reports them: registered, then told to the arbiter. */
  private CompletionStage<Done> adoptDevices(
      String node, NodeActor.Record before, List<GpuDevice> devices) {
    system
        .log()
        .info(
            "node {}: GPUs from the hardware: {} (were {})",
            node,
            devices.stream().map(d -> d.index() + "=" + d.uuid()).toList(),
            before.gpus().stream().map(d -> d.index() + "=" + d.uuid()).toList());
    return entities
        .node(node)
        .<NodeActor.Record>ask(r -> new NodeActor.Register(before.manifest(), devices, r), timeout)
        .thenCompose(record -> syncArbiter(node, record))
        .whenComplete((d, e) -> nodeChanged(node));
  }

  /** A real GPU's health as its driver reports it (the simulator's is set through the API). */
  CompletionStage<NodeView> syncHealth(String node, int index, boolean healthy) {
    return setGpuHealth(node, index, healthy);
  }

  CompletionStage<NodeArbiter.BookView> bookOf(String node) {
    return asks.book(node);
  }

  /** Records an Event on a pod (the request to hibernate): the pod's state does not change. */
  void tellPod(String node, PodKey key, PodNotes.EventNote note) {
    entities
        .pod(node, key)
        .tell(
            new PodActor.Notice(
                new dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice(
                    null, List.of(note), List.of(), false),
                system.ignoreRef()));
  }

  /** Releases a Running pod's share for {@code reason} (idle, memory), with its Event. */
  CompletionStage<NodeArbiter.Outcome> revoke(
      String node, String pod, String reason, PodNotes.EventNote note) {
    return entities.arbiter(node).ask(r -> new NodeArbiter.Release(pod, reason, note, r), timeout);
  }

  /** The member's report on a pod it checkpointed (or could not), to the node's arbiter. */
  CompletionStage<NodeArbiter.Outcome> reportCheckpoint(
      String node, NodeCheckpoints.Report report) {
    if (report instanceof NodeCheckpoints.Suspended s) {
      return entities
          .arbiter(node)
          .ask(
              r ->
                  new NodeArbiter.ReportSuspended(
                      s.pod(), s.held(), s.pids(), s.bytes(), s.message(), r),
              timeout);
    }
    NodeCheckpoints.Restored r = (NodeCheckpoints.Restored) report;
    return entities
        .arbiter(node)
        .ask(reply -> new NodeArbiter.ReportRestored(r.pod(), r.reason(), reply), timeout);
  }

  /** Publishes a node's pod usage cluster-wide when it changed since the last time. */
  void publishUsage(String node, Map<String, Changes.PodUsageReport> pods) {
    Map<String, Changes.PodUsageReport> copy = Map.copyOf(pods);
    if (!copy.equals(published.get(node))) {
      published.put(node, copy);
      changes.tell(Topic.publish(new Changes.UsageChanged(node, copy)));
    }
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes) {
    return knownNode(node)
        .thenCompose(d -> asks.nodeRecord(node))
        .thenCompose(
            record -> {
              if (!local.samples(node)) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "node",
                        node,
                        "the GPUs of node "
                            + node
                            + " are sampled by the member that runs on it; script them there"));
              }
              if (local.real(node).isPresent()) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "node",
                        node,
                        "node "
                            + node
                            + " has real GPUs ("
                            + local.real(node).get().name()
                            + "): there is nothing to script"));
              }
              if (index < 0 || index >= record.gpus().size()) {
                throw ServiceException.of(
                    Kind.NOT_FOUND,
                    new FieldError(
                        "index",
                        Integer.toString(index),
                        "node "
                            + node
                            + " has no GPU "
                            + index
                            + "; its GPUs are 0.."
                            + (record.gpus().size() - 1)));
              }
              List<FieldError> errors = new ArrayList<>();
              for (int i = 0; i < processes.size(); i++) {
                GpuProcess p = processes.get(i);
                String at = "processes[" + i + "]";
                if (p.pid() <= 0) {
                  errors.add(
                      new FieldError(at + ".pid", Long.toString(p.pid()), at + ".pid must be > 0"));
                }
                if (p.podUid() == null || p.podUid().isBlank()) {
                  errors.add(
                      new FieldError(
                          at + ".podUid",
                          String.valueOf(p.podUid()),
                          at + ".podUid is required: the UID of the pod the process belongs to"));
                }
                if (p.usedMemoryMiB() < 0) {
                  errors.add(
                      new FieldError(
                          at + ".usedMemoryMiB",
                          Long.toString(p.usedMemoryMiB()),
                          at + ".usedMemoryMiB must be >= 0"));
                }
                if (p.smUtilizationPercent().isPresent()
                    && (p.smUtilizationPercent().getAsInt() < 0
                        || p.smUtilizationPercent().getAsInt() > 100)) {
                  errors.add(
                      new FieldError(
                          at + ".smUtilizationPercent",
                          Integer.toString(p.smUtilizationPercent().getAsInt()),
                          at + ".smUtilizationPercent must be 0..100 (or absent: not reported)"));
                }
              }
              if (!errors.isEmpty()) {
                throw ServiceException.invalid(errors);
              }
              local.scriptable(node, record.gpus()).script(index, processes);
              return nodeView(node);
            });
  }

  private void nodeChangedHere(String node) {
    for (ChangeListener l : subscribers) {
      try {
        l.nodeChanged(node);
      } catch (RuntimeException e) {
        system.log().warn("a change listener failed on node {}: {}", node, e.toString());
      }
    }
  }

  @Override
  public CompletionStage<List<PodView>> pods(Optional<String> node) {
    CompletionStage<List<String>> nodes =
        node.isPresent()
            ? knownNode(node.get()).thenApply(d -> List.of(node.get()))
            : asks.registeredNodes();
    // Each node's arbiter is the authority on its pods: one snapshot per node, and each pod's own
    // record (Events, conditions) beside it.
    return nodes
        .thenCompose(names -> all(names.stream().map(this::podsOf).toList()))
        .thenApply(
            perNode ->
                perNode.stream()
                    .flatMap(List::stream)
                    .sorted(Comparator.comparing((PodView v) -> v.namespace() + "/" + v.name()))
                    .toList());
  }

  /** The pods of one node, from one snapshot of its arbiter's book. */
  private CompletionStage<List<PodView>> podsOf(String node) {
    return asks.book(node)
        .thenCombine(asks.nodeRecord(node), (b, r) -> Map.entry(b, r))
        .thenCompose(
            br -> {
              NodeArbiter.BookView b = br.getKey();
              List<CompletionStage<PodView>> views = new ArrayList<>();
              for (ShareBook.Member m : b.book().members().values()) {
                NodeArbiter.Outcome decided =
                    NodeArbiter.Outcome.of(b.book(), m.key().entityId(), b.now());
                views.add(
                    asks.podRecord(new Placed(node, m.key()))
                        .thenApply(
                            rec -> {
                              PodView v = BookViews.pod(m.key(), node, decided, rec);
                              return v.gpu() == null || v.limits() == null
                                  ? v
                                  : withGpuUse(v, br.getValue());
                            }));
              }
              return all(views);
            });
  }

  @Override
  public CompletionStage<PodView> pod(String namespace, String name) {
    return placed(namespace, name).thenCompose(this::podView);
  }

  @Override
  public CompletionStage<PodView> demand(String namespace, String name) {
    return writing(() -> demanded(namespace, name));
  }

  private CompletionStage<PodView> demanded(String namespace, String name) {
    return placed(namespace, name)
        .thenCompose(
            p -> {
              // The pod's record and its node's GPUs are read while the arbiter decides: the
              // answer waits for the decision's write and nothing after it.
              CompletionStage<PodActor.Record> record = asks.podRecord(p);
              CompletionStage<NodeActor.Record> node = asks.nodeRecord(p.node());
              return answered(
                      p,
                      asks.decide(p.node(), r -> new NodeArbiter.Demand(p.key().entityId(), r)),
                      record)
                  .thenCombine(
                      node, (v, n) -> v.gpu() == null || v.limits() == null ? v : withGpuUse(v, n));
            });
  }

  @Override
  public CompletionStage<PodView> release(String namespace, String name) {
    return writing(() -> released(namespace, name));
  }

  private CompletionStage<PodView> released(String namespace, String name) {
    return placed(namespace, name)
        .thenCompose(
            p -> {
              CompletionStage<PodActor.Record> record = asks.podRecord(p);
              return answered(
                      p,
                      asks.decide(p.node(), r -> new NodeArbiter.Release(p.key().entityId(), r)),
                      record)
                  .thenCompose(this::withGpuUse);
            });
  }

  @Override
  public CompletionStage<PodView> awaitGrant(String namespace, String name, Duration wait) {
    return placed(namespace, name)
        .thenCompose(p -> watches.awaitRunning(p.key().ref(), wait, () -> podView(p)));
  }

  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    return Source.completionStage(placed(namespace, name).toCompletableFuture())
        .flatMapConcat(p -> watches.watch(p.key().ref(), () -> podView(p)));
  }

  @Override
  public void changed(PodKey key, boolean deleted) {
    changes.tell(Topic.publish(new Changes.PodChanged(key, deleted)));
  }

  private void podChanged(PodKey key, boolean deleted) {
    for (ChangeListener l : subscribers) {
      try {
        l.podChanged(key.namespace(), key.name(), deleted);
      } catch (RuntimeException e) {
        system.log().warn("a change listener failed on pod {}: {}", key.ref(), e.toString());
      }
    }
    watches.changed(key.ref(), deleted);
  }

  // ---- clock ----

  @Override
  public ClockView clock() {
    return new ClockView(clock.now(), clock.manual());
  }

  @Override
  public CompletionStage<ClockView> advance(Duration by) {
    if (!(clock instanceof ManualClock manual)) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.CONFLICT,
              "the clock is the system clock; start the server with --clock manual to move time"
                  + " by hand"));
    }
    if (by.isNegative()) {
      return CompletableFuture.failedFuture(
          ServiceException.of(
              Kind.INVALID,
              new FieldError("seconds", Long.toString(by.toSeconds()), "seconds must be ≥ 0")));
    }
    Instant target = manual.now().plus(by);
    return writing(() -> advanceTo(manual, target));
  }

  private CompletionStage<ClockView> advanceTo(ManualClock manual, Instant target) {
    return fireTimersUntil(manual, target)
        .thenCompose(
            d -> {
              manual.advanceTo(target);
              return tickAll();
            })
        .thenApply(d -> clock());
  }

  /** Timers due before {@code target} fire in order: time stops at each, every arbiter looks. */
  private CompletionStage<Done> fireTimersUntil(ManualClock manual, Instant target) {
    return asks.nodeNames()
        .thenCompose(names -> all(names.stream().map(asks::book).toList()))
        .thenCompose(
            books -> {
              Optional<Instant> next =
                  books.stream()
                      .map(NodeArbiter.BookView::nextTimer)
                      .filter(t -> t != null && !t.isAfter(target))
                      .min(Comparator.naturalOrder());
              if (next.isEmpty()) {
                return done();
              }
              manual.advanceTo(next.get());
              return tickAll().thenCompose(d -> fireTimersUntil(manual, target));
            });
  }

  private CompletionStage<Done> tickAll() {
    return asks.nodeNames()
        .thenCompose(
            names -> all(names.stream().map(n -> asks.decide(n, NodeArbiter.Tick::new)).toList()))
        .thenApply(x -> Done.getInstance());
  }

  // ---- views ----

  private CompletionStage<NodeView> nodeView(String name) {
    return asks.nodeRecord(name)
        .thenCombine(asks.book(name), (r, b) -> BookViews.node(r, b, settings.reservedPerGpu()));
  }

  /**
   * The pod's view; NOT_FOUND while the pod is still being created (its name is claimed but its
   * node's arbiter has not taken it yet) or after it is gone.
   */
  private CompletionStage<PodView> podView(Placed p) {
    return maybePodView(p)
        .thenApply(v -> v.orElseThrow(() -> podNotFound(p.key().namespace(), p.key().name())));
  }

  /** The pod's view with the decision state {@code decided} the arbiter answered with. */
  private CompletionStage<PodView> podView(Placed p, NodeArbiter.Outcome decided) {
    return answered(p, CompletableFuture.completedFuture(decided), asks.podRecord(p))
        .thenCompose(this::withGpuUse);
  }

  /** The view of the arbiter's answer beside the pod's own record, without telemetry. */
  private static CompletionStage<PodView> answered(
      Placed p,
      CompletionStage<NodeArbiter.Outcome> decided,
      CompletionStage<PodActor.Record> record) {
    return decided.thenCombine(record, (o, r) -> BookViews.pod(p.key(), p.node(), o, r));
  }

  private CompletionStage<Optional<PodView>> maybePodView(Placed p) {
    CompletionStage<NodeArbiter.Outcome> decided =
        entities.arbiter(p.node()).ask(r -> new NodeArbiter.GetPod(p.key().entityId(), r), timeout);
    return decided
        .thenCombine(
            asks.podRecord(p), (o, r) -> o.ok() ? BookViews.pod(p.key(), p.node(), o, r) : null)
        .thenCompose(
            v ->
                v == null
                    ? CompletableFuture.completedFuture(Optional.<PodView>empty())
                    : withGpuUse(v).thenApply(Optional::of));
  }

  /** A Running share: its telemetry, and what its workload exports (GPU memory). */
  private CompletionStage<PodView> withGpuUse(PodView view) {
    if (view.gpu() == null || view.limits() == null) {
      return CompletableFuture.completedFuture(view);
    }
    return asks.nodeRecord(view.node()).thenApply(n -> withGpuUse(view, n));
  }

  private PodView withGpuUse(PodView v, NodeActor.Record node) {
    Changes.PodUsageReport u =
        usage
            .getOrDefault(v.node(), Map.of())
            .get(new PodKey(v.namespace(), v.name(), v.uid()).entityId());
    return BookViews.withGpuUse(v, node, u, settings.gpu().mpsRoot());
  }

  // ---- plumbing ----

  private CompletionStage<Placed> placed(String namespace, String name) {
    return asks.lookup(namespace, name)
        .thenApply(
            p -> {
              if (p.isEmpty()) {
                throw podNotFound(namespace, name);
              }
              return p.get();
            });
  }

  private static ServiceException podNotFound(String namespace, String name) {
    return new ServiceException(
        Kind.NOT_FOUND,
        "pod "
            + namespace
            + "/"
            + name
            + " not found"
            + (KubernetesNames.isPodRef(namespace, name)
                ? ""
                : " (not a valid pod name: the namespace is "
                    + KubernetesNames.DNS1123_LABEL_ACCEPTED
                    + ", the name "
                    + KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED
                    + ")"),
        List.of(
            new FieldError("metadata.name", name, "pod " + namespace + "/" + name + " not found")));
  }

  /**
   * Fails with NOT_FOUND unless the node is registered. Asks only that node's actor: a node whose
   * member is failing over must not hold up requests about the others.
   */
  private CompletionStage<Done> knownNode(String name) {
    if (!KubernetesNames.isDns1123Subdomain(name)) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.NOT_FOUND,
              "node " + name + " not found (not a valid node name)",
              List.of(new FieldError("node", name, "node " + name + " not found"))));
    }
    return asks.nodeRecord(name)
        .thenApply(
            record -> {
              if (!record.registered()) {
                throw new ServiceException(
                    Kind.NOT_FOUND,
                    "node "
                        + name
                        + " not found"
                        + (KubernetesNames.isDns1123Subdomain(name)
                            ? ""
                            : " (not a valid node name)"),
                    List.of(new FieldError("node", name, "node " + name + " not found")));
              }
              return Done.getInstance();
            });
  }

  private static int gpuCount(NodeManifest manifest) {
    // validateManifest checked it: a whole quantity from 0 to MAX_GPUS ("2", "2.0", "+2", "2e0")
    return Quantity.parse(manifest.capacity().get("nvidia.com/gpu")).value().intValueExact();
  }
}
