package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.T0;
import static dev.gpushare.node.kube.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodConditionView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.fake.FakeGpuShareReader;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A burst of 1,000 arbiter decisions on one node and its pods costs a handful of requests, bounded
 * by the number of objects, not of decisions — at the default rate limit.
 */
class KubeWriterBurstTest {
  static final String NS = "notebooks";
  static final String NODE = "gpu-hpn-1";
  static final int PODS = 8;
  static final int DECISIONS = 1000;

  MockApi api = new MockApi();
  FakeGpuShareReader service = Fixtures.service();
  KubeWriter writer;

  @AfterEach
  void tearDown() {
    if (writer != null) {
      writer.close();
    }
    api.close();
  }

  @Test
  void aThousandDecisionsOnOneNodeCostAHandfulOfRequests() throws Exception {
    api.other.nodes().resource(Fixtures.kubeletNode(NODE)).create();
    List<String> uids = new ArrayList<>();
    NodeView node = Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0);
    service.setNode(node);
    for (int p = 0; p < PODS; p++) {
      Pod created =
          api.other.pods().resource(Fixtures.kubeletPod(NS, name(p), null, NODE)).create();
      uids.add(created.getMetadata().getUid());
      service.setPod(hibernating(p, uids.get(p), List.of(), List.of()));
    }
    writer = new KubeWriter(api.client, service, KubeSyncSettings.defaults("gpushare-0")).start();
    writer.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
    api.clearRequests();
    long sentBefore = writer.requestsSent();

    // The worst case for coalescing: the burst arrives while a pass is in flight. The first
    // decision's pass is held at its view read until all 1,000 are announced.
    CountDownLatch held = service.closeGate();
    List<List<PodConditionView>> conditions = new ArrayList<>();
    List<List<EventView>> events = new ArrayList<>();
    GpuRef[] device = new GpuRef[PODS];
    for (int p = 0; p < PODS; p++) {
      conditions.add(new ArrayList<>());
      events.add(new ArrayList<>());
    }
    int preemptions = 0;
    for (int i = 0; i < DECISIONS; i++) {
      int p = i % PODS;
      Instant at = T0.plusMillis(100L * i);
      if (i % 250 == 249) {
        // a preemption: pod p takes the GPU of pod q
        int q = (p + 1) % PODS;
        PodKey preemptor = new PodKey(NS, name(p), uids.get(p));
        PodKey victim = new PodKey(NS, name(q), uids.get(q));
        conditions.set(q, List.of(Fixtures.condition(PodNotes.victimCondition(preemptor, at))));
        events.get(q).add(Fixtures.event(PodNotes.victimEvent(preemptor, at)));
        conditions.set(p, List.of(Fixtures.condition(PodNotes.preemptorCondition(victim, at))));
        events.get(p).add(Fixtures.event(PodNotes.preemptorEvent(victim, at)));
        device[p] = device[q];
        device[q] = null;
        publish(q, uids, device, conditions, events);
        preemptions++;
      } else {
        // a grant or a release
        device[p] = device[p] == null ? Fixtures.gpu(i % 16) : null;
      }
      publish(p, uids, device, conditions, events);
      if (i == 500) {
        // and a GPU fails half-way: 15 healthy GPUs from here on
        node =
            Fixtures.nodeView(
                NODE,
                SharePolicy.SHARE_POOL,
                15,
                at,
                node.status().conditions(),
                Fixtures.OWN_ALLOCATABLE,
                List.of());
        service.setNode(node);
      }
      service.nodeChanged(NODE);
      if (i == 0) {
        assertTrue(held.await(30, TimeUnit.SECONDS), "the first pass is in flight");
      }
    }
    service.open();
    writer.flushed().toCompletableFuture().get(60, TimeUnit.SECONDS);

    // Bound: no object is read (the writer's informers hold them). An object whose pass was in
    // flight when the burst began gets one more pass (the burst marked it again) that finds
    // nothing to change or writes once more; every other object is synced once, after the burst,
    // from the latest view. A pass writes at most once per kind of change: node status; pod
    // annotations, pod conditions; plus one create per new Event. So at most 1 + 2 × 8 writes
    // (and as many again for passes in flight, one per worker) and one request per Event: 8
    // preemptions' worth of Events here.
    int newEvents = 2 * preemptions;
    int bound = 1 + 2 * PODS + 2 * KubeWriter.WORKERS + newEvents;
    int received = api.requests().size();
    System.out.printf(
        "%d decisions → %d requests (bound %d): %s%n", DECISIONS, received, bound, api.requests());
    assertTrue(received <= bound, received + " requests, want at most " + bound);
    assertEquals(received, writer.requestsSent() - sentBefore, "the writer counts what it sends");
    long reads = api.requests().stream().filter(r -> r.startsWith("GET")).count();
    assertEquals(0, reads, "reads");

    // and the API server shows the final state
    assertEquals(
        "1500",
        text(
            api.other.nodes().withName(NODE).get().getStatus().getCapacity(),
            ShareRequestRules.CORE));
    List<Event> written = api.other.resources(Event.class).inNamespace(NS).list().getItems();
    assertEquals(newEvents, written.size());
    for (int p = 0; p < PODS; p++) {
      Pod pod = api.other.pods().inNamespace(NS).withName(name(p)).get();
      Map<String, String> annotations = pod.getMetadata().getAnnotations();
      String index = annotations == null ? null : annotations.get(KubeWriter.GPU_INDEX_ANNOTATION);
      if (device[p] == null) {
        assertNull(index, name(p));
      } else {
        assertEquals(String.valueOf(device[p].index()), index, name(p));
        assertEquals(device[p].uuid(), annotations.get(KubeWriter.GPU_UUID_ANNOTATION));
      }
      List<PodCondition> reclaim =
          pod.getStatus().getConditions().stream()
              .filter(c -> c.getType().equals(PodNotes.RECLAIM_CONDITION))
              .toList();
      assertEquals(conditions.get(p).size(), reclaim.size(), name(p));
      if (!reclaim.isEmpty()) {
        assertEquals(conditions.get(p).get(0).message(), reclaim.get(0).getMessage());
      }
      String podName = name(p);
      assertEquals(
          events.get(p).size(),
          written.stream().filter(e -> podName.equals(e.getRegarding().getName())).count(),
          podName);
    }
  }

  private void publish(
      int p,
      List<String> uids,
      GpuRef[] device,
      List<List<PodConditionView>> conditions,
      List<List<EventView>> events) {
    PodView view =
        device[p] == null
            ? hibernating(p, uids.get(p), conditions.get(p), events.get(p))
            : Fixtures.podView(
                NS,
                name(p),
                uids.get(p),
                NODE,
                "Running",
                device[p],
                List.copyOf(conditions.get(p)),
                List.copyOf(events.get(p)));
    service.setPod(view);
    service.podChanged(NS, name(p), false);
  }

  private static PodView hibernating(
      int p, String uid, List<PodConditionView> conditions, List<EventView> events) {
    return Fixtures.podView(
        NS, name(p), uid, NODE, "Hibernation", null, List.copyOf(conditions), List.copyOf(events));
  }

  private static String name(int p) {
    return "notebook-" + p;
  }
}
