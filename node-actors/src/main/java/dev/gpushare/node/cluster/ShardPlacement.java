package dev.gpushare.node.cluster;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where a node's shard lives (ARCHITECTURE.md §2 "Sharding"): the pure rule behind {@link
 * NodeShardAllocation}, with no actors and no cluster state.
 *
 * <ol>
 *   <li>Shard {@code X} goes to a serving member that runs on node {@code X} (cluster role {@code
 *       node:X}). NVML calls and a node's intra-node messages then stay on the node.
 *   <li>When no such member serves (embedded mode, a control-plane-only deployment, the node's
 *       member is down), it goes to the serving member that ranks highest for that shard by
 *       rendezvous hashing of (member address, shard). Every entity type decides alike, so a node's
 *       arbiter, node, GPU and pod entities stay together on one member even there; a member that
 *       leaves moves only its own shards, and the decision needs no shard counts.
 *   <li>Rebalancing moves a shard only to its own node's member (one that has just joined or come
 *       back) and never moves a shard away from its own node's member.
 * </ol>
 *
 * "Serving" means Up or WeaklyUp and reachable; a member that is joining, leaving or unreachable is
 * chosen only when no member serves. Ties are broken by address, so that every coordinator (the
 * coordinator moves with the oldest member) decides the same.
 */
public final class ShardPlacement {
  private ShardPlacement() {}

  /**
   * A shard region (one per member and entity type) as the rule sees it.
   *
   * @param address the member's address, unique among the regions of one entity type
   * @param nodes the nodes the member runs on (its {@code node:<name>} roles): one for a DaemonSet
   *     member, none for an embedded or control-plane member
   * @param serving Up or WeaklyUp, and reachable
   */
  public record Region(String address, Set<String> nodes, boolean serving) {
    public Region {
      nodes = Set.copyOf(nodes);
    }

    /** Whether this is (one of) the member(s) of node {@code shard}. */
    public boolean runsOn(String shard) {
      return nodes.contains(shard);
    }
  }

  private static final Comparator<Region> BY_ADDRESS = Comparator.comparing(Region::address);

  /**
   * The region for a shard that has none yet.
   *
   * @param regions the coordinator's active regions; not empty
   */
  public static Region allocate(String shard, Collection<Region> regions) {
    if (regions.isEmpty()) {
      throw new IllegalArgumentException("no region to allocate shard " + shard + " to");
    }
    List<Region> serving = regions.stream().filter(Region::serving).toList();
    Collection<Region> pool = serving.isEmpty() ? regions : serving;
    return pool.stream()
        .filter(r -> r.runsOn(shard))
        .min(BY_ADDRESS)
        .orElseGet(
            () ->
                pool.stream()
                    .max(
                        Comparator.comparingLong((Region r) -> weight(r.address(), shard))
                            .thenComparing(BY_ADDRESS.reversed()))
                    .orElseThrow());
  }

  /**
   * The shards to hand off now: those that sit on a serving member of another node while a member
   * of their own node serves. After the hand-off the coordinator allocates them again, and {@link
   * #allocate} sends them home.
   *
   * @param allocations the shards of each active region
   * @param inProgress shards already being handed off (left alone)
   */
  public static Set<String> rebalance(
      Map<Region, ? extends Collection<String>> allocations, Set<String> inProgress) {
    Set<String> homesServing = new TreeSet<>();
    allocations.keySet().stream()
        .filter(Region::serving)
        .forEach(r -> homesServing.addAll(r.nodes()));
    Set<String> move = new TreeSet<>();
    allocations.forEach(
        (region, shards) -> {
          // An unreachable or departing region cannot hand off; the split-brain resolver or the
          // member's own leaving frees its shards, and allocate() then sends them home.
          if (!region.serving()) {
            return;
          }
          for (String shard : shards) {
            if (!inProgress.contains(shard)
                && !region.runsOn(shard)
                && homesServing.contains(shard)) {
              move.add(shard);
            }
          }
        });
    return move;
  }

  /**
   * The rendezvous weight of a member for a shard: 64-bit FNV-1a of {@code address NUL shard},
   * finished with the SplitMix64 mixer. Stable across JVMs and versions, unlike {@code hashCode} of
   * arbitrary objects, so that a coordinator that moves decides as its predecessor did.
   */
  static long weight(String address, String shard) {
    long h = 0xcbf29ce484222325L;
    for (byte b : (address + '\0' + shard).getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    h ^= h >>> 30;
    h *= 0xbf58476d1ce4e5b9L;
    h ^= h >>> 27;
    h *= 0x94d049bb133111ebL;
    h ^= h >>> 31;
    return h;
  }
}
