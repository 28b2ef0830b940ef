package dev.gpushare.arbiter.fragmentation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TargetWorkloadTest {
  private static final PodSpec A = PodSpec.of(1000, 10, 1, 500);
  private static final PodSpec A_MORE_MEMORY = PodSpec.of(1000, 20, 1, 500);
  private static final PodSpec B = PodSpec.of(2000, 10, 1, 1000);
  private static final PodSpec C = PodSpec.of(3000, 10, 0, 0);

  /** 6 × A (3 of them with more memory), 3 × B, 1 × C. */
  private static List<PodSpec> pods() {
    List<PodSpec> pods = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      pods.add(A);
      pods.add(A_MORE_MEMORY);
      pods.add(B);
    }
    pods.add(C);
    return pods;
  }

  @Test
  void the_paper_keeps_classes_up_to_95_percent_of_the_pods_without_memory() {
    // A: 6, B: 3, C: 1 of 10. Cumulated 6, 9 (< 9.5), 10: all three kept.
    List<TargetWorkload.PodClass> classes =
        TargetWorkload.of(pods(), TargetWorkload.Options.PAPER).classes();
    assertEquals(3, classes.size());
    assertEquals(A.withoutMemory(), classes.get(0).spec());
    assertEquals(0.6, classes.get(0).popularity(), 1e-12);
    assertEquals(0.3, classes.get(1).popularity(), 1e-12);
    assertEquals(0.1, classes.get(2).popularity(), 1e-12);
  }

  @Test
  void a_lower_threshold_drops_the_rare_classes_and_renormalises() {
    // Threshold 80 %: A (6 < 8), then B (9 >= 8): stop. A: 6/9, B: 3/9.
    List<TargetWorkload.PodClass> classes =
        TargetWorkload.of(
                pods(), new TargetWorkload.Options(false, 0.8, TargetWorkload.Weighting.COUNT))
            .classes();
    assertEquals(2, classes.size());
    assertEquals(2 / 3.0, classes.get(0).popularity(), 1e-12);
    assertEquals(1 / 3.0, classes.get(1).popularity(), 1e-12);
  }

  @Test
  void memory_can_split_classes() {
    // With memory: A 3, A' 3, B 3, C 1; the three of 3 tie, larger requests first: B, then A', A.
    List<TargetWorkload.PodClass> classes =
        TargetWorkload.of(
                pods(), new TargetWorkload.Options(true, 1, TargetWorkload.Weighting.COUNT))
            .classes();
    assertEquals(List.of(B, A_MORE_MEMORY, A, C), classes.stream().map(c -> c.spec()).toList());
  }

  @Test
  void gpu_demand_weighs_by_gpus_and_drops_cpu_pods() {
    // Demand: A 6 × 0.5 = 3, B 3 × 1 = 3, C 0. A and B tie: larger requests first (B).
    List<TargetWorkload.PodClass> classes =
        TargetWorkload.of(
                pods(), new TargetWorkload.Options(false, 1, TargetWorkload.Weighting.GPU_DEMAND))
            .classes();
    assertEquals(2, classes.size());
    assertEquals(B.withoutMemory(), classes.get(0).spec());
    assertEquals(0.5, classes.get(0).popularity(), 1e-12);
  }
}
