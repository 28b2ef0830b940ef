package dev.gpushare.node;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.gpu.GpuSample;
import dev.gpushare.gpu.proc.ProcessPods;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * What changed, published cluster-wide (a Pekko pub-sub topic) so that every member's watchers,
 * long polls and the Kubernetes writer hear of changes made on any member.
 */
public final class Changes {
  private Changes() {}

  public static final String TOPIC = "gpushare-changes";

  public sealed interface Change extends JsonSerializable {}

  /**
   * What users see of a pod changed: a decision of its arbiter (durable), or its record's Events
   * and conditions.
   */
  public record PodChanged(PodKey key, boolean deleted) implements Change {}

  /** A node's config, conditions, GPUs or bound pods changed. */
  public record NodeChanged(String node) implements Change {}

  /**
   * The latest GPU telemetry of a node's Running pods (by pod entity id), published by the member
   * that samples the node when it changed. Not journaled: the next sample replaces it.
   */
  public record UsageChanged(String node, Map<String, PodUsageReport> pods) implements Change {}

  /**
   * The latest report of a pod's compute limiter ({@code libgpushare.so}, issue 26), published by
   * the member that took it so that every member's views and metrics show it. Not journaled: the
   * next report replaces it, and it is dropped when the pod is deleted.
   *
   * @param origin the {@link ChangeFanOut} that took the report (it keeps its own at once)
   * @param node the pod's node
   * @param pod the pod's entity id ({@link PodKey#entityId()})
   * @param reportedAt when the member took it (its arbiter clock)
   */
  public record ComputeReported(
      String origin,
      String node,
      String pod,
      double aimPercent,
      double measuredPercent,
      double heldSeconds,
      java.time.Instant reportedAt)
      implements Change {}

  /**
   * One Running pod's use of its GPU (SPEC §7): memory used and its limit in MiB, SM utilisation of
   * the whole GPU and relative to the core limit (null: not reported), processes (-1: the driver
   * lists none), and the host PIDs of those processes (what the pod's library matches NVML's
   * samples against, data plane {@code GET …/processes}) with how each process knows itself (its
   * PID in its own namespace and its start time: how a process of the pod finds its host PID).
   */
  public record PodUsageReport(
      long memoryUsedMiB,
      long memoryLimitMiB,
      Integer absoluteUtilization,
      Integer relativeUtilization,
      int processes,
      List<Long> hostPids,
      List<ProcessPods.Identity> identities)
      implements JsonSerializable {

    public PodUsageReport {
      hostPids = hostPids == null ? List.of() : List.copyOf(hostPids);
      identities = identities == null ? List.of() : List.copyOf(identities);
    }

    static PodUsageReport of(
        UsageRules.PodUsage usage,
        Share limits,
        GpuSample gpu,
        List<Long> hostPids,
        List<ProcessPods.Identity> identities) {
      OptionalInt relative = UsageRules.relative(usage.smPercent(), limits.core());
      return new PodUsageReport(
          usage.memoryUsedMiB(),
          UsageRules.memoryLimitMiB(limits.memory(), gpu.memoryTotalMiB()),
          usage.smPercent().isPresent() ? usage.smPercent().getAsInt() : null,
          relative.isPresent() ? relative.getAsInt() : null,
          usage.processes(),
          hostPids,
          identities);
    }
  }
}
