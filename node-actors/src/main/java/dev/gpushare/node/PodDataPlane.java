package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.proc.ProcessPods;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.PodProcessesView;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The data plane (API.md "Data plane"): a pod's workload signals demand and release, each answered
 * with the pod's view once its arbiter's decision is written and nothing after it, waits for its
 * grant by long poll or watches its view change ({@link PodWatches}), and its library reports its
 * compute limiter (kept in memory by {@link ChangeFanOut}, published to every member).
 */
final class PodDataPlane {
  private final WriteGate gate;
  private final ServiceAsks asks;
  private final PodReads reads;
  private final PodWatches watches;
  private final ChangeFanOut fanOut;
  private final ArbiterClock clock;

  PodDataPlane(
      WriteGate gate,
      ServiceAsks asks,
      PodReads reads,
      PodWatches watches,
      ChangeFanOut fanOut,
      ArbiterClock clock) {
    this.gate = gate;
    this.asks = asks;
    this.reads = reads;
    this.watches = watches;
    this.fanOut = fanOut;
    this.clock = clock;
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

  /**
   * The pod's compute-limiter report, checked value by value (INVALID), kept once the pod is known
   * to its node (NOT_FOUND before anything is kept, so a stale remembered place is retried) and
   * shares a GPU (CONFLICT otherwise); answered with the view that shows it. Not gated by the
   * journal: nothing is written.
   */
  CompletionStage<PodView> reportCompute(String namespace, String name, ComputeReport report) {
    List<FieldError> errors = report.errors();
    if (!errors.isEmpty()) {
      return CompletableFuture.failedFuture(ServiceException.invalid(errors));
    }
    return reads.onPod(
        namespace,
        name,
        p ->
            reads
                .podView(p)
                .thenApply(
                    view -> {
                      if (view.limits() == null) {
                        throw ServiceException.of(
                            Kind.CONFLICT,
                            new FieldError(
                                "metadata.name",
                                name,
                                "pod "
                                    + p.key().ref()
                                    + " shares no GPU: it has no compute limit to report on"));
                      }
                      fanOut.computeReported(p.node(), p.key().entityId(), report, clock.now());
                      return reads.withComputeLimit(view);
                    }));
  }

  /**
   * The pod's processes as the latest usage report of its node ({@link ChangeFanOut#usage}) names
   * them; none while it holds no GPU. Not gated by the journal: nothing is written.
   */
  CompletionStage<PodProcessesView> processes(String namespace, String name) {
    return reads.onPod(
        namespace,
        name,
        p ->
            reads
                .podView(p)
                .thenApply(
                    view -> {
                      Changes.PodUsageReport u =
                          view.gpu() == null ? null : fanOut.usage(p.node(), p.key().entityId());
                      List<ProcessPods.Identity> ids =
                          u == null || u.identities().size() != u.hostPids().size()
                              ? List.of()
                              : u.identities();
                      return new PodProcessesView(
                          view.namespace(),
                          view.name(),
                          view.gpu(),
                          u == null ? List.of() : u.hostPids(),
                          u == null ? null : u.absoluteUtilization(),
                          ids.stream().map(ProcessPods.Identity::nsPid).toList(),
                          ids.stream().map(ProcessPods.Identity::startTime).toList());
                    }));
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
