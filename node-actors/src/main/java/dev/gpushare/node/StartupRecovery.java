package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.done;

import dev.gpushare.arbiter.actor.NodeArbiter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Start-up and recovery (README "Crash safety"): the configured nodes that are new are registered,
 * then every known node is brought in line — its GPUs described again, its arbiter told the config
 * and reconciled with the pods its {@link NodeActor} has bound, each bound pod's name claimed again
 * in the index — so a crash in the middle of creating or deleting a pod leaves nothing half-done.
 * The service is ready once that is done; after a member leaves the cluster every node is woken so
 * that its arbiter recovers where its shard now lives.
 */
final class StartupRecovery {
  private final ActorSystem<?> system;
  private final List<RuntimeSettings.ConfiguredNode> configured;
  private final ServiceAsks asks;
  private final Entities entities;
  private final Duration timeout;
  private final NodeRegistration registration;
  private volatile boolean ready;

  StartupRecovery(
      ActorSystem<?> system,
      List<RuntimeSettings.ConfiguredNode> configured,
      ServiceAsks asks,
      Entities entities,
      Duration timeout,
      NodeRegistration registration) {
    this.system = system;
    this.configured = configured;
    this.asks = asks;
    this.entities = entities;
    this.timeout = timeout;
    this.registration = registration;
  }

  /** Whether {@link #start} has completed. */
  boolean ready() {
    return ready;
  }

  /** Registers configured nodes that are new, then brings every known node in line. */
  CompletionStage<Done> start() {
    CompletionStage<Done> chain = done();
    for (RuntimeSettings.ConfiguredNode sim : configured) {
      String name = sim.manifest().name();
      chain =
          chain.thenCompose(
              d ->
                  asks.nodeRecord(name)
                      .thenCompose(
                          record ->
                              record.registered()
                                  ? done()
                                  : registration
                                      .register(sim.manifest(), sim.gpuModel(), sim.gpuMemoryMiB())
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
              return registration
                  .syncArbiter(node, record)
                  .thenCompose(d -> asks.decide(node, r -> new NodeArbiter.Reconcile(bound, r)))
                  .thenApply(o -> Done.getInstance());
            });
  }
}
