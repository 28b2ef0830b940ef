package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.node.api.Views.EventView;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class KubeEventsTest {
  static final Instant AT = Instant.parse("2026-01-01T00:00:00.123456789Z");
  static final ObjectReference POD = KubeEvents.pod("ns", "victim", "uid-1");

  static EventView victim(Instant at) {
    return Fixtures.event(PodNotes.victimEvent(new PodKey("ns", "preemptor", "uid-2"), at));
  }

  @Test
  void theEventSaysExactlyWhatSpecSevenSays() {
    Event e = KubeEvents.desired(POD, victim(AT), "gpushare-0", AT);
    assertEquals("Warning", e.getType());
    assertEquals("GPUSharePreempted", e.getReason());
    assertEquals("GPU is preempted by preemptor.", e.getNote());
    assertEquals("Preempted", e.getAction());
    assertEquals("gpushare", e.getReportingController());
    assertEquals("gpushare-0", e.getReportingInstance());
    assertEquals("2026-01-01T00:00:00.123456Z", e.getEventTime().getTime());
    assertEquals("ns", e.getMetadata().getNamespace());
    assertEquals(POD, e.getRegarding());
    assertEquals("events.k8s.io/v1", e.getApiVersion());
  }

  @Test
  void theSameSeriesAlwaysHasTheSameNameAndAnotherOneAnother() {
    String name = KubeEvents.name(POD, victim(AT));
    assertEquals(name, KubeEvents.name(POD, victim(AT)));
    assertTrue(name.matches("victim\\.[0-9a-f]{16}"), name);
    assertEquals(name, KubeEvents.name(POD, victim(AT.plusSeconds(1))), "a repeat: one series");
    assertNotEquals(
        name,
        KubeEvents.name(
            POD, Fixtures.event(PodNotes.victimEvent(new PodKey("ns", "other", "uid-3"), AT))),
        "another note: another series");
    assertNotEquals(name, KubeEvents.name(KubeEvents.pod("ns", "victim", "uid-9"), victim(AT)));
  }

  @Test
  void repeatsAreOneEventWithASeries() {
    List<KubeEvents.Series> series =
        KubeEvents.series(
            POD, List.of(victim(AT), victim(AT.plusSeconds(60)), victim(AT.plusSeconds(30))), AT);
    assertEquals(1, series.size());
    KubeEvents.Series s = series.get(0);
    assertEquals(3, s.count());
    assertEquals(AT.plusSeconds(60), s.last());
    Event e = KubeEvents.desired(POD, s, "gpushare-0", AT);
    assertEquals("2026-01-01T00:00:00.123456Z", e.getEventTime().getTime(), "the first one");
    assertEquals(3, e.getSeries().getCount());
    assertEquals("2026-01-01T00:01:00.123456Z", e.getSeries().getLastObservedTime().getTime());
    assertEquals(
        "{\"series\":{\"count\":3,\"lastObservedTime\":\"2026-01-01T00:01:00.123456Z\"}}",
        KubeEvents.seriesPatch(s));
    assertNull(
        KubeEvents.desired(POD, KubeEvents.series(POD, List.of(victim(AT)), AT).get(0), "i", AT)
            .getSeries(),
        "one occurrence: no series");
  }

  @Test
  void namesOfLongObjectsStayValid() {
    String longName = "a".repeat(240) + "-" + "b".repeat(12);
    String name = KubeEvents.name(KubeEvents.pod("ns", longName, "u"), victim(AT));
    assertTrue(name.length() <= 253, name);
    assertTrue(name.matches("[a-z0-9]([-a-z0-9.]*[a-z0-9])?"), name);
    assertTrue(!name.contains("-."), name);
  }

  @Test
  void nodeEventsLiveInTheDefaultNamespace() {
    Event e =
        KubeEvents.desired(
            KubeEvents.node("gpu-hpn-1", "uid-n"),
            new EventView("Warning", "InvalidQoSConfig", "bad", AT, "gpushare"),
            "gpushare-0",
            AT);
    assertEquals("default", e.getMetadata().getNamespace());
    assertEquals("Node", e.getRegarding().getKind());
    assertEquals("InvalidQoSConfig", e.getAction());
  }

  @Test
  void actionsNameWhatWasDone() {
    assertEquals("Preempt", KubeEvents.action(PodNotes.PREEMPT));
    assertEquals("Preempted", KubeEvents.action(PodNotes.PREEMPTED));
    assertEquals("Pin", KubeEvents.action(PodNotes.FRAGMENTED));
  }

  @Test
  void aNoteTooLongForTheApiServerIsShortened() {
    String note =
        KubeEvents.desired(
                POD,
                new EventView("Warning", "GPUShareFragmented", "é".repeat(2000), AT, "gpushare"),
                "gpushare-0",
                AT)
            .getNote();
    assertTrue(note.getBytes(StandardCharsets.UTF_8).length <= 1024);
    assertTrue(note.endsWith("…"));
  }
}
