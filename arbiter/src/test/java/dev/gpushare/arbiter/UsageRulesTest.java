package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.UsageRules.Action;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.arbiter.UsageRules.PodUsage;
import dev.gpushare.arbiter.UsageRules.Verdict;
import dev.gpushare.arbiter.UsageRules.Watch;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class UsageRulesTest {
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  static final long H800 = 81559;
  static final Share HALF = new Share(50, 50);
  static final IdleSettings TEN_MINUTES =
      new IdleSettings(Optional.of(Duration.ofMinutes(10)), Duration.ofSeconds(60));

  static PodUsage working(long mib, int sm) {
    return new PodUsage(mib, OptionalInt.of(sm), 1);
  }

  static Verdict judge(
      Watch w, PodUsage u, IdleSettings idle, boolean memory, long secondsAfterT0) {
    return UsageRules.judge(w, u, HALF, H800, idle, memory, T0.plusSeconds(secondsAfterT0));
  }

  @Test
  void aProcessOnAGpuThePodDoesNotHoldIsUngrantedUse() {
    assertTrue(UsageRules.ungranted(OptionalInt.empty(), 0), "the pod holds no GPU");
    assertTrue(UsageRules.ungranted(OptionalInt.of(1), 0), "the pod holds another GPU");
    assertFalse(UsageRules.ungranted(OptionalInt.of(0), 0), "its own GPU (a static pod's too)");
    assertEquals(
        Optional.of(UsageRules.UngrantedAction.KILL), UsageRules.UngrantedAction.parse("Kill"));
    assertEquals(Optional.empty(), UsageRules.UngrantedAction.parse("stop"));
    assertTrue(
        UsageRules.UNGRANTED_AFTER.compareTo(Duration.ofSeconds(60)) > 0,
        "longer than the stop sequence: SIGUSR1, SIGTERM 30 s later, SIGKILL 30 s after that");
  }

  @Test
  void relativeUtilisationHasTheCoreLimitAsDenominator() {
    assertEquals(OptionalInt.of(40), UsageRules.relative(OptionalInt.of(20), 50));
    assertEquals(OptionalInt.of(100), UsageRules.relative(OptionalInt.of(30), 30));
    assertEquals(OptionalInt.of(150), UsageRules.relative(OptionalInt.of(45), 30)); // no MPS
    assertEquals(OptionalInt.of(33), UsageRules.relative(OptionalInt.of(10), 30)); // rounded down
    assertEquals(OptionalInt.empty(), UsageRules.relative(OptionalInt.empty(), 50));
  }

  @Test
  void memoryLimitIsThePercentageOfTheGpusMemoryRoundedDown() {
    assertEquals(40779, UsageRules.memoryLimitMiB(50, H800));
    assertEquals(H800, UsageRules.memoryLimitMiB(100, H800));
    assertEquals(815, UsageRules.memoryLimitMiB(1, H800));
  }

  @Test
  void activityIsKnownOnlyWhenTheDriverSaysSo() {
    assertEquals(Optional.of(false), PodUsage.NONE.active());
    assertEquals(Optional.of(true), working(100, 1).active());
    assertEquals(Optional.of(false), working(100, 0).active());
    assertEquals(Optional.empty(), new PodUsage(100, OptionalInt.empty(), 2).active());
    assertEquals(Optional.empty(), PodUsage.UNKNOWN.active());
  }

  @Test
  void memoryOverTheLimitRevokesOnceAtOrUnderItDoesNot() {
    Watch w = Watch.grantedAt(T0);
    assertEquals(Action.NONE, judge(w, working(40779, 50), IdleSettings.OFF, true, 1).action());
    Verdict over = judge(w, working(40780, 50), IdleSettings.OFF, true, 1);
    assertEquals(Action.REVOKE_FOR_MEMORY, over.action());
    assertEquals("Warning", over.note().type());
    assertEquals(PodNotes.MEMORY_EXCEEDED, over.note().reason());
    assertEquals(
        "GPU memory used 40780 MiB exceeds the pod's limit of 40779 MiB (50 % of 81559 MiB);"
            + " the share is revoked.",
        over.note().message());
    assertTrue(over.watch().revoked());
    assertEquals(
        Action.NONE, judge(over.watch(), working(40780, 50), IdleSettings.OFF, true, 2).action());
    assertEquals(Action.NONE, judge(w, working(90000, 50), IdleSettings.OFF, false, 1).action());
  }

  @Test
  void idleForTheIdleTimeIsAskedToHibernateThenReleasedAfterTheGrace() {
    Watch w = Watch.grantedAt(T0);
    Verdict early = judge(w, PodUsage.NONE, TEN_MINUTES, true, 599);
    assertEquals(Action.NONE, early.action());
    assertEquals(T0, early.watch().idleSince());
    Verdict ask = judge(early.watch(), PodUsage.NONE, TEN_MINUTES, true, 600);
    assertEquals(Action.ASK_TO_HIBERNATE, ask.action());
    assertEquals(PodNotes.IDLE, ask.note().reason());
    assertEquals(
        "GPU share idle for 600 s; please hibernate: it is released in 60 s unless the pod uses"
            + " the GPU.",
        ask.note().message());
    assertEquals(Action.NONE, judge(ask.watch(), PodUsage.NONE, TEN_MINUTES, true, 659).action());
    Verdict release = judge(ask.watch(), PodUsage.NONE, TEN_MINUTES, true, 660);
    assertEquals(Action.RELEASE_IDLE, release.action());
    assertEquals("GPU share released after 660 s without GPU activity.", release.note().message());
  }

  @Test
  void activityCancelsTheRequestAndStartsTheIdleTimeAgain() {
    Verdict ask = judge(Watch.grantedAt(T0), PodUsage.NONE, TEN_MINUTES, true, 600);
    assertEquals(Action.ASK_TO_HIBERNATE, ask.action());
    Verdict busy = judge(ask.watch(), working(10, 5), TEN_MINUTES, true, 630);
    assertEquals(Action.NONE, busy.action());
    assertNull(busy.watch().idleSince());
    assertFalse(busy.watch().asked());
    Verdict idleAgain = judge(busy.watch(), PodUsage.NONE, TEN_MINUTES, true, 700);
    assertEquals(T0.plusSeconds(700), idleAgain.watch().idleSince());
    assertEquals(
        Action.NONE, judge(idleAgain.watch(), PodUsage.NONE, TEN_MINUTES, true, 1299).action());
    assertEquals(
        Action.ASK_TO_HIBERNATE,
        judge(idleAgain.watch(), PodUsage.NONE, TEN_MINUTES, true, 1300).action());
  }

  @Test
  void unknownActivityIsNeverIdleAndIdleReleaseOffNeverAsks() {
    Watch w = Watch.grantedAt(T0);
    PodUsage unlisted = PodUsage.UNKNOWN;
    assertEquals(Action.NONE, judge(w, unlisted, TEN_MINUTES, true, 100_000).action());
    PodUsage noUtil = new PodUsage(10, OptionalInt.empty(), 1);
    assertEquals(Action.NONE, judge(w, noUtil, TEN_MINUTES, true, 100_000).action());
    assertEquals(Action.NONE, judge(w, PodUsage.NONE, IdleSettings.OFF, true, 100_000).action());
  }

  @Test
  void idleSettingsRefuseNonsense() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new IdleSettings(Optional.of(Duration.ZERO), Duration.ofSeconds(1)));
    assertThrows(
        IllegalArgumentException.class,
        () -> new IdleSettings(Optional.empty(), Duration.ofSeconds(-1)));
  }

  @Test
  void theWorkloadEnvironmentIsTheEnforcementContract() {
    String uuid = "GPU-3e5a";
    assertEquals(
        Map.of(
            "CUDA_VISIBLE_DEVICES",
            uuid,
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            "50",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
            uuid + "=40779M"),
        WorkloadEnv.of(uuid, HALF, H800, Optional.empty()));
    Map<String, String> mps =
        WorkloadEnv.of(uuid, new Share(30, 20), H800, Optional.of("/run/gpushare/mps/"));
    assertEquals("30", mps.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    assertEquals(uuid + "=16311M", mps.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    assertEquals("/run/gpushare/mps/" + uuid + "/pipe", mps.get("CUDA_MPS_PIPE_DIRECTORY"));
    assertEquals("/run/gpushare/mps/" + uuid + "/log", mps.get("CUDA_MPS_LOG_DIRECTORY"));
    assertEquals(
        java.util.List.of(
            "CUDA_VISIBLE_DEVICES",
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
            "CUDA_MPS_PIPE_DIRECTORY",
            "CUDA_MPS_LOG_DIRECTORY"),
        java.util.List.copyOf(mps.keySet()));
  }
}
