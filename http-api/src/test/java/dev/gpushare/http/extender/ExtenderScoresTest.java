package dev.gpushare.http.extender;

import static dev.gpushare.http.extender.ExtenderViews.gpu;
import static dev.gpushare.http.extender.ExtenderViews.node;
import static dev.gpushare.http.extender.ExtenderViews.pod;
import static dev.gpushare.http.extender.ExtenderViews.running;
import static dev.gpushare.http.extender.ExtenderViews.unhealthy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.fragmentation.FragmentationMeasure;
import dev.gpushare.arbiter.fragmentation.PodSpec;
import dev.gpushare.arbiter.fragmentation.TargetWorkload;
import dev.gpushare.http.extender.ExtenderScores.Policy;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.ShareView;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** The prioritize scores: fragmentation-aware (FGD) against the best-fit baseline. */
class ExtenderScoresTest {
  static final FragmentationMeasure TRACE = new FragmentationMeasure(ExtenderScores.TRACE_WORKLOAD);

  static PodSharing.Shared pool(int limit) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(10, 10), new Share(limit, limit), "main");
  }

  static int fgd(PodSharing.Shared pod, NodeView node) {
    return ExtenderScores.score(Policy.FGD, pod, node, TRACE);
  }

  static int bestFit(PodSharing.Shared pod, NodeView node) {
    return ExtenderScores.score(Policy.BEST_FIT, pod, node, TRACE);
  }

  @Test
  void fragmentationAwarePrefersTheNodeThatKeepsWholeGpus() {
    // a 50 % share: beside another 50 % it completes a GPU; on a fresh node it breaks one
    NodeView half = node("half", SharePolicy.SHARE_POOL, gpu(0, 50, 50), gpu(1, 0, 0));
    NodeView fresh = node("fresh", SharePolicy.SHARE_POOL, gpu(0, 0, 0), gpu(1, 0, 0));
    // the trace workload: 80 % of its pods (100, 81, 65, 59 %) cannot use a 50 % remainder, so
    // breaking a GPU adds ~0.4 GPU of fragmentation and filling one removes as much
    assertEquals(9, fgd(pool(50), half));
    assertEquals(1, fgd(pool(50), fresh));
  }

  @Test
  void bestFitDiffersFromFgdOnAHandMadeCase() {
    // "half": GPU 0 holds 50, GPU 1 is empty (150 % free). "thirds": both GPUs hold 30 (140 %).
    NodeView half = node("half", SharePolicy.SHARE_POOL, gpu(0, 50, 50), gpu(1, 0, 0));
    NodeView thirds = node("thirds", SharePolicy.SHARE_POOL, gpu(0, 30, 30), gpu(1, 30, 30));
    PodSharing.Shared pod = pool(50);
    // best fit: less free capacity left is better — thirds keeps 90 of 200 %, half keeps 100
    assertEquals(5, bestFit(pod, half));
    assertEquals(6, bestFit(pod, thirds));
    // FGD: on half the pod fills GPU 0 and GPU 1 stays whole (fragmentation -399 thousandths);
    // on thirds it leaves 20 % on GPU 0 that no common class uses (-324): half is better
    assertEquals(9, fgd(pod, half));
    assertEquals(8, fgd(pod, thirds));
    assertTrue(fgd(pod, half) > fgd(pod, thirds) && bestFit(pod, half) < bestFit(pod, thirds));
  }

  @Test
  void theMappingIsFivePlusTenthsOfAGpuLessFragmentationClampedToZeroToTen() {
    // a whole-GPU pod on an empty GPU: no class loses anything, fragmentation unchanged
    NodeView empty = node("e", SharePolicy.SHARE_POOL, gpu(0, 0, 0));
    assertEquals(0.0, increase(pool(100), empty), 1e-9);
    assertEquals(5, fgd(pool(100), empty));
    // a 10 % share on an empty GPU: 900 free, usable only by the classes of at most 81 %
    NodeView single = node("s", SharePolicy.SHARE_POOL, gpu(0, 0, 0));
    double delta = increase(pool(10), single);
    assertEquals(900.0 * 3911 / 6663, delta, 1e-6);
    assertEquals(0, fgd(pool(10), single), "an increase of 528 thousandths clamps to 0");
    assertEquals(5, ExtenderScores.fgd(List.of(), new Share(10, 10), 0, TRACE));
  }

  @Test
  void sharesAreProjectedOnTheirFullerDimensionAndUnhealthyGpusCountForNothing() {
    assertEquals(400, ExtenderScores.freeMilli(new Share(60, 10)));
    assertEquals(400, ExtenderScores.freeMilli(new Share(10, 60)));
    assertEquals(0, ExtenderScores.freeMilli(new Share(100, 30)));
    // an unhealthy GPU neither takes the pod nor adds fragmentation
    NodeView withBroken =
        node("b", SharePolicy.SHARE_POOL, gpu(0, 50, 50), unhealthy(1), gpu(2, 0, 0));
    NodeView without = node("w", SharePolicy.SHARE_POOL, gpu(0, 50, 50), gpu(2, 0, 0));
    assertEquals(fgd(pool(50), without), fgd(pool(50), withBroken));
    assertEquals(bestFit(pool(50), without), bestFit(pool(50), withBroken));
  }

  @Test
  void theWorkloadIsTheArbitersPodsOfTheModelOrTheTracesWhenThereAreTooFew() {
    List<PodView> known = new ArrayList<>();
    for (int i = 0; i < ExtenderScores.MIN_KNOWN_PODS - 1; i++) {
      known.add(pod("p" + i, SharePolicy.SHARE_POOL, 10, 30));
    }
    known.add(pod("s", SharePolicy.STATIC, 40, 100));
    assertSame(ExtenderScores.TRACE_WORKLOAD, ExtenderScores.workload(pool(50), known));

    known.add(pod("last", SharePolicy.SHARE_POOL, 20, 30));
    TargetWorkload poolWorkload = ExtenderScores.workload(pool(50), known);
    assertEquals(
        List.of(new TargetWorkload.PodClass(PodSpec.of(0, 0, 1, 300), 1.0)),
        poolWorkload.classes(),
        "share-pool classes are the limits");

    List<PodView> statics = new ArrayList<>();
    for (int i = 0; i < ExtenderScores.MIN_KNOWN_PODS; i++) {
      statics.add(pod("s" + i, SharePolicy.STATIC, 40, 100));
    }
    PodSharing.Shared staticPod =
        PodSharing.shared(SharePolicy.STATIC, new Share(40, 40), new Share(100, 100), "main");
    assertEquals(
        List.of(new TargetWorkload.PodClass(PodSpec.of(0, 0, 1, 400), 1.0)),
        ExtenderScores.workload(staticPod, statics).classes(),
        "static classes are the requests");
  }

  @Test
  void theKnownWorkloadChangesTheScore() {
    // every known pod has a 50 % limit: a 50 % remainder is then perfectly usable
    List<PodView> known = new ArrayList<>();
    for (int i = 0; i < ExtenderScores.MIN_KNOWN_PODS; i++) {
      known.add(pod("p" + i, SharePolicy.SHARE_POOL, 10, 50));
    }
    FragmentationMeasure halves =
        new FragmentationMeasure(ExtenderScores.workload(pool(50), known));
    NodeView fresh = node("fresh", SharePolicy.SHARE_POOL, gpu(0, 0, 0), gpu(1, 0, 0));
    assertEquals(5, ExtenderScores.score(Policy.FGD, pool(50), fresh, halves));
    assertEquals(1, fgd(pool(50), fresh), "against the trace it breaks a whole GPU");
  }

  @Test
  void theNodeIsScoredOnTheGpuTheArbitersPlacementSettingPicks() {
    // GPU 0 holds two 30 % pods, GPU 1 is empty; a third 30 % pod comes.
    NodeView node = node("n1", SharePolicy.SHARE_POOL, gpu(0, 60, 60), gpu(1, 0, 0));
    List<PodView> pods = List.of(running("p1", 30, 0), running("p2", 30, 0));
    Share need = new Share(30, 30);
    var perPod = ExtenderScores.loads(node, pods);
    assertEquals(
        List.of(new Share(30, 30), new Share(30, 30)),
        List.copyOf(perPod.get(0).held().values()),
        "each pod's holding, as in the arbiter's book");
    // best fit fills GPU 0 (90 %); least-fragmenting, weighing the node's own 30 % pods, keeps
    // GPU 0's 40 % usable by the next one and opens GPU 1 (with GPU 0's total alone it would not)
    assertEquals(OptionalInt.of(0), GpuChoice.BEST_FIT.choose(perPod, need));
    assertEquals(OptionalInt.of(1), GpuChoice.LEAST_FRAGMENTING.choose(perPod, need));
    assertEquals(
        OptionalInt.of(0), GpuChoice.LEAST_FRAGMENTING.choose(ExtenderScores.loads(node), need));

    PodSharing.Shared pod = pool(30);
    assertEquals(
        ExtenderScores.fgd(perPod, need, 0, TRACE),
        ExtenderScores.score(Policy.FGD, GpuChoice.BEST_FIT, pod, node, pods, TRACE));
    assertEquals(
        ExtenderScores.fgd(perPod, need, 1, TRACE),
        ExtenderScores.score(Policy.FGD, GpuChoice.LEAST_FRAGMENTING, pod, node, pods, TRACE));
    assertEquals(
        fgd(pod, node),
        ExtenderScores.score(Policy.FGD, GpuChoice.BEST_FIT, pod, node, List.of(), TRACE),
        "without pods: the node's totals, same GPU under best fit");
  }

  @Test
  void podsOfOtherNodesOrNotRunningAndStaleListsAreIgnored() {
    NodeView node = node("n1", SharePolicy.SHARE_POOL, gpu(0, 50, 50));
    PodView elsewhere =
        new PodView(
            "default",
            "x",
            "uid-x",
            "n2",
            SharePolicy.SHARE_POOL,
            PodState.RUNNING,
            new ShareView(10, 10),
            new ShareView(20, 20),
            new GpuRef(0, "GPU-0"),
            null,
            null,
            null,
            List.of(),
            List.of(),
            null,
            null,
            null);
    assertEquals(
        List.of(new Share(20, 20), new Share(30, 30)),
        List.copyOf(
            ExtenderScores.loads(
                    node,
                    List.of(
                        running("a", 20, 0), elsewhere, pod("h", SharePolicy.SHARE_POOL, 10, 40)))
                .get(0)
                .held()
                .values()),
        "the rest of GPU 0's use is one more holding");
    assertEquals(
        List.of(new Share(50, 50)),
        List.copyOf(
            ExtenderScores.loads(node, List.of(running("a", 60, 0))).get(0).held().values()),
        "a list that claims more than the node uses: the node's totals win");
  }

  @Test
  void thePolicyNames() {
    assertEquals(Policy.FGD, Policy.byKey(" FGD ").orElseThrow());
    assertEquals(Policy.BEST_FIT, Policy.byKey("bestfit").orElseThrow());
    assertTrue(Policy.byKey("spread").isEmpty());
    assertEquals("fgd, bestfit", Policy.keys());
  }

  private static double increase(PodSharing.Shared pod, NodeView node) {
    var gpus = ExtenderScores.loads(node);
    int chosen = dev.gpushare.arbiter.Placement.bestFit(gpus, pod.limits()).getAsInt();
    return ExtenderScores.fragmentationIncrease(gpus, pod.limits(), chosen, TRACE);
  }
}
