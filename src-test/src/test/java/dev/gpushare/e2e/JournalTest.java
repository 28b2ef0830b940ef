package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** API.md "Journal inspection". */
class JournalTest extends ServerPerClass {

  private List<String> persistenceIds() {
    List<String> ids = new ArrayList<>();
    Api.ok(api.get("/v1/journal/persistence-ids")).path("items").forEach(i -> ids.add(i.asText()));
    return ids;
  }

  private JsonNode events(String persistenceId, String extra) {
    return Api.ok(api.get("/v1/journal/events?persistenceId=" + Api.enc(persistenceId) + extra))
        .path("items");
  }

  @Test
  void persistenceIdsIncludeTheNodesAndPodsCreated() {
    String node = Manifests.unique("jn");
    api.putNode(node, 1, "share-pool", null);
    String pod = node + "-p";
    JsonNode v = api.createPod(sharePod(pod, node, 10, 100));
    String uid = v.path("uid").asText();
    assertFalse(uid.isBlank(), () -> "uid: " + v);
    api.demand(pod);

    List<String> ids = persistenceIds();
    String podId = "Pod|" + Api.NS + "/" + pod + "/" + uid;
    assertTrue(ids.contains(podId), () -> podId + " in " + ids);
    assertTrue(
        ids.stream().anyMatch(i -> !i.startsWith("Pod|") && i.contains(node)),
        () -> "a persistence id for node " + node + " in " + ids);
  }

  @Test
  void aNodesDecisionsAreInOrderWithTypesAndJsonBodiesAndAGrantCycleIsTwoEvents() {
    String node = Manifests.unique("je");
    api.putNode(node, 1, "share-pool", null);
    String pod = node + "-p";
    String uid = api.createPod(sharePod(pod, node, 10, 100)).path("uid").asText();
    String arbiter = "NodeArbiter|" + node;
    String podId = "Pod|" + Api.NS + "/" + pod + "/" + uid;
    String gpuId = "Gpu|" + node + "|" + api.node(node).path("gpus").get(0).path("uuid").asText();
    int arbiterBefore = events(arbiter, "&limit=1000").size();
    int podBefore = events(podId, "").size();
    int gpuBefore = events(gpuId, "").size();

    assertRunningOn(api.demand(pod), 0);
    api.release(pod);
    api.demand(pod);
    api.release(pod);

    // One writer: two grant cycles are four events, all the arbiter's (its two decisions each);
    // the pod and the GPU persist nothing for a plain grant and release.
    JsonNode items = events(arbiter, "&limit=1000");
    assertEquals(arbiterBefore + 4, items.size(), () -> "two grant cycles: " + items);
    assertEquals(podBefore, events(podId, "").size(), () -> "the pod's: " + events(podId, ""));
    assertEquals(gpuBefore, events(gpuId, "").size(), () -> "the GPU's: " + events(gpuId, ""));
    assertEquals("PodActor.SpecSeen", events(podId, "").get(0).path("type").asText());

    long expected = 1;
    List<String> texts = new ArrayList<>();
    for (JsonNode e : items) {
      assertEquals(arbiter, e.path("persistenceId").asText(), () -> "persistenceId: " + e);
      assertEquals(expected++, e.path("sequenceNr").asLong(), () -> "sequenceNr 1..n: " + items);
      assertFalse(e.path("type").asText("").isBlank(), () -> "type: " + e);
      assertTrue(e.path("event").isObject(), () -> "event is a JSON object: " + e);
      assertTrue(e.hasNonNull("timestamp"), () -> "timestamp: " + e);
      texts.add(e.path("type").asText() + " " + e.path("event"));
    }
    // API.md names no event types: look for the facts (type or body) in order — granted →
    // released, twice (a demand granted at once is one Granted, with no Enqueued before it).
    String grant = "granted.*" + uid;
    String release = "released.*" + uid;
    int i = indexOf(texts, grant, 0);
    i = indexOf(texts, release, i + 1);
    i = indexOf(texts, grant, i + 1);
    indexOf(texts, release, i + 1);

    JsonNode page = events(arbiter, "&fromSequenceNr=2&limit=2");
    assertEquals(2, page.size(), () -> "a page of two: " + page);
    assertEquals(2, page.get(0).path("sequenceNr").asLong());
    assertEquals(3, page.get(1).path("sequenceNr").asLong());
    assertEquals(items.get(1), page.get(0), "the same event either way");
  }

  @Test
  void healthReadinessAndMetricsAnswer() {
    assertEquals(200, api.get("/healthz").status(), "healthz");
    assertEquals(200, api.get("/readyz").status(), "readyz");
    Api.Resp m = api.get("/metrics");
    assertEquals(200, m.status(), () -> "metrics: " + m);
    assertTrue(
        m.contentType().startsWith("text/plain"), () -> "Prometheus text: " + m.contentType());
    assertFalse(m.body().isBlank(), "metrics body");
  }

  /** Index of the first event at or after {@code from} whose text matches, any case. */
  private static int indexOf(List<String> texts, String regex, int from) {
    Pattern p = Pattern.compile(regex, Pattern.CASE_INSENSITIVE);
    for (int i = from; i < texts.size(); i++) {
      if (p.matcher(texts.get(i)).find()) {
        return i;
      }
    }
    throw new AssertionError(
        "no event matching '" + regex + "' at or after index " + from + " in " + texts);
  }
}
