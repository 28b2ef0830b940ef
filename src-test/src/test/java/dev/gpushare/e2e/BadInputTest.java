package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.nodeCondition;
import static dev.gpushare.e2e.Checks.withoutTimes;
import static dev.gpushare.e2e.Manifests.COMPUTE_CLASS;
import static dev.gpushare.e2e.Manifests.CORE;
import static dev.gpushare.e2e.Manifests.MEMORY;
import static dev.gpushare.e2e.Manifests.POLICY_LABEL;
import static dev.gpushare.e2e.Manifests.QOS_ANNOTATION;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * ARCHITECTURE §6.5: bad input is refused with a problem+json that names the field, and nothing
 * already decided changes. Every case compares the whole server state before and after.
 */
class BadInputTest extends ServerPerClass {

  private static final String VALID_QOS = Manifests.qos(true, 60);

  private String node;
  private String running;
  private String waiting;
  private String noneNode;
  private String cpuOnly;

  @BeforeAll
  void setUp() {
    node = Manifests.unique("bad");
    api.putNode(node, 1, "share-pool", VALID_QOS);
    running = node + "-run";
    waiting = node + "-wait";
    api.createPod(sharePod(running, node, 10, 100));
    api.createPod(sharePod(waiting, node, 10, 100));
    assertRunningOn(api.demand(running), 0);
    api.demand(waiting);
    noneNode = Manifests.unique("none");
    api.putNode(noneNode, 1, "none", null);
    cpuOnly = noneNode + "-cpu";
    api.createPod(Manifests.cpuOnlyPod(cpuOnly, noneNode));
  }

  /** Everything the API shows, without the fields that move with time. */
  private JsonNode state() {
    ObjectNode s = Api.JSON.createObjectNode();
    s.set("pods", withoutTimes(Api.ok(api.get("/v1/pods"))));
    s.set("nodes", withoutTimes(Api.ok(api.get("/v1/nodes"))));
    s.set("clock", api.clock());
    return s;
  }

  private void assertRefusedUnchanged(Api.Resp r, int status, String fieldPart, JsonNode before) {
    if (fieldPart == null) {
      Api.problem(r, status);
    } else {
      Api.problem(r, status, fieldPart);
    }
    assertEquals(before, state(), () -> "state changed after a refused request: " + r);
  }

  // ------------------------------------------------------------------ SPEC §3 pod rules

  static Stream<Arguments> podRuleViolations() {
    return Stream.of(
        rule("missing core request", CORE, p -> requests(p).remove(CORE)),
        rule("missing memory request", MEMORY, p -> requests(p).remove(MEMORY)),
        rule("missing core limit", CORE, p -> limits(p).remove(CORE)),
        rule("missing memory limit", MEMORY, p -> limits(p).remove(MEMORY)),
        rule("non-integer core request", CORE, p -> requests(p).put(CORE, 50.5)),
        rule("non-integer memory limit", MEMORY, p -> limits(p).put(MEMORY, "ten")),
        rule("core request with a space before it", CORE, p -> requests(p).put(CORE, " 10")),
        rule("memory limit with a space after it", MEMORY, p -> limits(p).put(MEMORY, "50 ")),
        rule("core limit with a tab before it", CORE, p -> limits(p).put(CORE, "\t50")),
        rule("container cpu with a space after it", "[cpu]", p -> requests(p).put("cpu", "1 ")),
        rule("core request 0", CORE, p -> requests(p).put(CORE, 0)),
        rule("memory request 0", MEMORY, p -> requests(p).put(MEMORY, 0)),
        rule("negative core request", CORE, p -> requests(p).put(CORE, -5)),
        rule("memory limit over 100", MEMORY, p -> limits(p).put(MEMORY, 101)),
        rule("core limit 200 (no aggregation)", CORE, p -> limits(p).put(CORE, 200)),
        rule(
            "core request above limit",
            CORE,
            p -> {
              requests(p).put(CORE, 60);
              limits(p).put(CORE, 50);
            }),
        rule(
            "memory request above limit",
            MEMORY,
            p -> {
              requests(p).put(MEMORY, 80);
              limits(p).put(MEMORY, 70);
            }),
        rule(
            "two containers with shared resources",
            "containers",
            p -> {
              ObjectNode second = container(p).deepCopy();
              second.put("name", "second");
              ((com.fasterxml.jackson.databind.node.ArrayNode) p.path("spec").path("containers"))
                  .add(second);
            }),
        rule(
            "nvidia.com/gpu together with shared resources",
            "nvidia.com/gpu",
            p -> {
              limits(p).put("nvidia.com/gpu", "1");
              requests(p).put("nvidia.com/gpu", "1");
            }),
        rule("compute-class missing", COMPUTE_CLASS, p -> labels(p).remove(COMPUTE_CLASS)),
        rule("compute-class wrong", COMPUTE_CLASS, p -> labels(p).put(COMPUTE_CLASS, "gpu-a100")),
        rule("pod policy static on a share-pool node", POLICY_LABEL, p -> policy(p, "static")),
        rule("pod policy not a policy", POLICY_LABEL, p -> policy(p, "shared")));
  }

  private static Arguments rule(String name, String field, Consumer<ObjectNode> mutation) {
    return Arguments.of(name, field, mutation);
  }

  private static ObjectNode container(ObjectNode pod) {
    return (ObjectNode) pod.path("spec").path("containers").get(0);
  }

  private static ObjectNode requests(ObjectNode pod) {
    return (ObjectNode) container(pod).path("resources").path("requests");
  }

  private static ObjectNode limits(ObjectNode pod) {
    return (ObjectNode) container(pod).path("resources").path("limits");
  }

  private static ObjectNode labels(ObjectNode pod) {
    return (ObjectNode) pod.path("metadata").path("labels");
  }

  private static void policy(ObjectNode pod, String value) {
    labels(pod).put(POLICY_LABEL, value);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("podRuleViolations")
  void podsAgainstTheRulesAreRefusedWith422NamingTheField(
      String name, String field, Consumer<ObjectNode> mutation) {
    String pod = Manifests.unique("badpod");
    ObjectNode manifest = sharePod(pod, node, 10, 50);
    mutation.accept(manifest);
    JsonNode before = state();
    Api.Resp r = api.post("/v1/pods", Api.write(manifest), "application/json");
    assertRefusedUnchanged(r, 422, field, before);
    Api.problem(api.get(Api.podPath(pod)), 404);
  }

  @Test
  void podsWithinTheRulesAreAccepted() {
    // a node of its own: requests of bound pods must fit the node (SPEC §3)
    String roomy = Manifests.unique("ok");
    api.putNode(roomy, 2, "share-pool", VALID_QOS);
    // boundaries: request 1, limit 100, request == limit; a CPU-only sidecar
    ObjectNode p1 = sharePod(Manifests.unique("okpod"), roomy, 1, 100);
    Api.Resp r1 = api.post("/v1/pods", Api.write(p1), "application/json");
    assertEquals(201, r1.status(), () -> "request 1, limit 100: " + r1);
    ObjectNode p2 = sharePod(Manifests.unique("okpod"), roomy, 100, 100);
    ObjectNode sidecar = Manifests.cpuOnlyPod("x", roomy);
    ObjectNode side = (ObjectNode) sidecar.path("spec").path("containers").get(0).deepCopy();
    side.put("name", "sidecar");
    ((com.fasterxml.jackson.databind.node.ArrayNode) p2.path("spec").path("containers")).add(side);
    Api.Resp r = api.post("/v1/pods", Api.write(p2), "application/json");
    assertEquals(201, r.status(), () -> "a CPU-only sidecar is allowed: " + r);
  }

  @Test
  void aSharingPodOnANoneNodeIsRefused() {
    JsonNode before = state();
    String pod = Manifests.unique("onnone");
    Api.Resp r =
        api.post("/v1/pods", Api.write(sharePod(pod, noneNode, 10, 50)), "application/json");
    assertRefusedUnchanged(r, 422, POLICY_LABEL, before);
  }

  /** What the admission webhook leaves (SPEC §3): limits = requests, real limits in annotations. */
  private ObjectNode webhookForm(String pod, String node, String coreLimit, String memLimit) {
    ObjectNode m = sharePod(pod, node, 10, 10);
    ObjectNode meta = (ObjectNode) m.path("metadata");
    ObjectNode ann =
        meta.has("annotations")
            ? (ObjectNode) meta.get("annotations")
            : meta.putObject("annotations");
    if (coreLimit != null) {
      ann.put("alibabacloud.com/gpu-core-limit", coreLimit);
    }
    if (memLimit != null) {
      ann.put("alibabacloud.com/gpu-memory-limit", memLimit);
    }
    return m;
  }

  @Test
  void limitsAreReadFromTheWebhookAnnotationsAndQuantitiesMayBeStrings() {
    String roomy = Manifests.unique("hook");
    api.putNode(roomy, 2, "share-pool", VALID_QOS);
    JsonNode v = api.createPod(webhookForm(Manifests.unique("hooked"), roomy, "80", "90"));
    assertEquals(80, v.path("limits").path("core").asInt(), () -> "limits: " + v);
    assertEquals(90, v.path("limits").path("memory").asInt(), () -> "limits: " + v);
    assertEquals(10, v.path("requests").path("core").asInt(), () -> "requests: " + v);

    // Kubernetes JSON writes quantities as strings
    ObjectNode m = sharePod(Manifests.unique("strq"), roomy, 10, 10);
    requests(m).put(CORE, "20").put(MEMORY, "30");
    limits(m).put(CORE, "60").put(MEMORY, "70");
    JsonNode s = api.createPod(m);
    assertEquals(20, s.path("requests").path("core").asInt(), () -> "requests: " + s);
    assertEquals(30, s.path("requests").path("memory").asInt(), () -> "requests: " + s);
    assertEquals(60, s.path("limits").path("core").asInt(), () -> "limits: " + s);
    assertEquals(70, s.path("limits").path("memory").asInt(), () -> "limits: " + s);
  }

  @Test
  void badWebhookLimitAnnotationsAreRefused() {
    JsonNode before = state();
    assertRefusedUnchanged(
        api.post(
            "/v1/pods",
            Api.write(webhookForm(Manifests.unique("hook"), node, "5", "50")),
            "application/json"),
        422,
        "gpu-core-limit",
        before);
    assertRefusedUnchanged(
        api.post(
            "/v1/pods",
            Api.write(webhookForm(Manifests.unique("hook"), node, "50", "101")),
            "application/json"),
        422,
        "gpu-memory-limit",
        before);
  }

  @Test
  void creatingAPodTwiceIsAConflict() {
    String n = Manifests.unique("twice");
    api.putNode(n, 1, "share-pool", VALID_QOS);
    String pod = n + "-p";
    api.createPod(sharePod(pod, n, 10, 50));
    JsonNode before = state();
    Api.Resp r = api.post("/v1/pods", Api.write(sharePod(pod, n, 20, 60)), "application/json");
    assertRefusedUnchanged(r, 409, null, before);
    assertEquals(10, api.pod(pod).path("requests").path("core").asInt(), "first pod kept");
  }

  // ------------------------------------------------------------------ malformed manifests

  @Test
  void malformedJsonPodIsRefusedWith400() {
    JsonNode before = state();
    Api.Resp r = api.post("/v1/pods", "{\"apiVersion\":\"v1\",\"kind\":", "application/json");
    assertRefusedUnchanged(r, 400, null, before);
  }

  @Test
  void malformedYamlPodIsRefusedWith400() {
    JsonNode before = state();
    Api.Resp r =
        api.post(
            "/v1/pods",
            "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n  name: x\n",
            "application/yaml");
    assertRefusedUnchanged(r, 400, null, before);
  }

  @Test
  void malformedNodeManifestsAreRefusedWith400() {
    String n = Manifests.unique("malformed");
    JsonNode before = state();
    assertRefusedUnchanged(
        api.put("/v1/nodes/" + n, "{\"kind\":\"Node\",", "application/json"), 400, null, before);
    assertRefusedUnchanged(
        api.put("/v1/nodes/" + n, "kind: Node\nmetadata: {name: [\n", "application/yaml"),
        400,
        null,
        before);
    Api.problem(api.get("/v1/nodes/" + n), 404);
  }

  @Test
  void aKeyTwiceInABodyIsRefusedWith400NamingTheKey() {
    JsonNode before = state();
    String pod = Manifests.unique("twice");
    // the second name and the second limits would silently win without the check
    String json =
        Api.write(sharePod(pod, node, 10, 50))
            .replaceFirst(
                "\"name\":\"" + pod + "\"", "\"name\":\"" + pod + "\",\"name\":\"" + pod + "-b\"");
    assertTrue(json.contains(pod + "-b"), json);
    assertRefusedUnchanged(
        api.post("/v1/pods", json, "application/json"), 400, "metadata.name", before);
    Api.problem(api.get(Api.podPath(pod)), 404);
    Api.problem(api.get(Api.podPath(pod + "-b")), 404);

    String yaml =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: "
            + node
            + "\n  labels:\n    "
            + POLICY_LABEL
            + ": share-pool\n    "
            + POLICY_LABEL
            + ": none\nstatus:\n  capacity: {cpu: \"32\", nvidia.com/gpu: \"1\"}\n";
    assertRefusedUnchanged(
        api.put("/v1/nodes/" + node, yaml, "application/yaml"), 400, POLICY_LABEL, before);
  }

  @Test
  void aNodeQuantityWithSpacesAroundItIsRefused() {
    JsonNode before = state();
    String n = Manifests.unique("spaced");
    ObjectNode manifest = Manifests.node(n, 1, "share-pool", VALID_QOS, "32", "256Gi", "1Ti ");
    assertRefusedUnchanged(
        api.put("/v1/nodes/" + n, Api.write(manifest), "application/json"),
        422,
        "ephemeral-storage",
        before);
    Api.problem(api.get("/v1/nodes/" + n), 404);
  }

  @Test
  void aManifestOfTheWrongKindIsRefused() {
    JsonNode before = state();
    String n = Manifests.unique("kind");
    ObjectNode asNode = Manifests.node(n, 1, "share-pool", null);
    Api.Resp r = api.post("/v1/pods", Api.write(asNode), "application/json");
    assertTrue(r.status() == 400 || r.status() == 422, () -> "wrong kind: " + r);
    assertRefusedUnchanged(r, r.status(), "kind", before);

    ObjectNode asPod = sharePod(n, node, 10, 10);
    Api.Resp r2 = api.put("/v1/nodes/" + n, Api.write(asPod), "application/json");
    assertTrue(r2.status() == 400 || r2.status() == 422, () -> "wrong kind: " + r2);
    assertRefusedUnchanged(r2, r2.status(), "kind", before);
  }

  // ------------------------------------------------------------------ node label and QoS

  static Stream<Arguments> badNodeConfigs() {
    return Stream.of(
        Arguments.of("policy label 'shared'", POLICY_LABEL, "shared", "InvalidPolicy", "shared"),
        Arguments.of(
            "policy label 'Share-Pool'", POLICY_LABEL, "Share-Pool", "InvalidPolicy", "Share-Pool"),
        Arguments.of(
            "QoS malformed JSON",
            QOS_ANNOTATION,
            "{\"preemptEnabled\": tru",
            "InvalidQoSConfig",
            ""),
        Arguments.of("QoS not an object", QOS_ANNOTATION, "[1,2]", "InvalidQoSConfig", ""),
        Arguments.of(
            "QoS unknown field",
            QOS_ANNOTATION,
            "{\"preemptEnabled\":true,\"preemptAlways\":true}",
            "InvalidQoSConfig",
            "preemptAlways"),
        Arguments.of(
            "QoS wrong type bool",
            QOS_ANNOTATION,
            "{\"preemptEnabled\":\"yes\"}",
            "InvalidQoSConfig",
            "preemptEnabled"),
        Arguments.of(
            "QoS wrong type int",
            QOS_ANNOTATION,
            "{\"podMaxDurationMinutes\":\"sixty\"}",
            "InvalidQoSConfig",
            "podMaxDurationMinutes"),
        Arguments.of(
            "QoS out of range",
            QOS_ANNOTATION,
            "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":0}",
            "InvalidQoSConfig",
            "podMaxDurationMinutes"),
        Arguments.of(
            "QoS bad quantity",
            QOS_ANNOTATION,
            "{\"reservedEphemeralStorage\":\"lots\"}",
            "InvalidQoSConfig",
            "reservedEphemeralStorage"),
        Arguments.of(
            "QoS quantity with a space before it",
            QOS_ANNOTATION,
            "{\"reservedEphemeralStorage\":\" 1Gi\"}",
            "InvalidQoSConfig",
            "reservedEphemeralStorage"),
        Arguments.of(
            "QoS reserves more ephemeral storage than the node has (1Ti)",
            QOS_ANNOTATION,
            "{\"reservedEphemeralStorage\":\"100Ti\"}",
            "InvalidQoSConfig",
            "status.capacity[ephemeral-storage] = 1Ti"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badNodeConfigs")
  void aBadNodeConfigIsAcceptedButTheLastValidOneStaysInForce(
      String name, String key, String value, String reason, String messagePart) {
    String n = Manifests.unique("cfg");
    api.putNode(n, 1, "share-pool", VALID_QOS);
    String p = n + "-p";
    api.createPod(sharePod(p, n, 10, 100));
    assertRunningOn(api.demand(p), 0);
    JsonNode nodeBefore = api.node(n);
    JsonNode podsBefore = withoutTimes(api.pods(n));

    boolean isLabel = key.equals(POLICY_LABEL);
    Api.Resp r =
        api.patchNodeRaw(
            n,
            isLabel ? Map.of(key, value) : null,
            isLabel ? null : Map.of(key, value),
            "application/json");
    assertEquals(200, r.status(), () -> "a bad label/annotation is stored, like kubectl: " + r);

    JsonNode after = api.node(n);
    assertEquals("share-pool", after.path("policy").asText(), () -> "policy in force: " + after);
    assertEquals(nodeBefore.path("qos"), after.path("qos"), () -> "QoS in force: " + after);
    assertEquals(nodeBefore.path("gpus"), after.path("gpus"), "GPU holders unchanged");
    assertEquals(
        nodeBefore.path("status").path("capacity"),
        after.path("status").path("capacity"),
        "capacity unchanged");
    assertEquals(
        nodeBefore.path("status").path("allocatable"),
        after.path("status").path("allocatable"),
        "allocatable unchanged");
    assertEquals(podsBefore, withoutTimes(api.pods(n)), "pods unchanged");
    JsonNode valid = nodeCondition(after, "GPUSharePolicyValid");
    assertEquals("False", valid.path("status").asText(), () -> "GPUSharePolicyValid: " + valid);
    assertEquals(reason, valid.path("reason").asText(), () -> "reason: " + valid);
    String message = valid.path("message").asText("");
    assertTrue(!message.isBlank(), () -> "the condition says why: " + valid);
    assertTrue(message.contains(messagePart), () -> "message names " + messagePart + ": " + valid);
    // SPEC §2: "reports the error in a condition and an Event"
    boolean evented = false;
    for (JsonNode e : after.path("events")) {
      evented |=
          "Warning".equals(e.path("type").asText())
              && !e.path("message").asText("").isBlank()
              && e.path("message").asText().contains(messagePart);
    }
    boolean warned = evented;
    assertTrue(warned, () -> "a Warning Event names the error: " + after.path("events"));
    JsonNode pol = nodeCondition(after, "GPUSharePolicy");
    assertEquals("True", pol.path("status").asText(), () -> "GPUSharePolicy: " + pol);
    assertEquals("share-pool", pol.path("reason").asText(), () -> "GPUSharePolicy: " + pol);

    // A valid value again: valid again, and the arbiter keeps working.
    Map<String, String> fix = Map.of(key, isLabel ? "share-pool" : VALID_QOS);
    JsonNode fixed = api.patchNode(n, isLabel ? fix : null, isLabel ? null : fix);
    JsonNode v2 = nodeCondition(api.node(n), "GPUSharePolicyValid");
    assertEquals("True", v2.path("status").asText(), () -> "valid again: " + fixed);
    assertEquals("Valid", v2.path("reason").asText(), () -> "valid again: " + fixed);
    assertRunningOn(api.pod(p), 0);
  }

  // ------------------------------------------------------------------ unknown things: 404

  @Test
  void unknownNodesAndPodsAre404() {
    JsonNode before = state();
    String pod = Api.podPath("no-such-pod");
    assertRefusedUnchanged(api.get(pod), 404, null, before);
    assertRefusedUnchanged(api.delete(pod), 404, null, before);
    assertRefusedUnchanged(api.post(pod + "/demand", null, null), 404, null, before);
    assertRefusedUnchanged(api.delete(pod + "/demand"), 404, null, before);
    assertRefusedUnchanged(api.get(pod + "/grant?timeoutSeconds=1"), 404, null, before);
    assertRefusedUnchanged(api.get("/v1/nodes/no-such-node"), 404, null, before);
    assertRefusedUnchanged(api.get("/v1/nodes/no-such-node/queue"), 404, null, before);
    assertRefusedUnchanged(
        api.patchNodeRaw(
            "no-such-node", Map.of(POLICY_LABEL, "share-pool"), null, "application/json"),
        404,
        null,
        before);
    Api.problem(api.get("/v1/nodes/no-such-node"), 404);
  }

  // ------------------------------------------------------------------ conflicts: 409

  @Test
  void demandForAPodOnANoneNodeIsAConflict() {
    JsonNode before = state();
    assertRefusedUnchanged(
        api.post(Api.podPath(cpuOnly) + "/demand", null, null), 409, null, before);
  }

  // ------------------------------------------------------------------ query parameters: 400

  @Test
  void badQueryParametersAre400() {
    JsonNode before = state();
    String grant = Api.podPath(running) + "/grant";
    assertRefusedUnchanged(api.get(grant + "?timeoutSeconds=-1"), 400, "timeoutSeconds", before);
    assertRefusedUnchanged(api.get(grant + "?timeoutSeconds=soon"), 400, "timeoutSeconds", before);

    JsonNode ids = Api.ok(api.get("/v1/journal/persistence-ids")).path("items");
    assertTrue(ids.size() > 0, () -> "persistence ids: " + ids);
    String id = Api.enc(ids.get(0).asText());
    assertRefusedUnchanged(
        api.get("/v1/journal/events?persistenceId=" + id + "&limit=0"), 400, "limit", before);
    assertRefusedUnchanged(
        api.get("/v1/journal/events?persistenceId=" + id + "&limit=-3"), 400, "limit", before);
    assertRefusedUnchanged(
        api.get("/v1/journal/events?persistenceId=" + id + "&fromSequenceNr=x"),
        400,
        "fromSequenceNr",
        before);
    assertRefusedUnchanged(api.get("/v1/journal/events"), 400, "persistenceId", before);
  }

  @Test
  void aBadClockAdvanceIsRefused() {
    JsonNode before = state();
    Api.Resp r = api.postJson("/v1/clock/advance", "{\"seconds\":-60}");
    assertTrue(r.status() == 400 || r.status() == 422, () -> "negative advance: " + r);
    assertRefusedUnchanged(r, r.status(), "seconds", before);
    Api.Resp r2 = api.post("/v1/clock/advance", "{\"seconds\":", "application/json");
    assertRefusedUnchanged(r2, 400, null, before);
  }
}
