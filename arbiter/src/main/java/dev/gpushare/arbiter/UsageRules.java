package dev.gpushare.arbiter;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * What GPU telemetry means for a Running share-pool pod (SPEC §4 and §7): its utilisation relative
 * to its core limit, its memory against its memory limit, and when it has been idle long enough to
 * be asked to hibernate and then released. Pure: the caller brings the samples and the clock.
 *
 * <p>The rules:
 *
 * <ul>
 *   <li><b>Relative utilisation</b> = absolute SM utilisation of the whole GPU × 100 / core limit
 *       (the denominator is the limit, SPEC §7), rounded down; it may exceed 100 when nothing
 *       enforces the limit (no MPS).
 *   <li><b>Memory limit</b> in MiB = ⌊memory limit % × GPU memory MiB / 100⌋; memory used above it
 *       revokes the share (Running → Hibernation), once per Running period.
 *   <li><b>Activity</b>: a pod is active in a sample when one of its processes shows SM utilisation
 *       above 0; idle when it has no process on its GPU at all, or when its processes all show 0.
 *       When the driver does not report per-process utilisation and the pod has processes, activity
 *       is unknown and counts as active: a pod is never released on a guess.
 *   <li><b>Idle release</b> (when {@link IdleSettings#after} is set): idle continuously for {@code
 *       after} (counted from the later of the grant and its last activity) → asked to hibernate (an
 *       Event); still idle {@code grace} later → released. Any activity in between cancels both.
 *   <li><b>Ungranted use</b> ({@link #ungranted}): a process of a pod on a GPU the pod does not
 *       hold (it is in Hibernation or Ready, or Running on another GPU) uses that GPU without a
 *       grant; a static pod on its pinned GPU holds it. It counts once seen for {@link
 *       #UNGRANTED_AFTER} without a break (a preempted or revoked workload is still being stopped
 *       meanwhile: SIGUSR1, SIGTERM, SIGKILL), is told once per episode (until a sample shows none
 *       of the pod's processes on that GPU), and is ended on request.
 * </ul>
 */
public final class UsageRules {
  private UsageRules() {}

  /**
   * One pod's use of its GPU in one sample.
   *
   * @param processes its processes on the GPU (0: nothing of it runs there; -1: unknown, the driver
   *     does not list processes)
   * @param smPercent the sum of its processes' SM utilisation of the whole GPU, if reported
   */
  public record PodUsage(long memoryUsedMiB, OptionalInt smPercent, int processes)
      implements JsonSerializable {
    public static final PodUsage NONE = new PodUsage(0, OptionalInt.of(0), 0);

    /** What is known of a pod on a GPU whose driver does not list processes: nothing. */
    public static final PodUsage UNKNOWN = new PodUsage(0, OptionalInt.empty(), -1);

    /** Active, idle, or unknown (empty) per the rules above. */
    public Optional<Boolean> active() {
      if (processes < 0) {
        return Optional.empty();
      }
      if (processes == 0) {
        return Optional.of(false);
      }
      if (smPercent.isEmpty()) {
        return Optional.empty();
      }
      return Optional.of(smPercent.getAsInt() > 0);
    }
  }

  /**
   * Idle release for a node: off when {@code after} is empty.
   *
   * @param grace how long a pod asked to hibernate has before it is released
   */
  public record IdleSettings(Optional<Duration> after, Duration grace) {
    public static final IdleSettings OFF =
        new IdleSettings(Optional.empty(), Duration.ofSeconds(30));

    public IdleSettings {
      if (after.isPresent() && (after.get().isNegative() || after.get().isZero())) {
        throw new IllegalArgumentException("idle release after " + after.get() + ": want > 0");
      }
      if (grace.isNegative()) {
        throw new IllegalArgumentException("idle grace " + grace + ": want >= 0");
      }
    }
  }

  /**
   * What the rules remember of one Running pod between samples.
   *
   * @param idleSince since when it has been idle (the grant time at first), null while active
   * @param asked whether it has been asked to hibernate in this idle stretch
   * @param revoked whether its share has been revoked for memory in this Running period
   */
  public record Watch(Instant idleSince, boolean asked, boolean revoked) {
    /** A pod just seen Running since {@code grantedAt}: idle from the grant until it works. */
    public static Watch grantedAt(Instant grantedAt) {
      return new Watch(grantedAt, false, false);
    }
  }

  /** What to do about a pod after a sample. */
  public enum Action {
    NONE,
    /** Idle for {@code after}: ask it to hibernate. */
    ASK_TO_HIBERNATE,
    /** Still idle {@code grace} after being asked: release its share. */
    RELEASE_IDLE,
    /** Memory over its limit: revoke its share. */
    REVOKE_FOR_MEMORY
  }

  /** The verdict on one sample: the new watch, the action, and the words for it (or null). */
  public record Verdict(Watch watch, Action action, PodNotes.EventNote note) {}

  /**
   * How long a pod's processes must be seen on a GPU it does not hold before that counts as
   * ungranted use: longer than a stop sequence after a preemption or a revocation ({@code gpushare
   * run}'s SIGUSR1, SIGTERM 30 s later, SIGKILL 30 s after that; the library's is shorter).
   */
  public static final Duration UNGRANTED_AFTER = Duration.ofSeconds(90);

  /**
   * Whether a process of a pod that holds {@code held} (empty: no GPU) uses GPU {@code gpu} without
   * a grant.
   */
  public static boolean ungranted(OptionalInt held, int gpu) {
    return held.isEmpty() || held.getAsInt() != gpu;
  }

  /** How the member answers ungranted use: an Event and a metric, and with KILL a SIGKILL. */
  public enum UngrantedAction {
    REPORT("report"),
    KILL("kill");

    private final String configValue;

    UngrantedAction(String configValue) {
      this.configValue = configValue;
    }

    /** The value as the configuration writes it. */
    public String configValue() {
      return configValue;
    }

    /** The setting written {@code value} (any case), or empty. */
    public static Optional<UngrantedAction> parse(String value) {
      for (UngrantedAction a : values()) {
        if (a.configValue.equalsIgnoreCase(value)) {
          return Optional.of(a);
        }
      }
      return Optional.empty();
    }
  }

  /** Absolute SM utilisation of the whole GPU relative to the pod's core limit. */
  public static OptionalInt relative(OptionalInt absolute, int coreLimit) {
    if (absolute.isEmpty() || coreLimit <= 0) {
      return OptionalInt.empty();
    }
    return OptionalInt.of((int) ((long) absolute.getAsInt() * 100 / coreLimit));
  }

  /** The pod's memory limit in MiB on a GPU of {@code gpuMemoryMiB}. */
  public static long memoryLimitMiB(int memoryPercent, long gpuMemoryMiB) {
    return (long) memoryPercent * gpuMemoryMiB / 100;
  }

  /** Judges one sample of a Running pod with {@code limits} on a GPU of {@code gpuMemoryMiB}. */
  public static Verdict judge(
      Watch before,
      PodUsage usage,
      Share limits,
      long gpuMemoryMiB,
      IdleSettings idle,
      boolean enforceMemory,
      Instant now) {
    long limitMiB = memoryLimitMiB(limits.memory(), gpuMemoryMiB);
    if (enforceMemory && !before.revoked() && usage.memoryUsedMiB() > limitMiB) {
      return new Verdict(
          new Watch(before.idleSince(), before.asked(), true),
          Action.REVOKE_FOR_MEMORY,
          PodNotes.memoryExceededEvent(
              usage.memoryUsedMiB(), limitMiB, limits.memory(), gpuMemoryMiB, now));
    }
    Optional<Boolean> active = usage.active();
    if (active.isEmpty() || active.get()) {
      return new Verdict(new Watch(null, false, before.revoked()), Action.NONE, null);
    }
    Instant since = before.idleSince() == null ? now : before.idleSince();
    Watch watch = new Watch(since, before.asked(), before.revoked());
    if (idle.after().isEmpty()) {
      return new Verdict(watch, Action.NONE, null);
    }
    Duration idleFor = Duration.between(since, now);
    Duration after = idle.after().get();
    if (!before.asked() && idleFor.compareTo(after) >= 0) {
      return new Verdict(
          new Watch(since, true, before.revoked()),
          Action.ASK_TO_HIBERNATE,
          PodNotes.idleEvent(idleFor, idle.grace(), now));
    }
    if (before.asked() && idleFor.compareTo(after.plus(idle.grace())) >= 0) {
      return new Verdict(watch, Action.RELEASE_IDLE, PodNotes.idleReleasedEvent(idleFor, now));
    }
    return new Verdict(watch, Action.NONE, null);
  }
}
