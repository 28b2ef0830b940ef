package dev.gpushare.arbiter.fragmentation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The measure on tiny nodes, each expected value computed by hand in the comments. */
class FragmentationMeasureTest {
  private static final double EPS = 1e-9;

  /** A: 1 × 500 with 2 cores (½), B: 1 whole GPU with 4 cores (¼), C: CPU only, 1 core (¼). */
  private static TargetWorkload abc() {
    Map<PodSpec, Double> weights = new LinkedHashMap<>();
    weights.put(PodSpec.of(2000, 0, 1, 500), 2.0);
    weights.put(PodSpec.of(4000, 0, 1, 1000), 1.0);
    weights.put(PodSpec.of(1000, 0, 0, 0), 1.0);
    return TargetWorkload.ofWeights(weights);
  }

  private static NodeState node(int cpuFree, int... gpuFree) {
    return new NodeState("n", 64_000, 1000, "T4", cpuFree, 1000, gpuFree);
  }

  @Test
  void each_class_counts_the_free_gpu_it_cannot_use() {
    // GPUs free 1000/500/200/0, 1700 in all, 8 cores free.
    // A fits (two GPUs have 500): the 200 and the 0 are too small: ½ × 200 = 100.
    // B fits (GPU 0 is whole): 500 + 200 are too small:              ¼ × 700 = 175.
    // C asks for no GPU: all 1700 are fragment to it:                ¼ × 1700 = 425.
    double fragment = new FragmentationMeasure(abc()).of(node(8000, 1000, 500, 200, 0));
    assertEquals(700, fragment, EPS);
  }

  @Test
  void a_class_that_cannot_be_placed_counts_all_free_gpu() {
    // 3 cores free: B (4 cores) cannot be placed: ¼ × 1700 = 425 instead of 175; A and C as above.
    assertEquals(
        100 + 425 + 425, new FragmentationMeasure(abc()).of(node(3000, 1000, 500, 200, 0)), EPS);
    // No whole GPU: B cannot be placed either: ¼ × 1200 = 300; A: 200 (½ × 200 = 100); C: 300.
    assertEquals(700, new FragmentationMeasure(abc()).of(node(8000, 500, 500, 200)), EPS);
  }

  @Test
  void a_full_node_has_no_fragment() {
    assertEquals(0, new FragmentationMeasure(abc()).of(node(8000, 0, 0)), EPS);
  }

  @Test
  void a_model_the_class_refuses_makes_all_free_gpu_fragment() {
    // Only class: 1 × 300 on V100 only; the node is a T4 with 1000 + 400 free: all 1400.
    TargetWorkload v100 =
        TargetWorkload.ofWeights(Map.of(new PodSpec(1000, 0, 1, 300, List.of("V100M16")), 1.0));
    assertEquals(1400, new FragmentationMeasure(v100).of(node(8000, 1000, 400)), EPS);
  }

  @Test
  void a_pod_of_several_gpus_needs_that_many_whole_ones() {
    // Only class: 2 whole GPUs. Free 1000/1000/600: fits; the 600 is too small: 600.
    // Free 1000/600/600: one whole GPU only: all 2200.
    TargetWorkload two = TargetWorkload.ofWeights(Map.of(PodSpec.of(1000, 0, 2, 1000), 1.0));
    assertEquals(600, new FragmentationMeasure(two).of(node(8000, 1000, 1000, 600)), EPS);
    assertEquals(2200, new FragmentationMeasure(two).of(node(8000, 1000, 600, 600)), EPS);
  }

  @Test
  void memory_counts_only_for_a_memory_aware_measure() {
    // Only class: 1 × 500 with 1 core and 2000 MiB; the node has 1000 MiB free, GPUs 1000 + 200.
    TargetWorkload big = TargetWorkload.ofWeights(Map.of(PodSpec.of(1000, 2000, 1, 500), 1.0));
    NodeState node = node(8000, 1000, 200);
    assertEquals(200, new FragmentationMeasure(big).of(node), EPS); // the paper: CPU only
    assertEquals(1200, new FragmentationMeasure(big, true, 0).of(node), EPS);
  }

  @Test
  void the_capacity_term_counts_gpu_the_free_cpu_cannot_accompany() {
    // Only class: 1 whole GPU with 4 cores. Two whole GPUs free, 5 cores: the paper sees no
    // fragment (one pod still fits). CPU for ⌊5/4⌋ = 1 pod backs 1000 of the 2000 usable:
    // 1000 unbacked, times the weight.
    TargetWorkload one = TargetWorkload.ofWeights(Map.of(PodSpec.of(4000, 0, 1, 1000), 1.0));
    NodeState node = node(5000, 1000, 1000);
    assertEquals(0, new FragmentationMeasure(one).of(node), EPS);
    assertEquals(1000, new FragmentationMeasure(one, false, 1).of(node), EPS);
    assertEquals(500, new FragmentationMeasure(one, false, 0.5).of(node), EPS);
    // 8 cores back both GPUs: nothing unbacked.
    assertEquals(0, new FragmentationMeasure(one, false, 1).of(node(8000, 1000, 1000)), EPS);
    // Shares: 1 × 470 with 4 cores on one whole GPU, 8 cores: 2 pods back 940 of 1000; the 60
    // left can take no pod of the class either.
    TargetWorkload share = TargetWorkload.ofWeights(Map.of(PodSpec.of(4000, 0, 1, 470), 1.0));
    assertEquals(60, new FragmentationMeasure(share, false, 1).of(node(8000, 1000)), EPS);
  }

  @Test
  void the_cluster_fragmentation_is_the_sum_over_nodes() {
    Cluster cluster =
        new Cluster(List.of(node(8000, 1000, 500, 200, 0), node(3000, 1000, 500, 200, 0)));
    assertEquals(700 + 950, cluster.fragmentationMilli(new FragmentationMeasure(abc())), EPS);
  }
}
