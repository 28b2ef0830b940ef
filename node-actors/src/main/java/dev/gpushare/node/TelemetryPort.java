package dev.gpushare.node;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.actor.ArbiterPeers;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.Views.NodeView;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * What GPU telemetry ({@link GpuTelemetry}) reads and does through the service: the nodes this
 * member samples ({@link LocalGpus}) and the backend of each, a real GPU's health as its driver
 * reports it, the pods' usage published cluster-wide, and what the usage rules and the checkpoint
 * work decide (an Event, a release, a checkpoint report), each told to the node's entities.
 */
final class TelemetryPort {
  private final ActorSystem<?> system;
  private final ServiceAsks asks;
  private final Entities entities;
  private final Duration timeout;
  private final LocalGpus local;
  private final NodeRegistration registration;
  private final ChangeFanOut fanOut;
  private final GpuShareMetrics metrics;

  /** What this member last published per node it samples. */
  private final Map<String, Map<String, Changes.PodUsageReport>> published =
      new ConcurrentHashMap<>();

  TelemetryPort(
      ActorSystem<?> system,
      ServiceAsks asks,
      Entities entities,
      Duration timeout,
      LocalGpus local,
      NodeRegistration registration,
      ChangeFanOut fanOut,
      GpuShareMetrics metrics) {
    this.system = system;
    this.asks = asks;
    this.entities = entities;
    this.timeout = timeout;
    this.local = local;
    this.registration = registration;
    this.fanOut = fanOut;
    this.metrics = metrics;
  }

  /** The node's ungranted GPU use in its latest sample, for this member's metrics. */
  void ungrantedUse(String node, Map<PodKey, Map<Integer, Integer>> processes) {
    metrics.ungrantedUse(node, processes);
  }

  /** The registered nodes this member samples ({@link LocalGpus}). */
  CompletionStage<List<String>> sampledNodes() {
    return asks.registeredNodes().thenApply(local::sampled);
  }

  /**
   * The backend to sample {@code node} through, shaped like its registered GPUs. A real backend's
   * devices (real index and UUID) replace the ones derived from the node's capacity first.
   */
  CompletionStage<Optional<GpuBackend>> telemetryBackend(String node) {
    return asks.nodeRecord(node)
        .thenCompose(
            r -> {
              Optional<GpuBackend> real = local.real(node);
              if (real.isEmpty() || !r.registered() || r.gpus().equals(real.get().devices())) {
                return CompletableFuture.completedFuture(local.backend(node, r.gpus()));
              }
              return adoptDevices(node, r, real.get().devices())
                  .thenApply(d -> local.backend(node, real.get().devices()));
            });
  }

  /** The node's GPUs as its real backend reports them: registered, then told to the arbiter. */
  private CompletionStage<Done> adoptDevices(
      String node, NodeActor.Record before, List<GpuDevice> devices) {
    system
        .log()
        .info(
            "node {}: GPUs from the hardware: {} (were {})",
            node,
            devices.stream().map(d -> d.index() + "=" + d.uuid()).toList(),
            before.gpus().stream().map(d -> d.index() + "=" + d.uuid()).toList());
    return entities
        .node(node)
        .<NodeActor.Record>ask(r -> new NodeActor.Register(before.manifest(), devices, r), timeout)
        .thenCompose(record -> registration.syncArbiter(node, record))
        .whenComplete((d, e) -> fanOut.nodeChanged(node));
  }

  /** A real GPU's health as its driver reports it (the simulator's is set through the API). */
  CompletionStage<NodeView> syncHealth(String node, int index, boolean healthy) {
    return registration.setGpuHealth(node, index, healthy);
  }

  CompletionStage<NodeArbiter.BookView> bookOf(String node) {
    return asks.book(node);
  }

  /** Records an Event on a pod (the request to hibernate): the pod's state does not change. */
  void tellPod(String node, PodKey key, PodNotes.EventNote note) {
    entities
        .pod(node, key)
        .tell(
            new PodActor.Notice(
                new ArbiterPeers.PodNotice(null, List.of(note), List.of(), false),
                system.ignoreRef()));
  }

  /** Releases a Running pod's share for {@code reason} (idle, memory), with its Event. */
  CompletionStage<NodeArbiter.Outcome> revoke(
      String node, String pod, String reason, PodNotes.EventNote note) {
    return entities.arbiter(node).ask(r -> new NodeArbiter.Release(pod, reason, note, r), timeout);
  }

  /** The member's report on a pod it checkpointed (or could not), to the node's arbiter. */
  CompletionStage<NodeArbiter.Outcome> reportCheckpoint(
      String node, NodeCheckpoints.Report report) {
    if (report instanceof NodeCheckpoints.Suspended s) {
      return entities
          .arbiter(node)
          .ask(
              r ->
                  new NodeArbiter.ReportSuspended(
                      s.pod(), s.held(), s.pids(), s.bytes(), s.message(), r),
              timeout);
    }
    NodeCheckpoints.Restored r = (NodeCheckpoints.Restored) report;
    return entities
        .arbiter(node)
        .ask(reply -> new NodeArbiter.ReportRestored(r.pod(), r.reason(), reply), timeout);
  }

  /** Publishes a node's pod usage cluster-wide when it changed since the last time. */
  void publishUsage(String node, Map<String, Changes.PodUsageReport> pods) {
    Map<String, Changes.PodUsageReport> copy = Map.copyOf(pods);
    if (!copy.equals(published.get(node))) {
      published.put(node, copy);
      fanOut.publish(new Changes.UsageChanged(node, copy));
    }
  }
}
