package dev.gpushare.arbiter.fragmentation;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class FitTest {
  /** 4 GPUs, 1000/500/200/0 thousandths free, 8 cores and 1000 MiB free of 16 cores, 2000 MiB. */
  private static NodeState node(String model) {
    return new NodeState("n", 16_000, 2000, model, 8000, 1000, new int[] {1000, 500, 200, 0});
  }

  @Test
  void a_pod_needs_cpu_and_memory() {
    assertTrue(Fit.fits(node("T4"), PodSpec.of(8000, 1000, 1, 500)));
    assertFalse(Fit.fits(node("T4"), PodSpec.of(8001, 1000, 1, 500)));
    assertFalse(Fit.fits(node("T4"), PodSpec.of(8000, 1001, 1, 500)));
  }

  @Test
  void a_share_needs_one_gpu_with_its_share_free() {
    assertTrue(Fit.fits(node("T4"), PodSpec.of(1000, 0, 1, 500)));
    assertTrue(Fit.fits(node("T4"), PodSpec.of(1000, 0, 1, 501))); // the whole GPU 0
    assertTrue(Fit.fits(node("T4"), PodSpec.of(1000, 0, 1, 1000)));
    NodeState tight = new NodeState("t", 16_000, 2000, "T4", 8000, 1000, new int[] {400, 300});
    assertFalse(Fit.fits(tight, PodSpec.of(1000, 0, 1, 500))); // 700 free in all, in pieces
  }

  @Test
  void several_gpus_must_be_whole_and_untouched() {
    NodeState node =
        new NodeState("n", 16_000, 2000, "T4", 8000, 1000, new int[] {1000, 999, 1000});
    assertTrue(Fit.fits(node, PodSpec.of(1000, 0, 2, 1000)));
    assertFalse(Fit.fits(node, PodSpec.of(1000, 0, 3, 1000)));
    assertArrayEquals(new int[] {0, 2}, Fit.lowestFreeGpus(node, 2));
    assertNull(Fit.lowestFreeGpus(node, 3));
    assertThrows(IllegalArgumentException.class, () -> PodSpec.of(1000, 0, 2, 500));
  }

  @Test
  void the_model_must_be_accepted() {
    PodSpec onlyV100 = new PodSpec(1000, 0, 1, 500, List.of("V100M16", "V100M32"));
    assertFalse(Fit.fits(node("T4"), onlyV100));
    assertTrue(Fit.fits(node("V100M32"), onlyV100));
  }

  @Test
  void a_pod_without_gpu_needs_only_cpu_and_memory() {
    NodeState noGpuFree = new NodeState("n", 16_000, 2000, "T4", 8000, 1000, new int[] {0, 0});
    PodSpec cpuOnly = new PodSpec(8000, 1000, 0, 0, List.of("A100"));
    assertTrue(Fit.fits(noGpuFree, cpuOnly)); // neither the GPUs nor the model matter
    assertTrue(Fit.fits(new NodeState("cpu", 8000, 1000, "", 0), cpuOnly));
  }

  @Test
  void inside_a_node_best_fit_takes_the_tightest_gpu_with_room() {
    NodeState node =
        new NodeState("n", 16_000, 2000, "T4", 8000, 1000, new int[] {1000, 300, 500, 300});
    assertEquals(1, Fit.tightestGpu(node, 300)); // 300 free twice: the lower index
    assertEquals(2, Fit.tightestGpu(node, 301));
    assertEquals(-1, Fit.tightestGpu(new NodeState("e", 1, 1, "T4", 1, 1, new int[] {0}), 1));
  }

  @Test
  void placing_takes_the_requests_and_refuses_what_does_not_fit() {
    Cluster cluster = new Cluster(List.of(node("T4")));
    PodSpec pod = PodSpec.of(2000, 100, 1, 400);
    cluster.place(pod, new Assignment(0, new int[] {1}));
    NodeState after = cluster.node(0);
    assertEquals(6000, after.cpuFree());
    assertEquals(900, after.memoryFree());
    assertArrayEquals(new int[] {1000, 100, 200, 0}, after.gpuFreeCopy());
    assertEquals(1, cluster.version(0));
    assertEquals(400, cluster.allocatedGpuMilli());
    assertThrows(
        IllegalArgumentException.class,
        () -> cluster.place(pod, new Assignment(0, new int[] {2}))); // 200 free < 400
  }

  @Test
  void pod_specs_say_what_is_wrong() {
    assertEquals(
        "num_gpu 9: expected 0 to 8",
        assertThrows(IllegalArgumentException.class, () -> PodSpec.of(1, 1, 9, 1000)).getMessage());
    assertThrows(IllegalArgumentException.class, () -> PodSpec.of(1, 1, 0, 500));
    assertThrows(IllegalArgumentException.class, () -> PodSpec.of(1, 1, 1, 0));
    assertThrows(IllegalArgumentException.class, () -> PodSpec.of(-1, 1, 1, 100));
    assertEquals(
        new PodSpec(1, 1, 1, 10, List.of("B", "A")), new PodSpec(1, 1, 1, 10, List.of("A", "B")));
  }
}
