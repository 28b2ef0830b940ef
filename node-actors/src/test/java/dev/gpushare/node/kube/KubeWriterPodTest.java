package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.T0;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.node.fake.FakeGpuShareReader;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What users see of a decision on the pod (SPEC §7), written to a mock API server. */
class KubeWriterPodTest {
  static final String NS = "team-a";
  static final String NODE = "gpu-hpn-1";

  MockApi api;
  // the API server gives pods their uids
  String victimUid;
  String preemptorUid;
  FakeGpuShareReader service;
  KubeWriter writer;

  @BeforeEach
  void setUp() {
    api = new MockApi();
    service = Fixtures.service();
    victimUid =
        api.other
            .pods()
            .resource(Fixtures.kubeletPod(NS, "victim", null, NODE))
            .create()
            .getMetadata()
            .getUid();
    preemptorUid =
        api.other
            .pods()
            .resource(Fixtures.kubeletPod(NS, "preemptor", null, NODE))
            .create()
            .getMetadata()
            .getUid();
    api.clearRequests();
  }

  @AfterEach
  void tearDown() {
    if (writer != null) {
      writer.close();
    }
    api.close();
  }

  KubeWriter newWriter(String instance) {
    return new KubeWriter(
            api.client,
            service,
            new KubeSyncSettings(
                NodeStatusMode.KUBELET, 1000, 1000, Duration.ofMillis(50), instance))
        .start();
  }

  static void flush(KubeWriter w) throws Exception {
    w.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  Pod pod(String name) {
    return api.other.pods().inNamespace(NS).withName(name).get();
  }

  List<Event> events() {
    return api.other.resources(Event.class).inNamespace(NS).list().getItems();
  }

  static PodCondition condition(Pod pod, String type) {
    return pod.getStatus().getConditions().stream()
        .filter(c -> type.equals(c.getType()))
        .findFirst()
        .orElse(null);
  }

  @Test
  void theDeviceIsAnnotatedWhileThePodHasOneAndRemovedWhenItHibernates() throws Exception {
    service.setPod(Fixtures.running(NS, "victim", victimUid, NODE, 3));
    writer = newWriter("gpushare-0");
    flush(writer);

    Map<String, String> on = pod("victim").getMetadata().getAnnotations();
    assertEquals("3", on.get(KubeWriter.GPU_INDEX_ANNOTATION));
    assertEquals(Fixtures.gpu(3).uuid(), on.get(KubeWriter.GPU_UUID_ANNOTATION));

    // share-pool: the next Running period may use another GPU (its real index)
    service.setPod(Fixtures.running(NS, "victim", victimUid, NODE, 11));
    service.podChanged(NS, "victim", false);
    flush(writer);
    assertEquals(
        "11", pod("victim").getMetadata().getAnnotations().get(KubeWriter.GPU_INDEX_ANNOTATION));

    service.setPod(
        Fixtures.podView(NS, "victim", victimUid, NODE, "Hibernation", null, List.of(), List.of()));
    service.podChanged(NS, "victim", false);
    flush(writer);
    Map<String, String> off = pod("victim").getMetadata().getAnnotations();
    assertFalse(off != null && off.containsKey(KubeWriter.GPU_INDEX_ANNOTATION), "index removed");
    assertFalse(off != null && off.containsKey(KubeWriter.GPU_UUID_ANNOTATION), "uuid removed");
    assertEquals(
        "True", condition(pod("victim"), "Ready").getStatus(), "kubelet's conditions kept");
  }

  @Test
  void preemptionShowsTheReclaimConditionAndOneEventOnEachPodEvenAfterResyncAndFailOver()
      throws Exception {
    PodKey victim = new PodKey(NS, "victim", victimUid);
    PodKey preemptor = new PodKey(NS, "preemptor", preemptorUid);
    java.time.Instant at = T0.plusMillis(1234);
    service.setPod(
        Fixtures.podView(
            NS,
            "victim",
            victimUid,
            NODE,
            "Ready",
            null,
            List.of(Fixtures.condition(PodNotes.victimCondition(preemptor, at))),
            List.of(Fixtures.event(PodNotes.victimEvent(preemptor, at)))));
    service.setPod(
        Fixtures.podView(
            NS,
            "preemptor",
            preemptorUid,
            NODE,
            "Running",
            Fixtures.gpu(0),
            List.of(Fixtures.condition(PodNotes.preemptorCondition(victim, at))),
            List.of(Fixtures.event(PodNotes.preemptorEvent(victim, at)))));
    writer = newWriter("gpushare-0");
    flush(writer);

    PodCondition reclaimed = condition(pod("victim"), "Interruption.GPUShareReclaim");
    assertEquals("True", reclaimed.getStatus());
    assertEquals("GPUSharePreempted", reclaimed.getReason());
    assertEquals("GPU is preempted by preemptor.", reclaimed.getMessage());
    assertEquals("2026-01-01T00:00:01Z", reclaimed.getLastTransitionTime());
    PodCondition reclaiming = condition(pod("preemptor"), "Interruption.GPUShareReclaim");
    assertEquals("GPUSharePreempt", reclaiming.getReason());
    assertEquals("GPU is preempted from victim.", reclaiming.getMessage());
    for (String name : List.of("victim", "preemptor")) {
      List<String> types =
          pod(name).getStatus().getConditions().stream().map(PodCondition::getType).toList();
      // the API server merges by type and puts a new one first, as for the kubelet's own patches
      assertEquals(List.of("Interruption.GPUShareReclaim", "PodScheduled", "Ready"), types);
    }

    List<Event> events = events();
    assertEquals(2, events.size());
    Event onVictim = eventAbout(events, "victim");
    assertEquals("Warning", onVictim.getType());
    assertEquals("GPUSharePreempted", onVictim.getReason());
    assertEquals("GPU is preempted by preemptor.", onVictim.getNote());
    assertEquals("Preempted", onVictim.getAction());
    assertEquals("gpushare", onVictim.getReportingController());
    assertEquals("gpushare-0", onVictim.getReportingInstance());
    assertEquals("2026-01-01T00:00:01.234000Z", onVictim.getEventTime().getTime());
    assertEquals("Pod", onVictim.getRegarding().getKind());
    assertEquals("v1", onVictim.getRegarding().getApiVersion());
    assertEquals(NS, onVictim.getRegarding().getNamespace());
    assertEquals(victimUid, onVictim.getRegarding().getUid());
    assertEquals(NS, onVictim.getMetadata().getNamespace());
    Event onPreemptor = eventAbout(events, "preemptor");
    assertEquals("Warning", onPreemptor.getType());
    assertEquals("GPUSharePreempt", onPreemptor.getReason());
    assertEquals("GPU is preempted from victim.", onPreemptor.getNote());
    assertEquals("Preempt", onPreemptor.getAction());
    assertEquals(preemptorUid, onPreemptor.getRegarding().getUid());

    // a resync, and more changes that keep the same history: no Event written again
    api.clearRequests();
    writer.resync();
    service.podChanged(NS, "victim", false);
    service.podChanged(NS, "preemptor", false);
    flush(writer);
    assertEquals(List.of(), api.requests(), "the cache agrees: no request");
    assertEquals(2, events().size());

    // fail-over: a new writer knows nothing, yet writes no Event twice: it finds them when it
    // starts (stable names), so it does not even try
    writer.close();
    api.clearRequests();
    writer = newWriter("gpushare-1");
    flush(writer);
    assertEquals(List.of(), api.requests(), "no Event created again, nothing else either");
    assertEquals(2, events().size());
    assertEquals("gpushare-0", eventAbout(events(), "victim").getReportingInstance());
  }

  @Test
  void aReclaimConditionIsReplacedWhenTheNextPreemptionHappens() throws Exception {
    PodKey first = new PodKey(NS, "preemptor", preemptorUid);
    PodKey second = new PodKey(NS, "other", "uid-other");
    service.setPod(
        Fixtures.podView(
            NS,
            "victim",
            victimUid,
            NODE,
            "Ready",
            null,
            List.of(Fixtures.condition(PodNotes.victimCondition(first, T0))),
            List.of(Fixtures.event(PodNotes.victimEvent(first, T0)))));
    writer = newWriter("gpushare-0");
    flush(writer);

    java.time.Instant later = T0.plusSeconds(600);
    service.setPod(
        Fixtures.podView(
            NS,
            "victim",
            victimUid,
            NODE,
            "Ready",
            null,
            List.of(Fixtures.condition(PodNotes.victimCondition(second, later))),
            List.of(
                Fixtures.event(PodNotes.victimEvent(first, T0)),
                Fixtures.event(PodNotes.victimEvent(second, later)))));
    service.podChanged(NS, "victim", false);
    flush(writer);

    PodCondition c = condition(pod("victim"), "Interruption.GPUShareReclaim");
    assertEquals("GPU is preempted by other.", c.getMessage());
    assertEquals("2026-01-01T00:10:00Z", c.getLastTransitionTime());
    assertEquals(
        1,
        pod("victim").getStatus().getConditions().stream()
            .filter(x -> x.getType().equals("Interruption.GPUShareReclaim"))
            .count());
    assertEquals(
        List.of("GPU is preempted by other.", "GPU is preempted by preemptor."),
        events().stream().map(Event::getNote).sorted().toList());
  }

  @Test
  void aPodRecreatedUnderTheSameNameIsLeftAlone() throws Exception {
    service.setPod(Fixtures.running(NS, "victim", "uid-of-an-older-pod", NODE, 3));
    writer = newWriter("gpushare-0");
    flush(writer);
    assertEquals(List.of(), api.requests());
    Map<String, String> annotations = pod("victim").getMetadata().getAnnotations();
    assertTrue(annotations == null || !annotations.containsKey(KubeWriter.GPU_INDEX_ANNOTATION));
  }

  @Test
  void eventsOlderThanTheApiServerKeepsThemAreNotWritten() throws Exception {
    service.manualClock = new ManualClock(T0.plus(Duration.ofHours(2)));
    service.setPod(
        Fixtures.podView(
            NS,
            "victim",
            victimUid,
            NODE,
            "Ready",
            null,
            List.of(),
            List.of(Fixtures.event(PodNotes.victimEvent(new PodKey(NS, "p", "u"), T0)))));
    writer = newWriter("gpushare-0");
    flush(writer);
    assertEquals(0, events().size());
  }

  @Test
  void aDeletedPodIsForgotten() throws Exception {
    service.setPod(Fixtures.running(NS, "victim", victimUid, NODE, 3));
    writer = newWriter("gpushare-0");
    flush(writer);
    api.other.pods().inNamespace(NS).withName("victim").delete();
    service.removePod(NS, "victim");
    api.clearRequests();
    service.podChanged(NS, "victim", true);
    flush(writer);
    assertEquals(List.of(), api.requests());
    assertNull(pod("victim"));
  }

  static Event eventAbout(List<Event> events, String pod) {
    return events.stream()
        .filter(e -> pod.equals(e.getRegarding().getName()))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no Event about " + pod + " in " + events));
  }
}
