package dev.gpushare.gpu.cuda;

import dev.gpushare.gpu.cuda.CheckpointDriver.ProcessState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.StringJoiner;

/**
 * The member's side of checkpointing a pod: suspends a pod's CUDA processes (lock, then checkpoint:
 * their GPU memory goes to host memory and the GPU is released), brings them back (restore, then
 * unlock), and after a member restart finds out which of them are still checkpointed. One {@link
 * CheckpointDriver} call at a time, in the order documented on each method.
 *
 * <p>What each result means for the caller:
 *
 * <ul>
 *   <li>{@link Held}: the pod's processes are checkpointed and hold no GPU memory, but {@link
 *       Held#bytes()} of host memory; the arbiter frees the pod's share.
 *   <li>{@link Failed}, {@link Lost}, {@link Abandoned}: no checkpoint to rely on; the caller falls
 *       back to the signal contract (the workload is told to stop, or restarts from scratch). No
 *       process is left locked: one that could not be unlocked (or restored) has been killed, and
 *       the reason says so.
 *   <li>{@link RetryAt}: the restore did not fit (or failed) and is worth another try; the pod is
 *       still held.
 * </ul>
 *
 * <p>A process must never stay locked forever: while LOCKED or CHECKPOINTED its CUDA calls block.
 * Every path that gives up on a process either unlocks it or kills it with the {@link
 * ProcessKiller}.
 *
 * <p>Not thread-safe: one actor calls it. It neither sleeps nor starts threads; time comes from the
 * {@link Clock}, and a {@link RetryAt} says when the caller should call {@link #resume} again.
 */
public final class Checkpointer {

  /**
   * How the checkpointer waits and retries.
   *
   * @param lockTimeout how long a lock waits for a process's CUDA work in flight
   * @param restoreAttempts how many restores of a pod are tried before it is abandoned (≥ 1)
   * @param restoreBackoff the wait after the first failed restore; the n-th failure waits n times
   *     it
   */
  public record Settings(Duration lockTimeout, int restoreAttempts, Duration restoreBackoff) {

    /** 10 s to lock, 5 restore attempts, 30 s backoff (30 s, 60 s, 90 s, 120 s). */
    public static final Settings DEFAULTS =
        new Settings(Duration.ofSeconds(10), 5, Duration.ofSeconds(30));

    public Settings {
      requirePositive("lockTimeout", lockTimeout);
      if (restoreAttempts < 1) {
        throw new IllegalArgumentException(
            "restoreAttempts " + restoreAttempts + " is not accepted: it must be at least 1");
      }
      requirePositive("restoreBackoff", restoreBackoff);
    }

    private static void requirePositive(String field, Duration value) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException(
            field + " " + value + " is not accepted: it must be a positive duration");
      }
    }
  }

  /** What {@link #suspend} did. */
  public sealed interface SuspendResult permits Held, Failed, NothingToHold {
    String pod();
  }

  /** What {@link #resume} did. */
  public sealed interface ResumeResult permits Resumed, RetryAt, Abandoned, Gone, NotHeld {
    String pod();
  }

  /** What {@link #recover} found. */
  public sealed interface RecoverResult permits Held, Lost {
    String pod();
  }

  /**
   * The pod's processes {@code pids} are checkpointed (since {@code at}) and hold {@code bytes} of
   * host memory, none on the GPU: the arbiter frees the pod's share. {@link #resume} brings them
   * back.
   */
  public record Held(String pod, List<Integer> pids, long bytes, Instant at)
      implements SuspendResult, RecoverResult {
    public Held {
      Objects.requireNonNull(pod, "pod");
      pids = List.copyOf(pids);
      Objects.requireNonNull(at, "at");
    }
  }

  /**
   * The pod could not be checkpointed (the reason names the process and the driver's message); its
   * processes run on, unlocked, or were killed where they could not be unlocked (the reason says
   * so). The share stays the pod's: the caller falls back to the signal contract.
   */
  public record Failed(String pod, String reason) implements SuspendResult {}

  /**
   * The pod has no CUDA process (no pids, or the driver knows none of them): there is no GPU memory
   * to take off the GPU. The caller falls back to the signal contract.
   */
  public record NothingToHold(String pod) implements SuspendResult {}

  /**
   * The pod's processes {@code pids} are back on the GPU and running; the pod is no longer held.
   */
  public record Resumed(String pod, List<Integer> pids) implements ResumeResult {
    public Resumed {
      pids = List.copyOf(pids);
    }
  }

  /**
   * The restore failed ({@code reason}; mostly: no room on the GPU yet) and is tried again when the
   * caller calls {@link #resume} at or after {@code when}; earlier calls return this same result
   * without calling the driver. {@code attempt} is how many restores have failed so far; the pod is
   * still held.
   */
  public record RetryAt(String pod, Instant when, int attempt, String reason)
      implements ResumeResult {}

  /**
   * The pod could not be brought back: the restore failed on every attempt, a process was in the
   * driver's FAILED state, or an unlock failed. The processes that were not running again were
   * killed (the reason names them); the pod is forgotten and the caller falls back to the signal
   * contract (the workload restarts from scratch).
   */
  public record Abandoned(String pod, String reason) implements ResumeResult {}

  /**
   * Every process of the pod exited while checkpointed: nothing to restore, the pod is forgotten.
   */
  public record Gone(String pod, String reason) implements ResumeResult {}

  /** The pod is not held here (never suspended, or already resumed, abandoned or forgotten). */
  public record NotHeld(String pod) implements ResumeResult {}

  /**
   * After a member restart, none of the pod's processes is checkpointed any more (the reason says
   * what each was); those found locked were unlocked (or killed). The caller falls back to the
   * signal contract.
   */
  public record Lost(String pod, String reason) implements RecoverResult {}

  /** A held pod and how its restores went. */
  private static final class Entry {
    Held held;
    int failedRestores;
    RetryAt retry;

    Entry(Held held) {
      this.held = held;
    }
  }

  private final CheckpointDriver driver;
  private final ProcessKiller killer;
  private final Clock clock;
  private final Settings settings;
  private final Map<String, Entry> pods = new LinkedHashMap<>();

  public Checkpointer(
      CheckpointDriver driver, ProcessKiller killer, Clock clock, Settings settings) {
    this.driver = Objects.requireNonNull(driver, "driver");
    this.killer = Objects.requireNonNull(killer, "killer");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.settings = Objects.requireNonNull(settings, "settings");
  }

  /**
   * Checkpoints the pod's CUDA processes, whose GPU memory is {@code gpuMemoryBytes} (what the host
   * memory will hold).
   *
   * <p>In order: the state of each pid (a pid the driver does not know is no CUDA process and is
   * left out; one already LOCKED is not locked again, one already CHECKPOINTED neither locked nor
   * checkpointed again); then lock each with {@link Settings#lockTimeout()}; then checkpoint each.
   * Locking all before checkpointing any stops the whole pod's CUDA work first.
   *
   * <p>When a lock fails, the processes already locked are unlocked, and so is the failing one if
   * the driver says it is LOCKED. When a checkpoint fails, the processes already checkpointed are
   * restored and all are unlocked. A process that cannot be unlocked (or restored) is killed. A pod
   * that is already held gives its {@link Held} again, without calling the driver.
   *
   * @return {@link Held} (the arbiter frees the share), {@link Failed} or {@link NothingToHold}
   *     (the signal contract)
   */
  public SuspendResult suspend(String pod, List<Integer> pids, long gpuMemoryBytes) {
    Objects.requireNonNull(pod, "pod");
    if (gpuMemoryBytes < 0) {
      throw new IllegalArgumentException("gpuMemoryBytes " + gpuMemoryBytes + " is < 0");
    }
    Entry existing = pods.get(pod);
    if (existing != null) {
      return existing.held;
    }
    List<Integer> cuda = new ArrayList<>();
    List<Integer> toLock = new ArrayList<>();
    List<Integer> locked = new ArrayList<>();
    List<Integer> checkpointed = new ArrayList<>();
    Integer failedPid = null;
    for (int pid : distinct(pids)) {
      ProcessState state;
      try {
        state = driver.state(pid);
      } catch (CudaException notCuda) {
        continue;
      }
      cuda.add(pid);
      switch (state) {
        case RUNNING -> toLock.add(pid);
        case LOCKED -> locked.add(pid);
        case CHECKPOINTED -> {
          locked.add(pid);
          checkpointed.add(pid);
        }
        case FAILED -> {
          if (failedPid == null) {
            failedPid = pid;
          }
        }
      }
    }
    if (cuda.isEmpty()) {
      return new NothingToHold(pod);
    }
    if (failedPid != null) {
      StringJoiner reason =
          new StringJoiner("; ").add("pid " + failedPid + " is in the driver's FAILED state");
      undo(checkpointed, locked, reason);
      return new Failed(pod, reason.toString());
    }
    for (int pid : toLock) {
      try {
        driver.lock(pid, settings.lockTimeout());
        locked.add(pid);
      } catch (CudaException e) {
        StringJoiner reason =
            new StringJoiner("; ")
                .add(
                    e.isTimeout()
                        ? "lock of pid "
                            + pid
                            + " timed out after "
                            + settings.lockTimeout()
                            + ": "
                            + e.getMessage()
                        : "lock of pid " + pid + " failed: " + e.getMessage());
        undo(checkpointed, locked, reason);
        if (isLocked(pid)) {
          unlockOrKill(pid, reason);
        }
        return new Failed(pod, reason.toString());
      }
    }
    for (int pid : cuda) {
      if (checkpointed.contains(pid)) {
        continue;
      }
      try {
        driver.checkpoint(pid);
        checkpointed.add(pid);
      } catch (CudaException e) {
        StringJoiner reason =
            new StringJoiner("; ").add("checkpoint of pid " + pid + " failed: " + e.getMessage());
        undo(checkpointed, locked, reason);
        return new Failed(pod, reason.toString());
      }
    }
    Held held = new Held(pod, cuda, gpuMemoryBytes, clock.instant());
    pods.put(pod, new Entry(held));
    return held;
  }

  /**
   * Brings a held pod's processes back: the state of each pid, then restore each CHECKPOINTED one,
   * then unlock each. A pid whose state throws exited while checkpointed and is dropped; a pid
   * found LOCKED was restored by an earlier attempt and is only unlocked; one found RUNNING is left
   * alone.
   *
   * <p>When a restore throws (mostly out of memory: the GPU has no room yet) and fewer than {@link
   * Settings#restoreAttempts()} restores have failed, the pod stays held (processes already
   * restored stay LOCKED on the GPU) and the result is {@link RetryAt}: now + {@link
   * Settings#restoreBackoff()} × the number of failures. A call before then returns that same
   * {@link RetryAt} without calling the driver.
   *
   * @return {@link Resumed}; {@link RetryAt} (call again then); {@link Abandoned} (the pod's
   *     processes killed, the signal contract); {@link Gone} (all exited); {@link NotHeld}
   */
  public ResumeResult resume(String pod) {
    Objects.requireNonNull(pod, "pod");
    Entry entry = pods.get(pod);
    if (entry == null) {
      return new NotHeld(pod);
    }
    Instant now = clock.instant();
    if (entry.retry != null && now.isBefore(entry.retry.when())) {
      return entry.retry;
    }
    List<Integer> alive = new ArrayList<>();
    List<Integer> gone = new ArrayList<>();
    List<Integer> toRestore = new ArrayList<>();
    List<Integer> toUnlock = new ArrayList<>();
    Integer failedPid = null;
    for (int pid : entry.held.pids()) {
      ProcessState state;
      try {
        state = driver.state(pid);
      } catch (CudaException exited) {
        gone.add(pid);
        continue;
      }
      alive.add(pid);
      switch (state) {
        case CHECKPOINTED -> {
          toRestore.add(pid);
          toUnlock.add(pid);
        }
        case LOCKED -> toUnlock.add(pid);
        case RUNNING -> {}
        case FAILED -> {
          if (failedPid == null) {
            failedPid = pid;
          }
        }
      }
    }
    if (alive.isEmpty()) {
      pods.remove(pod);
      return new Gone(
          pod, "every process of the pod exited while checkpointed (pids " + gone + ")");
    }
    if (!gone.isEmpty()) {
      Held held = entry.held;
      entry.held = new Held(pod, alive, held.bytes(), held.at());
    }
    if (failedPid != null) {
      pods.remove(pod);
      return new Abandoned(
          pod, "pid " + failedPid + " is in the driver's FAILED state; " + killAll(alive));
    }
    for (int pid : toRestore) {
      try {
        driver.restore(pid);
      } catch (CudaException e) {
        entry.failedRestores++;
        String reason =
            e.isOutOfMemory()
                ? "restore of pid " + pid + " found no room on the GPU: " + e.getMessage()
                : "restore of pid " + pid + " failed: " + e.getMessage();
        if (entry.failedRestores < settings.restoreAttempts()) {
          entry.retry =
              new RetryAt(
                  pod,
                  now.plus(settings.restoreBackoff().multipliedBy(entry.failedRestores)),
                  entry.failedRestores,
                  reason);
          return entry.retry;
        }
        pods.remove(pod);
        return new Abandoned(
            pod,
            "restore failed "
                + entry.failedRestores
                + (entry.failedRestores == 1 ? " time" : " times")
                + ", the last: "
                + reason
                + "; "
                + killAll(alive));
      }
    }
    pods.remove(pod);
    StringJoiner failures = new StringJoiner("; ");
    for (int pid : toUnlock) {
      unlockOrKill(pid, failures);
    }
    if (failures.length() > 0) {
      return new Abandoned(pod, failures.toString());
    }
    return new Resumed(pod, alive);
  }

  /**
   * After the member restarted, with the journal saying the pod was checkpointed: the state of each
   * pid, in order. CHECKPOINTED ones are held again (from now, with {@code bytes}); a LOCKED (or
   * FAILED) one is unlocked, or killed if that throws; RUNNING ones and those the driver no longer
   * knows (exited) are left out.
   *
   * @return {@link Held} (the share stays freed; {@link #resume} later) or {@link Lost} (no process
   *     is checkpointed: the signal contract)
   */
  public RecoverResult recover(String pod, List<Integer> pids, long bytes) {
    Objects.requireNonNull(pod, "pod");
    if (bytes < 0) {
      throw new IllegalArgumentException("bytes " + bytes + " is < 0");
    }
    pods.remove(pod);
    List<Integer> checkpointed = new ArrayList<>();
    StringJoiner found = new StringJoiner(", ");
    StringJoiner failures = new StringJoiner("; ");
    for (int pid : distinct(pids)) {
      ProcessState state;
      try {
        state = driver.state(pid);
      } catch (CudaException exited) {
        found.add("pid " + pid + " gone");
        continue;
      }
      switch (state) {
        case CHECKPOINTED -> checkpointed.add(pid);
        case RUNNING -> found.add("pid " + pid + " RUNNING");
        case LOCKED, FAILED -> {
          if (unlockOrKill(pid, failures)) {
            found.add("pid " + pid + " " + state + ", unlocked");
          } else {
            found.add("pid " + pid + " " + state + ", killed");
          }
        }
      }
    }
    if (checkpointed.isEmpty()) {
      String what = found.length() == 0 ? "no pids" : found.toString();
      return new Lost(
          pod,
          "no process of the pod is checkpointed: "
              + what
              + (failures.length() == 0 ? "" : "; " + failures));
    }
    Held held = new Held(pod, checkpointed, bytes, clock.instant());
    pods.put(pod, new Entry(held));
    return held;
  }

  /** The pod, if it is held here. */
  public Optional<Held> held(String pod) {
    Entry entry = pods.get(pod);
    return entry == null ? Optional.empty() : Optional.of(entry.held);
  }

  /** Every pod held here, in the order they were held; a copy. */
  public Collection<Held> held() {
    return pods.values().stream().map(e -> e.held).toList();
  }

  /** The host memory the held pods take: the sum of their {@link Held#bytes()}. */
  public long heldBytes() {
    long sum = 0;
    for (Entry entry : pods.values()) {
      sum += entry.held.bytes();
    }
    return sum;
  }

  /** Drops the pod (it was deleted, its processes with it): no driver call, nothing killed. */
  public void forget(String pod) {
    pods.remove(pod);
  }

  /**
   * Restores the checkpointed and unlocks the locked (killing those where either throws), noting
   * each failure in {@code reason}.
   */
  private void undo(List<Integer> checkpointed, List<Integer> locked, StringJoiner reason) {
    List<Integer> killed = new ArrayList<>();
    for (int pid : checkpointed) {
      try {
        driver.restore(pid);
      } catch (CudaException e) {
        reason.add("restore of pid " + pid + " failed, " + kill(pid) + ": " + e.getMessage());
        killed.add(pid);
      }
    }
    for (int pid : locked) {
      if (!killed.contains(pid)) {
        unlockOrKill(pid, reason);
      }
    }
  }

  /** Unlocks {@code pid}; true if that worked, else kills it and notes why in {@code reason}. */
  private boolean unlockOrKill(int pid, StringJoiner reason) {
    try {
      driver.unlock(pid);
      return true;
    } catch (CudaException e) {
      reason.add("unlock of pid " + pid + " failed, " + kill(pid) + ": " + e.getMessage());
      return false;
    }
  }

  /** Kills {@code pid}; says what happened ("killed it", or why that failed too). */
  private String kill(int pid) {
    try {
      killer.kill(pid);
      return "killed it";
    } catch (RuntimeException e) {
      return "and killing it failed (" + e + ")";
    }
  }

  /** Kills each of {@code pids}; says so ("killed pids [..]", and any kill that failed). */
  private String killAll(List<Integer> pids) {
    StringJoiner failures = new StringJoiner("; ");
    for (int pid : pids) {
      try {
        killer.kill(pid);
      } catch (RuntimeException e) {
        failures.add("killing pid " + pid + " failed (" + e + ")");
      }
    }
    return "killed pids " + pids + (failures.length() == 0 ? "" : "; " + failures);
  }

  private boolean isLocked(int pid) {
    try {
      return driver.state(pid) == ProcessState.LOCKED;
    } catch (CudaException gone) {
      return false;
    }
  }

  private static List<Integer> distinct(List<Integer> pids) {
    Objects.requireNonNull(pids, "pids");
    return List.copyOf(new LinkedHashSet<>(pids));
  }
}
