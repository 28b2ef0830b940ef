package dev.gpushare.node.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.node.cluster.ShardPlacement.Region;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The placement rule of node shards, without actors (ARCHITECTURE.md §2 "Sharding"). */
class ShardPlacementTest {
  static final Region A = member("pekko://gpushare@10.0.0.1:25520", "node-a");
  static final Region B = member("pekko://gpushare@10.0.0.2:25520", "node-b");
  static final Region C = member("pekko://gpushare@10.0.0.3:25520", "node-c");
  static final Region CONTROL = new Region("pekko://gpushare@10.0.9.9:25520", Set.of(), true);

  static Region member(String address, String node) {
    return new Region(address, Set.of(node), true);
  }

  static Region notServing(Region r) {
    return new Region(r.address(), r.nodes(), false);
  }

  // ---------------------------------------------------------------- allocate

  @Test
  void aNodesShardGoesToTheMemberOnThatNode() {
    List<Region> all = List.of(A, B, C, CONTROL);
    assertEquals(A, ShardPlacement.allocate("node-a", all));
    assertEquals(B, ShardPlacement.allocate("node-b", all));
    assertEquals(C, ShardPlacement.allocate("node-c", all));
  }

  @Test
  void theOwnMemberWinsWhateverTheOrderOfTheRegions() {
    List<Region> all = new ArrayList<>(List.of(A, B, C, CONTROL));
    for (int i = 0; i < all.size(); i++) {
      Collections.rotate(all, 1);
      assertEquals(B, ShardPlacement.allocate("node-b", all), all.toString());
    }
  }

  @Test
  void aShardWithoutItsOwnMemberGoesToTheSameMemberWhateverTheOrderOrTheEntityType() {
    List<Region> all = new ArrayList<>(List.of(A, B, C, CONTROL));
    Region first = ShardPlacement.allocate("node-z", all);
    for (int i = 0; i < all.size(); i++) {
      Collections.rotate(all, 1);
      // Each entity type's coordinator decides alone; the same answer keeps a node's entities
      // together.
      assertEquals(first, ShardPlacement.allocate("node-z", all));
      assertEquals(first, ShardPlacement.allocate("node-z", List.copyOf(all)));
    }
  }

  @Test
  void shardsWithoutAMemberSpreadOverTheMembers() {
    List<Region> all = List.of(A, B, C, CONTROL);
    Map<Region, Integer> count = new HashMap<>();
    for (int i = 0; i < 400; i++) {
      count.merge(ShardPlacement.allocate("gpu-node-" + i, all), 1, Integer::sum);
    }
    assertEquals(Set.copyOf(all), count.keySet(), count.toString());
    count.values().forEach(n -> assertTrue(n > 60 && n < 140, count.toString()));
  }

  @Test
  void aMemberThatGoesMovesOnlyItsOwnShards() {
    List<Region> all = List.of(A, B, C, CONTROL);
    List<Region> withoutC = List.of(A, B, CONTROL);
    for (int i = 0; i < 200; i++) {
      String shard = "gpu-node-" + i;
      Region before = ShardPlacement.allocate(shard, all);
      Region after = ShardPlacement.allocate(shard, withoutC);
      if (!before.equals(C)) {
        assertEquals(before, after, shard);
      }
    }
  }

  @Test
  void embeddedModeHasOneMemberWithoutRolesThatTakesEveryShard() {
    Region only = new Region("pekko://gpushare@127.0.0.1:40001", Set.of(), true);
    for (String shard : List.of("node-1", "demo", "one", "42")) {
      assertEquals(only, ShardPlacement.allocate(shard, List.of(only)));
    }
  }

  @Test
  void aMemberThatDoesNotServeIsPassedOverEvenForItsOwnNode() {
    Region aLeaving = notServing(A);
    Region chosen = ShardPlacement.allocate("node-a", List.of(aLeaving, B, C));
    assertTrue(Set.of(B, C).contains(chosen), chosen.toString());
    // ... and the other shards never go to it either.
    for (int i = 0; i < 50; i++) {
      assertTrue(
          !ShardPlacement.allocate("gpu-node-" + i, List.of(aLeaving, B, C)).equals(aLeaving));
    }
  }

  @Test
  void whenNoMemberServesAnyRegionIsBetterThanNone() {
    Region a = notServing(A);
    Region b = notServing(B);
    assertEquals(a, ShardPlacement.allocate("node-a", List.of(b, a)));
    Region any = ShardPlacement.allocate("node-z", List.of(a, b));
    assertTrue(Set.of(a, b).contains(any));
  }

  @Test
  void twoServingMembersOfOneNodeAreToldApartByAddress() {
    Region a1 = member("pekko://gpushare@10.0.0.1:25520", "node-a");
    Region a2 = member("pekko://gpushare@10.0.0.7:25520", "node-a");
    assertEquals(a1, ShardPlacement.allocate("node-a", List.of(a2, B, a1)));
    assertEquals(a1, ShardPlacement.allocate("node-a", List.of(a1, a2)));
  }

  @Test
  void aMemberOnSeveralNodesTakesEachOfTheirShards() {
    Region ab = new Region("pekko://gpushare@10.0.0.5:25520", Set.of("node-a", "node-b"), true);
    assertEquals(ab, ShardPlacement.allocate("node-a", List.of(C, ab)));
    assertEquals(ab, ShardPlacement.allocate("node-b", List.of(C, ab)));
  }

  @Test
  void noRegionIsAnError() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ShardPlacement.allocate("x", List.of()));
    assertTrue(e.getMessage().contains("shard x"), e.getMessage());
  }

  @Test
  void theWeightIsAFixedFunctionOfAddressAndShard() {
    // Pinned: a coordinator on another JVM or a later version must decide the same.
    assertEquals(
        ShardPlacement.weight("pekko://gpushare@10.0.0.1:25520", "node-z"),
        ShardPlacement.weight("pekko://gpushare@10.0.0.1:25520", "node-z"));
    assertTrue(
        ShardPlacement.weight("pekko://gpushare@10.0.0.1:25520", "node-z")
            != ShardPlacement.weight("pekko://gpushare@10.0.0.1:25520", "node-y"));
    // address NUL shard: "ab"+"c" and "a"+"bc" are different inputs.
    assertTrue(ShardPlacement.weight("ab", "c") != ShardPlacement.weight("a", "bc"));
  }

  // ---------------------------------------------------------------- rebalance

  static Map<Region, List<String>> allocations(Object... regionThenShards) {
    Map<Region, List<String>> m = new LinkedHashMap<>();
    for (int i = 0; i < regionThenShards.length; i += 2) {
      m.put(
          (Region) regionThenShards[i],
          List.of(((String) regionThenShards[i + 1]).split(",")).stream()
              .filter(s -> !s.isEmpty())
              .toList());
    }
    return m;
  }

  @Test
  void aShardComesHomeWhenItsNodesMemberAppears() {
    // node-a's member was away; its shard went to B. A new member on node-a has joined.
    Region aBack = member("pekko://gpushare@10.0.0.8:25520", "node-a");
    Map<Region, List<String>> now =
        allocations(B, "node-a,node-b", C, "node-c", CONTROL, "node-z", aBack, "");
    assertEquals(Set.of("node-a"), ShardPlacement.rebalance(now, Set.of()));
    // Once handed off, the coordinator allocates it again: to the member on node-a.
    assertEquals(aBack, ShardPlacement.allocate("node-a", now.keySet()));
  }

  @Test
  void aShardIsNeverMovedAwayFromItsOwnNodesMember() {
    // Even when the load is uneven: A holds many shards, CONTROL none.
    Map<Region, List<String>> now =
        allocations(
            A,
            "node-a,"
                + IntStream.range(0, 30).mapToObj(i -> "x" + i).collect(Collectors.joining(",")),
            B,
            "node-b",
            CONTROL,
            "");
    Set<String> moved = ShardPlacement.rebalance(now, Set.of());
    assertTrue(!moved.contains("node-a") && !moved.contains("node-b"), moved.toString());
    assertEquals(Set.of(), moved, "no rebalancing for load alone");
  }

  @Test
  void shardsWithoutAServingMemberOfTheirOwnStayWhereTheyAre() {
    Map<Region, List<String>> now = allocations(B, "node-a,node-q", CONTROL, "node-z");
    assertEquals(Set.of(), ShardPlacement.rebalance(now, Set.of()));
    // node-a's member is back but not Up yet (joining) or unreachable: wait for it.
    Map<Region, List<String>> joining = new LinkedHashMap<>(now);
    joining.put(notServing(A), List.of());
    assertEquals(Set.of(), ShardPlacement.rebalance(joining, Set.of()));
  }

  @Test
  void aShardAlreadyBeingHandedOffIsLeftAlone() {
    Map<Region, List<String>> now = allocations(B, "node-a,node-c", A, "", C, "");
    assertEquals(Set.of("node-c"), ShardPlacement.rebalance(now, Set.of("node-a")));
  }

  @Test
  void anUnreachableRegionIsNotAskedToHandOff() {
    Region bUnreachable = notServing(B);
    Map<Region, List<String>> now = allocations(bUnreachable, "node-a", A, "");
    assertEquals(Set.of(), ShardPlacement.rebalance(now, Set.of()));
  }

  @Test
  void aShardOnTheOlderOfTwoMembersOfItsNodeStays() {
    Region a1 = member("pekko://gpushare@10.0.0.1:25520", "node-a");
    Region a2 = member("pekko://gpushare@10.0.0.7:25520", "node-a");
    Map<Region, List<String>> now = allocations(a2, "node-a", a1, "");
    assertEquals(Set.of(), ShardPlacement.rebalance(now, Set.of()));
  }

  @Test
  void afterARebalanceEveryShardWithAServingMemberIsHome() {
    List<Region> members = List.of(A, B, C, CONTROL);
    Map<Region, List<String>> scrambled =
        new TreeMap<>(java.util.Comparator.comparing(Region::address));
    members.forEach(r -> scrambled.put(r, new ArrayList<>()));
    List<String> shards = List.of("node-a", "node-b", "node-c", "node-y", "node-z");
    for (int i = 0; i < shards.size(); i++) {
      scrambled.get(members.get((i + 1) % members.size())).add(shards.get(i));
    }
    Set<String> moved = ShardPlacement.rebalance(scrambled, Set.of());
    assertEquals(Set.of("node-a", "node-b", "node-c"), moved);
    for (String shard : moved) {
      Region home = ShardPlacement.allocate(shard, members);
      assertTrue(home.runsOn(shard), shard + " -> " + home);
    }
  }
}
