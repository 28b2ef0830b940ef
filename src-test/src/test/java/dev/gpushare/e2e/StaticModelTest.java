package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.condition;
import static dev.gpushare.e2e.Checks.event;
import static dev.gpushare.e2e.Checks.gpu;
import static dev.gpushare.e2e.Checks.isNull;
import static dev.gpushare.e2e.Checks.key;
import static dev.gpushare.e2e.Checks.podsOf;
import static dev.gpushare.e2e.Checks.withoutTimes;
import static dev.gpushare.e2e.Manifests.staticPod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** SPEC §6: the static model. */
class StaticModelTest extends ServerPerClass {

  private String staticNode(int gpus) {
    String node = Manifests.unique("st");
    JsonNode v = api.putNode(node, gpus, "static", null);
    assertEquals("static", v.path("policy").asText(), () -> "policy: " + v);
    return node;
  }

  /** Pinning is by REQUESTS, best fit, ties to the lowest index; limits do not count. */
  @Test
  void podsArePinnedByRequestsBestFitAtCreation() {
    String node = staticNode(2);
    // limits of 100 everywhere: if limits counted, no two pods could share a GPU
    assertRunningOn(api.createPod(staticPod(node + "-s1", node, 60, 100)), 0);
    assertRunningOn(api.createPod(staticPod(node + "-s2", node, 30, 100)), 0);
    assertRunningOn(api.createPod(staticPod(node + "-s3", node, 50, 100)), 1);
    assertRunningOn(api.createPod(staticPod(node + "-s4", node, 40, 100)), 1);
    for (String s : new String[] {"s1", "s2"}) {
      assertRunningOn(api.pod(node + "-" + s), 0);
    }
    for (String s : new String[] {"s3", "s4"}) {
      assertRunningOn(api.pod(node + "-" + s), 1);
    }
    JsonNode v = api.node(node);
    assertEquals(Set.of(key(node + "-s1"), key(node + "-s2")), podsOf(gpu(v, 0)));
    assertEquals(Set.of(key(node + "-s3"), key(node + "-s4")), podsOf(gpu(v, 1)));
    assertEquals(0, api.queue(node).size(), "a static node has no queue");
    assertEquals(0, v.path("queue").size(), () -> "NodeView.queue of a static node: " + v);
    assertInvariants(api);
  }

  @Test
  void aFragmentedNodeRefusesToPinAndPinsOnceCapacityFrees() {
    String node = staticNode(2);
    api.createPod(staticPod(node + "-s1", node, 60, 60));
    api.createPod(staticPod(node + "-s2", node, 30, 30));
    api.createPod(staticPod(node + "-s3", node, 50, 50));
    api.createPod(staticPod(node + "-s4", node, 40, 40));
    // 10 % free on each GPU: 20 % in total, but no single GPU has room for 20.
    String frag = node + "-frag";
    JsonNode created = api.createPod(staticPod(frag, node, 20, 20));
    assertPendingFragmented(created);
    JsonNode pending = api.pod(frag);
    assertPendingFragmented(pending);
    assertEquals(0, api.queue(node).size(), "a static node has no queue");
    JsonNode nv = api.node(node);
    assertTrue(!podsOf(gpu(nv, 0)).contains(key(frag)) && !podsOf(gpu(nv, 1)).contains(key(frag)));

    // Deleting s2 frees 30 on GPU 0: the pending pod is pinned there at once.
    api.deletePod(node + "-s2");
    JsonNode pinned = api.pod(frag);
    assertRunningOn(pinned, 0);
    assertEquals(
        Set.of(key(node + "-s1"), key(frag)), podsOf(gpu(api.node(node), 0)), "GPU 0 pods");
    assertInvariants(api);
  }

  private static void assertPendingFragmented(JsonNode pod) {
    assertEquals("Pending", pod.path("state").asText(), () -> "state: " + pod);
    assertTrue(isNull(pod.get("gpu")), () -> "not pinned: " + pod);
    JsonNode cond = null;
    for (JsonNode c : pod.path("conditions")) {
      if ("GPUShareFragmented".equals(c.path("reason").asText())) {
        cond = c;
      }
    }
    JsonNode fc = cond;
    assertNotNull(fc, () -> "condition with reason GPUShareFragmented: " + pod);
    assertTrue(!fc.path("message").asText("").isBlank(), () -> "condition message: " + fc);
    JsonNode e = event(pod, "GPUShareFragmented");
    assertNotNull(e, () -> "Event GPUShareFragmented: " + pod);
    assertTrue(!e.path("message").asText("").isBlank(), () -> "event message: " + e);
  }

  @Test
  void demandOnAStaticPodIsAConflict() {
    String node = staticNode(1);
    String s = node + "-s";
    api.createPod(staticPod(s, node, 50, 100));
    JsonNode before = withoutTimes(api.pod(s));
    JsonNode nodeBefore = withoutTimes(api.node(node));
    Api.problem(api.post(Api.podPath(s) + "/demand", null, null), 409);
    assertEquals(before, withoutTimes(api.pod(s)), "pod unchanged");
    assertEquals(nodeBefore, withoutTimes(api.node(node)), "node unchanged");
    assertRunningOn(api.pod(s), 0);
  }

  @Test
  void aPinnedPodStaysOnItsGpuAndTimeChangesNothing() {
    String node = staticNode(2);
    String s = node + "-s";
    assertRunningOn(api.createPod(staticPod(s, node, 100, 100)), 0);
    JsonNode before = api.pod(s);
    api.advance(24 * 3600L);
    JsonNode after = api.pod(s);
    assertRunningOn(after, 0);
    assertEquals(before.path("gpu"), after.path("gpu"), "same GPU for its whole life");
    JsonNode cond = condition(after.path("conditions"), "Interruption.GPUShareReclaim");
    assertTrue(cond == null, () -> "no preemption in the static model: " + after);
  }
}
