package dev.gpushare.node.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Address;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.cluster.ClusterEvent.CurrentClusterState;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardCoordinator;
import org.apache.pekko.dispatch.Futures;
import scala.collection.immutable.IndexedSeq;
import scala.concurrent.Future;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The shard allocation strategy of the node-sharded entity types ({@code Entities}): shard {@code
 * X} lives on the member whose cluster role is {@code node:X} whenever that member serves, else on
 * another member, and comes back when it does (the rule: {@link ShardPlacement}).
 *
 * <p>A member says which node it runs on through its roles: {@link #rolesConfig} (or {@link
 * ClusterFormation#config()}) puts {@code pekko.cluster.roles = ["node:" + NODE_NAME]} in its
 * actor-system config. Roles and reachability come from the cluster state of the member that hosts
 * the shard coordinator.
 *
 * <p>One instance per entity type ({@code
 * Entity.withAllocationStrategy(NodeShardAllocation.create())}); the coordinator calls {@link
 * #start(ActorSystem)} before anything else.
 */
public final class NodeShardAllocation extends ShardCoordinator.AbstractShardAllocationStrategy
    implements ShardCoordinator.ActorSystemDependentAllocationStrategy {

  /** Roles that name a node start with this. */
  public static final String ROLE_PREFIX = "node:";

  private volatile Cluster cluster;

  private NodeShardAllocation() {}

  public static NodeShardAllocation create() {
    return new NodeShardAllocation();
  }

  /** The cluster role of the member that runs on {@code node}. */
  public static String roleFor(String node) {
    if (node == null || node.isBlank()) {
      throw new IllegalArgumentException(
          "node name: expected the Kubernetes node name (NODE_NAME), got '" + node + "'");
    }
    return ROLE_PREFIX + node;
  }

  /** The node a role names, if it is a node role. */
  public static Optional<String> nodeOf(String role) {
    return role.startsWith(ROLE_PREFIX) && role.length() > ROLE_PREFIX.length()
        ? Optional.of(role.substring(ROLE_PREFIX.length()))
        : Optional.empty();
  }

  /**
   * {@code pekko.cluster.roles = ["node:<node>"]} for a member that runs on {@code node}; empty (no
   * role, any shard may come here) for one that runs on no particular node. Put it above the
   * runtime's config.
   */
  public static Config rolesConfig(Optional<String> node) {
    return node.map(n -> ConfigFactory.parseMap(Map.of("pekko.cluster.roles", List.of(roleFor(n)))))
        .orElse(ConfigFactory.empty());
  }

  @Override
  public void start(ActorSystem system) {
    cluster = Cluster.get(system);
  }

  @Override
  public Future<ActorRef> allocateShard(
      ActorRef requester, String shardId, Map<ActorRef, IndexedSeq<String>> current) {
    if (current.isEmpty()) {
      return Futures.failed(new IllegalStateException("no shard region to allocate " + shardId));
    }
    Map<ShardPlacement.Region, ActorRef> regions = regions(current.keySet());
    return Futures.successful(regions.get(ShardPlacement.allocate(shardId, regions.keySet())));
  }

  @Override
  public Future<java.util.Set<String>> rebalance(
      Map<ActorRef, IndexedSeq<String>> current, java.util.Set<String> inProgress) {
    Map<ActorRef, ShardPlacement.Region> byRef = new HashMap<>();
    regions(current.keySet()).forEach((region, ref) -> byRef.put(ref, region));
    Map<ShardPlacement.Region, Collection<String>> allocations = new LinkedHashMap<>();
    current.forEach(
        (ref, shards) -> allocations.put(byRef.get(ref), CollectionConverters.asJava(shards)));
    return Futures.successful(ShardPlacement.rebalance(allocations, inProgress));
  }

  /** The rule's view of each region, from the cluster state of this (the coordinator's) member. */
  private Map<ShardPlacement.Region, ActorRef> regions(Collection<ActorRef> refs) {
    Cluster c = cluster;
    Map<Address, Member> members = new HashMap<>();
    Set<Address> unreachable = new java.util.HashSet<>();
    if (c != null) {
      CurrentClusterState state = c.state();
      state.getMembers().forEach(m -> members.put(m.address(), m));
      state.getUnreachable().forEach(m -> unreachable.add(m.address()));
    }
    Map<ShardPlacement.Region, ActorRef> out = new LinkedHashMap<>();
    for (ActorRef ref : refs) {
      Address address = ref.path().address();
      if (!address.hasGlobalScope() && c != null) {
        address = c.selfAddress(); // this member's own region
      }
      Member member = members.get(address);
      Set<String> nodes = new TreeSet<>();
      boolean serving;
      if (member == null) {
        // Without cluster state (never in a coordinator) every region may take any shard.
        serving = c == null;
      } else {
        member.getRoles().forEach(role -> nodeOf(role).ifPresent(nodes::add));
        MemberStatus status = member.status();
        serving =
            (status == MemberStatus.up() || status == MemberStatus.weaklyUp())
                && !unreachable.contains(address);
      }
      out.put(new ShardPlacement.Region(address.toString(), nodes, serving), ref);
    }
    return out;
  }
}
