package dev.gpushare.arbiter;

import java.time.Instant;

/**
 * What users see of a decision on the pod (SPEC §7): Kubernetes Events (source {@code gpushare})
 * and pod conditions, with their exact texts. The one home of these words.
 */
public final class PodNotes {
  private PodNotes() {}

  public static final String SOURCE = "gpushare";
  public static final String RECLAIM_CONDITION = "Interruption.GPUShareReclaim";
  public static final String ALLOCATED_CONDITION = "GPUShareAllocated";
  public static final String PREEMPTED = "GPUSharePreempted";
  public static final String PREEMPT = "GPUSharePreempt";
  public static final String FRAGMENTED = "GPUShareFragmented";
  public static final String PINNED = "GPUSharePinned";
  public static final String IDLE = "GPUShareIdle";
  public static final String IDLE_RELEASED = "GPUShareIdleReleased";
  public static final String MEMORY_EXCEEDED = "GPUShareMemoryExceeded";
  public static final String UNGRANTED_USE = "GPUShareUngrantedUse";
  public static final String UNGRANTED_KILLED = "GPUShareUngrantedKilled";
  public static final String CHECKPOINT_CONDITION = "GPUShareCheckpointed";
  public static final String CHECKPOINTED = "GPUShareCheckpointed";
  public static final String CHECKPOINT_FAILED = "GPUShareCheckpointFailed";
  public static final String RESTORED = "GPUShareRestored";
  public static final String CHECKPOINT_DROPPED = "GPUShareCheckpointDropped";

  /** A Kubernetes Event on a pod. */
  public record EventNote(String type, String reason, String message, Instant time)
      implements JsonSerializable {}

  /** A pod condition; it replaces any earlier condition of the same type. */
  public record ConditionNote(
      String type, String status, String reason, String message, Instant time)
      implements JsonSerializable {}

  /** On the victim: {@code GPU is preempted by <new-pod-name>.} */
  public static String preemptedBy(PodKey preemptor) {
    return "GPU is preempted by " + preemptor.name() + ".";
  }

  /** On the preemptor: {@code GPU is preempted from <old-pod-name>.} */
  public static String preemptedFrom(PodKey victim) {
    return "GPU is preempted from " + victim.name() + ".";
  }

  public static EventNote victimEvent(PodKey preemptor, Instant at) {
    return new EventNote("Warning", PREEMPTED, preemptedBy(preemptor), at);
  }

  public static ConditionNote victimCondition(PodKey preemptor, Instant at) {
    return new ConditionNote(RECLAIM_CONDITION, "True", PREEMPTED, preemptedBy(preemptor), at);
  }

  public static EventNote preemptorEvent(PodKey victim, Instant at) {
    return new EventNote("Warning", PREEMPT, preemptedFrom(victim), at);
  }

  public static ConditionNote preemptorCondition(PodKey victim, Instant at) {
    return new ConditionNote(RECLAIM_CONDITION, "True", PREEMPT, preemptedFrom(victim), at);
  }

  public static EventNote fragmentedEvent(String message, Instant at) {
    return new EventNote("Warning", FRAGMENTED, message, at);
  }

  public static ConditionNote fragmentedCondition(String message, Instant at) {
    return new ConditionNote(ALLOCATED_CONDITION, "False", FRAGMENTED, message, at);
  }

  public static ConditionNote pinnedCondition(int gpu, String uuid, Instant at) {
    return new ConditionNote(
        ALLOCATED_CONDITION, "True", PINNED, "pinned to GPU " + gpu + " (" + uuid + ").", at);
  }

  /** Idle past the node's idle-release time: the pod is asked to hibernate (SPEC §4). */
  public static EventNote idleEvent(
      java.time.Duration idleFor, java.time.Duration grace, Instant at) {
    return new EventNote(
        "Normal",
        IDLE,
        "GPU share idle for "
            + idleFor.toSeconds()
            + " s; please hibernate: it is released in "
            + grace.toSeconds()
            + " s unless the pod uses the GPU.",
        at);
  }

  /** Still idle after the grace: the share is released. */
  public static EventNote idleReleasedEvent(java.time.Duration idleFor, Instant at) {
    return new EventNote(
        "Normal",
        IDLE_RELEASED,
        "GPU share released after " + idleFor.toSeconds() + " s without GPU activity.",
        at);
  }

  /** Memory used over the pod's memory limit: the share is revoked. */
  public static EventNote memoryExceededEvent(
      long usedMiB, long limitMiB, int limitPercent, long gpuMiB, Instant at) {
    return new EventNote(
        "Warning",
        MEMORY_EXCEEDED,
        "GPU memory used "
            + usedMiB
            + " MiB exceeds the pod's limit of "
            + limitMiB
            + " MiB ("
            + limitPercent
            + " % of "
            + gpuMiB
            + " MiB); the share is revoked.",
        at);
  }

  /**
   * Processes of the pod use a GPU the pod does not hold ({@link UsageRules#ungranted}): most
   * likely a program {@code libgpushare.so} could not enter (a static or musl binary ignores {@code
   * LD_PRELOAD}), which nothing keeps to the pod's share.
   *
   * @param held the GPU the pod holds, or -1 for none
   * @param killed whether the member ended them ({@code gpushare.gpu.ungranted-processes = kill})
   */
  public static EventNote ungrantedUseEvent(
      int gpu, String uuid, java.util.List<Long> pids, int held, boolean killed, Instant at) {
    String who =
        (pids.size() == 1 ? "process " : "processes ")
            + pids.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(", "));
    return new EventNote(
        "Warning",
        killed ? UNGRANTED_KILLED : UNGRANTED_USE,
        who
            + (killed ? " used GPU " : " use GPU ")
            + gpu
            + " ("
            + uuid
            + ") without a grant (the pod holds "
            + (held < 0 ? "no GPU" : "GPU " + held)
            + ")"
            + (killed ? " and " + (pids.size() == 1 ? "was" : "were") + " killed (SIGKILL)" : "")
            + ": run the workload through libgpushare.so (LD_PRELOAD; a static or musl binary"
            + " ignores it) or `gpushare run`, so that it uses a GPU only while granted.",
        at);
  }

  /** "1.5 GiB" or "300 MiB". */
  static String size(long bytes) {
    long mib = bytes / (1024 * 1024);
    return mib >= 1024
        ? String.format(java.util.Locale.ROOT, "%.1f GiB", mib / 1024.0)
        : mib + " MiB";
  }

  /** The member checkpointed the pod's CUDA processes: its GPU state is in host memory. */
  public static String checkpointedMessage(long bytes, int gpu) {
    return "GPU state ("
        + size(bytes)
        + ") is held in host memory; it is restored on GPU "
        + gpu
        + " when the pod is granted that GPU again, and the processes go on without a signal.";
  }

  public static EventNote checkpointedEvent(long bytes, int gpu, Instant at) {
    return new EventNote("Normal", CHECKPOINTED, checkpointedMessage(bytes, gpu), at);
  }

  public static ConditionNote checkpointedCondition(long bytes, int gpu, Instant at) {
    return new ConditionNote(
        CHECKPOINT_CONDITION, "True", CHECKPOINTED, checkpointedMessage(bytes, gpu), at);
  }

  /** The checkpoint could not be taken: the signal contract applies (SIGUSR1, SIGTERM, SIGKILL). */
  public static String checkpointFailedMessage(String why) {
    return "GPU state not checkpointed: " + why + "; the workload is signalled instead (SIGUSR1).";
  }

  public static EventNote checkpointFailedEvent(String why, Instant at) {
    return new EventNote("Warning", CHECKPOINT_FAILED, checkpointFailedMessage(why), at);
  }

  public static ConditionNote checkpointFailedCondition(String why, Instant at) {
    return new ConditionNote(
        CHECKPOINT_CONDITION, "False", CHECKPOINT_FAILED, checkpointFailedMessage(why), at);
  }

  /** The checkpoint is over: restored (reason {@code null}), or dropped for {@code reason}. */
  public static ConditionNote checkpointClearedCondition(String reason, Instant at) {
    return reason == null
        ? new ConditionNote(
            CHECKPOINT_CONDITION,
            "False",
            RESTORED,
            "GPU state restored from host memory; the processes go on.",
            at)
        : new ConditionNote(
            CHECKPOINT_CONDITION,
            "False",
            CHECKPOINT_DROPPED,
            "GPU state no longer held: " + reason + ".",
            at);
  }

  public static EventNote checkpointDroppedEvent(String reason, Instant at) {
    return new EventNote(
        "Warning", CHECKPOINT_DROPPED, "GPU state no longer held: " + reason + ".", at);
  }
}
