package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuActor;
import dev.gpushare.node.cluster.NodeShardAllocation;
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

  private Entities(ClusterSharding sharding) {
    this.sharding = sharding;
  }

  /** Starts the four entity types on this member. */
  public static Entities init(
      ActorSystem<?> system,
      ReservedPerGpu reserved,
      ArbiterClock clock,
      PodActor.Listener podListener,
      java.util.function.Function<String, dev.gpushare.arbiter.actor.ArbiterPeers> peers,
      dev.gpushare.arbiter.actor.ArbiterMetrics arbiterMetrics) {
    ClusterSharding sharding = ClusterSharding.get(system);
    sharding.init(
        Entity.of(
                ARBITER,
                ctx ->
                    NodeArbiter.create(
                        ctx.getEntityId(), peers.apply(ctx.getEntityId()), clock, arbiterMetrics))
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
    sharding.init(
        Entity.of(POD, ctx -> PodActor.create(podKeyOf(ctx.getEntityId()), podListener))
            .withMessageExtractor(new ByNode<>())
            .withAllocationStrategy(NodeShardAllocation.create()));
    sharding.init(Entity.of(DIRECTORY, ctx -> NodeDirectory.create()));
    // Names of pods spread over the default number of shards (by hash), not by node.
    sharding.init(Entity.of(POD_INDEX, ctx -> PodIndex.create(ctx.getEntityId())));
    return new Entities(sharding);
  }

  public EntityRef<NodeDirectory.Command> directory() {
    return sharding.entityRefFor(DIRECTORY, DIRECTORY_ID);
  }

  /** The index entry of the pod named {@code ref} ({@code ns/name}). */
  public EntityRef<PodIndex.Command> podIndex(String ref) {
    return sharding.entityRefFor(POD_INDEX, ref);
  }

  public EntityRef<NodeArbiter.Command> arbiter(String node) {
    return sharding.entityRefFor(ARBITER, node);
  }

  public EntityRef<NodeActor.Command> node(String node) {
    return sharding.entityRefFor(NODE, node);
  }

  public EntityRef<GpuActor.Command> gpu(String node, String uuid) {
    return sharding.entityRefFor(GPU, node + ":" + uuid);
  }

  public EntityRef<PodActor.Command> pod(String node, PodKey key) {
    return sharding.entityRefFor(POD, node + ":" + key.entityId());
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
