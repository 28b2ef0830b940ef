package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.NodeAdmission;
import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.NodeSharing.SharingConfig;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.Share;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandlerWithReply;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehaviorWithEnforcedReplies;
import org.apache.pekko.persistence.typed.javadsl.ReplyEffect;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;

/**
 * One node's sharing configuration (ARCHITECTURE.md §2): its manifest (labels, annotations, own
 * capacity), its GPUs, the pods bound to it, the policy and QoS config in force with their validity
 * (SPEC §2), the node conditions with their transition times, and the node's Events. It admits pods
 * to the node: policy match, the sum of requests within allocatable, no exclusive pods beside
 * sharing.
 */
public final class NodeActor
    extends EventSourcedBehaviorWithEnforcedReplies<
        NodeActor.Command, NodeActor.Event, NodeActor.Record> {

  static final int MAX_EVENTS = 100;

  public sealed interface Command extends JsonSerializable {}

  /** Register or replace the node (embedded mode's PUT, or the informer's view). */
  public record Register(NodeManifest manifest, List<GpuDevice> gpus, ActorRef<Record> replyTo)
      implements Command {}

  /** Merge-patch labels and annotations; a {@code null} value removes the key. */
  public record Patch(
      Map<String, String> labels, Map<String, String> annotations, ActorRef<Record> replyTo)
      implements Command {}

  public record Bind(PodKey key, PodSharing spec, ActorRef<BindReply> replyTo) implements Command {}

  public record Unbind(PodKey key, ActorRef<Record> replyTo) implements Command {}

  public record GetRecord(ActorRef<Record> replyTo) implements Command {}

  /** A GPU failed or came back (backend health, or the simulator's admin call). */
  public record SetGpuHealth(String uuid, boolean healthy, ActorRef<Record> replyTo)
      implements Command {}

  /** Admission's answer: the record, and why the pod cannot be bound (null: it is bound). */
  public record BindReply(Record record, Refusal refusal) implements JsonSerializable {}

  public sealed interface Event extends JsonSerializable {}

  public record Registered(NodeManifest manifest, List<GpuDevice> gpus) implements Event {}

  public record Patched(Map<String, String> labels, Map<String, String> annotations)
      implements Event {}

  public record PodBound(PodKey key, PodSharing spec) implements Event {}

  public record PodUnbound(PodKey key) implements Event {}

  public record ConfigResolved(SharingConfig config, List<NodeCondition> conditions)
      implements Event {}

  public record NodeEventRecorded(EventNote event) implements Event {}

  public record GpuHealthChanged(String uuid, boolean healthy) implements Event {}

  /** A pod bound to this node. */
  public record Bound(PodKey key, PodSharing spec) implements JsonSerializable {}

  /**
   * @param bound pods by entity id
   */
  public record Record(
      NodeManifest manifest,
      List<GpuDevice> gpus,
      SharingConfig config,
      List<NodeCondition> conditions,
      Map<String, Bound> bound,
      List<EventNote> events,
      List<String> unhealthy)
      implements JsonSerializable {
    public Record {
      unhealthy = List.copyOf(unhealthy == null ? List.of() : unhealthy);
      gpus = List.copyOf(gpus);
      conditions = List.copyOf(conditions);
      bound = new TreeMap<>(bound);
      events = List.copyOf(events);
    }

    public boolean registered() {
      return manifest != null;
    }

    /** The node status Kubernetes shows, as of {@code now}. */
    public NodeStatus status(ReservedPerGpu reserved, Instant now) {
      return NodeStatusCalculator.desired(
          manifest, healthyGpus(), config, reserved, conditions, now);
    }

    /** GPUs that can take shares: capacity and allocatable count only these (SPEC §2). */
    /** The node as admission sees it ({@link NodeAdmission}). */
    public NodeAdmission.NodeState admissionState() {
      return new NodeAdmission.NodeState(
          manifest.name(),
          config.active(),
          healthyGpus(),
          requested(),
          gpus.size(),
          exclusiveGpus());
    }

    public int healthyGpus() {
      return (int) gpus.stream().filter(g -> !unhealthy.contains(g.uuid())).count();
    }

    public boolean healthy(String uuid) {
      return !unhealthy.contains(uuid);
    }

    /** Requests of bound pods that share a GPU. */
    public Share requested() {
      return bound.values().stream()
          .map(Bound::spec)
          .filter(PodSharing.Shared.class::isInstance)
          .map(s -> ((PodSharing.Shared) s).requests())
          .reduce(Share.NONE, Share::plus);
    }

    List<String> podsOf(PodSharing.Kind kind) {
      return bound.values().stream()
          .filter(b -> b.spec().kind() == kind)
          .map(b -> b.key().ref())
          .sorted()
          .toList();
    }

    int exclusiveGpus() {
      return bound.values().stream().mapToInt(b -> PodSharing.wholeGpus(b.spec())).sum();
    }
  }

  public static PersistenceId persistenceId(String node) {
    return PersistenceId.of("Node", node, "|");
  }

  public static Behavior<Command> create(String node, ReservedPerGpu reserved, ArbiterClock clock) {
    return new NodeActor(node, reserved, clock);
  }

  private final String node;
  private final ReservedPerGpu reserved;
  private final ArbiterClock clock;

  private NodeActor(String node, ReservedPerGpu reserved, ArbiterClock clock) {
    super(
        persistenceId(node),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.node = node;
    this.reserved = reserved;
    this.clock = clock;
  }

  @Override
  public Record emptyState() {
    return new Record(
        null, List.of(), SharingConfig.INITIAL, List.of(), Map.of(), List.of(), List.of());
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(100, 2);
  }

  @Override
  public CommandHandlerWithReply<Command, Event, Record> commandHandler() {
    return newCommandHandlerWithReplyBuilder()
        .forAnyState()
        .onCommand(GetRecord.class, (r, c) -> Effect().reply(c.replyTo(), r))
        .onCommand(Register.class, this::onRegister)
        .onCommand(Patch.class, this::onPatch)
        .onCommand(Bind.class, this::onBind)
        .onCommand(Unbind.class, this::onUnbind)
        .onCommand(SetGpuHealth.class, this::onSetGpuHealth)
        .build();
  }

  private ReplyEffect<Event, Record> onRegister(Record r, Register c) {
    List<GpuDevice> gpus = c.gpus();
    String name = c.manifest().name();
    if (derivedFromCapacity(name, gpus)
        && r.registered()
        && !r.gpus().isEmpty()
        && !derivedFromCapacity(name, r.gpus())) {
      // The node's member reported its GPUs from the hardware (NVML): real devices win over the
      // ones derived from status.capacity, whoever registers the manifest (e.g. the KubeSync).
      gpus = r.gpus();
    }
    Record next = apply(r, new Registered(c.manifest(), gpus));
    List<Event> events = new ArrayList<>();
    if (!c.manifest().equals(r.manifest()) || !gpus.equals(r.gpus())) {
      events.add(new Registered(c.manifest(), gpus));
    }
    events.addAll(resolve(next));
    return persistAndReply(events, c.replyTo());
  }

  /** Whether these are the devices a node's capacity stands for, not ones its hardware reported. */
  static boolean derivedFromCapacity(String node, List<GpuDevice> gpus) {
    return GpuBackends.derivedFromCapacity(node, gpus);
  }

  private ReplyEffect<Event, Record> onPatch(Record r, Patch c) {
    if (!r.registered()) {
      return Effect().reply(c.replyTo(), r);
    }
    Patched patched = new Patched(nullable(c.labels()), nullable(c.annotations()));
    Record next = apply(r, patched);
    List<Event> events = new ArrayList<>();
    if (!next.manifest().equals(r.manifest())) {
      events.add(patched);
    }
    events.addAll(resolve(next));
    return persistAndReply(events, c.replyTo());
  }

  private ReplyEffect<Event, Record> onBind(Record r, Bind c) {
    if (r.bound().containsKey(c.key().entityId())) {
      return Effect().reply(c.replyTo(), new BindReply(r, null));
    }
    Refusal refusal = admission(r, c.spec());
    if (refusal != null) {
      return Effect().reply(c.replyTo(), new BindReply(r, refusal));
    }
    PodBound bound = new PodBound(c.key(), c.spec());
    List<Event> events = new ArrayList<>();
    events.add(bound);
    events.addAll(resolve(apply(r, bound)));
    return Effect().persist(events).thenReply(c.replyTo(), after -> new BindReply(after, null));
  }

  private ReplyEffect<Event, Record> onUnbind(Record r, Unbind c) {
    if (!r.bound().containsKey(c.key().entityId())) {
      return Effect().reply(c.replyTo(), r);
    }
    PodUnbound unbound = new PodUnbound(c.key());
    List<Event> events = new ArrayList<>();
    events.add(unbound);
    events.addAll(resolve(apply(r, unbound)));
    return persistAndReply(events, c.replyTo());
  }

  private ReplyEffect<Event, Record> onSetGpuHealth(Record r, SetGpuHealth c) {
    boolean known = r.gpus().stream().anyMatch(g -> g.uuid().equals(c.uuid()));
    if (!known || r.healthy(c.uuid()) == c.healthy()) {
      return Effect().reply(c.replyTo(), r);
    }
    GpuHealthChanged changed = new GpuHealthChanged(c.uuid(), c.healthy());
    Instant now = clock.now();
    int index = r.gpus().stream().filter(g -> g.uuid().equals(c.uuid())).findFirst().get().index();
    List<Event> events = new ArrayList<>();
    events.add(changed);
    events.add(
        new NodeEventRecorded(
            new EventNote(
                c.healthy() ? "Normal" : "Warning",
                c.healthy() ? "GPUHealthy" : "GPUUnhealthy",
                "GPU "
                    + index
                    + " ("
                    + c.uuid()
                    + ") is "
                    + (c.healthy() ? "healthy" : "unhealthy")
                    + ".",
                now)));
    events.addAll(resolve(apply(r, changed)));
    return persistAndReply(events, c.replyTo());
  }

  private ReplyEffect<Event, Record> persistAndReply(List<Event> events, ActorRef<Record> replyTo) {
    if (events.isEmpty()) {
      return Effect().none().thenReply(replyTo, r -> r);
    }
    return Effect().persist(events).thenReply(replyTo, r -> r);
  }

  /**
   * Why a pod may not be bound here, or {@code null}: SPEC §3 (the pod's policy must equal the
   * node's), §2 (no exclusive pods while sharing), requests within allocatable.
   */
  private Refusal admission(Record r, PodSharing spec) {
    if (!r.registered()) {
      return Refusal.conflict(
          new FieldError("spec.nodeName", node, "node " + node + " is not registered"));
    }
    return NodeAdmission.refusal(r.admissionState(), spec);
  }

  /** Re-resolve the config in force; the events that record any change. */
  private List<Event> resolve(Record r) {
    if (!r.registered()) {
      return List.of();
    }
    NodeSharing.Resolution resolution =
        NodeSharing.resolveWithErrors(
            r.config(),
            r.manifest().labels(),
            r.manifest().annotations(),
            r.manifest().capacity(),
            r.podsOf(PodSharing.Kind.SHARED),
            r.podsOf(PodSharing.Kind.EXCLUSIVE));
    SharingConfig config = resolution.config();
    Instant now = clock.now();
    List<NodeCondition> conditions =
        NodeStatusCalculator.desired(
                r.manifest(), r.healthyGpus(), config, reserved, r.conditions(), now)
            .conditions();
    List<Event> events = new ArrayList<>();
    if (!config.equals(r.config()) || !sameConditions(conditions, r.conditions())) {
      events.add(new ConfigResolved(config, conditions));
      boolean newProblem =
          !config.valid()
              && (!config.validReason().equals(r.config().validReason())
                  || !config.validMessage().equals(r.config().validMessage()));
      if (newProblem) {
        events.add(
            new NodeEventRecorded(
                new EventNote("Warning", config.validReason(), config.validMessage(), now)));
      }
      if (config.active() != r.config().active()) {
        events.add(
            new NodeEventRecorded(
                new EventNote(
                    "Normal",
                    "GPUSharePolicyChanged",
                    "gpu share policy is " + config.active() + ".",
                    now)));
      }
    }
    return events;
  }

  /** Same status, reason and message per type: nothing a user would see changed. */
  private static boolean sameConditions(List<NodeCondition> a, List<NodeCondition> b) {
    return key(a).equals(key(b));
  }

  private static List<String> key(List<NodeCondition> conditions) {
    return conditions.stream()
        .map(c -> c.type() + "|" + c.status() + "|" + c.reason() + "|" + c.message())
        .collect(Collectors.toList());
  }

  private static Map<String, String> nullable(Map<String, String> m) {
    return m == null ? Map.of() : m;
  }

  @Override
  public EventHandler<Record, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(NodeActor::apply);
  }

  static Record apply(Record r, Event event) {
    if (event instanceof Registered e) {
      return new Record(
          e.manifest(), e.gpus(), r.config(), r.conditions(), r.bound(), r.events(), r.unhealthy());
    }
    if (event instanceof Patched e) {
      NodeManifest m = r.manifest();
      NodeManifest patched =
          new NodeManifest(
              m.name(),
              merge(m.labels(), e.labels()),
              merge(m.annotations(), e.annotations()),
              m.capacity(),
              m.allocatable());
      return new Record(
          patched, r.gpus(), r.config(), r.conditions(), r.bound(), r.events(), r.unhealthy());
    }
    if (event instanceof PodBound e) {
      Map<String, Bound> bound = new TreeMap<>(r.bound());
      bound.put(e.key().entityId(), new Bound(e.key(), e.spec()));
      return new Record(
          r.manifest(), r.gpus(), r.config(), r.conditions(), bound, r.events(), r.unhealthy());
    }
    if (event instanceof PodUnbound e) {
      Map<String, Bound> bound = new TreeMap<>(r.bound());
      bound.remove(e.key().entityId());
      return new Record(
          r.manifest(), r.gpus(), r.config(), r.conditions(), bound, r.events(), r.unhealthy());
    }
    if (event instanceof ConfigResolved e) {
      return new Record(
          r.manifest(), r.gpus(), e.config(), e.conditions(), r.bound(), r.events(), r.unhealthy());
    }
    if (event instanceof GpuHealthChanged e) {
      List<String> unhealthy = new ArrayList<>(r.unhealthy());
      unhealthy.remove(e.uuid());
      if (!e.healthy()) {
        unhealthy.add(e.uuid());
      }
      return new Record(
          r.manifest(), r.gpus(), r.config(), r.conditions(), r.bound(), r.events(), unhealthy);
    }
    if (event instanceof NodeEventRecorded e) {
      List<EventNote> events = new ArrayList<>(r.events());
      events.add(e.event());
      if (events.size() > MAX_EVENTS) {
        events = events.subList(events.size() - MAX_EVENTS, events.size());
      }
      return new Record(
          r.manifest(), r.gpus(), r.config(), r.conditions(), r.bound(), events, r.unhealthy());
    }
    throw new IllegalArgumentException("unknown event " + event);
  }

  private static Map<String, String> merge(Map<String, String> base, Map<String, String> patch) {
    Map<String, String> merged = new LinkedHashMap<>(base == null ? Map.of() : base);
    patch.forEach(
        (k, v) -> {
          if (v == null) {
            merged.remove(k);
          } else {
            merged.put(k, v);
          }
        });
    return new TreeMap<>(merged);
  }
}
