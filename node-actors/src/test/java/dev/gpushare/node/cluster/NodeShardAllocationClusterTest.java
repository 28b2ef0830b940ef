package dev.gpushare.node.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.node.GpuShareRuntime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.typed.ShardingEnvelope;
import org.apache.pekko.cluster.sharding.typed.ShardingMessageExtractor;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Down;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Members of one cluster on loopback, each on its own node (role {@code node:<name>}) or on none,
 * with two node-sharded entity types that report where they run: a node's entities live on that
 * node's member, move to another member when it leaves or is downed, and come back when a member of
 * the node joins again (ARCHITECTURE.md §2 "Sharding").
 */
class NodeShardAllocationClusterTest {
  static final Duration MOVE = Duration.ofSeconds(30);
  static final Duration ASK = Duration.ofSeconds(3);

  /** Asks an entity for the address of the member it runs on. */
  public record Where(ActorRef<String> replyTo) implements JsonSerializable {}

  static final EntityTypeKey<Where> ARBITER = EntityTypeKey.create(Where.class, "TestArbiter");
  static final EntityTypeKey<Where> POD = EntityTypeKey.create(Where.class, "TestPod");

  /** Entities.ByNode's contract: entity id {@code <node>:<rest>}, shard = node. */
  static final class ByNode extends ShardingMessageExtractor<ShardingEnvelope<Where>, Where> {
    @Override
    public String entityId(ShardingEnvelope<Where> envelope) {
      return envelope.entityId();
    }

    @Override
    public String shardId(String entityId) {
      int colon = entityId.indexOf(':');
      return colon < 0 ? entityId : entityId.substring(0, colon);
    }

    @Override
    public Where unwrapMessage(ShardingEnvelope<Where> envelope) {
      return envelope.message();
    }
  }

  static Behavior<Where> reporter() {
    return Behaviors.setup(
        ctx ->
            Behaviors.receive(Where.class)
                .onMessage(
                    Where.class,
                    w -> {
                      w.replyTo().tell(ctx.getSystem().address().toString());
                      return Behaviors.same();
                    })
                .build());
  }

  final List<ActorTestKit> kits = new ArrayList<>();

  @AfterEach
  void stopAll() {
    // Youngest first, so that the oldest (coordinator) member goes last and nothing waits for it.
    for (int i = kits.size() - 1; i >= 0; i--) {
      kits.get(i).shutdownTestKit();
    }
  }

  static Config config(Optional<String> node, Optional<ActorSystem<?>> seed) {
    Config seeds =
        ConfigFactory.parseMap(
            java.util.Map.of(
                "pekko.cluster.seed-nodes",
                seed.map(s -> List.of(address(s).toString())).orElse(List.of())));
    return seeds
        .withFallback(
            ConfigFactory.parseString(
                "pekko.loglevel = WARNING\n"
                    // Production keeps sharding's 10 s; here a returning member gets its shard
                    // sooner.
                    + "pekko.cluster.sharding.rebalance-interval = 500ms\n"
                    + "pekko.cluster.jmx.enabled = off\n"
                    + "pekko.actor.serialization-bindings {\n"
                    + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                    + "}\n"))
        .withFallback(new ClusterFormation(false, node, Optional.empty()).config())
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load());
  }

  /** A member on {@code node} (or on none), joined to {@code seed} (or forming the cluster). */
  ActorSystem<Void> member(Optional<String> node, Optional<ActorSystem<?>> seed) throws Exception {
    ActorTestKit kit = ActorTestKit.create("gpushare", config(node, seed));
    kits.add(kit);
    ActorSystem<Void> system = kit.system();
    for (EntityTypeKey<Where> key : List.of(ARBITER, POD)) {
      ClusterSharding.get(system)
          .init(
              Entity.of(key, ctx -> reporter())
                  .withMessageExtractor(new ByNode())
                  .withAllocationStrategy(NodeShardAllocation.create()));
    }
    // Without seed nodes the member forms the cluster; with them it joins through them.
    new ClusterFormation(false, node, Optional.empty())
        .start(system)
        .toCompletableFuture()
        .get(20, TimeUnit.SECONDS);
    return system;
  }

  static Address address(ActorSystem<?> system) {
    return Cluster.get(system).selfMember().address();
  }

  /** Where entity {@code id} of {@code key} runs, asked from {@code from}. */
  static String where(ActorSystem<?> from, EntityTypeKey<Where> key, String id) throws Exception {
    return ClusterSharding.get(from)
        .entityRefFor(key, id)
        .<String>ask(Where::new, ASK)
        .toCompletableFuture()
        .get(ASK.toMillis() + 1000, TimeUnit.MILLISECONDS);
  }

  /** Waits until {@code observer} sees exactly {@code members} Up. */
  static void awaitUp(ActorSystem<?> observer, ActorSystem<?>... members) {
    Set<Address> expected = new java.util.HashSet<>();
    for (ActorSystem<?> m : members) {
      expected.add(address(m));
    }
    TestProbe<Object> probe = TestProbe.create(observer);
    probe.awaitAssert(
        MOVE,
        () -> {
          Set<Address> up = new java.util.HashSet<>();
          for (Member m : Cluster.get(observer).state().getMembers()) {
            if (m.status() == MemberStatus.up()) {
              up.add(m.address());
            }
          }
          assertEquals(expected, up);
          return null;
        });
  }

  /** Waits until both entity types of {@code node} answer from one member, and gives it. */
  static String awaitNodeOn(ActorSystem<?> from, String node, Set<String> allowed) {
    TestProbe<Object> probe = TestProbe.create(from);
    return probe.awaitAssert(
        MOVE,
        () -> {
          String arbiter = where(from, ARBITER, node + ":arbiter");
          String pod = where(from, POD, node + ":default/pod-1/uid-1");
          assertEquals(arbiter, pod, node + ": the arbiter and the pods live together");
          assertTrue(allowed.contains(arbiter), node + " on " + arbiter + ", expected " + allowed);
          return arbiter;
        });
  }

  @Test
  void aNodesEntitiesLiveOnItsMemberMoveWhenItGoesAndComeBackWhenItReturns() throws Exception {
    ActorSystem<Void> b = member(Optional.of("b"), Optional.empty()); // oldest: the coordinators
    ActorSystem<Void> control = member(Optional.empty(), Optional.of(b)); // on no node
    ActorSystem<Void> a = member(Optional.of("a"), Optional.of(b));
    awaitUp(b, b, control, a);
    String addrA = address(a).toString();
    String addrB = address(b).toString();
    String addrControl = address(control).toString();
    assertEquals(
        List.of(NodeShardAllocation.roleFor("a")),
        Cluster.get(a).selfMember().getRoles().stream()
            .filter(r -> r.startsWith("node:"))
            .toList());

    // 1. Each node's entities on its own member, whoever asks.
    for (ActorSystem<?> from : List.of(a, b, control)) {
      assertEquals(addrA, awaitNodeOn(from, "a", Set.of(addrA)));
      assertEquals(addrB, awaitNodeOn(from, "b", Set.of(addrB)));
    }
    // A node without a member of its own: on some member, all its entities together.
    String z = awaitNodeOn(control, "z", Set.of(addrA, addrB, addrControl));

    // 2. a's member leaves (a rolling update, a drained node): node a moves, b stays home.
    kits.remove(2).shutdownTestKit();
    awaitUp(b, b, control);
    String away = awaitNodeOn(control, "a", Set.of(addrB, addrControl));
    assertEquals(addrB, awaitNodeOn(control, "b", Set.of(addrB)));

    // 3. A new member on node a joins: rebalancing brings node a home, and only node a.
    ActorSystem<Void> a2 = member(Optional.of("a"), Optional.of(control));
    awaitUp(b, b, control, a2);
    String addrA2 = address(a2).toString();
    assertNotEquals(addrA, addrA2);
    assertEquals(addrA2, awaitNodeOn(b, "a", Set.of(addrA2)));
    assertEquals(addrB, awaitNodeOn(a2, "b", Set.of(addrB)));
    if (!z.equals(addrA)) {
      assertEquals(z, awaitNodeOn(a2, "z", Set.of(z)), "z was not on the member that left");
    }

    // 4. The member on node a is downed (a crash, as the split-brain resolver decides it): node a
    //    moves again.
    Cluster.get(b).manager().tell(new Down(address(a2)));
    awaitUp(b, b, control);
    assertEquals(away, awaitNodeOn(b, "a", Set.of(addrB, addrControl)));
    assertEquals(addrB, awaitNodeOn(control, "b", Set.of(addrB)));
  }
}
