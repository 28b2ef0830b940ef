package dev.gpushare.node.api;

import dev.gpushare.node.api.Views.PodProcessesView;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * What a sharing pod asks of the arbiter about its own GPU: raise or withdraw demand, wait for the
 * grant, watch its state, report its compute limiter. The part of {@link GpuShareService} the
 * data-plane endpoints use. Every stage completes exceptionally with a {@link ServiceException} on
 * refusal.
 */
public interface GpuShareDataPlane {

  /** Raise demand (Hibernation → Ready, or straight to Running). */
  CompletionStage<PodView> demand(String namespace, String name);

  /** Withdraw demand or release the GPU (→ Hibernation). */
  CompletionStage<PodView> release(String namespace, String name);

  /**
   * The pod's compute limiter ({@code libgpushare.so}) reports what it aims at, measured and held
   * back ({@link ComputeReport}): kept in memory in place of the previous report, shown in the
   * pod's {@code computeLimit} and in the metrics, never journaled. INVALID naming every value out
   * of range, NOT_FOUND for an unknown pod, CONFLICT for a pod that shares no GPU; the pod's view
   * with the report otherwise.
   */
  CompletionStage<PodView> reportCompute(String namespace, String name, ComputeReport report);

  /**
   * The host PIDs of the pod's processes on its GPU as this member's latest telemetry saw them,
   * with the pod's SM utilisation (null when not reported): what the pod's compute limiter matches
   * NVML's per-process samples against. No PIDs while the pod holds no GPU or before the first
   * sample. NOT_FOUND for an unknown pod.
   */
  CompletionStage<PodProcessesView> processes(String namespace, String name);

  /** Completes as soon as the pod is Running, else at the timeout; the view either way. */
  CompletionStage<PodView> awaitGrant(String namespace, String name, Duration timeout);

  /** The pod's view now and after every change; completes when the pod is deleted. */
  Source<PodView, NotUsed> watch(String namespace, String name);
}
