package dev.gpushare.node;

import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The data plane (API.md "Data plane"): a pod's workload signals demand and release, each answered
 * with the pod's view once its arbiter's decision is written and nothing after it, and waits for
 * its grant by long poll or watches its view change ({@link PodWatches}).
 */
final class PodDataPlane {
  private final WriteGate gate;
  private final ServiceAsks asks;
  private final PodReads reads;
  private final PodWatches watches;

  PodDataPlane(WriteGate gate, ServiceAsks asks, PodReads reads, PodWatches watches) {
    this.gate = gate;
    this.asks = asks;
    this.reads = reads;
    this.watches = watches;
  }

  CompletionStage<PodView> demand(String namespace, String name) {
    return gate.writing(() -> reads.onPod(namespace, name, this::demanded));
  }

  private CompletionStage<PodView> demanded(Placed p) {
    // Its node's GPUs too are read while the arbiter decides.
    CompletionStage<PodActor.Record> record = asks.podRecord(p);
    CompletionStage<NodeActor.Record> node = asks.nodeRecord(p.node());
    return decided(p, record, NodeArbiter.Demand::new).thenCombine(node, reads::withGpuUse);
  }

  CompletionStage<PodView> release(String namespace, String name) {
    return gate.writing(() -> reads.onPod(namespace, name, this::released));
  }

  private CompletionStage<PodView> released(Placed p) {
    return decided(p, asks.podRecord(p), NodeArbiter.Release::new).thenCompose(reads::withGpuUse);
  }

  /**
   * The pod's view once its arbiter has decided {@code command}. The pod's {@code record} is read
   * while the arbiter decides: the answer waits for the decision's write and nothing after it.
   */
  private CompletionStage<PodView> decided(
      Placed p,
      CompletionStage<PodActor.Record> record,
      BiFunction<String, ActorRef<NodeArbiter.Outcome>, NodeArbiter.Command> command) {
    return PodReads.answered(
        p, asks.decide(p.node(), r -> command.apply(p.key().entityId(), r)), record);
  }

  CompletionStage<PodView> awaitGrant(String namespace, String name, Duration wait) {
    return reads
        .placed(namespace, name)
        .thenCompose(p -> watches.awaitRunning(p.key().ref(), wait, () -> reads.podView(p)));
  }

  Source<PodView, NotUsed> watch(String namespace, String name) {
    return Source.completionStage(reads.placed(namespace, name).toCompletableFuture())
        .flatMapConcat(p -> watches.watch(p.key().ref(), () -> reads.podView(p)));
  }
}
