package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every name Kubernetes accepts works, or is refused at once, through the real server on its H2
 * journal: a pod with a 253-character name in a 63-character namespace on a node with a
 * 253-character name lives its whole life and survives a SIGKILL; a name Kubernetes would refuse is
 * a 404 in a path and a 422 in a manifest; and refused creates leave the journal as it was.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LongNamesTest {

  /** The longest namespace: a DNS-1123 label of 63 characters. */
  private static final String NAMESPACE = "s".repeat(63);

  private ServerProcess server;

  @BeforeAll
  void start(@TempDir Path dir) {
    server = ServerProcess.start("LongNamesTest", dir.resolve("data"));
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  /** A DNS-1123 subdomain of exactly 253 characters, starting with {@code c}. */
  private static String longest(char c) {
    String label = String.valueOf(c).repeat(63);
    return label + "." + label + "." + label + "." + String.valueOf(c).repeat(61);
  }

  private static String podPath(String namespace, String name) {
    return "/v1/namespaces/" + namespace + "/pods/" + name;
  }

  private static ObjectNode inNamespace(ObjectNode pod, String namespace) {
    ((ObjectNode) pod.path("metadata")).put("namespace", namespace);
    return pod;
  }

  @Test
  void aPodWithTheLongestNamesOnANodeWithTheLongestNameLivesItsLifeAndSurvivesARestart() {
    Api api = server.api();
    String node = longest('n');
    String pod = longest('p');
    String other = longest('q');
    api.putNode(node, 1, "share-pool", Manifests.qos(false, 120));
    JsonNode created = api.createPod(inNamespace(sharePod(pod, node, 10, 100), NAMESPACE));
    assertEquals(pod, created.path("name").asText());
    assertEquals(NAMESPACE, created.path("namespace").asText());
    String uid = created.path("uid").asText();
    api.createPod(inNamespace(sharePod(other, node, 10, 100), NAMESPACE));
    String path = podPath(NAMESPACE, pod);
    assertRunningOn(Api.ok(api.post(path + "/demand", null, null)), 0);
    assertEquals(
        "Hibernation", Api.ok(api.delete(path + "/demand")).path("state").asText(), "released");
    assertRunningOn(Api.ok(api.post(path + "/demand", null, null)), 0);
    String otherPath = podPath(NAMESPACE, other);
    assertEquals(
        "Ready", Api.ok(api.post(otherPath + "/demand", null, null)).path("state").asText());

    JsonNode ids = Api.ok(api.get("/v1/journal/persistence-ids")).path("items");
    String podId = "Pod|" + NAMESPACE + "/" + pod + "/" + uid;
    assertEquals(358, podId.length());
    assertTrue(ids.toString().contains("\"" + podId + "\""), () -> podId + " in " + ids);

    JsonNode before = Checks.withoutTimes(Checks.snapshot(api));
    server.crash();
    server.restart();
    api = server.api();
    assertEquals(before, Checks.withoutTimes(Checks.snapshot(api)), "decisions after restart");
    assertRunningOn(Api.ok(api.get(path)), 0);

    // Delete answers at once, the waiting pod gets the GPU, and the name is free again.
    assertEquals(pod, Api.ok(api.delete(path)).path("name").asText());
    Api.problem(api.get(path), 404);
    assertRunningOn(Api.ok(api.get(otherPath)), 0);
    JsonNode again = api.createPod(inNamespace(sharePod(pod, node, 10, 100), NAMESPACE));
    assertTrue(!again.path("uid").asText().equals(uid), "a new pod of the same name");
    assertEquals(pod, Api.ok(api.delete(path)).path("name").asText());
    assertEquals(other, Api.ok(api.delete(otherPath)).path("name").asText());
  }

  @Test
  void namesKubernetesRefusesAre404InAPathAnd422InAManifest() {
    Api api = server.api();
    String node = Manifests.unique("names");
    api.putNode(node, 1, "share-pool", null);
    for (String path :
        new String[] {
          podPath("default", "a%7Cb"),
          podPath("a%7Cb", "pod"),
          podPath("default", "Upper"),
          podPath("default", "x".repeat(254)),
          podPath("s".repeat(64), "pod"),
        }) {
      JsonNode p = Api.problem(api.get(path), 404);
      assertTrue(p.path("detail").asText().contains("not a valid pod name"), p::toString);
      Api.problem(api.delete(path), 404);
      Api.problem(api.post(path + "/demand", null, null), 404);
      Api.problem(api.delete(path + "/demand"), 404);
      Api.problem(api.get(path + "/grant?timeoutSeconds=1"), 404);
    }
    Api.problem(api.get("/v1/nodes/a%7Cb"), 404);

    ObjectNode barInName = sharePod("a|b", node, 10, 100);
    Api.problem(api.postJson("/v1/pods", barInName), 422, "metadata.name");
    ObjectNode barInUid = sharePod(node + "-u", node, 10, 100);
    ((ObjectNode) barInUid.path("metadata")).put("uid", "u|1");
    Api.problem(api.postJson("/v1/pods", barInUid), 422, "metadata.uid");
    ObjectNode badNode = sharePod(node + "-n", "a|b", 10, 100);
    Api.problem(api.postJson("/v1/pods", badNode), 422, "spec.nodeName");
  }

  @Test
  void refusedCreatesLeaveTheJournalAsItWas() {
    Api api = server.api();
    String node = Manifests.unique("refused");
    api.putNode(node, 1, "share-pool", null);
    api.createPod(sharePod(node + "-big", node, 90, 100));
    Map<String, Integer> before = journal(api);
    for (int i = 0; i < 20; i++) {
      String name = node + "-r" + i;
      // 422: a static pod on a share-pool node (node admission); 409: no room left.
      Api.problem(
          api.postJson("/v1/pods", Manifests.staticPod(name, node, 10, 100)),
          422,
          Manifests.POLICY_LABEL);
      Api.problem(api.postJson("/v1/pods", sharePod(name, node, 20, 100)), 409);
      Api.problem(api.postJson("/v1/pods", sharePod(name, "no-such-node", 10, 100)), 404);
    }
    assertEquals(before, journal(api), "60 refused creates wrote nothing");
  }

  /** Every persistence id of the journal and how many events it holds (pages of 1,000). */
  private static Map<String, Integer> journal(Api api) {
    Map<String, Integer> events = new TreeMap<>();
    for (JsonNode id : Api.ok(api.get("/v1/journal/persistence-ids")).path("items")) {
      int count = 0;
      int page;
      do {
        page =
            Api.ok(
                    api.get(
                        "/v1/journal/events?persistenceId="
                            + Api.enc(id.asText())
                            + "&fromSequenceNr="
                            + (count + 1)
                            + "&limit=1000"))
                .path("items")
                .size();
        count += page;
      } while (page == 1000);
      events.put(id.asText(), count);
    }
    return events;
  }
}
