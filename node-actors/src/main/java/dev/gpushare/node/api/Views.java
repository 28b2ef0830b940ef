package dev.gpushare.node.api;

import com.fasterxml.jackson.annotation.JsonValue;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.SharePolicy;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the API shows (API.md): plain records that Jackson writes as the documented JSON. Field
 * names are the JSON names; a policy, a pod's state and a GPU's health are the domain enums,
 * written as their documented text ({@code "share-pool"}, {@code "Running"}, {@code "Healthy"}).
 */
public final class Views {
  private Views() {}

  /** {@code {"core":50,"memory":50}}. */
  public record ShareView(int core, int memory) {}

  /** A node (API.md {@code NodeView}). {@code qos} is the QoS config in force. */
  public record NodeView(
      String name,
      Map<String, String> labels,
      Map<String, String> annotations,
      SharePolicy policy,
      QosConfig qos,
      NodeStatus status,
      List<GpuView> gpus,
      List<QueueEntryView> queue,
      List<EventView> events) {}

  public record GpuView(
      int index,
      String uuid,
      String model,
      long memoryMiB,
      Health health,
      ShareView inUse,
      List<String> pods) {}

  /** A GPU's health as the API shows it: {@code "Healthy"} or {@code "Unhealthy"}. */
  public enum Health {
    HEALTHY("Healthy"),
    UNHEALTHY("Unhealthy");

    private final String display;

    Health(String display) {
      this.display = display;
    }

    public static Health of(boolean healthy) {
      return healthy ? HEALTHY : UNHEALTHY;
    }

    /** The health written as the API writes it ("Healthy", "Unhealthy"), or empty. */
    public static Optional<Health> fromDisplay(String text) {
      for (Health h : values()) {
        if (h.display.equals(text)) {
          return Optional.of(h);
        }
      }
      return Optional.empty();
    }

    public boolean healthy() {
      return this == HEALTHY;
    }

    @JsonValue
    public String display() {
      return display;
    }

    @Override
    public String toString() {
      return display;
    }
  }

  /** One ready-queue entry; {@code position} is 1-based. */
  public record QueueEntryView(String pod, int position, long waitingSeconds, ShareView limits) {}

  /** The device a pod uses, with its real index on the node. */
  public record GpuRef(int index, String uuid) {}

  /** A Kubernetes Event recorded on a pod or node (source {@code gpushare}). */
  public record EventView(
      String type, String reason, String message, Instant time, String source) {}

  /** A pod condition in the Kubernetes shape. */
  public record PodConditionView(
      String type, String status, String reason, String message, Instant lastTransitionTime) {}

  /**
   * A pod (API.md {@code PodView}). {@code policy}, {@code requests}, {@code limits}, {@code state}
   * and {@code computeLimit} are {@code null} for pods that do not share a GPU (exclusive or
   * CPU-only pods).
   */
  public record PodView(
      String namespace,
      String name,
      String uid,
      String node,
      SharePolicy policy,
      PodState state,
      ShareView requests,
      ShareView limits,
      GpuRef gpu,
      Integer queuePosition,
      Long waitingSeconds,
      Long runningSeconds,
      List<PodConditionView> conditions,
      List<EventView> events,
      UsageView usage,
      WorkloadView workload,
      CheckpointView checkpoint,
      ComputeLimitView computeLimit) {

    /** A view without {@code computeLimit} (written as {@code null}). */
    public PodView(
        String namespace,
        String name,
        String uid,
        String node,
        SharePolicy policy,
        PodState state,
        ShareView requests,
        ShareView limits,
        GpuRef gpu,
        Integer queuePosition,
        Long waitingSeconds,
        Long runningSeconds,
        List<PodConditionView> conditions,
        List<EventView> events,
        UsageView usage,
        WorkloadView workload,
        CheckpointView checkpoint) {
      this(
          namespace,
          name,
          uid,
          node,
          policy,
          state,
          requests,
          limits,
          gpu,
          queuePosition,
          waitingSeconds,
          runningSeconds,
          conditions,
          events,
          usage,
          workload,
          checkpoint,
          null);
    }

    /** This view with {@code computeLimit} in place of its own. */
    public PodView withComputeLimit(ComputeLimitView computeLimit) {
      return new PodView(
          namespace,
          name,
          uid,
          node,
          policy,
          state,
          requests,
          limits,
          gpu,
          queuePosition,
          waitingSeconds,
          runningSeconds,
          conditions,
          events,
          usage,
          workload,
          checkpoint,
          computeLimit);
    }
  }

  /**
   * Who keeps a sharing pod's compute at or under its core limit on its node: {@code library}
   * ({@code libgpushare.so}'s limiter: {@code gpushare.gpu.compute-limit = auto} on a node without
   * MPS), {@code mps} (the node runs MPS, which enforces {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE})
   * or {@code off} ({@code compute-limit = off}: nothing does).
   */
  public enum ComputeLimitMode {
    LIBRARY("library"),
    MPS("mps"),
    OFF("off");

    private final String display;

    ComputeLimitMode(String display) {
      this.display = display;
    }

    @JsonValue
    public String display() {
      return display;
    }

    @Override
    public String toString() {
      return display;
    }
  }

  /**
   * A sharing pod's compute limit (issue 26) and the latest report of its library's limiter: {@code
   * {"mode":"library","aimPercent":30,"heldSeconds":12.5,"measuredPercent":29.4,
   * "reportedAt":"…"}}. {@code aimPercent} is the pod's core limit when {@code mode} is {@code
   * library}, else {@code null}; until the library reports, {@code heldSeconds} is {@code 0.0} and
   * {@code measuredPercent} and {@code reportedAt} are {@code null}. {@code heldSeconds} is the
   * time the pod's kernel launches were held back since its library state began; {@code
   * measuredPercent} the pod's share of the GPU's time the limiter last measured.
   */
  public record ComputeLimitView(
      ComputeLimitMode mode,
      Integer aimPercent,
      double heldSeconds,
      Double measuredPercent,
      Instant reportedAt) {}

  /**
   * A pod's GPU state as the node's member checkpoints it ({@code gpushare.dev/preemption:
   * checkpoint}): {@code checkpointing} (the pod still holds its share until the member reports),
   * {@code held} (in host memory: {@code bytes}; restored on {@code gpu} at the pod's next grant,
   * {@code restoring} while it is Running again and not yet restored). {@code null} when nothing is
   * held.
   */
  public record CheckpointView(String phase, int gpu, long bytes, Instant since) {}

  /**
   * A Running pod's use of its GPU in the latest telemetry sample (SPEC §7): memory used, SM
   * utilisation of the whole GPU ({@code absolute}) and relative to the pod's core limit ({@code
   * relative}, the denominator is the limit); a utilisation is null when the driver does not report
   * it, {@code processes} is -1 when it does not list processes.
   */
  public record UsageView(
      long memoryUsedMiB,
      long memoryLimitMiB,
      Integer absoluteUtilization,
      Integer relativeUtilization,
      int processes) {}

  /**
   * What a Running share-pool pod's workload exports (the enforcement contract,
   * deploy/mps/README.md): {@code CUDA_VISIBLE_DEVICES}, {@code CUDA_MPS_ACTIVE_THREAD_PERCENTAGE},
   * {@code CUDA_MPS_PINNED_DEVICE_MEM_LIMIT}, and the MPS directories when the node runs MPS.
   */
  public record WorkloadView(Map<String, String> env) {}

  /**
   * The pod's processes on its GPU as the member's latest telemetry saw them (data plane {@code GET
   * …/processes}): their host PIDs (NVML names processes by host PIDs; a container's own PIDs are
   * another namespace's), the pod's SM utilisation of the whole GPU (null when not reported), and
   * the GPU ({@code null}, with no PIDs, while the pod holds none). {@code nsPids[i]} and {@code
   * startTimes[i]} say how the process {@code hostPids[i]} knows itself (its PID in its own PID
   * namespace, its start time in clock ticks after boot), where the member could read them: how a
   * process of the pod finds its own host PID (empty where the member cannot say).
   */
  public record PodProcessesView(
      String namespace,
      String name,
      GpuRef gpu,
      List<Long> hostPids,
      Integer smPercent,
      List<Long> nsPids,
      List<Long> startTimes) {
    public PodProcessesView(
        String namespace, String name, GpuRef gpu, List<Long> hostPids, Integer smPercent) {
      this(namespace, name, gpu, hostPids, smPercent, List.of(), List.of());
    }
  }

  /** {@code {"now":"…","manual":true}}. */
  public record ClockView(Instant now, boolean manual) {}

  /** The answer to PUT /v1/nodes/{node}: whether the node was new, and its view. */
  public record PutNodeResult(boolean created, NodeView node) {}
}
