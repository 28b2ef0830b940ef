package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.condition;
import static dev.gpushare.e2e.Checks.events;
import static dev.gpushare.e2e.Checks.keys;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * SPEC §5 preemption and §7 what users see of it, driven by the manual clock: after {@code POST
 * /v1/clock/advance} returns, any preemption due is done.
 */
class PreemptionTest extends ServerPerClass {

  private static final int MAX_MINUTES = 60;
  private static final String PREEMPT = Manifests.qos(true, MAX_MINUTES);

  private String node(int gpus, String qos) {
    String node = Manifests.unique("pre");
    api.putNode(node, gpus, "share-pool", qos);
    return node;
  }

  private String pod(String node, String suffix, int limit) {
    String name = node + "-" + suffix;
    api.createPod(sharePod(name, node, 10, limit));
    return name;
  }

  /** Exactly one event with this reason, type Warning, and this message. */
  private static void assertEvent(JsonNode pod, String reason, String message) {
    List<JsonNode> es = events(pod, reason);
    assertEquals(1, es.size(), () -> "one " + reason + " event expected: " + pod.path("events"));
    JsonNode e = es.get(0);
    assertEquals("Warning", e.path("type").asText(), () -> "event type: " + e);
    assertEquals(message, e.path("message").asText(), () -> "event message: " + e);
  }

  private static void assertReclaimCondition(JsonNode pod, String reason, String message) {
    JsonNode c = condition(pod.path("conditions"), "Interruption.GPUShareReclaim");
    assertNotNull(c, () -> "condition Interruption.GPUShareReclaim expected: " + pod);
    assertEquals("True", c.path("status").asText(), () -> "condition status: " + c);
    assertEquals(reason, c.path("reason").asText(), () -> "condition reason: " + c);
    assertEquals(message, c.path("message").asText(), () -> "condition message: " + c);
  }

  private static void assertNotPreempted(JsonNode pod) {
    assertTrue(events(pod, "GPUSharePreempted").isEmpty(), () -> "no preemption: " + pod);
    assertTrue(events(pod, "GPUSharePreempt").isEmpty(), () -> "no preemption: " + pod);
  }

  @Test
  void aPodIsPreemptedOnlyAfterRunningMoreThanTheMaxDurationAndRejoinsTheTail() {
    String node = node(1, PREEMPT);
    String v = pod(node, "v", 100);
    String p = pod(node, "p", 100);
    String q = pod(node, "q", 100);
    assertRunningOn(api.demand(v), 0);
    assertReady(api.demand(p), 1);
    assertReady(api.demand(q), 2);

    // Exactly the limit: not "more than" it, nothing happens.
    api.advance(MAX_MINUTES * 60L);
    assertRunningOn(api.pod(v), 0);
    assertReady(api.pod(p), 1);
    assertReady(api.pod(q), 2);
    assertNotPreempted(api.pod(v));

    // One second more: V is a candidate, the head P preempts it; V rejoins the TAIL, behind Q.
    api.advance(1);
    JsonNode pv = api.pod(p);
    JsonNode vv = api.pod(v);
    assertRunningOn(pv, 0);
    assertReady(api.pod(q), 1);
    assertReady(vv, 2);
    assertEquals(keys(q, v), queueOrder(api.queue(node)));
    assertGpu(api.node(node), 0, 100, 100, p);

    assertEvent(vv, "GPUSharePreempted", "GPU is preempted by " + p + ".");
    assertEvent(pv, "GPUSharePreempt", "GPU is preempted from " + v + ".");
    assertReclaimCondition(vv, "GPUSharePreempted", "GPU is preempted by " + p + ".");
    assertReclaimCondition(pv, "GPUSharePreempt", "GPU is preempted from " + v + ".");
    assertTrue(events(pv, "GPUSharePreempted").isEmpty(), () -> "preemptor is no victim: " + pv);
    assertTrue(events(vv, "GPUSharePreempt").isEmpty(), () -> "victim is no preemptor: " + vv);
    assertInvariants(api);
  }

  @Test
  void nothingIsPreemptedWhenPreemptionIsDisabled() {
    String node = node(1, Manifests.qos(false, MAX_MINUTES));
    String v = pod(node, "v", 100);
    String p = pod(node, "p", 100);
    assertRunningOn(api.demand(v), 0);
    assertReady(api.demand(p), 1);
    api.advance(3 * MAX_MINUTES * 60L);
    JsonNode vv = api.pod(v);
    assertRunningOn(vv, 0);
    assertReady(api.pod(p), 1);
    assertNotPreempted(vv);
    assertNotPreempted(api.pod(p));
  }

  @Test
  void nothingIsPreemptedWhileNobodyWaits() {
    String node = node(1, PREEMPT);
    String v = pod(node, "v", 100);
    assertRunningOn(api.demand(v), 0);
    api.advance(3 * MAX_MINUTES * 60L);
    JsonNode vv = api.pod(v);
    assertRunningOn(vv, 0);
    assertNotPreempted(vv);
  }

  @Test
  void runningTimeCountsFromTheLastGrantOnly() {
    String node = node(1, PREEMPT);
    String v = pod(node, "v", 100);
    String p = pod(node, "p", 100);
    assertRunningOn(api.demand(v), 0);
    api.advance(50 * 60L);
    api.release(v);
    assertRunningOn(api.demand(v), 0); // Running again: the continuous run starts now
    assertReady(api.demand(p), 1);
    api.advance(30 * 60L); // 80 minutes since the first grant, 30 continuous
    assertRunningOn(api.pod(v), 0);
    assertReady(api.pod(p), 1);
    api.advance(30 * 60L + 1); // 60 minutes and 1 s continuous
    assertRunningOn(api.pod(p), 0);
    assertReady(api.pod(v), 1);
  }

  @Test
  void theSmallestVictimSetWinsOverLongerRunningPods() {
    String node = node(2, PREEMPT);
    String a1 = pod(node, "a1", 50);
    String a2 = pod(node, "a2", 50);
    String b1 = pod(node, "b1", 100);
    String h = pod(node, "h", 100);
    assertRunningOn(api.demand(a1), 0);
    assertRunningOn(api.demand(a2), 0);
    api.advance(10 * 60L);
    assertRunningOn(api.demand(b1), 1);
    // Everybody becomes a candidate while nobody waits: nothing happens.
    api.advance(2 * MAX_MINUTES * 60L);
    assertRunningOn(api.pod(a1), 0);
    assertRunningOn(api.pod(a2), 0);
    assertRunningOn(api.pod(b1), 1);

    // H (limit 100) fits nowhere. GPU 0 needs {a1, a2}, GPU 1 needs {b1}: one victim beats two,
    // even though a1 and a2 have run longer.
    api.demand(h);
    assertRunningOn(api.pod(h), 1);
    JsonNode hv = api.pod(h);
    assertEvent(hv, "GPUSharePreempt", "GPU is preempted from " + b1 + ".");
    assertReclaimCondition(hv, "GPUSharePreempt", "GPU is preempted from " + b1 + ".");
    JsonNode bv = api.pod(b1);
    assertEvent(bv, "GPUSharePreempted", "GPU is preempted by " + h + ".");
    // B1, back in the queue as its head, fits nowhere either, and a1 and a2 are candidates: the
    // re-evaluation after the preemption (SPEC §5) lets it take GPU 0 from them, the only set
    // that works for it. Neither of them was H's victim.
    assertRunningOn(bv, 0);
    for (String a : List.of(a1, a2)) {
      JsonNode av = api.pod(a);
      assertEquals("Ready", av.path("state").asText(), () -> "victim of B1: " + av);
      assertEvent(av, "GPUSharePreempted", "GPU is preempted by " + b1 + ".");
    }
    JsonNode nv = api.node(node);
    assertGpu(nv, 0, 100, 100, b1);
    assertGpu(nv, 1, 100, 100, h);
    assertInvariants(api);
  }

  @Test
  void amongEqualSetsTheLongestRunningIsPreemptedAndTheNewGrantReportsTheRealIndex() {
    String node = node(2, PREEMPT);
    String f = pod(node, "f", 100);
    String y = pod(node, "y", 100);
    String z = pod(node, "z", 100);
    String h = pod(node, "h", 100);
    assertRunningOn(api.demand(f), 0);
    assertRunningOn(api.demand(y), 1); // Y holds GPU 1 from now
    api.advance(5 * 60L);
    api.release(f);
    api.advance(5 * 60L);
    assertRunningOn(api.demand(z), 0); // Z holds GPU 0, 5 minutes younger than Y
    api.advance(2 * MAX_MINUTES * 60L);

    // {y} and {z} are equal sets; Y has run longest: Y is the victim, H gets GPU 1.
    api.demand(h);
    JsonNode hv = api.pod(h);
    assertRunningOn(hv, 1);
    assertEvent(hv, "GPUSharePreempt", "GPU is preempted from " + y + ".");
    JsonNode yv = api.pod(y);
    assertEvent(yv, "GPUSharePreempted", "GPU is preempted by " + h + ".");

    // Y, back at the head, fits nowhere and Z is a candidate: Y takes GPU 0 from Z (SPEC §5
    // re-evaluation after a preemption). Y's new grant reports the real device, 0, which differs
    // from its previous period on 1 (SPEC §7).
    assertRunningOn(yv, 0);
    assertEquals(
        Checks.gpu(api.node(node), 0).path("uuid").asText(),
        yv.path("gpu").path("uuid").asText(),
        "Y's new grant names GPU 0's uuid");
    assertEvent(yv, "GPUSharePreempt", "GPU is preempted from " + z + ".");
    JsonNode zv = api.pod(z);
    assertReady(zv, 1);
    assertEvent(zv, "GPUSharePreempted", "GPU is preempted by " + y + ".");
    assertInvariants(api);
  }

  @Test
  void onOneGpuTheLongestRunningSingleVictimIsChosen() {
    String node = node(1, PREEMPT);
    String young = pod(node, "young", 50);
    String old = pod(node, "old", 50);
    String h = pod(node, "h", 50);
    // OLD starts first; to make sure the choice is not "lowest name" or "first listed", YOUNG is
    // created first and sorts first.
    assertRunningOn(api.demand(old), 0);
    api.advance(10 * 60L);
    assertRunningOn(api.demand(young), 0);
    api.advance(2 * MAX_MINUTES * 60L);
    // H (50) needs one of them to go: {old} and {young} are equal sets, OLD has run longest.
    api.demand(h);
    JsonNode hv = api.pod(h);
    assertRunningOn(hv, 0);
    assertEvent(hv, "GPUSharePreempt", "GPU is preempted from " + old + ".");
    assertEvent(api.pod(old), "GPUSharePreempted", "GPU is preempted by " + h + ".");
    assertInvariants(api);
  }

  @Test
  void aConfigChangeIsReevaluatedAtOnce() {
    // preemption off: V runs long past any limit while P waits
    String node = node(1, Manifests.qos(false, MAX_MINUTES));
    String v = pod(node, "v", 100);
    String p = pod(node, "p", 100);
    assertRunningOn(api.demand(v), 0);
    assertReady(api.demand(p), 1);
    api.advance(2 * MAX_MINUTES * 60L);
    assertRunningOn(api.pod(v), 0);

    // kubectl annotate --overwrite: preemption on; the decision is re-evaluated now, no clock
    // advance needed (SPEC §5: "a config change")
    api.patchNode(node, null, java.util.Map.of(Manifests.QOS_ANNOTATION, PREEMPT));
    assertRunningOn(api.pod(p), 0);
    JsonNode vv = api.pod(v);
    assertReady(vv, 1);
    assertEvent(vv, "GPUSharePreempted", "GPU is preempted by " + p + ".");
  }

  @Test
  void aShorterMaxDurationMakesCandidatesAtOnce() {
    String node = node(1, Manifests.qos(true, 240));
    String v = pod(node, "v", 100);
    String p = pod(node, "p", 100);
    assertRunningOn(api.demand(v), 0);
    assertReady(api.demand(p), 1);
    api.advance(90 * 60L); // 90 minutes: not a candidate under 240
    assertRunningOn(api.pod(v), 0);
    api.patchNode(node, null, java.util.Map.of(Manifests.QOS_ANNOTATION, PREEMPT)); // 60 min
    assertRunningOn(api.pod(p), 0);
    assertReady(api.pod(v), 1);
  }

  @Test
  void noCandidateSetMeansTheHeadKeepsWaiting() {
    String node = node(1, PREEMPT);
    String old = pod(node, "old", 50);
    String young = pod(node, "young", 50);
    String h = pod(node, "h", 100);
    assertRunningOn(api.demand(old), 0);
    api.advance(30 * 60L);
    assertRunningOn(api.demand(young), 0);
    assertReady(api.demand(h), 1);
    // After 40 more minutes OLD is a candidate (70 min) but YOUNG is not (40 min): removing OLD
    // alone does not let H (limit 100) fit, so nothing is preempted.
    api.advance(40 * 60L);
    assertRunningOn(api.pod(old), 0);
    assertRunningOn(api.pod(young), 0);
    assertReady(api.pod(h), 1);
    assertNotPreempted(api.pod(old));
    // Once YOUNG crosses the limit too, both go.
    api.advance(20 * 60L + 1);
    assertRunningOn(api.pod(h), 0);
    JsonNode ov = api.pod(old);
    JsonNode yv = api.pod(young);
    assertEquals("Ready", ov.path("state").asText(), () -> "victim OLD: " + ov);
    assertEquals("Ready", yv.path("state").asText(), () -> "victim YOUNG: " + yv);
    assertEquals(
        java.util.Set.of(1, 2),
        java.util.Set.of(ov.path("queuePosition").asInt(), yv.path("queuePosition").asInt()),
        "both victims rejoin the queue");
    assertInvariants(api);
  }
}
