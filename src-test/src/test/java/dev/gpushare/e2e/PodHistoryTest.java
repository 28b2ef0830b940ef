package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pod's whole history ({@code GET /v1/namespaces/{ns}/pods/{name}/history}) from the real server
 * on its H2 journal: across a preemption (victim and preemptor), a restart of the member, a name
 * deleted on one node and created again on another, page by page, and for the longest names.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PodHistoryTest {

  private static final int MAX_MINUTES = 60;

  private ServerProcess server;
  private Api api;
  private String victim;
  private String preemptor;
  private String node;

  @BeforeAll
  void start(@TempDir Path dir) {
    server = ServerProcess.start("PodHistoryTest", dir.resolve("data"));
    api = server.api();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  /** The whole history, one page. */
  private JsonNode history(String namespace, String name) {
    JsonNode page =
        Api.ok(api.get("/v1/namespaces/" + namespace + "/pods/" + name + "/history?limit=1000"));
    assertTrue(page.path("next").isNull(), page::toString);
    return page.path("items");
  }

  private JsonNode history(String name) {
    return history(Api.NS, name);
  }

  /**
   * Each entry as {@code ENTITY TYPE WHAT}: entity {@code arbiter NODE} or {@code pod UID}, the
   * type, and the pod or GPU it names when it does.
   */
  private static List<String> lines(JsonNode items) {
    List<String> lines = new ArrayList<>();
    long cursor = 0;
    for (JsonNode e : items) {
      assertTrue(e.path("cursor").asLong() > cursor, "in journal order: " + items);
      cursor = e.path("cursor").asLong();
      String id = e.path("persistenceId").asText();
      String entity =
          id.startsWith("NodeArbiter|")
              ? "arbiter " + id.substring("NodeArbiter|".length())
              : "pod " + id.substring(id.lastIndexOf('/') + 1);
      JsonNode ev = e.path("event");
      String what = "";
      if (ev.has("victims")) {
        what = " by " + name(ev.path("by").asText()) + " of " + names(ev.path("victims"));
      } else if (ev.has("gpu")) {
        what = " gpu " + ev.path("gpu").asText();
      } else if (ev.has("events") && ev.path("events").size() > 0) {
        what = " " + ev.path("events").get(0).path("reason").asText();
      }
      lines.add(entity + " " + e.path("type").asText() + what);
    }
    return lines;
  }

  private static String name(String entityId) {
    String ref = entityId.substring(0, entityId.lastIndexOf('/'));
    return ref.substring(ref.indexOf('/') + 1);
  }

  private static String names(JsonNode ids) {
    List<String> out = new ArrayList<>();
    ids.forEach(i -> out.add(name(i.asText())));
    return String.join(",", out);
  }

  private String uid(String pod) {
    return api.pod(pod).path("uid").asText();
  }

  @Test
  @Order(1)
  void aPreemptionIsInTheHistoryOfTheVictimAndOfThePreemptor() {
    node = Manifests.unique("hist");
    api.putNode(node, 1, "share-pool", Manifests.qos(true, MAX_MINUTES));
    victim = node + "-v";
    preemptor = node + "-p";
    api.createPod(sharePod(victim, node, 10, 100));
    api.createPod(sharePod(preemptor, node, 10, 100));
    assertRunningOn(api.demand(victim), 0);
    assertReady(api.demand(preemptor), 1);
    api.advance(MAX_MINUTES * 60L + 1);
    assertRunningOn(api.pod(preemptor), 0);
    assertReady(api.pod(victim), 1);
    String v = uid(victim);
    String p = uid(preemptor);

    List<String> of = lines(history(victim));
    String arbiter = "arbiter " + node;
    String preemption = arbiter + " NodeArbiter.Preempted by " + preemptor + " of " + victim;
    assertEquals(
        List.of(
            "pod " + v + " PodActor.SpecSeen",
            arbiter + " NodeArbiter.PodAdded",
            arbiter + " NodeArbiter.Granted gpu 0",
            preemption,
            "pod " + v + " PodActor.Noted GPUSharePreempted"),
        withoutSpecOrder(of, v),
        "the victim: its grant, the preemption (which put it back in the queue), its Event");
    List<String> by = lines(history(preemptor));
    assertEquals(
        List.of(
            "pod " + p + " PodActor.SpecSeen",
            arbiter + " NodeArbiter.PodAdded",
            arbiter + " NodeArbiter.Enqueued",
            preemption,
            arbiter + " NodeArbiter.Granted gpu 0",
            "pod " + p + " PodActor.Noted GPUSharePreempt"),
        withoutSpecOrder(by, p),
        "the preemptor: queued, the same preemption, its grant, its Event");
    long inVictims = cursorOf(history(victim), "NodeArbiter.Preempted");
    assertEquals(inVictims, cursorOf(history(preemptor), "NodeArbiter.Preempted"), "one event");
  }

  /**
   * The lines with the pod's {@code SpecSeen} first: the record and the arbiter are told of a new
   * pod one after the other, in either order; everything after is ordered by the decisions.
   */
  private static List<String> withoutSpecOrder(List<String> lines, String uid) {
    List<String> out = new ArrayList<>(lines);
    String spec = "pod " + uid + " PodActor.SpecSeen";
    assertTrue(out.indexOf(spec) >= 0 && out.indexOf(spec) <= 1, lines::toString);
    out.remove(spec);
    out.add(0, spec);
    return out;
  }

  private static long cursorOf(JsonNode items, String type) {
    for (JsonNode e : items) {
      if (e.path("type").asText().equals(type)) {
        return e.path("cursor").asLong();
      }
    }
    throw new AssertionError("no " + type + " in " + items);
  }

  @Test
  @Order(2)
  void pagesWalkedWithTheCursorGiveTheWholeHistoryAndBadValuesAre400() {
    JsonNode whole = history(preemptor);
    for (int size = 1; size <= 4; size++) {
      List<JsonNode> walked = new ArrayList<>();
      long after = 0;
      for (int pages = 0; pages < 50; pages++) {
        JsonNode page =
            Api.ok(api.get(Api.podPath(preemptor) + "/history?after=" + after + "&limit=" + size));
        page.path("items").forEach(walked::add);
        if (page.path("next").isNull()) {
          break;
        }
        assertEquals(size, page.path("items").size(), page::toString);
        after = page.path("next").asLong();
      }
      List<JsonNode> expected = new ArrayList<>();
      whole.forEach(expected::add);
      assertEquals(expected, walked, "pages of " + size);
    }
    for (String bad : List.of("after=-1", "after=x", "after=", "limit=0", "limit=1001")) {
      String parameter = bad.substring(0, bad.indexOf('='));
      JsonNode problem =
          Api.problem(api.get(Api.podPath(preemptor) + "/history?" + bad), 400, parameter);
      assertTrue(problem.path("detail").asText().contains("expected"), problem::toString);
    }
    Api.problem(api.get("/v1/namespaces/default/pods/Not_A_Name/history"), 404);
    assertEquals(0, history(node + "-never").size(), "a name never used has no history");
  }

  @Test
  @Order(3)
  void aRestartOfTheMemberKeepsTheHistoryAndItGoesOnAfter() {
    JsonNode before = history(victim);
    server.stop();
    server.restart();
    api = server.api();
    JsonNode after = history(victim);
    List<JsonNode> kept = new ArrayList<>();
    after.forEach(kept::add);
    assertTrue(kept.size() >= before.size(), after::toString);
    List<JsonNode> was = new ArrayList<>();
    before.forEach(was::add);
    assertEquals(was, kept.subList(0, was.size()), "what was written stays as it was");

    api.release(preemptor); // the victim, head of the queue, gets GPU 0 back
    assertRunningOn(api.pod(victim), 0);
    JsonNode later = history(victim);
    JsonNode last = later.get(later.size() - 1);
    assertEquals("NodeArbiter.Granted", last.path("type").asText(), later::toString);
    assertEquals("NodeArbiter|" + node, last.path("persistenceId").asText(), later::toString);
    assertTrue(
        last.path("cursor").asLong() > before.get(before.size() - 1).path("cursor").asLong());
  }

  @Test
  @Order(4)
  void aNameDeletedOnOneNodeAndCreatedOnAnotherIsOneTimeline() {
    String a = Manifests.unique("hist-a");
    String b = Manifests.unique("hist-b");
    api.putNode(a, 1, "share-pool", null);
    api.putNode(b, 2, "share-pool", null);
    String pod = a + "-moving";
    api.createPod(sharePod(pod, a, 10, 100));
    String first = uid(pod);
    assertRunningOn(api.demand(pod), 0);
    api.deletePod(pod);
    api.createPod(sharePod(pod, b, 10, 100));
    String second = uid(pod);
    assertTrue(!first.equals(second), "a new pod of the same name");
    assertRunningOn(api.demand(pod), 0);
    api.release(pod);

    List<String> lines = lines(history(pod));
    List<String> onA =
        List.of(
            "arbiter " + a + " NodeArbiter.PodAdded",
            "arbiter " + a + " NodeArbiter.Granted gpu 0",
            "arbiter " + a + " NodeArbiter.PodRemoved");
    List<String> onB =
        List.of(
            "arbiter " + b + " NodeArbiter.PodAdded",
            "arbiter " + b + " NodeArbiter.Granted gpu 0",
            "arbiter " + b + " NodeArbiter.Released");
    List<String> arbiters = lines.stream().filter(l -> l.startsWith("arbiter ")).toList();
    List<String> expected = new ArrayList<>(onA);
    expected.addAll(onB);
    assertEquals(expected, arbiters, "both nodes' decisions, A's then B's: " + lines);
    int removed = lines.indexOf("arbiter " + a + " NodeArbiter.PodRemoved");
    assertTrue(lines.indexOf("pod " + first + " PodActor.SpecSeen") < removed, lines::toString);
    assertTrue(lines.contains("pod " + first + " PodActor.Deleted"), lines::toString);
    assertTrue(
        lines.indexOf("pod " + second + " PodActor.SpecSeen")
            > lines.indexOf("pod " + first + " PodActor.Deleted"),
        lines::toString);
    assertTrue(
        lines.indexOf("pod " + second + " PodActor.SpecSeen")
            < lines.indexOf("arbiter " + b + " NodeArbiter.Granted gpu 0"),
        lines::toString);
  }

  @Test
  @Order(5)
  void theLongestNamesHaveAHistory() {
    String namespace = "h".repeat(63);
    String label = "l".repeat(63);
    String name = label + "." + label + "." + label + "." + "l".repeat(61);
    assertEquals(253, name.length());
    String n = Manifests.unique("hist-long");
    api.putNode(n, 1, "share-pool", null);
    ObjectNode manifest = sharePod(name, n, 10, 100);
    ((ObjectNode) manifest.path("metadata")).put("namespace", namespace);
    String uid = api.createPod(manifest).path("uid").asText();
    String path = "/v1/namespaces/" + namespace + "/pods/" + name;
    assertRunningOn(Api.ok(api.post(path + "/demand", null, null)), 0);
    List<String> lines = lines(history(namespace, name));
    assertEquals(
        List.of(
            "pod " + uid + " PodActor.SpecSeen",
            "arbiter " + n + " NodeArbiter.PodAdded",
            "arbiter " + n + " NodeArbiter.Granted gpu 0"),
        withoutSpecOrder(lines, uid));
  }
}
