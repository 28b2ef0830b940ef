package dev.gpushare.http.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.http.server.Json;
import io.fabric8.zjsonpatch.JsonPatch;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The webhook's decisions on AdmissionReviews as the API server sends them (test resources under
 * {@code admission/}): which pods are judged, the denial's shape and messages, the exact JSONPatch,
 * and that the patched pod is one Kubernetes and the rules both accept.
 */
class AdmissionReviewerTest {
  private static final String CORE_LIMIT =
      "/spec/containers/0/resources/limits/" + "alibabacloud.com~1gpu-core.percentage";
  private static final String MEMORY_LIMIT =
      "/spec/containers/0/resources/limits/" + "alibabacloud.com~1gpu-memory.percentage";

  static JsonNode review(String file) {
    try (InputStream in = AdmissionReviewerTest.class.getResourceAsStream("/admission/" + file)) {
      assertNotNull(in, "test resource admission/" + file);
      return AdmissionReviewer.parse(in.readAllBytes());
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /** The response review as the API server receives it. */
  private static JsonNode mutate(JsonNode review) {
    return Json.mapper().valueToTree(AdmissionReviewer.mutate(review));
  }

  private static JsonNode validate(JsonNode review) {
    return Json.mapper().valueToTree(AdmissionReviewer.validate(review));
  }

  static JsonNode decodedPatch(JsonNode answer) {
    JsonNode response = answer.get("response");
    assertEquals("JSONPatch", response.path("patchType").asText(), answer.toString());
    return json(
        new String(
            Base64.getDecoder().decode(response.get("patch").asText()), StandardCharsets.UTF_8));
  }

  static JsonNode json(String text) {
    return AdmissionReviewer.parse(text.getBytes(StandardCharsets.UTF_8));
  }

  /** The review again, its pod with the patch applied: what a re-invocation or validation sees. */
  private static JsonNode patched(JsonNode review, JsonNode patch) {
    ObjectNode copy = review.deepCopy();
    JsonNode object = JsonPatch.apply(patch, copy.path("request").get("object"));
    ((ObjectNode) copy.get("request")).set("object", object);
    return copy;
  }

  private static void assertEnvelope(JsonNode review, JsonNode answer) {
    assertEquals("admission.k8s.io/v1", answer.path("apiVersion").asText());
    assertEquals("AdmissionReview", answer.path("kind").asText());
    assertEquals(
        review.path("request").path("uid").asText(), answer.path("response").path("uid").asText());
    assertFalse(answer.has("request"), "the request is not echoed");
  }

  /** Allowed as it stands: no patch, no status, no warnings. */
  private static void assertAllowedUnchanged(JsonNode review, JsonNode answer) {
    assertEnvelope(review, answer);
    JsonNode response = answer.get("response");
    assertTrue(response.path("allowed").asBoolean(), answer.toString());
    assertFalse(response.has("patch"), answer.toString());
    assertFalse(response.has("patchType"), answer.toString());
    assertFalse(response.has("status"), answer.toString());
    assertFalse(response.has("warnings"), answer.toString());
  }

  private static PodSharing.Shared sharingOf(JsonNode review) {
    JsonNode request = review.get("request");
    Parsed<PodSharing> parsed =
        ShareRequestRules.validate(
            AdmittedPod.read(request.get("object"), request.path("namespace").asText()).manifest());
    assertTrue(parsed.ok(), parsed.errorSummary());
    return assertInstanceOf(PodSharing.Shared.class, parsed.value());
  }

  /** What stock Kubernetes demands of extended resources: a limit equal to the request. */
  private static void assertLimitsEqualRequests(JsonNode review) {
    for (JsonNode c : review.at("/request/object/spec/containers")) {
      for (String resource : List.of(ShareRequestRules.CORE, ShareRequestRules.MEMORY)) {
        JsonNode limit = c.path("resources").path("limits").get(resource);
        if (limit != null) {
          assertEquals(c.path("resources").path("requests").get(resource), limit, c.toString());
        }
      }
    }
  }

  // ---- the SPEC §3 demo pod ----

  @Test
  void theDemoPodGetsItsLimitsRecordedInNewAnnotationsAndLimitsEqualToRequests() {
    JsonNode review = review("demo-create.json");
    JsonNode answer = mutate(review);
    assertEnvelope(review, answer);
    assertTrue(answer.at("/response/allowed").asBoolean());
    assertFalse(answer.get("response").has("status"));
    assertFalse(answer.get("response").has("warnings"));
    assertEquals(
        json(
            """
            [{"op":"add","path":"/metadata/annotations","value":{
                "alibabacloud.com/gpu-core-limit":"100","alibabacloud.com/gpu-memory-limit":"100"}},
             {"op":"replace","path":"%s","value":"10"},
             {"op":"replace","path":"%s","value":"10"}]
            """
                .formatted(CORE_LIMIT, MEMORY_LIMIT)),
        decodedPatch(answer));
  }

  @Test
  void theDemoPodPatchedIsTheMutatedDemoPodWhichBothEndpointsAllowUnchanged() {
    JsonNode review = review("demo-create.json");
    JsonNode after = patched(review, decodedPatch(mutate(review)));
    assertEquals(
        review("demo-mutated.json").at("/request/object"),
        after.at("/request/object"),
        "the patch gives exactly the pod of demo-mutated.json");
    assertLimitsEqualRequests(after);
    assertAllowedUnchanged(after, mutate(after));
    assertAllowedUnchanged(after, validate(after));
    PodSharing.Shared sharing = sharingOf(after);
    assertEquals(new Share(10, 10), sharing.requests());
    assertEquals(new Share(100, 100), sharing.limits(), "the user's limits, from the annotations");
    assertEquals("demo", sharing.container());
  }

  @Test
  void anAlreadyMutatedPodGetsNoPatchOnReinvocation() {
    JsonNode review = review("demo-mutated.json");
    assertAllowedUnchanged(review, mutate(review));
    assertAllowedUnchanged(review, validate(review));
  }

  @Test
  void theDemoPodAppliedWithKubectlKeepsItsAnnotationsAndGainsTheTwoLimitKeys() {
    JsonNode review = review("demo-apply.json");
    JsonNode answer = mutate(review);
    assertEnvelope(review, answer);
    assertEquals(
        json(
            """
            [{"op":"add","path":"/metadata/annotations/alibabacloud.com~1gpu-core-limit",
              "value":"100"},
             {"op":"add","path":"/metadata/annotations/alibabacloud.com~1gpu-memory-limit",
              "value":"100"},
             {"op":"replace","path":"%s","value":"10"},
             {"op":"replace","path":"%s","value":"10"}]
            """
                .formatted(CORE_LIMIT, MEMORY_LIMIT)),
        decodedPatch(answer));
    JsonNode after = patched(review, decodedPatch(answer));
    JsonNode annotations = after.at("/request/object/metadata/annotations");
    assertEquals(3, annotations.size(), annotations.toString());
    assertTrue(annotations.has("kubectl.kubernetes.io/last-applied-configuration"));
    assertLimitsEqualRequests(after);
    assertAllowedUnchanged(after, mutate(after));
    assertAllowedUnchanged(after, validate(after));
  }

  @Test
  void theValidatingEndpointJudgesThePodAsItStandsAndNeverPatches() {
    JsonNode review = review("demo-create.json");
    assertAllowedUnchanged(review, validate(review));
  }

  // ---- pods the webhook does not judge ----

  @ParameterizedTest
  @ValueSource(
      strings = {"plain-pod.json", "exclusive-pod.json", "delete.json", "update-finalizer.json"})
  void podsThatShareNoGpuOrChangeNothingOfSharingAreAllowedUnchanged(String file) {
    JsonNode review = review(file);
    assertAllowedUnchanged(review, mutate(review));
    assertAllowedUnchanged(review, validate(review));
  }

  @Test
  void anUpdateThatChangesWhatSharingReadsIsJudged() {
    ObjectNode review = (ObjectNode) review("update-finalizer.json");
    ObjectNode labels = (ObjectNode) review.at("/request/object/metadata/labels");
    labels.put(ShareRequestRules.COMPUTE_CLASS_LABEL, "gpu-general");
    JsonNode answer = validate(review);
    assertFalse(answer.at("/response/allowed").asBoolean());
    assertEquals(
        "metadata.labels[alibabacloud.com/compute-class]",
        answer.at("/response/status/details/causes/0/field").asText());
  }

  @Test
  void otherKindsAndSubresourcesAreAllowedUnchanged() {
    ObjectNode status = (ObjectNode) review("wrong-compute-class.json");
    ((ObjectNode) status.get("request")).put("subResource", "status");
    assertAllowedUnchanged(status, mutate(status));
    ObjectNode deployment = (ObjectNode) review("wrong-compute-class.json");
    ((ObjectNode) deployment.at("/request/kind")).put("kind", "Deployment");
    assertAllowedUnchanged(deployment, validate(deployment));
  }

  // ---- denials ----

  static Stream<Arguments> violations() {
    String core = "[" + ShareRequestRules.CORE + "]";
    String memory = "[" + ShareRequestRules.MEMORY + "]";
    return Stream.of(
        Arguments.of("missing-limit.json", List.of("spec.containers[0].resources.limits" + memory)),
        Arguments.of("over-100.json", List.of("spec.containers[0].resources.limits" + core)),
        Arguments.of(
            "request-over-limit.json", List.of("spec.containers[0].resources.limits" + memory)),
        Arguments.of("two-sharing-containers.json", List.of("spec.containers[1].resources")),
        Arguments.of(
            "nvidia-with-share.json",
            List.of(
                "spec.containers[0].resources.requests[nvidia.com/gpu]",
                "spec.containers[0].resources.limits[nvidia.com/gpu]")),
        Arguments.of(
            "wrong-compute-class.json", List.of("metadata.labels[alibabacloud.com/compute-class]")),
        Arguments.of("init-container-share.json", List.of("spec.initContainers[0].resources")),
        Arguments.of(
            "many-violations.json",
            List.of(
                "metadata.labels[alibabacloud.com/compute-class]",
                "metadata.labels[alibabacloud.com/gpu-share-policy]",
                "spec.containers[1].resources",
                "spec.containers[0].resources.requests" + core,
                "spec.containers[0].resources.limits" + memory)));
  }

  @ParameterizedTest
  @MethodSource("violations")
  void aPodThatBreaksARuleIsDeniedByBothEndpointsNamingEveryField(
      String file, List<String> fields) {
    JsonNode review = review(file);
    for (Function<JsonNode, JsonNode> endpoint :
        List.<Function<JsonNode, JsonNode>>of(
            AdmissionReviewerTest::mutate, AdmissionReviewerTest::validate)) {
      JsonNode answer = endpoint.apply(review);
      assertEnvelope(review, answer);
      JsonNode response = answer.get("response");
      assertFalse(response.path("allowed").asBoolean(true), answer.toString());
      assertFalse(response.has("patch"), answer.toString());
      assertFalse(response.has("patchType"), answer.toString());
      JsonNode status = response.get("status");
      assertEquals(422, status.path("code").asInt());
      // No reason: with "Invalid" kubectl shows the causes alone, not the webhook or the message.
      assertFalse(status.has("reason"), status.toString());
      assertEquals("Failure", status.path("status").asText());
      assertEquals("Pod", status.at("/details/kind").asText());
      List<String> causeFields = new ArrayList<>();
      status.at("/details/causes").forEach(c -> causeFields.add(c.path("field").asText()));
      assertEquals(fields, causeFields);
      String message = status.path("message").asText();
      String violations = fields.size() == 1 ? "1 violation" : fields.size() + " violations";
      assertTrue(
          message.startsWith(
              "pod default/gpu-share-demo breaks the GPU-sharing rules (" + violations + "): "),
          message);
      for (JsonNode cause : status.at("/details/causes")) {
        assertTrue(cause.path("message").asText().startsWith(cause.path("field").asText()));
        assertTrue(message.contains(cause.path("message").asText()), message);
      }
    }
  }

  @Test
  void aDenialMessageNamesTheFieldTheValueAndWhatIsAccepted() {
    JsonNode answer = validate(review("over-100.json"));
    assertEquals(
        "pod default/gpu-share-demo breaks the GPU-sharing rules (1 violation):"
            + " spec.containers[0].resources.limits[alibabacloud.com/gpu-core.percentage] is"
            + " \"200\"; want an integer from 10 to 100 (from the request up to one whole GPU);"
            + " one pod's share lies on one GPU, so no value exceeds 100 (shares are not"
            + " aggregated across GPUs)",
        answer.at("/response/status/message").asText());
    assertEquals(
        "FieldValueInvalid", answer.at("/response/status/details/causes/0/reason").asText());
    assertEquals(
        "FieldValueRequired",
        validate(review("missing-limit.json"))
            .at("/response/status/details/causes/0/reason")
            .asText());
  }

  // ---- generateName, namespaces, user-given annotations ----

  @Test
  void aPodNotYetNamedIsJudgedByItsPrefixAndItsNamespaceComesFromTheRequest() {
    JsonNode review = review("generate-name.json");
    assertTrue(review.at("/request/object/metadata/name").isMissingNode());
    assertTrue(review.at("/request/object/metadata/namespace").isMissingNode());
    JsonNode answer = mutate(review);
    assertEnvelope(review, answer);
    assertEquals(
        json(
            """
            [{"op":"add","path":"/metadata/annotations/alibabacloud.com~1gpu-core-limit",
              "value":"50"},
             {"op":"add","path":"/metadata/annotations/alibabacloud.com~1gpu-memory-limit",
              "value":"60"},
             {"op":"replace","path":"%s","value":"20"},
             {"op":"replace","path":"%s","value":"30"}]
            """
                .formatted(CORE_LIMIT, MEMORY_LIMIT)),
        decodedPatch(answer));
    JsonNode after = patched(review, decodedPatch(answer));
    assertEquals(new Share(50, 60), sharingOf(after).limits());
    assertAllowedUnchanged(after, mutate(after));
  }

  @Test
  void aBadGenerateNameIsReportedAsSuch() {
    ObjectNode review = (ObjectNode) review("generate-name.json");
    ((ObjectNode) review.at("/request/object/metadata")).put("generateName", "Infer_");
    JsonNode answer = mutate(review);
    assertFalse(answer.at("/response/allowed").asBoolean());
    JsonNode cause = answer.at("/response/status/details/causes/0");
    assertEquals("metadata.generateName", cause.path("field").asText());
    assertTrue(cause.path("message").asText().startsWith("metadata.generateName is \"Infer_\""));
    assertTrue(answer.at("/response/status/message").asText().startsWith("pod ml/Infer_* "));
  }

  @Test
  void limitAnnotationsTheUserWroteAreRespectedAndAnOverriddenLimitIsWarnedAbout() {
    JsonNode review = review("self-annotated.json");
    JsonNode answer = mutate(review);
    assertEquals(
        json(
            """
            [{"op":"replace","path":"%s","value":"10"},
             {"op":"replace","path":"%s","value":"10"}]
            """
                .formatted(CORE_LIMIT, MEMORY_LIMIT)),
        decodedPatch(answer));
    assertEquals(
        List.of(
            "spec.containers[0].resources.limits[alibabacloud.com/gpu-memory.percentage] is"
                + " \"100\" but metadata.annotations[alibabacloud.com/gpu-memory-limit] is \"50\":"
                + " the annotation is the limit; the container limit is set to the request, 10"),
        Json.mapper().convertValue(answer.at("/response/warnings"), List.class));
    JsonNode after = patched(review, decodedPatch(answer));
    assertEquals(new Share(100, 50), sharingOf(after).limits());
    assertLimitsEqualRequests(after);
    assertAllowedUnchanged(after, mutate(after));
    assertAllowedUnchanged(after, validate(after));
  }

  @Test
  void jsonPointerTokensEscapeTildeThenSlash() {
    assertEquals(
        "alibabacloud.com~1gpu-core-limit",
        AdmissionReviewer.escape("alibabacloud.com/gpu-core-limit"));
    assertEquals("a~01~1b", AdmissionReviewer.escape("a~1/b"));
  }

  // ---- malformed reviews ----

  private static MalformedReviewException malformed(String body) {
    return assertThrows(
        MalformedReviewException.class,
        () ->
            AdmissionReviewer.mutate(
                AdmissionReviewer.parse(body.getBytes(StandardCharsets.UTF_8))));
  }

  @Test
  void aBodyThatIsNotAReviewIsMalformedNamingTheField() {
    assertEquals("body", malformed("").error().field());
    MalformedReviewException notJson = malformed("{\"apiVersion\":");
    assertEquals("body", notJson.error().field());
    assertTrue(
        notJson.getMessage().startsWith("body is not valid JSON at line 1"), notJson.getMessage());
    assertEquals("body", malformed("[]").error().field());

    MalformedReviewException beta =
        malformed("{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}");
    assertEquals("apiVersion", beta.error().field());
    assertEquals(
        "apiVersion is \"admission.k8s.io/v1beta1\"; want \"admission.k8s.io/v1\": register the"
            + " webhook with admissionReviewVersions: [\"v1\"] (as the API server sends it)",
        beta.getMessage());
    assertEquals(
        "kind",
        malformed("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}").error().field());
    assertEquals(
        "request",
        malformed("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}")
            .error()
            .field());
  }

  private static String resourceText(String file) {
    try (InputStream in = AdmissionReviewerTest.class.getResourceAsStream("/admission/" + file)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aReviewWithAKeyTwiceIsMalformedNamingTheKeyNotJudgedByTheLastValue() {
    String twice =
        resourceText("demo-create.json")
            .replace(
                "\"alibabacloud.com/gpu-core.percentage\": \"10\",",
                "\"alibabacloud.com/gpu-core.percentage\": \"10\",\n"
                    + "\"alibabacloud.com/gpu-core.percentage\": \"100\",");
    assertTrue(twice.length() > resourceText("demo-create.json").length(), "the fixture changed");
    MalformedReviewException e = malformed(twice);
    assertEquals(
        "request.object.spec.containers[0].resources.requests[alibabacloud.com/gpu-core.percentage]",
        e.error().field());
    assertEquals("alibabacloud.com/gpu-core.percentage", e.error().value());
    assertTrue(e.getMessage().contains("appears again"), e.getMessage());
  }

  @ParameterizedTest
  @ValueSource(strings = {" 10", "10 ", "\t10"})
  void aShareWithSpacesAroundItIsDeniedNotReadAsTheNumber(String given) {
    ObjectNode review = (ObjectNode) review("demo-create.json");
    ObjectNode requests =
        (ObjectNode) review.at("/request/object/spec/containers/0/resources/requests");
    requests.put("alibabacloud.com/gpu-core.percentage", given);
    JsonNode answer = mutate(review);
    JsonNode response = answer.get("response");
    assertFalse(response.path("allowed").asBoolean(true), answer.toString());
    JsonNode cause = response.at("/status/details/causes/0");
    assertEquals(
        "spec.containers[0].resources.requests[alibabacloud.com/gpu-core.percentage]",
        cause.path("field").asText());
    assertTrue(cause.path("message").asText().contains("\"" + given + "\""), answer.toString());
  }

  @Test
  void aReviewWithoutUidOrPodIsMalformed() {
    ObjectNode noUid = (ObjectNode) review("demo-create.json");
    ((ObjectNode) noUid.get("request")).remove("uid");
    MalformedReviewException e =
        assertThrows(MalformedReviewException.class, () -> AdmissionReviewer.validate(noUid));
    assertEquals("request.uid", e.error().field());

    ObjectNode noObject = (ObjectNode) review("demo-create.json");
    ((ObjectNode) noObject.get("request")).putNull("object");
    assertEquals(
        "request.object",
        assertThrows(MalformedReviewException.class, () -> AdmissionReviewer.mutate(noObject))
            .error()
            .field());

    ObjectNode badLabel = (ObjectNode) review("demo-create.json");
    ((ObjectNode) badLabel.at("/request/object/metadata/labels")).put("tier", 3);
    assertEquals(
        "request.object.metadata.labels[tier]",
        assertThrows(MalformedReviewException.class, () -> AdmissionReviewer.mutate(badLabel))
            .error()
            .field());
  }

  @Test
  void aPodWithoutAnyNamespaceIsDeniedOnTheNamespace() {
    ObjectNode review = (ObjectNode) review("generate-name.json");
    ((ObjectNode) review.get("request")).remove("namespace");
    JsonNode answer = mutate(review);
    assertFalse(answer.at("/response/allowed").asBoolean());
    assertEquals(
        "metadata.namespace", answer.at("/response/status/details/causes/0/field").asText());
    assertNull(answer.at("/response/status/details/name").textValue());
  }
}
