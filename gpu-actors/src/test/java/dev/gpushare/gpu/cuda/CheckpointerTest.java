package dev.gpushare.gpu.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.cuda.CheckpointDriver.ProcessState;
import dev.gpushare.gpu.cuda.Checkpointer.Abandoned;
import dev.gpushare.gpu.cuda.Checkpointer.Failed;
import dev.gpushare.gpu.cuda.Checkpointer.Gone;
import dev.gpushare.gpu.cuda.Checkpointer.Held;
import dev.gpushare.gpu.cuda.Checkpointer.Lost;
import dev.gpushare.gpu.cuda.Checkpointer.NotHeld;
import dev.gpushare.gpu.cuda.Checkpointer.NothingToHold;
import dev.gpushare.gpu.cuda.Checkpointer.ResumeResult;
import dev.gpushare.gpu.cuda.Checkpointer.Resumed;
import dev.gpushare.gpu.cuda.Checkpointer.RetryAt;
import dev.gpushare.gpu.cuda.Checkpointer.Settings;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link Checkpointer} over a fake driver that keeps each process's state, enforces the driver's
 * transitions, and logs every call (and every kill) in order.
 */
class CheckpointerTest {

  private static final Instant T0 = Instant.parse("2025-06-01T12:00:00Z");
  private static final long GIB = 1L << 30;
  private static final String POD = "default/train-0";

  private final List<String> calls = new ArrayList<>();
  private final FakeDriver driver = new FakeDriver(calls);
  private final ManualClock clock = new ManualClock(T0);

  private Checkpointer checkpointer(Settings settings) {
    return new Checkpointer(driver, driver::kill, clock, settings);
  }

  private Checkpointer checkpointer() {
    return checkpointer(Settings.DEFAULTS);
  }

  /** Suspends POD with pids 11 and 12 (both running) and clears the call log. */
  private Checkpointer heldPod(Settings settings) {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    Checkpointer checkpointer = checkpointer(settings);
    assertEquals(
        new Held(POD, List.of(11, 12), 2 * GIB, T0),
        checkpointer.suspend(POD, List.of(11, 12), 2 * GIB));
    calls.clear();
    return checkpointer;
  }

  // ---- suspend and resume ----

  @Test
  void suspendThenResumeCallsTheDriverInOrder() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    Checkpointer checkpointer = checkpointer();

    Held held = new Held(POD, List.of(11, 12), 2 * GIB, T0);
    assertEquals(held, checkpointer.suspend(POD, List.of(11, 12), 2 * GIB));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "lock 11 PT10S",
            "lock 12 PT10S",
            "checkpoint 11",
            "checkpoint 12"),
        calls);
    assertEquals(ProcessState.CHECKPOINTED, driver.states.get(11));
    assertEquals(ProcessState.CHECKPOINTED, driver.states.get(12));
    assertEquals(Optional.of(held), checkpointer.held(POD));
    assertEquals(List.of(held), List.copyOf(checkpointer.held()));
    assertEquals(2 * GIB, checkpointer.heldBytes());

    calls.clear();
    clock.advance(Duration.ofMinutes(5));
    assertEquals(new Resumed(POD, List.of(11, 12)), checkpointer.resume(POD));
    assertEquals(
        List.of("state 11", "state 12", "restore 11", "restore 12", "unlock 11", "unlock 12"),
        calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
    assertEquals(Optional.empty(), checkpointer.held(POD));
    assertEquals(0, checkpointer.heldBytes());
    assertEquals(new NotHeld(POD), checkpointer.resume(POD));
  }

  @Test
  void suspendLeavesOutPidsTheDriverDoesNotKnowAndDuplicates() {
    driver.process(12, ProcessState.RUNNING);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Held(POD, List.of(12), GIB, T0), checkpointer.suspend(POD, List.of(10, 12, 12), GIB));
    assertEquals(List.of("state 10", "state 12", "lock 12 PT10S", "checkpoint 12"), calls);
  }

  @Test
  void suspendOfAHeldPodGivesItsHeldWithoutCallingTheDriver() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    clock.advance(Duration.ofSeconds(1));

    assertEquals(
        new Held(POD, List.of(11, 12), 2 * GIB, T0),
        checkpointer.suspend(POD, List.of(11, 12, 13), 3 * GIB));
    assertEquals(List.of(), calls);
    assertEquals(2 * GIB, checkpointer.heldBytes());
  }

  @Test
  void suspendTakesProcessesAlreadyLockedOrCheckpointedAsTheyAre() {
    driver.process(11, ProcessState.LOCKED);
    driver.process(12, ProcessState.CHECKPOINTED);
    driver.process(13, ProcessState.RUNNING);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Held(POD, List.of(11, 12, 13), GIB, T0),
        checkpointer.suspend(POD, List.of(11, 12, 13), GIB));
    assertEquals(
        List.of(
            "state 11", "state 12", "state 13", "lock 13 PT10S", "checkpoint 11", "checkpoint 13"),
        calls);
  }

  @Test
  void nothingToHoldWithoutPidsOrWithoutCudaProcesses() {
    Checkpointer checkpointer = checkpointer();

    assertEquals(new NothingToHold(POD), checkpointer.suspend(POD, List.of(), GIB));
    assertEquals(List.of(), calls);
    assertEquals(new NothingToHold(POD), checkpointer.suspend(POD, List.of(10, 20), GIB));
    assertEquals(List.of("state 10", "state 20"), calls);
    assertEquals(Optional.empty(), checkpointer.held(POD));
    assertEquals(0, checkpointer.heldBytes());
  }

  // ---- suspend failures ----

  @Test
  void lockTimeoutOnTheSecondPidUnlocksTheFirst() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.failOnce("lock", 12, CudaException.TIMEOUT, "CUDA_ERROR_TIMEOUT", null);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(
            POD,
            "lock of pid 12 timed out after PT10S: cuCheckpointProcessLock(12) failed:"
                + " CUDA_ERROR_TIMEOUT (909)"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
    assertEquals(
        List.of("state 11", "state 12", "lock 11 PT10S", "lock 12 PT10S", "unlock 11", "state 12"),
        calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
    assertEquals(Optional.empty(), checkpointer.held(POD));
  }

  @Test
  void lockThatFailsButLeavesTheProcessLockedUnlocksItToo() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.failOnce("lock", 12, 999, "CUDA_ERROR_UNKNOWN", ProcessState.LOCKED);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(
            POD,
            "lock of pid 12 failed: cuCheckpointProcessLock(12) failed: CUDA_ERROR_UNKNOWN (999)"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "lock 11 PT10S",
            "lock 12 PT10S",
            "unlock 11",
            "state 12",
            "unlock 12"),
        calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
  }

  @Test
  void checkpointFailureRestoresTheCheckpointedAndUnlocksAll() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.process(13, ProcessState.RUNNING);
    driver.failOnce(
        "checkpoint", 12, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(
            POD,
            "checkpoint of pid 12 failed: cuCheckpointProcessCheckpoint(12) failed:"
                + " CUDA_ERROR_OUT_OF_MEMORY (2)"),
        checkpointer.suspend(POD, List.of(11, 12, 13), GIB));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "state 13",
            "lock 11 PT10S",
            "lock 12 PT10S",
            "lock 13 PT10S",
            "checkpoint 11",
            "checkpoint 12",
            "restore 11",
            "unlock 11",
            "unlock 12",
            "unlock 13"),
        calls);
    for (int pid : List.of(11, 12, 13)) {
      assertEquals(ProcessState.RUNNING, driver.states.get(pid), "pid " + pid);
    }
    assertEquals(0, checkpointer.heldBytes());
  }

  @Test
  void unlockThatFailsKillsTheProcess() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.failOnce("lock", 12, CudaException.TIMEOUT, "CUDA_ERROR_TIMEOUT", null);
    driver.failOnce("unlock", 11, 999, "CUDA_ERROR_UNKNOWN", null);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(
            POD,
            "lock of pid 12 timed out after PT10S: cuCheckpointProcessLock(12) failed:"
                + " CUDA_ERROR_TIMEOUT (909); unlock of pid 11 failed, killed it:"
                + " cuCheckpointProcessUnlock(11) failed: CUDA_ERROR_UNKNOWN (999)"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "lock 11 PT10S",
            "lock 12 PT10S",
            "unlock 11",
            "kill 11",
            "state 12"),
        calls);
    assertNull(driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
  }

  @Test
  void restoreThatFailsWhileUndoingACheckpointKillsTheProcess() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.failOnce("checkpoint", 12, 999, "CUDA_ERROR_UNKNOWN", null);
    driver.failOnce("restore", 11, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(
            POD,
            "checkpoint of pid 12 failed: cuCheckpointProcessCheckpoint(12) failed:"
                + " CUDA_ERROR_UNKNOWN (999); restore of pid 11 failed, killed it:"
                + " cuCheckpointProcessRestore(11) failed: CUDA_ERROR_OUT_OF_MEMORY (2)"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "lock 11 PT10S",
            "lock 12 PT10S",
            "checkpoint 11",
            "checkpoint 12",
            "restore 11",
            "kill 11",
            "unlock 12"),
        calls);
    assertNull(driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
  }

  @Test
  void aKillThatThrowsIsNamedInTheReason() {
    driver.process(11, ProcessState.RUNNING);
    driver.process(12, ProcessState.RUNNING);
    driver.failOnce("lock", 12, CudaException.TIMEOUT, "CUDA_ERROR_TIMEOUT", null);
    driver.failOnce("unlock", 11, 999, "CUDA_ERROR_UNKNOWN", null);
    Checkpointer checkpointer =
        new Checkpointer(
            driver,
            pid -> {
              calls.add("kill " + pid);
              throw new UnsupportedOperationException("no kill here");
            },
            clock,
            Settings.DEFAULTS);

    assertEquals(
        new Failed(
            POD,
            "lock of pid 12 timed out after PT10S: cuCheckpointProcessLock(12) failed:"
                + " CUDA_ERROR_TIMEOUT (909); unlock of pid 11 failed, and killing it failed"
                + " (java.lang.UnsupportedOperationException: no kill here):"
                + " cuCheckpointProcessUnlock(11) failed: CUDA_ERROR_UNKNOWN (999)"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
  }

  @Test
  void aProcessInTheFailedStateFailsTheSuspendAndReleasesTheLockedOnes() {
    driver.process(11, ProcessState.LOCKED);
    driver.process(12, ProcessState.FAILED);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Failed(POD, "pid 12 is in the driver's FAILED state"),
        checkpointer.suspend(POD, List.of(11, 12), GIB));
    assertEquals(List.of("state 11", "state 12", "unlock 11"), calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(11));
  }

  // ---- resume: retries ----

  @Test
  void restoreOutOfMemoryRetriesWithGrowingBackoffAndNoDriverCallsBeforeThen() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    for (int i = 0; i < 3; i++) {
      driver.failOnce("restore", 11, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);
    }
    String oom =
        "restore of pid 11 found no room on the GPU: cuCheckpointProcessRestore(11) failed:"
            + " CUDA_ERROR_OUT_OF_MEMORY (2)";

    ResumeResult first = checkpointer.resume(POD);
    assertEquals(new RetryAt(POD, T0.plusSeconds(30), 1, oom), first);
    assertEquals(List.of("state 11", "state 12", "restore 11"), calls);
    assertEquals(2 * GIB, checkpointer.heldBytes());

    calls.clear();
    clock.advance(Duration.ofSeconds(29));
    assertSame(first, checkpointer.resume(POD));
    assertEquals(List.of(), calls);

    clock.advance(Duration.ofSeconds(1)); // T0 + 30 s
    assertEquals(new RetryAt(POD, T0.plusSeconds(90), 2, oom), checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 11"), calls);

    calls.clear();
    clock.advance(Duration.ofSeconds(60)); // T0 + 90 s
    assertEquals(new RetryAt(POD, T0.plusSeconds(180), 3, oom), checkpointer.resume(POD));
    clock.advance(Duration.ofSeconds(89));
    assertEquals(new RetryAt(POD, T0.plusSeconds(180), 3, oom), checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 11"), calls);
    assertEquals(Optional.of(new Held(POD, List.of(11, 12), 2 * GIB, T0)), checkpointer.held(POD));

    calls.clear();
    clock.advance(Duration.ofSeconds(1)); // T0 + 180 s
    assertEquals(new Resumed(POD, List.of(11, 12)), checkpointer.resume(POD));
    assertEquals(
        List.of("state 11", "state 12", "restore 11", "restore 12", "unlock 11", "unlock 12"),
        calls);
    assertEquals(0, checkpointer.heldBytes());
  }

  @Test
  void aRetryAfterAPartialRestoreOnlyUnlocksWhatWasRestored() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.failOnce("restore", 12, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);

    assertEquals(
        new RetryAt(
            POD,
            T0.plusSeconds(30),
            1,
            "restore of pid 12 found no room on the GPU: cuCheckpointProcessRestore(12) failed:"
                + " CUDA_ERROR_OUT_OF_MEMORY (2)"),
        checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 11", "restore 12"), calls);
    assertEquals(ProcessState.LOCKED, driver.states.get(11));
    assertEquals(ProcessState.CHECKPOINTED, driver.states.get(12));

    calls.clear();
    clock.advance(Duration.ofSeconds(30));
    assertEquals(new Resumed(POD, List.of(11, 12)), checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 12", "unlock 11", "unlock 12"), calls);
  }

  @Test
  void anyRestoreErrorIsRetriedAndNamed() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.failOnce("restore", 11, 999, "CUDA_ERROR_UNKNOWN", null);

    assertEquals(
        new RetryAt(
            POD,
            T0.plusSeconds(30),
            1,
            "restore of pid 11 failed: cuCheckpointProcessRestore(11) failed: CUDA_ERROR_UNKNOWN"
                + " (999)"),
        checkpointer.resume(POD));
  }

  @Test
  void theLastFailedAttemptAbandonsThePodAndKillsItsProcesses() {
    Checkpointer checkpointer =
        heldPod(new Settings(Duration.ofSeconds(10), 2, Duration.ofSeconds(30)));
    driver.failAlways("restore", 12, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY");
    String oom =
        "restore of pid 12 found no room on the GPU: cuCheckpointProcessRestore(12) failed:"
            + " CUDA_ERROR_OUT_OF_MEMORY (2)";

    assertEquals(new RetryAt(POD, T0.plusSeconds(30), 1, oom), checkpointer.resume(POD));
    calls.clear();
    clock.advance(Duration.ofSeconds(30));
    assertEquals(
        new Abandoned(POD, "restore failed 2 times, the last: " + oom + "; killed pids [11, 12]"),
        checkpointer.resume(POD));
    // 11 was restored by the first attempt (LOCKED): killed as well, never left locked.
    assertEquals(List.of("state 11", "state 12", "restore 12", "kill 11", "kill 12"), calls);
    assertTrue(driver.states.isEmpty());
    assertEquals(Optional.empty(), checkpointer.held(POD));
    assertEquals(0, checkpointer.heldBytes());
    assertEquals(new NotHeld(POD), checkpointer.resume(POD));
  }

  @Test
  void oneAttemptOnlyAbandonsOnTheFirstFailure() {
    Checkpointer checkpointer =
        heldPod(new Settings(Duration.ofSeconds(10), 1, Duration.ofSeconds(30)));
    driver.failOnce("restore", 11, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);

    assertEquals(
        new Abandoned(
            POD,
            "restore failed 1 time, the last: restore of pid 11 found no room on the GPU:"
                + " cuCheckpointProcessRestore(11) failed: CUDA_ERROR_OUT_OF_MEMORY (2); killed"
                + " pids [11, 12]"),
        checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 11", "kill 11", "kill 12"), calls);
  }

  // ---- resume: exits and failures ----

  @Test
  void aProcessThatExitedWhileCheckpointedIsDropped() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.exit(11);

    assertEquals(new Resumed(POD, List.of(12)), checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "restore 12", "unlock 12"), calls);
  }

  @Test
  void anExitDuringARetryIsDroppedFromTheHeldPod() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.failOnce("restore", 12, CudaException.OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", null);
    driver.exit(11);

    assertEquals(1, ((RetryAt) checkpointer.resume(POD)).attempt());
    assertEquals(Optional.of(new Held(POD, List.of(12), 2 * GIB, T0)), checkpointer.held(POD));
    calls.clear();
    clock.advance(Duration.ofSeconds(30));
    assertEquals(new Resumed(POD, List.of(12)), checkpointer.resume(POD));
    assertEquals(List.of("state 12", "restore 12", "unlock 12"), calls);
  }

  @Test
  void allProcessesExitedWhileCheckpointedIsGone() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.exit(11);
    driver.exit(12);

    assertEquals(
        new Gone(POD, "every process of the pod exited while checkpointed (pids [11, 12])"),
        checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12"), calls);
    assertEquals(Optional.empty(), checkpointer.held(POD));
    assertEquals(0, checkpointer.heldBytes());
  }

  @Test
  void anUnlockThatFailsOnResumeKillsThatProcessAndAbandons() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.failOnce("unlock", 11, 999, "CUDA_ERROR_UNKNOWN", null);

    assertEquals(
        new Abandoned(
            POD,
            "unlock of pid 11 failed, killed it: cuCheckpointProcessUnlock(11) failed:"
                + " CUDA_ERROR_UNKNOWN (999)"),
        checkpointer.resume(POD));
    assertEquals(
        List.of(
            "state 11",
            "state 12",
            "restore 11",
            "restore 12",
            "unlock 11",
            "kill 11",
            "unlock 12"),
        calls);
    assertNull(driver.states.get(11));
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
    assertEquals(Optional.empty(), checkpointer.held(POD));
  }

  @Test
  void aProcessInTheFailedStateOnResumeAbandonsAndKills() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    driver.process(12, ProcessState.FAILED);

    assertEquals(
        new Abandoned(POD, "pid 12 is in the driver's FAILED state; killed pids [11, 12]"),
        checkpointer.resume(POD));
    assertEquals(List.of("state 11", "state 12", "kill 11", "kill 12"), calls);
    assertEquals(Optional.empty(), checkpointer.held(POD));
  }

  // ---- recover ----

  @Test
  void recoverHoldsTheCheckpointedAndUnlocksTheLocked() {
    driver.process(11, ProcessState.CHECKPOINTED);
    driver.process(12, ProcessState.LOCKED);
    driver.process(13, ProcessState.RUNNING);
    driver.process(15, ProcessState.CHECKPOINTED);
    Checkpointer checkpointer = checkpointer();
    clock.advance(Duration.ofSeconds(7));

    Held held = new Held(POD, List.of(11, 15), 3 * GIB, T0.plusSeconds(7));
    assertEquals(held, checkpointer.recover(POD, List.of(11, 12, 13, 14, 15), 3 * GIB));
    assertEquals(
        List.of("state 11", "state 12", "unlock 12", "state 13", "state 14", "state 15"), calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
    assertEquals(Optional.of(held), checkpointer.held(POD));
    assertEquals(3 * GIB, checkpointer.heldBytes());

    calls.clear();
    assertEquals(new Resumed(POD, List.of(11, 15)), checkpointer.resume(POD));
    assertEquals(
        List.of("state 11", "state 15", "restore 11", "restore 15", "unlock 11", "unlock 15"),
        calls);
  }

  @Test
  void recoverWithoutACheckpointedProcessIsLost() {
    driver.process(12, ProcessState.LOCKED);
    driver.process(13, ProcessState.RUNNING);
    driver.process(16, ProcessState.FAILED);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Lost(
            POD,
            "no process of the pod is checkpointed: pid 12 LOCKED, unlocked, pid 13 RUNNING, pid"
                + " 14 gone, pid 16 FAILED, killed; unlock of pid 16 failed, killed it:"
                + " cuCheckpointProcessUnlock(16) failed: CUDA_ERROR_ILLEGAL_STATE (401)"),
        checkpointer.recover(POD, List.of(12, 13, 14, 16), GIB));
    assertEquals(
        List.of(
            "state 12", "unlock 12", "state 13", "state 14", "state 16", "unlock 16", "kill 16"),
        calls);
    assertEquals(ProcessState.RUNNING, driver.states.get(12));
    assertNull(driver.states.get(16));
    assertEquals(Optional.empty(), checkpointer.held(POD));
    assertEquals(0, checkpointer.heldBytes());
  }

  @Test
  void recoverKillsALockedProcessThatCannotBeUnlocked() {
    driver.process(11, ProcessState.CHECKPOINTED);
    driver.process(12, ProcessState.LOCKED);
    driver.failOnce("unlock", 12, 999, "CUDA_ERROR_UNKNOWN", null);
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Held(POD, List.of(11), GIB, T0), checkpointer.recover(POD, List.of(11, 12), GIB));
    assertEquals(List.of("state 11", "state 12", "unlock 12", "kill 12"), calls);
    assertNull(driver.states.get(12));
  }

  @Test
  void recoverWithAllGoneOrNoPidsIsLost() {
    Checkpointer checkpointer = checkpointer();

    assertEquals(
        new Lost(POD, "no process of the pod is checkpointed: pid 11 gone, pid 12 gone"),
        checkpointer.recover(POD, List.of(11, 12), GIB));
    assertEquals(
        new Lost(POD, "no process of the pod is checkpointed: no pids"),
        checkpointer.recover(POD, List.of(), GIB));
  }

  // ---- bookkeeping ----

  @Test
  void heldBytesSumsTheHeldPodsAndForgetCallsNothing() {
    for (int pid : List.of(11, 12, 21, 31)) {
      driver.process(pid, ProcessState.RUNNING);
    }
    Checkpointer checkpointer = checkpointer();
    Held a = (Held) checkpointer.suspend("ns/a", List.of(11, 12), 3 * GIB);
    clock.advance(Duration.ofSeconds(1));
    Held b = (Held) checkpointer.suspend("ns/b", List.of(21), 5 * GIB);
    Held c = (Held) checkpointer.suspend("ns/c", List.of(31), 7L);
    assertEquals(8 * GIB + 7, checkpointer.heldBytes());
    assertEquals(List.of(a, b, c), List.copyOf(checkpointer.held()));
    assertEquals(T0.plusSeconds(1), b.at());

    calls.clear();
    checkpointer.forget("ns/b");
    assertEquals(List.of(), calls);
    assertEquals(ProcessState.CHECKPOINTED, driver.states.get(21));
    assertEquals(3 * GIB + 7, checkpointer.heldBytes());
    assertEquals(List.of(a, c), List.copyOf(checkpointer.held()));
    assertEquals(new NotHeld("ns/b"), checkpointer.resume("ns/b"));
    checkpointer.forget("ns/absent");

    checkpointer.resume("ns/a");
    assertEquals(7, checkpointer.heldBytes());
    assertEquals(List.of(c), List.copyOf(checkpointer.held()));
  }

  @Test
  void heldIsACopy() {
    Checkpointer checkpointer = heldPod(Settings.DEFAULTS);
    var held = checkpointer.held();
    checkpointer.forget(POD);
    assertEquals(1, held.size());
    assertThrows(UnsupportedOperationException.class, () -> held.clear());
  }

  @Test
  void suspendRejectsNegativeBytes() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> checkpointer().suspend(POD, List.of(1), -1));
    assertEquals("gpuMemoryBytes -1 is < 0", e.getMessage());
  }

  // ---- settings ----

  @Test
  void settingsDefaults() {
    assertEquals(Duration.ofSeconds(10), Settings.DEFAULTS.lockTimeout());
    assertEquals(5, Settings.DEFAULTS.restoreAttempts());
    assertEquals(Duration.ofSeconds(30), Settings.DEFAULTS.restoreBackoff());
  }

  @Test
  void settingsValidationNamesTheFieldTheValueAndWhatIsAccepted() {
    Duration s = Duration.ofSeconds(1);
    assertEquals(
        "lockTimeout PT0S is not accepted: it must be a positive duration",
        settingsError(Duration.ZERO, 1, s));
    assertEquals(
        "lockTimeout PT-1S is not accepted: it must be a positive duration",
        settingsError(Duration.ofSeconds(-1), 1, s));
    assertEquals(
        "lockTimeout null is not accepted: it must be a positive duration",
        settingsError(null, 1, s));
    assertEquals(
        "restoreAttempts 0 is not accepted: it must be at least 1", settingsError(s, 0, s));
    assertEquals(
        "restoreAttempts -3 is not accepted: it must be at least 1", settingsError(s, -3, s));
    assertEquals(
        "restoreBackoff PT0S is not accepted: it must be a positive duration",
        settingsError(s, 1, Duration.ZERO));
    assertEquals(
        "restoreBackoff null is not accepted: it must be a positive duration",
        settingsError(s, 1, null));
    assertEquals(1, new Settings(Duration.ofNanos(1), 1, Duration.ofNanos(1)).restoreAttempts());
  }

  private static String settingsError(Duration lock, int attempts, Duration backoff) {
    return assertThrows(IllegalArgumentException.class, () -> new Settings(lock, attempts, backoff))
        .getMessage();
  }

  // ---- the real killer ----

  @Test
  void forciblyKillsARealProcessAndIgnoresAGoneOne() throws IOException, InterruptedException {
    Process sleeper = new ProcessBuilder("sleep", "60").start();
    try {
      ProcessKiller.forcibly().kill(Math.toIntExact(sleeper.pid()));
      assertTrue(sleeper.waitFor(10, TimeUnit.SECONDS));
      assertFalse(sleeper.isAlive());
      ProcessKiller.forcibly().kill(Math.toIntExact(sleeper.pid())); // gone: no error
    } finally {
      sleeper.destroyForcibly();
    }
  }

  // ---- fakes ----

  /** A clock that moves only when told. */
  static final class ManualClock extends Clock {
    private Instant now;

    ManualClock(Instant start) {
      this.now = start;
    }

    void advance(Duration by) {
      now = now.plus(by);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException();
    }
  }

  /**
   * The driver's checkpoint API over a map of process states. It enforces the transitions (RUNNING
   * → LOCKED → CHECKPOINTED → LOCKED → RUNNING; anything else is {@code CUDA_ERROR_ILLEGAL_STATE}),
   * an unknown pid is {@code CUDA_ERROR_NOT_FOUND}, and scripted failures are thrown before a call
   * changes anything (leaving the state given, if any). Every call and kill goes to the shared log.
   */
  static final class FakeDriver implements CheckpointDriver {
    static final int NOT_FOUND = 500;
    static final int ILLEGAL_STATE = 401;

    record Failure(int code, String name, ProcessState leaves, boolean always) {}

    final Map<Integer, ProcessState> states = new HashMap<>();
    private final Map<String, Deque<Failure>> failures = new HashMap<>();
    private final List<String> calls;

    FakeDriver(List<String> calls) {
      this.calls = calls;
    }

    void process(int pid, ProcessState state) {
      states.put(pid, state);
    }

    void exit(int pid) {
      states.remove(pid);
    }

    /** The next {@code call} ("lock", "restore", …) for {@code pid} throws. */
    void failOnce(String call, int pid, int code, String name, ProcessState leaves) {
      failures
          .computeIfAbsent(call + " " + pid, k -> new ArrayDeque<>())
          .add(new Failure(code, name, leaves, false));
    }

    /** Every {@code call} for {@code pid} throws. */
    void failAlways(String call, int pid, int code, String name) {
      failures
          .computeIfAbsent(call + " " + pid, k -> new ArrayDeque<>())
          .add(new Failure(code, name, null, true));
    }

    void kill(int pid) {
      calls.add("kill " + pid);
      states.remove(pid);
    }

    @Override
    public ProcessState state(int pid) {
      calls.add("state " + pid);
      scripted("state", "cuCheckpointProcessGetState", pid);
      return known("cuCheckpointProcessGetState", pid);
    }

    @Override
    public void lock(int pid, Duration timeout) {
      calls.add("lock " + pid + " " + timeout);
      move("lock", "cuCheckpointProcessLock", pid, ProcessState.RUNNING, ProcessState.LOCKED);
    }

    @Override
    public void checkpoint(int pid) {
      calls.add("checkpoint " + pid);
      move(
          "checkpoint",
          "cuCheckpointProcessCheckpoint",
          pid,
          ProcessState.LOCKED,
          ProcessState.CHECKPOINTED);
    }

    @Override
    public void restore(int pid) {
      calls.add("restore " + pid);
      move(
          "restore",
          "cuCheckpointProcessRestore",
          pid,
          ProcessState.CHECKPOINTED,
          ProcessState.LOCKED);
    }

    @Override
    public void unlock(int pid) {
      calls.add("unlock " + pid);
      move("unlock", "cuCheckpointProcessUnlock", pid, ProcessState.LOCKED, ProcessState.RUNNING);
    }

    @Override
    public boolean restoresOnAnotherGpu() {
      return false;
    }

    @Override
    public String describe() {
      return "fake checkpoint driver";
    }

    private void move(String call, String function, int pid, ProcessState from, ProcessState to) {
      scripted(call, function, pid);
      if (known(function, pid) != from) {
        throw new CudaException(function, pid, ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE");
      }
      states.put(pid, to);
    }

    private ProcessState known(String function, int pid) {
      ProcessState state = states.get(pid);
      if (state == null) {
        throw new CudaException(function, pid, NOT_FOUND, "CUDA_ERROR_NOT_FOUND");
      }
      return state;
    }

    private void scripted(String call, String function, int pid) {
      Deque<Failure> queue = failures.get(call + " " + pid);
      if (queue == null || queue.isEmpty()) {
        return;
      }
      Failure failure = queue.peek().always() ? queue.peek() : queue.poll();
      if (failure.leaves() != null) {
        states.put(pid, failure.leaves());
      }
      throw new CudaException(function, pid, failure.code(), failure.name());
    }
  }
}
