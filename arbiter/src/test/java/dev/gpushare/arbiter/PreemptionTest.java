package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PreemptionTest {
  static final Instant NOW = Instant.parse("2026-01-01T10:00:00Z");
  static final Duration MAX = Duration.ofMinutes(60);

  static Instant ranFor(long minutes) {
    return NOW.minus(Duration.ofMinutes(minutes));
  }

  @Test
  void a_pod_is_a_candidate_only_after_more_than_the_max_duration() {
    assertTrue(!Preemption.isCandidate(ranFor(60), NOW, MAX));
    assertTrue(Preemption.isCandidate(ranFor(60).minusNanos(1), NOW, MAX));
  }

  @Test
  void nobody_is_preempted_while_no_candidate_exceeds_the_duration() {
    List<GpuLoad> gpus = List.of(new GpuLoad(0, true, Map.of("a", new Share(100, 100))));
    assertEquals(
        Optional.empty(),
        Preemption.choose(gpus, Map.of("a", ranFor(60)), new Share(10, 10), NOW, MAX));
  }

  @Test
  void the_smallest_set_on_one_gpu_wins() {
    List<GpuLoad> gpus =
        List.of(
            new GpuLoad(
                0,
                true,
                Map.of("a", new Share(30, 30), "b", new Share(30, 30), "e", new Share(30, 30))),
            new GpuLoad(1, true, Map.of("c", new Share(60, 60), "d", new Share(40, 40))));
    Map<String, Instant> since =
        Map.of(
            "a", ranFor(500), "b", ranFor(400), "e", ranFor(450), "c", ranFor(61), "d", ranFor(61));
    var plan = Preemption.choose(gpus, since, new Share(60, 60), NOW, MAX).orElseThrow();
    assertEquals(1, plan.gpu());
    assertEquals(List.of("c"), plan.victims());
  }

  @Test
  void among_equal_sets_the_longest_running_is_chosen() {
    List<GpuLoad> gpus =
        List.of(
            new GpuLoad(0, true, Map.of("a", new Share(50, 50), "b", new Share(50, 50))),
            new GpuLoad(1, true, Map.of("c", new Share(100, 100))));
    Map<String, Instant> since = Map.of("a", ranFor(90), "b", ranFor(200), "c", ranFor(150));
    var plan = Preemption.choose(gpus, since, new Share(50, 50), NOW, MAX).orElseThrow();
    assertEquals(0, plan.gpu());
    assertEquals(List.of("b"), plan.victims());
  }

  @Test
  void victims_are_listed_longest_running_first() {
    List<GpuLoad> gpus =
        List.of(new GpuLoad(0, true, Map.of("a", new Share(50, 50), "b", new Share(50, 50))));
    Map<String, Instant> since = Map.of("a", ranFor(90), "b", ranFor(200));
    var plan = Preemption.choose(gpus, since, new Share(100, 100), NOW, MAX).orElseThrow();
    assertEquals(List.of("b", "a"), plan.victims());
  }

  @Test
  void non_candidates_are_never_moved_even_if_that_leaves_the_head_waiting() {
    List<GpuLoad> gpus =
        List.of(new GpuLoad(0, true, Map.of("old", new Share(50, 50), "new", new Share(50, 50))));
    Map<String, Instant> since = Map.of("old", ranFor(90), "new", ranFor(5));
    assertEquals(Optional.empty(), Preemption.choose(gpus, since, new Share(100, 100), NOW, MAX));
  }

  @Test
  void the_next_look_is_just_after_the_earliest_crossing() {
    Map<String, Instant> since = Map.of("a", ranFor(10), "b", ranFor(30));
    assertEquals(
        Optional.of(NOW.plus(Duration.ofMinutes(30)).plusSeconds(1)),
        Preemption.nextCandidateAt(since, NOW, MAX));
  }
}
