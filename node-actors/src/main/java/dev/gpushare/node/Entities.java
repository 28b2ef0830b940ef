package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuActor;
import dev.gpushare.node.cluster.NodeShardAllocation;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;

/**
 * The sharded entities of the arbiter and how they are found. Every entity of a node lives in the
 * shard named after the node (ARCHITECTURE.md §2 "Sharding"): entity ids start with {@code
 * <node>:}, and the shard id is that prefix, so on a cluster a node's arbiter, GPUs and pods live
 * together on the member that runs on that node.
 */
public final class Entities {
  public static final EntityTypeKey<NodeArbiter.Command> ARBITER =
      EntityTypeKey.create(NodeArbiter.Command.class, "NodeArbiter");
  public static final EntityTypeKey<NodeActor.Command> NODE =
      EntityTypeKey.create(NodeActor.Command.class, "Node");
  public static final EntityTypeKey<GpuActor.Command> GPU =
      EntityTypeKey.create(GpuActor.Command.class, "Gpu");
  public static final EntityTypeKey<PodActor.Command> POD =
      EntityTypeKey.create(PodActor.Command.class, "Pod");
  public static final EntityTypeKey<NodeDirectory.Command> DIRECTORY =
      EntityTypeKey.create(NodeDirectory.Command.class, "NodeDirectory");
  public static final EntityTypeKey<PodIndex.Command> POD_INDEX =
      EntityTypeKey.create(PodIndex.Command.class, "PodIndex");

  /** The directory of nodes is one entity, on any member. */
  static final String DIRECTORY_ID = "nodes";

  private final ClusterSharding sharding;
  private final Executor continuations;

  private Entities(ClusterSharding sharding, Executor continuations) {
    this.sharding = sharding;
    this.continuations = continuations;
  }

  /**
   * An entity as the service and the arbiter's peers call it. Its {@link #ask} completes on the
   * actor system's dispatcher, so that whatever is chained on the answer runs there.
   *
   * <p>Why not {@link EntityRef#ask} as it is: its {@code CompletionStage} is Scala's converted
   * future, whose non-async methods ({@code thenApply}, {@code thenCompose}, {@code whenComplete},
   * and Pekko's own {@code pipeToSelf}) run on {@code CompletableFuture}'s default executor — and
   * with fewer than three CPUs {@code ForkJoinPool.commonPool()} has parallelism 1, so that
   * executor starts <em>a new thread for every continuation</em>. On a 2-vCPU machine that cost
   * 2.7–6× of the throughput (src-test/BENCHMARKS.md, "Load").
   */
  public static final class Ref<M> {
    private final EntityRef<M> ref;
    private final Executor continuations;

    private Ref(EntityRef<M> ref, Executor continuations) {
      this.ref = ref;
      this.continuations = continuations;
    }

    public <R> CompletionStage<R> ask(
        org.apache.pekko.japi.function.Function<ActorRef<R>, M> message, Duration timeout) {
      return onDispatcher(ref.ask(message, timeout), continuations);
    }

    public void tell(M message) {
      ref.tell(message);
    }
  }

  /** {@code stage}'s outcome as a plain future completed on {@code executor}. */
  static <T> CompletionStage<T> onDispatcher(CompletionStage<T> stage, Executor executor) {
    CompletableFuture<T> plain = new CompletableFuture<>();
    stage.whenCompleteAsync(
        (value, failure) -> {
          if (failure != null) {
            plain.completeExceptionally(failure);
          } else {
            plain.complete(value);
          }
        },
        executor);
    return plain;
  }

  private <M> Ref<M> ref(EntityTypeKey<M> type, String id) {
    return new Ref<>(sharding.entityRefFor(type, id), continuations);
  }

  /** Starts the entity types on this member. */
  public static Entities init(
      ActorSystem<?> system,
      ReservedPerGpu reserved,
      ArbiterClock clock,
      PodActor.Listener podListener,
      java.util.function.Function<String, dev.gpushare.arbiter.actor.ArbiterPeers> peers,
      dev.gpushare.arbiter.actor.ArbiterMetrics arbiterMetrics) {
    ClusterSharding sharding = ClusterSharding.get(system);
    GpuChoice choice = gpuChoice(system);
    sharding.init(
        Entity.of(
                ARBITER,
                ctx ->
                    NodeArbiter.create(
                        ctx.getEntityId(),
                        peers.apply(ctx.getEntityId()),
                        clock,
                        arbiterMetrics,
                        choice))
            .withMessageExtractor(new ByNode<>())
            .withAllocationStrategy(NodeShardAllocation.create())
            // An arbiter runs timers (duration-based preemption): when its shard moves (home to
            // its node's member after a fail-over, or away from a member that left) it must start
            // again at once on the new member, not when the next request happens to arrive.
            .withSettings(ClusterShardingSettings.create(system).withRememberEntities(true)));
    sharding.init(
        Entity.of(NODE, ctx -> NodeActor.create(ctx.getEntityId(), reserved, clock))
            .withMessageExtractor(new ByNode<>())
            .withAllocationStrategy(NodeShardAllocation.create()));
    sharding.init(
        Entity.of(
                GPU,
                ctx -> {
                  String[] parts = ctx.getEntityId().split(":", 2);
                  return GpuActor.create(parts[0], parts[1]);
                })
            .withMessageExtractor(new ByNode<>())
            .withAllocationStrategy(NodeShardAllocation.create()));
    // A pod's actor and its index entry only record and answer (no timers; the listener is the
    // runtime's): when nobody has asked about a pod for a while they stop, and the next message
    // recovers them from the journal. An idle pod then costs no actor (BENCHMARKS.md, "Heap").
    ClusterShardingSettings idlePods = passivatingIdle(system);
    sharding.init(
        Entity.of(
                POD,
                ctx ->
                    PodActor.create(
                        nodeOf(ctx.getEntityId()),
                        podKeyOf(ctx.getEntityId()),
                        podListener,
                        (node, key) ->
                            sharding
                                .entityRefFor(ARBITER, node)
                                .tell(new NodeArbiter.Resync(key.entityId()))))
            .withMessageExtractor(new ByNode<>())
            .withAllocationStrategy(NodeShardAllocation.create())
            .withSettings(idlePods));
    sharding.init(Entity.of(DIRECTORY, ctx -> NodeDirectory.create()));
    // Names of pods spread over the default number of shards (by hash), not by node.
    sharding.init(
        Entity.of(POD_INDEX, ctx -> PodIndex.create(ctx.getEntityId())).withSettings(idlePods));
    return new Entities(sharding, system.executionContext());
  }

  /** The setting that passivates idle pod entities ({@code gpushare.passivate-idle-pods-after}). */
  static final String PASSIVATE_IDLE_PODS_AFTER = "gpushare.passivate-idle-pods-after";

  /** The setting that picks a grant's or pin's GPU inside a node ({@link GpuChoice}). */
  public static final String PLACEMENT = "gpushare.placement";

  /** {@code gpushare.placement} of {@code system}'s configuration. */
  public static GpuChoice gpuChoice(ActorSystem<?> system) {
    String value = system.settings().config().getString(PLACEMENT);
    return GpuChoice.byKey(value)
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    PLACEMENT + " = " + value + ": expected " + GpuChoice.keys()));
  }

  private static ClusterShardingSettings passivatingIdle(ActorSystem<?> system) {
    Duration after = system.settings().config().getDuration(PASSIVATE_IDLE_PODS_AFTER);
    if (after.isNegative() || after.isZero()) {
      throw new IllegalArgumentException(
          PASSIVATE_IDLE_PODS_AFTER + " = " + after + ": must be a positive duration, e.g. 2m");
    }
    return ClusterShardingSettings.create(system)
        .withPassivationStrategy(
            ClusterShardingSettings.PassivationStrategySettings$.MODULE$
                .defaults()
                .withIdleEntityPassivation(after));
  }

  public Ref<NodeDirectory.Command> directory() {
    return ref(DIRECTORY, DIRECTORY_ID);
  }

  /** The index entry of the pod named {@code ref} ({@code ns/name}). */
  public Ref<PodIndex.Command> podIndex(String ref) {
    return ref(POD_INDEX, ref);
  }

  public Ref<NodeArbiter.Command> arbiter(String node) {
    return ref(ARBITER, node);
  }

  public Ref<NodeActor.Command> node(String node) {
    return ref(NODE, node);
  }

  public Ref<GpuActor.Command> gpu(String node, String uuid) {
    return ref(GPU, node + ":" + uuid);
  }

  public Ref<PodActor.Command> pod(String node, PodKey key) {
    return ref(POD, node + ":" + key.entityId());
  }

  static String nodeOf(String entityId) {
    return entityId.split(":", 2)[0];
  }

  static PodKey podKeyOf(String entityId) {
    String[] nodeAndPod = entityId.split(":", 2);
    String[] parts = nodeAndPod[1].split("/", 3);
    return new PodKey(parts[0], parts[1], parts[2]);
  }

  /** Shard = the node named at the start of the entity id. */
  static final class ByNode<M> extends ShardingMessageExtractor<ShardingEnvelope<M>, M> {
    @Override
    public String entityId(ShardingEnvelope<M> envelope) {
      return envelope.entityId();
    }

    @Override
    public String shardId(String entityId) {
      int bar = entityId.indexOf(':');
      return bar < 0 ? entityId : entityId.substring(0, bar);
    }

    @Override
    public M unwrapMessage(ShardingEnvelope<M> envelope) {
      return envelope.message();
    }
  }
}
