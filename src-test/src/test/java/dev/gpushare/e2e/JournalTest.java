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
  void aPodsEventsAreInOrderWithTypesAndJsonBodies() {
    String node = Manifests.unique("je");
    api.putNode(node, 1, "share-pool", null);
    String pod = node + "-p";
    String uid = api.createPod(sharePod(pod, node, 10, 100)).path("uid").asText();
    assertRunningOn(api.demand(pod), 0);
    api.release(pod);
    api.demand(pod);
    api.release(pod);
    String id = "Pod|" + Api.NS + "/" + pod + "/" + uid;

    JsonNode items = events(id, "");
    assertTrue(items.size() >= 4, () -> "at least demand, grant, release… : " + items);
    long expected = 1;
    List<String> texts = new ArrayList<>();
    for (JsonNode e : items) {
      assertEquals(id, e.path("persistenceId").asText(), () -> "persistenceId: " + e);
      assertEquals(expected++, e.path("sequenceNr").asLong(), () -> "sequenceNr 1..n: " + items);
      assertFalse(e.path("type").asText("").isBlank(), () -> "type: " + e);
      assertTrue(e.path("event").isObject(), () -> "event is a JSON object: " + e);
      assertTrue(e.hasNonNull("timestamp"), () -> "timestamp: " + e);
      texts.add(e.path("type").asText() + " " + e.path("event"));
    }
    // API.md names no event types: look for the facts (type or body) in order —
    // granted → released, twice (a demand granted at once takes the pod from Hibernation straight
    // to Running: its Enqueued and Granted are one write of the arbiter's, below).
    String grant = "grant|running";
    String release = "releas|hibernation";
    int i = indexOf(texts, grant, 1);
    i = indexOf(texts, release, i + 1);
    i = indexOf(texts, grant, i + 1);
    indexOf(texts, release, i + 1);

    // The node's arbiter has the decisions: enqueued → granted → released, twice.
    List<String> decisions = new ArrayList<>();
    for (JsonNode e : events("NodeArbiter|" + node, "")) {
      decisions.add(e.path("type").asText() + " " + e.path("event"));
    }
    String enqueued = "enqueued";
    int d = indexOf(decisions, enqueued, 0);
    d = indexOf(decisions, grant, d + 1);
    d = indexOf(decisions, release, d + 1);
    d = indexOf(decisions, enqueued, d + 1);
    d = indexOf(decisions, grant, d + 1);
    indexOf(decisions, release, d + 1);

    JsonNode page = events(id, "&fromSequenceNr=2&limit=2");
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
