package dev.gpushare.http.extender;

import static dev.gpushare.http.extender.ExtenderViews.gpu;
import static dev.gpushare.http.extender.ExtenderViews.node;
import static dev.gpushare.http.extender.ExtenderViews.unhealthy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.http.extender.ExtenderFilter.Verdict;
import dev.gpushare.node.api.Views.NodeView;
import org.junit.jupiter.api.Test;

/** Each filter rule of SPEC §8, with the reason a refused node gets. */
class ExtenderFilterTest {

  static PodSharing.Shared shared(SharePolicy policy, int request, int limit) {
    return PodSharing.shared(
        policy, new Share(request, request), new Share(limit, limit), "notebook");
  }

  static final PodSharing POOL_10_100 = shared(SharePolicy.SHARE_POOL, 10, 100);
  static final PodSharing STATIC_30_100 = shared(SharePolicy.STATIC, 30, 100);
  static final PodSharing EXCLUSIVE_2 = PodSharing.exclusive(2);

  static final NodeView POOL_FREE = node("pool", SharePolicy.SHARE_POOL, gpu(0, 0, 0));
  static final NodeView STATIC_FREE = node("static", SharePolicy.STATIC, gpu(0, 0, 0));
  static final NodeView NONE = node("plain", SharePolicy.NONE, gpu(0, 0, 0));

  @Test
  void aPodWithoutGpusPassesEveryNodeKnownOrNot() {
    for (NodeView n : new NodeView[] {POOL_FREE, STATIC_FREE, NONE, null}) {
      assertTrue(ExtenderFilter.verdict(PodSharing.PLAIN, "x", n).passes());
    }
  }

  @Test
  void anExclusivePodGoesToNoneAndUnknownNodesButNeverToASharingNode() {
    assertTrue(ExtenderFilter.verdict(EXCLUSIVE_2, "plain", NONE).passes());
    assertTrue(ExtenderFilter.verdict(EXCLUSIVE_2, "cpu-1", null).passes());
    // a node whose label wants sharing but stays off for exclusive pods is a none node
    NodeView blocked =
        node(
            "blocked",
            "share-pool",
            SharePolicy.NONE,
            NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT,
            "… pods hold exclusive GPUs (nvidia.com/gpu): default/train; …",
            gpu(0, 0, 0));
    assertTrue(ExtenderFilter.verdict(EXCLUSIVE_2, "blocked", blocked).passes());

    Verdict v = ExtenderFilter.verdict(EXCLUSIVE_2, "pool", POOL_FREE);
    assertFalse(v.passes());
    assertTrue(v.unresolvable());
    assertEquals(
        "node pool shares its GPUs (gpu share policy share-pool in force); the pod asks for 2 whole"
            + " GPU(s) (nvidia.com/gpu): pods holding whole GPUs only go to nodes with gpu share"
            + " policy none (SPEC §2, §8)",
        v.reason());
    assertFalse(ExtenderFilter.verdict(EXCLUSIVE_2, "static", STATIC_FREE).passes());
  }

  @Test
  void aSharingPodCannotGoToANodeTheArbiterDoesNotKnow() {
    Verdict v = ExtenderFilter.verdict(POOL_10_100, "cpu-1", null);
    assertFalse(v.passes());
    assertTrue(v.unresolvable());
    assertEquals(
        "node cpu-1 is not managed by gpushare (the arbiter knows no node of that name); the pod"
            + " shares a GPU (share-pool) and only goes to GPU-HPN nodes with gpu share policy"
            + " share-pool in force",
        v.reason());
  }

  @Test
  void aSharingPodGoesOnlyToNodesOfItsOwnModel() {
    assertTrue(ExtenderFilter.verdict(POOL_10_100, "pool", POOL_FREE).passes());
    assertTrue(ExtenderFilter.verdict(STATIC_30_100, "static", STATIC_FREE).passes());

    Verdict poolOnStatic = ExtenderFilter.verdict(POOL_10_100, "static", STATIC_FREE);
    assertFalse(poolOnStatic.passes());
    assertTrue(poolOnStatic.unresolvable());
    assertEquals(
        "node static has gpu share policy static in force; the pod's label"
            + " alibabacloud.com/gpu-share-policy is share-pool: a pod only goes to nodes of its"
            + " own sharing model (SPEC §3)",
        poolOnStatic.reason());

    Verdict staticOnNone = ExtenderFilter.verdict(STATIC_30_100, "plain", NONE);
    assertFalse(staticOnNone.passes());
    assertTrue(staticOnNone.unresolvable());
    assertTrue(staticOnNone.reason().startsWith("node plain has gpu share policy none in force;"));
  }

  @Test
  void aPendingPolicyChangeCountsAsThePolicyInForceAndTheReasonSaysSo() {
    NodeView pending =
        node(
            "moving",
            "static",
            SharePolicy.SHARE_POOL,
            NodeSharing.POLICY_CHANGE_PENDING,
            "gpu share policy static is wanted, but share-pool stays active …",
            gpu(0, 0, 0));
    assertTrue(ExtenderFilter.verdict(POOL_10_100, "moving", pending).passes());
    Verdict v = ExtenderFilter.verdict(STATIC_30_100, "moving", pending);
    assertFalse(v.passes());
    assertEquals(
        "node moving has gpu share policy share-pool in force (its label"
            + " alibabacloud.com/gpu-share-policy asks for static, not in force:"
            + " PolicyChangePending); the pod's label alibabacloud.com/gpu-share-policy is static:"
            + " a pod only goes to nodes of its own sharing model (SPEC §3)",
        v.reason());
  }

  @Test
  void aSharingPodAvoidsANodeWhoseExclusivePodsKeepSharingOff() {
    NodeView blocked =
        node(
            "blocked",
            "share-pool",
            SharePolicy.NONE,
            NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT,
            "gpu share policy share-pool cannot take effect while pods hold exclusive GPUs"
                + " (nvidia.com/gpu): default/train; sharing stays off until they are gone.",
            gpu(0, 0, 0));
    Verdict v = ExtenderFilter.verdict(POOL_10_100, "blocked", blocked);
    assertFalse(v.passes());
    assertFalse(v.unresolvable(), "evicting the exclusive pods would let sharing take effect");
    assertEquals(
        "node blocked has sharing off while pods hold exclusive GPUs (ExclusiveGPUPodsPresent: gpu"
            + " share policy share-pool cannot take effect while pods hold exclusive GPUs"
            + " (nvidia.com/gpu): default/train; sharing stays off until they are gone.); the pod"
            + " shares a GPU (share-pool) and cannot go there until those pods are gone",
        v.reason());
  }

  @Test
  void shareAPoolPodNeedsItsLimitsFreeOnOneHealthyGpu() {
    // request 10 fits everywhere; the limit 100 needs a whole GPU: GPU 0 holds 50/50, GPU 1 is
    // unhealthy, GPU 2 holds 10/0
    NodeView busy =
        node("busy", SharePolicy.SHARE_POOL, gpu(0, 50, 50), unhealthy(1), gpu(2, 10, 0));
    Verdict v = ExtenderFilter.verdict(POOL_10_100, "busy", busy);
    assertFalse(v.passes());
    assertFalse(v.unresolvable());
    assertEquals(
        "no healthy GPU of node busy can hold the pod's limits (share-pool reserves limits on a"
            + " GPU), core 100%, memory 100%, beside what it holds (core and memory each at most"
            + " 100%): GPU 0 holds core 50%, memory 50%; GPU 1 is Unhealthy; GPU 2 holds core 10%,"
            + " memory 0%",
        v.reason());
    // a limit of 50 fits beside GPU 0's 50
    assertTrue(
        ExtenderFilter.verdict(shared(SharePolicy.SHARE_POOL, 10, 50), "busy", busy).passes());
    // memory alone can refuse: core 40 would fit GPU 0, memory 60 does not
    PodSharing memoryHeavy =
        PodSharing.shared(SharePolicy.SHARE_POOL, new Share(10, 10), new Share(40, 60), "main");
    NodeView one = node("one", SharePolicy.SHARE_POOL, gpu(0, 50, 50));
    assertFalse(ExtenderFilter.verdict(memoryHeavy, "one", one).passes());
  }

  @Test
  void aStaticPodNeedsItsRequestsFreeOnOneHealthyGpu() {
    // static pins requests: 30 fits beside 70, a limit of 100 does not matter
    NodeView pinned = node("pinned", SharePolicy.STATIC, gpu(0, 70, 70), gpu(1, 80, 80));
    assertTrue(ExtenderFilter.verdict(STATIC_30_100, "pinned", pinned).passes());
    NodeView full = node("full", SharePolicy.STATIC, gpu(0, 75, 75), gpu(1, 80, 80));
    Verdict v = ExtenderFilter.verdict(STATIC_30_100, "full", full);
    assertFalse(v.passes());
    assertEquals(
        "no healthy GPU of node full can hold the pod's requests (static pins requests on a GPU),"
            + " core 30%, memory 30%, beside what it holds (core and memory each at most 100%):"
            + " GPU 0 holds core 75%, memory 75%; GPU 1 holds core 80%, memory 80%",
        v.reason());
  }

  @Test
  void aSharingNodeWithoutGpusRefusesWithItsOwnReason() {
    Verdict v = ExtenderFilter.verdict(POOL_10_100, "empty", node("empty", SharePolicy.SHARE_POOL));
    assertFalse(v.passes());
    assertTrue(v.reason().startsWith("node empty has no GPU;"), v.reason());
  }
}
