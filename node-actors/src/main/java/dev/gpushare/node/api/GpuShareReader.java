package dev.gpushare.node.api;

import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.QueueEntryView;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * What the arbiter shows: its nodes, queues and pods, its clock and metrics, and a subscription to
 * their changes. The part of {@link GpuShareService} the readers take (health and metrics
 * endpoints, the dashboard, the scheduler extender, the Kubernetes status writer). Every stage
 * completes exceptionally with a {@link ServiceException} on refusal (NOT_FOUND for an unknown node
 * or pod).
 */
public interface GpuShareReader {

  /**
   * Whether the journal is recovered and every node's arbiter has reconciled with its bound pods.
   */
  boolean ready();

  /**
   * Why {@code GET /readyz} answers 503, or empty when the service is ready: not {@link #ready()}
   * yet, or (where the service knows its journal's health) the journal cannot write.
   */
  default Optional<String> notReady() {
    return ready()
        ? Optional.empty()
        : Optional.of(
            "the journal is still being recovered or a node's arbiter has not reconciled with its"
                + " bound pods; retry shortly");
  }

  CompletionStage<List<NodeView>> nodes();

  CompletionStage<NodeView> node(String name);

  CompletionStage<List<QueueEntryView>> queue(String node);

  CompletionStage<List<PodView>> pods(Optional<String> node);

  CompletionStage<PodView> pod(String namespace, String name);

  /**
   * Hears of every change users could see in Kubernetes: a node's labels, config, conditions or
   * GPUs, and a pod's state, device, Events or conditions. Calls come from internal threads and
   * must return quickly; {@code close()} the handle to stop.
   */
  AutoCloseable subscribe(ChangeListener listener);

  /** See {@link #subscribe}. */
  interface ChangeListener {
    void nodeChanged(String node);

    void podChanged(String namespace, String name, boolean deleted);
  }

  ClockView clock();

  /**
   * This runtime's metrics: the counters and histograms of what happened here (decisions and their
   * latency, preemptions, journal and Kubernetes write errors), in a registry of its own.
   */
  GpuShareMetrics metrics();

  /**
   * Everything {@code GET /metrics} shows, as of now: this member's readiness (from {@link
   * #notReady()}, the rule {@code GET /readyz} answers by), the state gauges computed from {@link
   * #nodes()} and {@link #pods(Optional)}, then the event metrics of {@link #metrics()}.
   */
  default CompletionStage<MetricSnapshots> scrapeMetrics() {
    return nodes()
        .thenCombine(
            pods(Optional.empty()), (n, p) -> metrics().scrape(n, p, notReady().isEmpty()));
  }

  /**
   * How the arbiters pick a GPU inside a node ({@code gpushare.placement}): the scheduler extender
   * scores a node on the GPU this choice takes.
   */
  default GpuChoice gpuChoice() {
    return GpuChoice.BEST_FIT;
  }
}
