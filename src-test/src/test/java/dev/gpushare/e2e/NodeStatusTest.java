package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.nodeCondition;
import static dev.gpushare.e2e.Manifests.POLICY_LABEL;
import static dev.gpushare.e2e.Manifests.QOS_ANNOTATION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * SPEC §2: what a node shows while sharing is on and off;
 * deploy/examples/node-status-reference.yaml.
 */
class NodeStatusTest extends ServerPerClass {

  private static final String PCT_CORE = "alibabacloud.com/gpu-core.percentage";
  private static final String PCT_MEM = "alibabacloud.com/gpu-memory.percentage";

  private static void assertCondition(
      JsonNode node, String type, String status, String reason, String message) {
    JsonNode c = nodeCondition(node, type);
    assertEquals(status, c.path("status").asText(), () -> type + ": " + c);
    assertEquals(reason, c.path("reason").asText(), () -> type + ": " + c);
    assertEquals(message, c.path("message").asText(), () -> type + ": " + c);
    assertFalse(c.path("lastTransitionTime").asText("").isBlank(), () -> "transition: " + c);
    assertFalse(c.path("lastHeartbeatTime").asText("").isBlank(), () -> "heartbeat: " + c);
  }

  /**
   * The shipped reference, deploy/examples/node-status-reference.yaml: the statuses of the
   * reference node with sharing on (share-pool) and off, in that order.
   */
  static List<JsonNode> referenceStatuses() throws IOException {
    List<JsonNode> statuses = new ArrayList<>();
    try (InputStream in =
            NodeStatusTest.class.getResourceAsStream("/examples/node-status-reference.yaml");
        MappingIterator<JsonNode> docs =
            DeployManifestsTest.YAML.readerFor(JsonNode.class).readValues(in)) {
      while (docs.hasNext()) {
        JsonNode doc = docs.next();
        if (doc != null && doc.has("status")) {
          statuses.add(doc.get("status"));
        }
      }
    }
    assertEquals(2, statuses.size(), "node-status-reference.yaml: on, then off");
    return statuses;
  }

  /** The node shows exactly the reference's resources and conditions. */
  private static void assertShowsReference(JsonNode node, JsonNode reference, String when) {
    assertEquals(
        reference.get("capacity"), node.path("status").path("capacity"), "capacity " + when);
    assertEquals(
        reference.get("allocatable"),
        node.path("status").path("allocatable"),
        "allocatable " + when);
    JsonNode conditions = reference.get("conditions");
    assertEquals(
        conditions.size(), node.path("status").path("conditions").size(), "conditions " + when);
    for (JsonNode c : conditions) {
      assertCondition(
          node,
          c.get("type").asText(),
          c.get("status").asText(),
          c.get("reason").asText(),
          c.get("message").asText());
    }
  }

  @Test
  void theReferenceNodeShowsTheReferenceStatusOnAndOff() throws IOException {
    List<JsonNode> reference = referenceStatuses();
    JsonNode items = api.nodes();
    boolean listed = false;
    for (JsonNode n : items) {
      listed |= "node-1".equals(n.path("name").asText());
    }
    assertTrue(listed, () -> "GET /v1/nodes lists node-1: " + items);

    JsonNode on = api.node("node-1");
    assertEquals("share-pool", on.path("policy").asText(), () -> "node-1 policy: " + on);
    assertEquals(16, on.path("gpus").size(), "node-1 has 16 GPUs");
    assertShowsReference(on, reference.get(0), "while on");
    // the reference's figures, as SPEC §2 states them
    assertEquals("144", on.at("/status/allocatable/cpu").asText(), "32 CPUs reserved");
    assertEquals("1640Gi", on.at("/status/allocatable/memory").asText(), "160Gi reserved");

    try {
      // kubectl label node node-1 alibabacloud.com/gpu-share-policy=none --overwrite
      api.patchNode("node-1", Map.of(POLICY_LABEL, "none"), null);
      JsonNode off = api.node("node-1");
      assertEquals("none", off.path("policy").asText(), () -> "policy: " + off);
      assertShowsReference(off, reference.get(1), "while off");
    } finally {
      api.patchNode("node-1", Map.of(POLICY_LABEL, "share-pool"), null);
    }
    assertShowsReference(api.node("node-1"), reference.get(0), "on again");
  }

  @Test
  void theQosAnnotationIsShownInTheNodeViewWithDefaults() {
    String full = Manifests.unique("qos");
    String qos =
        "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 45,"
            + " \"reservedEphemeralStorage\": \"1.5Ti\"}";
    // the reference node's 6Ti of ephemeral storage: a reservation is at most what the node has
    ObjectNode manifest = Manifests.node(full, 2, "share-pool", qos, "32", "256Gi", "6Ti");
    Api.ok(api.put("/v1/nodes/" + full, Api.write(manifest), "application/json"));
    JsonNode v = api.node(full);
    assertEquals(true, v.path("qos").path("preemptEnabled").asBoolean(false), () -> "qos " + v);
    assertEquals(45, v.path("qos").path("podMaxDurationMinutes").asInt(), () -> "qos " + v);
    assertEquals(
        "1.5Ti", v.path("qos").path("reservedEphemeralStorage").asText(), () -> "qos " + v);
    assertEquals(qos, v.path("annotations").path(QOS_ANNOTATION).asText(), "annotation shown");

    String none = Manifests.unique("qos");
    JsonNode d = api.putNode(none, 2, "share-pool", null);
    assertEquals(false, d.path("qos").path("preemptEnabled").asBoolean(true), () -> "dflt " + d);
    assertEquals(120, d.path("qos").path("podMaxDurationMinutes").asInt(), () -> "dflt " + d);
    assertEquals("0", d.path("qos").path("reservedEphemeralStorage").asText(), () -> "dflt " + d);

    // kubectl annotate --overwrite with a partial config: the rest takes the defaults
    api.patchNode(none, null, Map.of(QOS_ANNOTATION, "{\"preemptEnabled\":true}"));
    JsonNode p = api.node(none);
    assertEquals(true, p.path("qos").path("preemptEnabled").asBoolean(false), () -> "qos " + p);
    assertEquals(120, p.path("qos").path("podMaxDurationMinutes").asInt(), () -> "qos " + p);
    assertCondition(p, "GPUSharePolicyValid", "True", "Valid", "gpu share policy config is valid.");
  }

  @Test
  void reservationsShapeAllocatableAndTurningOffRestoresIt() {
    String n = Manifests.unique("res");
    JsonNode on =
        api.putNode(
            n,
            2,
            "share-pool",
            "{\"preemptEnabled\":false,\"reservedEphemeralStorage\":\"256Gi\"}");
    JsonNode cap = on.path("status").path("capacity");
    JsonNode alloc = on.path("status").path("allocatable");
    assertEquals("200", cap.path(PCT_CORE).asText(), () -> "capacity: " + cap);
    assertEquals("200", cap.path(PCT_MEM).asText(), () -> "capacity: " + cap);
    assertEquals("200", alloc.path(PCT_CORE).asText(), () -> "allocatable: " + alloc);
    assertEquals("200", alloc.path(PCT_MEM).asText(), () -> "allocatable: " + alloc);
    // by default 2 CPUs and 10Gi per GPU are reserved for the sharing module
    assertQuantity("28", alloc.path("cpu"), "allocatable cpu while on");
    assertQuantity("236Gi", alloc.path("memory"), "allocatable memory while on");
    assertQuantity("32", cap.path("cpu"), "capacity cpu");
    assertQuantity("256Gi", cap.path("memory"), "capacity memory");
    // at most capacity − reservedEphemeralStorage
    assertQuantity("768Gi", alloc.path("ephemeral-storage"), "allocatable ephemeral-storage");
    assertQuantity("1Ti", cap.path("ephemeral-storage"), "capacity ephemeral-storage");

    api.patchNode(n, Map.of(POLICY_LABEL, "none"), null);
    JsonNode off = api.node(n);
    JsonNode allocOff = off.path("status").path("allocatable");
    assertFalse(allocOff.has(PCT_CORE), () -> "percentage gone: " + allocOff);
    assertFalse(allocOff.has(PCT_MEM), () -> "percentage gone: " + allocOff);
    assertFalse(off.path("status").path("capacity").has(PCT_CORE), "percentage gone");
    assertFalse(off.path("status").path("capacity").has(PCT_MEM), "percentage gone");
    assertQuantity("32", allocOff.path("cpu"), "allocatable cpu while off");
    assertQuantity("256Gi", allocOff.path("memory"), "allocatable memory while off");
    assertQuantity("1Ti", allocOff.path("ephemeral-storage"), "allocatable storage while off");

    // static is sharing too: percentage resources and reservations are back
    api.patchNode(n, Map.of(POLICY_LABEL, "static"), null);
    JsonNode st = api.node(n);
    assertEquals("static", st.path("policy").asText(), () -> "policy: " + st);
    assertEquals("200", st.path("status").path("allocatable").path(PCT_CORE).asText());
    assertQuantity("28", st.path("status").path("allocatable").path("cpu"), "static cpu");
    assertCondition(st, "GPUSharePolicy", "True", "static", "gpu share policy is static.");
  }

  @Test
  void conditionTransitionTimesChangeOnlyWithStatusOrReason() {
    String n = Manifests.unique("cond");
    api.putNode(n, 1, "share-pool", null);
    JsonNode v0 = api.node(n);
    Instant valid0 = transition(v0, "GPUSharePolicyValid");
    Instant policy0 = transition(v0, "GPUSharePolicy");

    // an unrelated label: nothing transitions
    api.advance(60);
    api.patchNode(n, Map.of("team", "vision"), null);
    JsonNode v1 = api.node(n);
    assertEquals(valid0, transition(v1, "GPUSharePolicyValid"), "unrelated label");
    assertEquals(policy0, transition(v1, "GPUSharePolicy"), "unrelated label");

    // an invalid policy value: Valid → False/InvalidPolicy transitions, the policy does not
    api.advance(60);
    api.patchNode(n, Map.of(POLICY_LABEL, "bogus"), null);
    JsonNode v2 = api.node(n);
    Instant now2 = Instant.parse(api.clock().path("now").asText());
    assertEquals("InvalidPolicy", nodeCondition(v2, "GPUSharePolicyValid").path("reason").asText());
    Instant valid2 = transition(v2, "GPUSharePolicyValid");
    assertTrue(valid2.isAfter(valid0), () -> "transition moves: " + valid0 + " → " + valid2);
    assertEquals(now2, valid2, "the transition happens at the (manual) clock's now");
    assertEquals(policy0, transition(v2, "GPUSharePolicy"), "GPUSharePolicy did not transition");

    // another invalid value: same status and reason, new message, same transition time
    api.advance(60);
    api.patchNode(n, Map.of(POLICY_LABEL, "bogus-two"), null);
    JsonNode v3 = api.node(n);
    JsonNode c3 = nodeCondition(v3, "GPUSharePolicyValid");
    assertTrue(c3.path("message").asText().contains("bogus-two"), () -> "message: " + c3);
    assertEquals(valid2, transition(v3, "GPUSharePolicyValid"), "same status and reason");

    // valid again: transitions back
    api.advance(60);
    api.patchNode(n, Map.of(POLICY_LABEL, "share-pool"), null);
    JsonNode v4 = api.node(n);
    assertEquals("Valid", nodeCondition(v4, "GPUSharePolicyValid").path("reason").asText());
    Instant valid4 = transition(v4, "GPUSharePolicyValid");
    assertTrue(valid4.isAfter(valid2), () -> "transition moves: " + valid2 + " → " + valid4);
    assertEquals(policy0, transition(v4, "GPUSharePolicy"), "still share-pool");

    // policy none: GPUSharePolicy transitions, validity does not
    api.advance(60);
    api.patchNode(n, Map.of(POLICY_LABEL, "none"), null);
    JsonNode v5 = api.node(n);
    assertEquals(valid4, transition(v5, "GPUSharePolicyValid"), "still valid");
    Instant policy5 = transition(v5, "GPUSharePolicy");
    assertTrue(policy5.isAfter(policy0), () -> "transition moves: " + policy0 + " → " + policy5);
  }

  @Test
  void exclusiveGpuPodsKeepSharingOffUntilTheyAreGone() {
    String n = Manifests.unique("excl");
    api.putNode(n, 2, "none", null);
    String ex = n + "-ex";
    ObjectNode pod = Manifests.cpuOnlyPod(ex, n);
    ObjectNode res = (ObjectNode) pod.path("spec").path("containers").get(0).path("resources");
    ((ObjectNode) res.path("limits")).put("nvidia.com/gpu", "1");
    ((ObjectNode) res.path("requests")).put("nvidia.com/gpu", "1");
    api.createPod(pod);

    api.patchNode(n, Map.of(POLICY_LABEL, "share-pool"), null);
    JsonNode off = api.node(n);
    assertEquals("none", off.path("policy").asText(), () -> "sharing stays off: " + off);
    JsonNode valid = nodeCondition(off, "GPUSharePolicyValid");
    assertEquals("False", valid.path("status").asText(), () -> "validity: " + valid);
    assertEquals("ExclusiveGPUPodsPresent", valid.path("reason").asText(), () -> "" + valid);
    assertTrue(valid.path("message").asText().contains(ex), () -> "names the pod: " + valid);
    assertCondition(off, "GPUSharePolicy", "False", "none", "gpu share policy is none.");
    assertFalse(off.path("status").path("allocatable").has(PCT_CORE), "no percentage yet");

    api.deletePod(ex);
    JsonNode on = api.node(n);
    assertEquals("share-pool", on.path("policy").asText(), () -> "sharing turns on: " + on);
    assertCondition(
        on, "GPUSharePolicyValid", "True", "Valid", "gpu share policy config is valid.");
    assertCondition(on, "GPUSharePolicy", "True", "share-pool", "gpu share policy is share-pool.");
    assertEquals("200", on.path("status").path("allocatable").path(PCT_CORE).asText());
  }

  @Test
  void aModelChangeWaitsForTheSharedPodsBoundToTheNode() {
    String n = Manifests.unique("chg");
    api.putNode(n, 1, "share-pool", null);
    String p = n + "-p";
    api.createPod(Manifests.sharePod(p, n, 10, 50));
    api.demand(p);

    api.patchNode(n, Map.of(POLICY_LABEL, "static"), null);
    JsonNode pending = api.node(n);
    assertEquals("share-pool", pending.path("policy").asText(), () -> "old policy: " + pending);
    JsonNode valid = nodeCondition(pending, "GPUSharePolicyValid");
    assertEquals("False", valid.path("status").asText(), () -> "validity: " + valid);
    assertEquals("PolicyChangePending", valid.path("reason").asText(), () -> "" + valid);
    assertTrue(valid.path("message").asText().contains(p), () -> "names the pod: " + valid);
    assertCondition(
        pending, "GPUSharePolicy", "True", "share-pool", "gpu share policy is share-pool.");
    Checks.assertRunningOn(api.pod(p), 0);

    api.deletePod(p);
    JsonNode changed = api.node(n);
    assertEquals("static", changed.path("policy").asText(), () -> "new policy: " + changed);
    assertCondition(
        changed, "GPUSharePolicyValid", "True", "Valid", "gpu share policy config is valid.");
    assertCondition(changed, "GPUSharePolicy", "True", "static", "gpu share policy is static.");
  }

  @Test
  void aNodeManifestIsAcceptedAsYaml() {
    String n = Manifests.unique("yaml");
    String yaml =
        "apiVersion: v1\n"
            + "kind: Node\n"
            + "metadata:\n"
            + "  name: "
            + n
            + "\n"
            + "  labels:\n"
            + "    alibabacloud.com/gpu-share-policy: share-pool\n"
            + "  annotations:\n"
            + "    alibabacloud.com/gpu-share-qos-config: '{\"preemptEnabled\": true,"
            + " \"podMaxDurationMinutes\": 30}'\n"
            + "status:\n"
            + "  capacity:\n"
            + "    cpu: \"32\"\n"
            + "    memory: 256Gi\n"
            + "    ephemeral-storage: 1Ti\n"
            + "    nvidia.com/gpu: \"4\"\n";
    Api.Resp r = api.put("/v1/nodes/" + n, yaml, "application/yaml");
    assertTrue(r.status() == 200 || r.status() == 201, () -> "PUT YAML node: " + r);
    JsonNode v = api.node(n);
    assertEquals("share-pool", v.path("policy").asText(), () -> "policy: " + v);
    assertEquals(4, v.path("gpus").size(), () -> "gpus: " + v);
    assertEquals(30, v.path("qos").path("podMaxDurationMinutes").asInt(), () -> "qos: " + v);
    assertEquals("400", v.path("status").path("capacity").path(PCT_CORE).asText());
    for (int i = 0; i < 4; i++) {
      JsonNode g = Checks.gpu(v, i);
      assertFalse(g.path("uuid").asText("").isBlank(), () -> "uuid: " + g);
      assertEquals("Healthy", g.path("health").asText(), () -> "health: " + g);
      assertEquals(0, g.path("inUse").path("core").asInt(-1), () -> "inUse: " + g);
    }
  }

  @Test
  void patchAcceptsTheMergePatchMediaType() {
    String n = Manifests.unique("mp");
    api.putNode(n, 1, "share-pool", null);
    Api.Resp r = api.patchNodeRaw(n, Map.of("team", "infra"), null, "application/merge-patch+json");
    assertEquals(200, r.status(), () -> "kubectl-style merge patch: " + r);
    assertEquals("infra", api.node(n).path("labels").path("team").asText());
    // null removes, as in RFC 7386
    Map<String, String> remove = new LinkedHashMap<>();
    remove.put("team", null);
    api.patchNode(n, remove, null);
    assertFalse(api.node(n).path("labels").has("team"), "label removed by null");
  }

  private static Instant transition(JsonNode node, String type) {
    return Instant.parse(nodeCondition(node, type).path("lastTransitionTime").asText());
  }

  // ------------------------------------------------------------------ Kubernetes quantities

  private static final Pattern QUANTITY = Pattern.compile("^([+-]?[0-9.]+)([a-zA-Z]*)$");

  static BigDecimal quantity(String q) {
    Matcher m = QUANTITY.matcher(q.trim());
    if (!m.matches()) {
      throw new AssertionError("not a Kubernetes quantity: '" + q + "'");
    }
    BigDecimal n = new BigDecimal(m.group(1));
    BigDecimal k = BigDecimal.valueOf(1024);
    BigDecimal mult =
        switch (m.group(2)) {
          case "" -> BigDecimal.ONE;
          case "m" -> new BigDecimal("0.001");
          case "k" -> BigDecimal.valueOf(1000);
          case "M" -> BigDecimal.valueOf(1000).pow(2);
          case "G" -> BigDecimal.valueOf(1000).pow(3);
          case "T" -> BigDecimal.valueOf(1000).pow(4);
          case "P" -> BigDecimal.valueOf(1000).pow(5);
          case "Ki" -> k;
          case "Mi" -> k.pow(2);
          case "Gi" -> k.pow(3);
          case "Ti" -> k.pow(4);
          case "Pi" -> k.pow(5);
          default -> throw new AssertionError("unknown quantity suffix in '" + q + "'");
        };
    return n.multiply(mult);
  }

  private static void assertQuantity(String expected, JsonNode actual, String what) {
    assertTrue(actual.isTextual(), () -> what + ": a quantity string, was " + actual);
    assertEquals(
        0,
        quantity(expected).compareTo(quantity(actual.asText())),
        () -> what + ": expected " + expected + ", was " + actual.asText());
  }
}
