package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.gpu;
import static dev.gpushare.e2e.Checks.keys;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** SPEC §5 "The reference example (must be reproduced exactly)", and the §4 transitions. */
class ReferenceExampleTest extends ServerPerClass {

  private static final String NO_PREEMPTION = Manifests.qos(false, 120);

  @Test
  void referenceExampleIsReproducedExactly() {
    String node = Manifests.unique("ref");
    JsonNode n0 = api.putNode(node, 2, "share-pool", NO_PREEMPTION);
    assertEquals("share-pool", n0.path("policy").asText(), () -> "policy: " + n0);
    assertEquals(2, n0.path("gpus").size(), () -> "two GPUs: " + n0);
    String a = node + "-a";
    String b = node + "-b";
    String c = node + "-c";
    String d = node + "-d";
    // A and B: requests 50, limits 50. C and D: requests 50, limits 100.
    for (String p : List.of(a, b)) {
      JsonNode v = api.createPod(sharePod(p, node, 50, 50));
      assertHibernation(v);
      assertEquals("share-pool", v.path("policy").asText(), () -> "policy: " + v);
      assertEquals(50, v.path("limits").path("core").asInt(), () -> "limits: " + v);
      assertEquals(50, v.path("requests").path("core").asInt(), () -> "requests: " + v);
    }
    for (String p : List.of(c, d)) {
      JsonNode v = api.createPod(sharePod(p, node, 50, 100));
      assertHibernation(v);
      assertEquals(100, v.path("limits").path("core").asInt(), () -> "limits: " + v);
      assertEquals(100, v.path("limits").path("memory").asInt(), () -> "limits: " + v);
      assertEquals(50, v.path("requests").path("memory").asInt(), () -> "requests: " + v);
    }

    // T1: A on GPU 0, C on GPU 1; then D, then B queue.
    assertRunningOn(api.demand(a), 0);
    assertRunningOn(api.demand(c), 1);
    assertReady(api.demand(d), 1);
    // B would fit GPU 0 beside A, but D is the head and cannot be placed: B waits too.
    assertReady(api.demand(b), 2);

    assertRunningOn(api.pod(a), 0);
    assertRunningOn(api.pod(c), 1);
    assertReady(api.pod(d), 1);
    assertReady(api.pod(b), 2);
    JsonNode queue = api.queue(node);
    assertEquals(keys(d, b), queueOrder(queue), () -> "queue at T1: " + queue);
    assertEquals(100, queue.get(0).path("limits").path("core").asInt(), () -> "D limits " + queue);
    assertEquals(100, queue.get(0).path("limits").path("memory").asInt(), () -> "D " + queue);
    assertEquals(50, queue.get(1).path("limits").path("core").asInt(), () -> "B limits " + queue);
    assertEquals(50, queue.get(1).path("limits").path("memory").asInt(), () -> "B " + queue);
    JsonNode t1 = api.node(node);
    assertGpu(t1, 0, 50, 50, a);
    assertGpu(t1, 1, 100, 100, c);
    assertEquals(keys(d, b), queueOrder(t1.path("queue")), () -> "NodeView.queue at T1: " + t1);
    assertEquals(
        gpu(t1, 0).path("uuid").asText(),
        api.pod(a).path("gpu").path("uuid").asText(),
        "A's gpu uuid is GPU 0's uuid");
    assertEquals(
        gpu(t1, 1).path("uuid").asText(),
        api.pod(c).path("gpu").path("uuid").asText(),
        "C's gpu uuid is GPU 1's uuid");
    assertInvariants(api);

    // T2 phase 1: C finishes and hibernates; GPU 1 is free and D gets it.
    // T2 phase 2: B gets GPU 0 and shares it with A. Both are consequences of C's release.
    assertHibernation(api.release(c));
    assertHibernation(api.pod(c));
    assertRunningOn(api.pod(d), 1);
    assertRunningOn(api.pod(b), 0);
    assertRunningOn(api.pod(a), 0);
    assertEquals(0, api.queue(node).size(), () -> "queue after T2: " + api.queue(node));
    JsonNode t2 = api.node(node);
    assertGpu(t2, 0, 100, 100, a, b);
    assertGpu(t2, 1, 100, 100, d);
    assertEquals(0, t2.path("queue").size(), () -> "NodeView.queue after T2: " + t2);
    java.util.Set<String> listed = new java.util.TreeSet<>();
    api.pods(node).forEach(p -> listed.add(p.path("name").asText()));
    assertEquals(new java.util.TreeSet<>(List.of(a, b, c, d)), listed, "GET /v1/pods?node=");
    assertInvariants(api);
  }

  @Test
  void withdrawnDemandLeavesTheQueueAndRedemandGoesToTheTail() {
    String node = Manifests.unique("wd");
    api.putNode(node, 1, "share-pool", NO_PREEMPTION);
    String x = node + "-x";
    String y = node + "-y";
    String z = node + "-z";
    for (String p : List.of(x, y, z)) {
      api.createPod(sharePod(p, node, 10, 100));
    }
    assertRunningOn(api.demand(x), 0);
    assertReady(api.demand(y), 1);
    assertReady(api.demand(z), 2);

    // Ready → Hibernation: Y leaves the queue, Z moves up.
    assertHibernation(api.release(y));
    assertHibernation(api.pod(y));
    assertReady(api.pod(z), 1);
    assertEquals(keys(z), queueOrder(api.queue(node)));

    // Hibernation → Ready: Y joins the tail, behind Z.
    assertReady(api.demand(y), 2);
    assertEquals(keys(z, y), queueOrder(api.queue(node)));
    assertRunningOn(api.pod(x), 0);

    // X releases: the head (Z) gets the GPU, Y becomes the head.
    assertHibernation(api.release(x));
    assertRunningOn(api.pod(z), 0);
    assertReady(api.pod(y), 1);
    assertEquals(keys(y), queueOrder(api.queue(node)));
    assertInvariants(api);
  }

  @Test
  void waitingAndRunningSecondsFollowTheClock() {
    String node = Manifests.unique("secs");
    api.putNode(node, 1, "share-pool", NO_PREEMPTION);
    String x = node + "-x";
    String y = node + "-y";
    api.createPod(sharePod(x, node, 10, 100));
    api.createPod(sharePod(y, node, 10, 100));
    api.demand(x);
    api.demand(y);
    api.advance(90);
    JsonNode xv = api.pod(x);
    JsonNode yv = api.pod(y);
    assertEquals(90, xv.path("runningSeconds").asLong(-1), () -> "runningSeconds: " + xv);
    assertEquals(90, yv.path("waitingSeconds").asLong(-1), () -> "waitingSeconds: " + yv);
    JsonNode q = api.queue(node);
    assertEquals(90, q.get(0).path("waitingSeconds").asLong(-1), () -> "queue: " + q);
    JsonNode nq = api.node(node).path("queue");
    assertEquals(90, nq.get(0).path("waitingSeconds").asLong(-1), () -> "NodeView.queue: " + nq);
  }

  @Test
  void aRepeatedDemandKeepsThePodsPlace() {
    String node = Manifests.unique("again");
    api.putNode(node, 1, "share-pool", NO_PREEMPTION);
    String x = node + "-x";
    String y = node + "-y";
    String z = node + "-z";
    for (String p : List.of(x, y, z)) {
      api.createPod(sharePod(p, node, 10, 100));
    }
    api.demand(x);
    api.demand(y);
    api.demand(z);
    JsonNode gpuBefore = api.pod(x).path("gpu");
    // a second demand neither re-enters the queue (FIFO by time of entering Ready) nor moves X
    Api.Resp ry = api.post(Api.podPath(y) + "/demand", null, null);
    assertTrue(ry.status() == 200 || ry.status() == 409, () -> "repeated demand: " + ry);
    Api.Resp rx = api.post(Api.podPath(x) + "/demand", null, null);
    assertTrue(rx.status() == 200 || rx.status() == 409, () -> "repeated demand: " + rx);
    assertEquals(keys(y, z), queueOrder(api.queue(node)));
    assertReady(api.pod(y), 1);
    assertRunningOn(api.pod(x), 0);
    assertEquals(gpuBefore, api.pod(x).path("gpu"));
    assertInvariants(api);
  }

  @Test
  void deletingARunningPodFreesItsShareForTheHead() {
    String node = Manifests.unique("del");
    api.putNode(node, 1, "share-pool", NO_PREEMPTION);
    String x = node + "-x";
    String y = node + "-y";
    api.createPod(sharePod(x, node, 10, 100));
    api.createPod(sharePod(y, node, 10, 100));
    assertRunningOn(api.demand(x), 0);
    assertReady(api.demand(y), 1);

    api.deletePod(x);
    Api.problem(api.get(Api.podPath(x)), 404);
    assertRunningOn(api.pod(y), 0);
    assertGpu(api.node(node), 0, 100, 100, y);
    assertEquals(0, api.queue(node).size());
    assertInvariants(api);
  }

  @Test
  void deletingAQueuedPodRemovesItFromTheQueue() {
    String node = Manifests.unique("delq");
    api.putNode(node, 1, "share-pool", NO_PREEMPTION);
    String x = node + "-x";
    String y = node + "-y";
    String z = node + "-z";
    for (String p : List.of(x, y, z)) {
      api.createPod(sharePod(p, node, 10, 100));
    }
    api.demand(x);
    api.demand(y);
    api.demand(z);
    api.deletePod(y);
    assertEquals(keys(z), queueOrder(api.queue(node)));
    assertReady(api.pod(z), 1);
    assertInvariants(api);
  }

  @Test
  void placementIsBestFitByLimitsWithTiesToTheLowestIndex() {
    String node = Manifests.unique("fit");
    api.putNode(node, 3, "share-pool", NO_PREEMPTION);
    String p = node + "-p";
    String q = node + "-q";
    String r = node + "-r";
    String s = node + "-s";
    // Requests are small and equal: only limits decide.
    api.createPod(sharePod(p, node, 10, 60));
    api.createPod(sharePod(q, node, 10, 30));
    api.createPod(sharePod(r, node, 10, 50));
    api.createPod(sharePod(s, node, 10, 40));
    assertRunningOn(api.demand(p), 0); // all empty: lowest index
    assertRunningOn(api.demand(q), 0); // GPU 0 would keep 10 free, GPU 1 and 2 70: best fit 0
    assertRunningOn(api.demand(r), 1); // GPU 0 has 10 free: no fit; 1 and 2 tie: lowest index
    assertRunningOn(api.demand(s), 1); // GPU 1 would keep 10 free, GPU 2 60
    JsonNode v = api.node(node);
    assertGpu(v, 0, 90, 90, p, q);
    assertGpu(v, 1, 90, 90, r, s);
    assertGpu(v, 2, 0, 0);
    assertInvariants(api);
  }

  @Test
  void theReferenceManifestIsAcceptedAsYaml() throws IOException {
    String yaml;
    try (InputStream in = getClass().getResourceAsStream("/examples/gpu-share-demo.yaml")) {
      yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Api.Resp r = api.post("/v1/pods", yaml, "application/yaml");
    assertEquals(201, r.status(), () -> "create from gpu-share-demo.yaml: " + r);
    JsonNode v = r.json();
    assertEquals("gpu-share-demo", v.path("name").asText(), () -> "name: " + v);
    assertEquals("default", v.path("namespace").asText(), () -> "namespace: " + v);
    assertEquals("share-pool", v.path("policy").asText(), () -> "policy: " + v);
    assertHibernation(v);
    assertEquals(10, v.path("requests").path("core").asInt(), () -> "requests: " + v);
    assertEquals(10, v.path("requests").path("memory").asInt(), () -> "requests: " + v);
    assertEquals(100, v.path("limits").path("core").asInt(), () -> "limits: " + v);
    assertEquals(100, v.path("limits").path("memory").asInt(), () -> "limits: " + v);
    // no spec.nodeName: the embedded scheduler places it on a share-pool node
    String placed = v.path("node").asText("");
    assertFalse(placed.isBlank(), () -> "the embedded scheduler places the pod: " + v);
    assertEquals("share-pool", api.node(placed).path("policy").asText());
    assertTrue(api.pod("gpu-share-demo").path("uid").asText("").length() > 0, "uid assigned");
  }
}
