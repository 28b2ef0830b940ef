package dev.gpushare.arbiter;

import static dev.gpushare.arbiter.ShareRequestRules.COMPUTE_CLASS_LABEL;
import static dev.gpushare.arbiter.ShareRequestRules.CORE;
import static dev.gpushare.arbiter.ShareRequestRules.CORE_LIMIT_ANNOTATION;
import static dev.gpushare.arbiter.ShareRequestRules.EXCLUSIVE_GPU;
import static dev.gpushare.arbiter.ShareRequestRules.MEMORY;
import static dev.gpushare.arbiter.ShareRequestRules.MEMORY_LIMIT_ANNOTATION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ShareRequestRulesTest {

  private static final String REQ_CORE = "spec.containers[0].resources.requests[" + CORE + "]";
  private static final String REQ_MEMORY = "spec.containers[0].resources.requests[" + MEMORY + "]";
  private static final String LIM_CORE = "spec.containers[0].resources.limits[" + CORE + "]";
  private static final String LIM_MEMORY = "spec.containers[0].resources.limits[" + MEMORY + "]";
  private static final String POLICY_LABEL = "metadata.labels[" + SharePolicy.LABEL + "]";
  private static final String CLASS_LABEL = "metadata.labels[" + COMPUTE_CLASS_LABEL + "]";

  /** {@code deploy/examples/gpu-share-demo.yaml}, as the API reads it. */
  private static PodManifest demo() {
    return pod(
        Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "share-pool"),
        Map.of(),
        container(
            "demo",
            Map.of("cpu", "5", "memory", "50Gi", CORE, "10", MEMORY, "10"),
            Map.of("cpu", "5", "memory", "50Gi", CORE, "100", MEMORY, "100")));
  }

  private static PodManifest pod(
      Map<String, String> labels, Map<String, String> annotations, ContainerResources... cs) {
    return new PodManifest(
        "default", "gpu-share-demo", null, null, labels, annotations, List.of(cs));
  }

  private static ContainerResources container(
      String name, Map<String, String> requests, Map<String, String> limits) {
    return new ContainerResources(name, requests, limits);
  }

  private static ContainerResources sharing(String name, String request, String limit) {
    return container(
        name, Map.of(CORE, request, MEMORY, request), Map.of(CORE, limit, MEMORY, limit));
  }

  private static ContainerResources sidecar(String name) {
    return container(name, Map.of("cpu", "100m"), Map.of("cpu", "100m", "memory", "64Mi"));
  }

  private static Map<String, String> sharingLabels() {
    return Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "share-pool");
  }

  private static List<FieldError> errors(PodManifest pod) {
    Parsed<PodSharing> parsed = ShareRequestRules.validate(pod);
    assertFalse(parsed.ok(), "expected a rejection");
    return parsed.errors();
  }

  private static FieldError onlyError(PodManifest pod) {
    List<FieldError> errors = errors(pod);
    assertEquals(1, errors.size(), errors.toString());
    return errors.get(0);
  }

  private static void assertMentions(FieldError e, String... parts) {
    for (String part : parts) {
      assertTrue(e.message().contains(part), "\"" + part + "\" not in: " + e.message());
    }
  }

  @Test
  void acceptsTheReferenceDemoPod() {
    PodSharing sharing = ShareRequestRules.validate(demo()).value();
    assertEquals(
        PodSharing.shared(SharePolicy.SHARE_POOL, new Share(10, 10), new Share(100, 100), "demo"),
        sharing);
  }

  @Test
  void acceptsAStaticPod() {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "static"),
            Map.of(),
            sharing("main", "30", "50"));
    PodSharing.Shared sharing = shared(ShareRequestRules.validate(pod).value());
    assertEquals(SharePolicy.STATIC, sharing.policy());
    assertEquals(new Share(30, 30), sharing.requests());
    assertEquals(new Share(50, 50), sharing.limits());
  }

  @Test
  void limitAnnotationsWrittenByTheWebhookAreTheLimits() {
    PodManifest pod =
        pod(
            sharingLabels(),
            Map.of(CORE_LIMIT_ANNOTATION, "100", MEMORY_LIMIT_ANNOTATION, "60"),
            sharing("demo", "10", "10"));
    PodSharing.Shared sharing = shared(ShareRequestRules.validate(pod).value());
    assertEquals(new Share(10, 10), sharing.requests());
    assertEquals(new Share(100, 60), sharing.limits());
  }

  @Test
  void aPodWithoutGpusIsPlain() {
    PodManifest pod = pod(Map.of(), Map.of(), sidecar("web"));
    assertEquals(PodSharing.PLAIN, ShareRequestRules.validate(pod).value());
  }

  @Test
  void aPodWithNvidiaGpusIsExclusiveAndCountsEveryContainer() {
    PodManifest pod =
        pod(
            Map.of(),
            Map.of(),
            container("a", Map.of(), Map.of(EXCLUSIVE_GPU, "2")),
            container("b", Map.of(EXCLUSIVE_GPU, "1"), Map.of(EXCLUSIVE_GPU, "1")),
            sidecar("c"));
    assertEquals(PodSharing.exclusive(3), ShareRequestRules.validate(pod).value());
  }

  @ParameterizedTest
  @ValueSource(strings = {"0", "-1", "1.5", "abc", "1k", " 1", "1 "})
  void nvidiaGpuMustBeAPositiveInteger(String given) {
    PodManifest pod =
        pod(Map.of(), Map.of(), container("a", Map.of(), Map.of(EXCLUSIVE_GPU, given)));
    FieldError e = onlyError(pod);
    assertEquals("spec.containers[0].resources.limits[nvidia.com/gpu]", e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"" + given + "\"", "a positive integer");
  }

  @Test
  void nvidiaGpuRequestMustEqualItsLimit() {
    PodManifest pod =
        pod(
            Map.of(),
            Map.of(),
            container("a", Map.of(EXCLUSIVE_GPU, "1"), Map.of(EXCLUSIVE_GPU, "2")));
    FieldError e = onlyError(pod);
    assertEquals("spec.containers[0].resources.requests[nvidia.com/gpu]", e.field());
    assertMentions(e, "the same count as the limit, 2");
  }

  @Test
  void nameAndNamespaceMustBeDns1123Names() {
    PodManifest pod =
        new PodManifest(
            "Default", "Bad_Name", null, null, Map.of(), Map.of(), List.of(sidecar("c")));
    List<FieldError> errors = errors(pod);
    assertEquals(
        List.of("metadata.name", "metadata.namespace"),
        errors.stream().map(FieldError::field).toList());
    assertMentions(errors.get(0), "\"Bad_Name\"", "DNS-1123 subdomain");
    assertMentions(errors.get(1), "\"Default\"", "DNS-1123 label");
  }

  @Test
  void nameAndNamespaceAreRequired() {
    PodManifest pod = new PodManifest("", null, null, null, null, null, null);
    List<FieldError> errors = errors(pod);
    assertEquals(
        List.of("metadata.name", "metadata.namespace"),
        errors.stream().map(FieldError::field).toList());
    assertMentions(errors.get(0), "metadata.name is missing");
  }

  @Test
  void aNamespaceWithADotIsRejectedButAPodNameMayHaveOne() {
    PodManifest pod =
        new PodManifest("a.b", "web.v1", null, null, Map.of(), Map.of(), List.of(sidecar("c")));
    assertEquals(
        List.of("metadata.namespace"), errors(pod).stream().map(FieldError::field).toList());
  }

  @ParameterizedTest
  @ValueSource(strings = {"general-purpose", "gpu", "GPU-HPN"})
  void computeClassMustBeGpuHpn(String given) {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, given, SharePolicy.LABEL, "share-pool"),
            Map.of(),
            sharing("demo", "10", "100"));
    FieldError e = onlyError(pod);
    assertEquals(CLASS_LABEL, e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"gpu-hpn\", the only compute class");
  }

  @Test
  void computeClassIsRequiredOnASharingPod() {
    PodManifest pod =
        pod(Map.of(SharePolicy.LABEL, "share-pool"), Map.of(), sharing("d", "10", "10"));
    FieldError e = onlyError(pod);
    assertEquals(CLASS_LABEL, e.field());
    assertMentions(e, "is missing");
  }

  @Test
  void aSharingPodCannotUsePolicyNone() {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "none"),
            Map.of(),
            sharing("demo", "10", "100"));
    FieldError e = onlyError(pod);
    assertEquals(POLICY_LABEL, e.field());
    assertEquals("none", e.value());
    assertMentions(e, "share-pool or static", "cannot use none");
  }

  @Test
  void policyLabelMustBeAKnownSharingModel() {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "sharepool"),
            Map.of(),
            sharing("demo", "10", "100"));
    FieldError e = onlyError(pod);
    assertEquals(POLICY_LABEL, e.field());
    assertMentions(e, "\"sharepool\"", "share-pool or static");
  }

  @Test
  void policyLabelIsRequiredWhenAContainerAsksForShares() {
    PodManifest pod =
        pod(Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn"), Map.of(), sharing("d", "10", "10"));
    FieldError e = onlyError(pod);
    assertEquals(POLICY_LABEL, e.field());
    assertMentions(e, "is missing", "share-pool or static");
  }

  @Test
  void thePolicyLabelAloneMakesAPodSharingAndThenItNeedsAContainer() {
    PodManifest pod = pod(sharingLabels(), Map.of(), sidecar("web"));
    FieldError e = onlyError(pod);
    assertEquals("spec.containers", e.field());
    assertMentions(e, CORE, MEMORY, "exactly one container");
  }

  @Test
  void bothResourcesMustAppearInBothRequestsAndLimits() {
    PodManifest pod =
        pod(sharingLabels(), Map.of(), container("d", Map.of(CORE, "10"), Map.of(MEMORY, "10")));
    List<FieldError> errors = errors(pod);
    assertEquals(List.of(REQ_MEMORY, LIM_CORE), errors.stream().map(FieldError::field).toList());
    errors.forEach(e -> assertMentions(e, "is missing", "belong in both requests and limits"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "10.5", "1k", "abc", "10.0", "+10", "-10", "1e1", " 10", "10 ", "\t10", "10\n", " 10 ", ""
      })
  void percentagesMustBePlainIntegers(String given) {
    PodManifest pod =
        pod(
            sharingLabels(),
            Map.of(),
            container("d", Map.of(CORE, given, MEMORY, "10"), Map.of(CORE, "100", MEMORY, "100")));
    FieldError e = onlyError(pod);
    assertEquals(REQ_CORE, e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"" + given + "\"", "an integer from 1 to 100", "plain digits");
  }

  @ParameterizedTest
  @ValueSource(strings = {" 1", "1 ", "\t1", "1\n", "1 Gi", "-1", "one", ""})
  void otherResourcesMustBeQuantitiesAsWritten(String given) {
    // a sidecar of a sharing pod, and a plain pod: both are read as the API server reads them
    PodManifest sharingPod =
        pod(
            sharingLabels(),
            Map.of(),
            sharing("d", "10", "10"),
            container("side", Map.of("cpu", given), Map.of()));
    FieldError e = onlyError(sharingPod);
    assertEquals("spec.containers[1].resources.requests[cpu]", e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"" + given + "\"", "Ki, Mi, Gi", "no spaces around it");

    PodManifest plain = pod(Map.of(), Map.of(), container("a", Map.of(), Map.of("memory", given)));
    FieldError p = onlyError(plain);
    assertEquals("spec.containers[0].resources.limits[memory]", p.field());
  }

  @ParameterizedTest
  @ValueSource(strings = {"1", "500m", "+2", "1.5", "1e3", "64Mi", "0"})
  void otherResourcesKeepEveryKubernetesNotation(String given) {
    PodManifest pod =
        pod(Map.of(), Map.of(), container("a", Map.of("cpu", given), Map.of("memory", given)));
    assertTrue(ShareRequestRules.validate(pod).ok(), given);
  }

  @Test
  void aRequestMustBeAtLeastOne() {
    List<FieldError> all = errors(pod(sharingLabels(), Map.of(), sharing("d", "0", "10")));
    assertEquals(List.of(REQ_CORE, REQ_MEMORY), all.stream().map(FieldError::field).toList());
    assertMentions(all.get(0), "\"0\"", "an integer from 1 to 100");
  }

  @Test
  void aLimitMustNotBeBelowItsRequest() {
    List<FieldError> errors = errors(pod(sharingLabels(), Map.of(), sharing("d", "50", "40")));
    assertEquals(List.of(LIM_CORE, LIM_MEMORY), errors.stream().map(FieldError::field).toList());
    assertMentions(errors.get(0), "\"40\"", "an integer from 50 to 100");
  }

  @ParameterizedTest
  @ValueSource(strings = {"101", "200", "99999999999999"})
  void aLimitAbove100IsRefusedBecauseAShareLiesOnOneGpu(String given) {
    List<FieldError> errors = errors(pod(sharingLabels(), Map.of(), sharing("d", "10", given)));
    assertEquals(List.of(LIM_CORE, LIM_MEMORY), errors.stream().map(FieldError::field).toList());
    assertMentions(errors.get(0), "\"" + given + "\"", "one pod's share lies on one GPU", "100");
  }

  @Test
  void aRequestAbove100IsRefused() {
    List<FieldError> errors = errors(pod(sharingLabels(), Map.of(), sharing("d", "150", "100")));
    assertEquals(List.of(REQ_CORE, REQ_MEMORY), errors.stream().map(FieldError::field).toList());
  }

  @Test
  void atMostOneContainerUsesSharedResources() {
    PodManifest pod =
        pod(
            sharingLabels(),
            Map.of(),
            sharing("main", "10", "10"),
            sidecar("log"),
            sharing("extra", "5", "5"));
    FieldError e = onlyError(pod);
    assertEquals("spec.containers[2].resources", e.field());
    assertEquals("extra", e.value());
    assertMentions(
        e,
        "\"main\"",
        "spec.containers[0]",
        "at most one container",
        "sidecars use CPU and memory only");
  }

  @Test
  void sidecarsBesideTheSharingContainerAreAccepted() {
    PodManifest pod = pod(sharingLabels(), Map.of(), sidecar("log"), sharing("main", "10", "10"));
    assertEquals("main", shared(ShareRequestRules.validate(pod).value()).container());
  }

  @Test
  void aContainerCannotAskForNvidiaGpuAndSharesTogether() {
    Map<String, String> limits = Map.of(CORE, "100", MEMORY, "100", EXCLUSIVE_GPU, "1");
    PodManifest pod =
        pod(sharingLabels(), Map.of(), container("d", Map.of(CORE, "10", MEMORY, "10"), limits));
    FieldError e = onlyError(pod);
    assertEquals("spec.containers[0].resources.limits[nvidia.com/gpu]", e.field());
    assertMentions(e, "cannot ask for nvidia.com/gpu and shared GPU resources together");
  }

  @Test
  void aSidecarOfASharingPodCannotHoldWholeGpus() {
    PodManifest pod =
        pod(
            sharingLabels(),
            Map.of(),
            sharing("main", "10", "10"),
            container("side", Map.of(EXCLUSIVE_GPU, "1"), Map.of(EXCLUSIVE_GPU, "1")));
    List<FieldError> errors = errors(pod);
    assertEquals(
        List.of(
            "spec.containers[1].resources.requests[nvidia.com/gpu]",
            "spec.containers[1].resources.limits[nvidia.com/gpu]"),
        errors.stream().map(FieldError::field).toList());
  }

  @Test
  void oneLimitAnnotationWithoutTheOtherNamesTheMissingOne() {
    PodManifest pod =
        pod(sharingLabels(), Map.of(CORE_LIMIT_ANNOTATION, "100"), sharing("d", "10", "10"));
    FieldError e = onlyError(pod);
    assertEquals("metadata.annotations[" + MEMORY_LIMIT_ANNOTATION + "]", e.field());
    assertEquals(null, e.value());
    assertMentions(e, "is missing", CORE_LIMIT_ANNOTATION + " is set");
  }

  @ParameterizedTest
  @ValueSource(strings = {"5", "101", "50.5", "all", " 50", "50 ", "50\t"})
  void limitAnnotationsMustLieBetweenTheRequestAndOneGpu(String given) {
    PodManifest pod =
        pod(
            sharingLabels(),
            Map.of(CORE_LIMIT_ANNOTATION, given, MEMORY_LIMIT_ANNOTATION, "100"),
            sharing("d", "10", "10"));
    FieldError e = onlyError(pod);
    assertEquals("metadata.annotations[" + CORE_LIMIT_ANNOTATION + "]", e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"" + given + "\"", "an integer from 10 to 100");
  }

  @Test
  void aLimitAnnotationAloneMakesAPodSharing() {
    PodManifest pod =
        pod(
            Map.of(),
            Map.of(CORE_LIMIT_ANNOTATION, "100", MEMORY_LIMIT_ANNOTATION, "100"),
            sidecar("c"));
    List<FieldError> errors = errors(pod);
    assertEquals(
        List.of(CLASS_LABEL, POLICY_LABEL, "spec.containers"),
        errors.stream().map(FieldError::field).toList());
  }

  @Test
  void everyViolationIsReportedNotOnlyTheFirst() {
    Map<String, String> requests = new HashMap<>(Map.of(CORE, "0", MEMORY, "ten"));
    Map<String, String> limits = new HashMap<>(Map.of(CORE, "150", EXCLUSIVE_GPU, "1"));
    PodManifest pod =
        new PodManifest(
            "default",
            "Bad",
            null,
            null,
            Map.of(COMPUTE_CLASS_LABEL, "cpu", SharePolicy.LABEL, "none"),
            Map.of(MEMORY_LIMIT_ANNOTATION, "100"),
            new ArrayList<>(
                List.of(container("d", requests, limits), sharing("second", "10", "10"))));
    List<String> fields = errors(pod).stream().map(FieldError::field).toList();
    assertEquals(
        List.of(
            "metadata.name",
            CLASS_LABEL,
            POLICY_LABEL,
            "spec.containers[0].resources.limits[nvidia.com/gpu]",
            "spec.containers[1].resources",
            REQ_CORE,
            REQ_MEMORY,
            LIM_CORE,
            LIM_MEMORY,
            "metadata.annotations[" + CORE_LIMIT_ANNOTATION + "]"),
        fields);
  }

  @Test
  void everyMessageNamesItsFieldAndValue() {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, "cpu", SharePolicy.LABEL, "none"),
            Map.of(),
            sharing("d", "abc", "1000"));
    for (FieldError e : errors(pod)) {
      assertTrue(
          e.message().startsWith(e.field() + " is \"" + e.value() + "\"; want "), e.message());
    }
  }

  @Test
  void podSharingRoundTripsThroughJson() throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    PodSharing sharing = ShareRequestRules.validate(demo()).value();
    assertEquals(sharing, mapper.readValue(mapper.writeValueAsString(sharing), PodSharing.class));
    assertEquals(
        PodSharing.exclusive(2),
        mapper.readValue(mapper.writeValueAsString(PodSharing.exclusive(2)), PodSharing.class));
  }

  private static final String PREEMPTION =
      "metadata.annotations[" + PreemptionMode.ANNOTATION + "]";

  private static PodManifest sharePoolPod(Map<String, String> annotations) {
    return pod(sharingLabels(), annotations, sharing("main", "10", "50"));
  }

  @Test
  void withoutThePreemptionAnnotationASharedPodIsSignalled() {
    assertEquals(
        PreemptionMode.SIGNAL,
        shared(ShareRequestRules.validate(sharePoolPod(Map.of())).value()).preemption());
    assertEquals(
        PreemptionMode.SIGNAL, shared(ShareRequestRules.validate(demo()).value()).preemption());
  }

  @Test
  void thePreemptionAnnotationChoosesCheckpointOrSignal() {
    assertEquals(
        PodSharing.shared(
            SharePolicy.SHARE_POOL,
            new Share(10, 10),
            new Share(50, 50),
            "main",
            PreemptionMode.CHECKPOINT),
        ShareRequestRules.validate(sharePoolPod(Map.of(PreemptionMode.ANNOTATION, "checkpoint")))
            .value());
    assertEquals(
        PreemptionMode.SIGNAL,
        shared(
                ShareRequestRules.validate(
                        sharePoolPod(Map.of(PreemptionMode.ANNOTATION, "signal")))
                    .value())
            .preemption());
  }

  @Test
  void aBadPreemptionValueSaysWhatIsAccepted() {
    FieldError e = onlyError(sharePoolPod(Map.of(PreemptionMode.ANNOTATION, "Checkpoint")));
    assertEquals(PREEMPTION, e.field());
    assertEquals("Checkpoint", e.value());
    assertEquals(
        "metadata.annotations[gpushare.dev/preemption] is \"Checkpoint\"; want \"checkpoint\" or"
            + " \"signal\" (absent = signal)",
        e.message());
  }

  @ParameterizedTest
  @ValueSource(strings = {"CHECKPOINT", "Signal", " checkpoint", "signal ", "", "kill", "none"})
  void thePreemptionValueIsReadExactly(String given) {
    FieldError e = onlyError(sharePoolPod(Map.of(PreemptionMode.ANNOTATION, given)));
    assertEquals(PREEMPTION, e.field());
    assertEquals(given, e.value());
    assertMentions(e, "\"" + given + "\"", "want \"checkpoint\" or \"signal\" (absent = signal)");
  }

  @Test
  void thePreemptionAnnotationAppliesOnlyToPodsThatShareAGpu() {
    String message =
        "metadata.annotations[gpushare.dev/preemption] is \"checkpoint\"; want no such"
            + " annotation: it applies only to pods that share a GPU (share-pool)";
    Map<String, String> annotations = Map.of(PreemptionMode.ANNOTATION, "checkpoint");
    FieldError plain = onlyError(pod(Map.of(), annotations, sidecar("web")));
    assertEquals(PREEMPTION, plain.field());
    assertEquals("checkpoint", plain.value());
    assertEquals(message, plain.message());
    FieldError exclusive =
        onlyError(
            pod(
                Map.of(),
                annotations,
                container("a", Map.of(EXCLUSIVE_GPU, "1"), Map.of(EXCLUSIVE_GPU, "1"))));
    assertEquals(message, exclusive.message());
  }

  @ParameterizedTest
  @ValueSource(strings = {"checkpoint", "signal", "bogus"})
  void aStaticPodIsNeverPreemptedSoTheAnnotationDoesNotApply(String given) {
    PodManifest pod =
        pod(
            Map.of(COMPUTE_CLASS_LABEL, "gpu-hpn", SharePolicy.LABEL, "static"),
            Map.of(PreemptionMode.ANNOTATION, given),
            sharing("main", "30", "50"));
    FieldError e = onlyError(pod);
    assertEquals(PREEMPTION, e.field());
    assertEquals(given, e.value());
    assertEquals(
        "metadata.annotations[gpushare.dev/preemption] is \""
            + given
            + "\"; want no such annotation: static pods are never preempted (SPEC §6), so the"
            + " annotation does not apply",
        e.message());
  }

  @Test
  void aBadPreemptionValueIsReportedWithTheOtherErrors() {
    PodManifest pod =
        new PodManifest(
            "default",
            "Bad",
            null,
            null,
            Map.of(COMPUTE_CLASS_LABEL, "cpu", SharePolicy.LABEL, "share-pool"),
            Map.of(PreemptionMode.ANNOTATION, "hibernate", MEMORY_LIMIT_ANNOTATION, "100"),
            List.of(sharing("d", "0", "10")));
    assertEquals(
        List.of(
            "metadata.name",
            CLASS_LABEL,
            REQ_CORE,
            REQ_MEMORY,
            "metadata.annotations[" + CORE_LIMIT_ANNOTATION + "]",
            PREEMPTION),
        errors(pod).stream().map(FieldError::field).toList());

    PodManifest noContainer =
        pod(sharingLabels(), Map.of(PreemptionMode.ANNOTATION, "Signal"), sidecar("web"));
    assertEquals(
        List.of("spec.containers", PREEMPTION),
        errors(noContainer).stream().map(FieldError::field).toList());

    PodManifest plain =
        new PodManifest(
            "default",
            "web",
            null,
            null,
            Map.of(),
            Map.of(PreemptionMode.ANNOTATION, "signal"),
            List.of(container("a", Map.of(), Map.of("memory", "1 Gi"))));
    assertEquals(
        List.of("spec.containers[0].resources.limits[memory]", PREEMPTION),
        errors(plain).stream().map(FieldError::field).toList());
  }

  @Test
  void aCheckpointedPodRoundTripsThroughJson() throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    PodSharing sharing =
        ShareRequestRules.validate(sharePoolPod(Map.of(PreemptionMode.ANNOTATION, "checkpoint")))
            .value();
    String text = mapper.writeValueAsString(sharing);
    assertTrue(text.endsWith(",\"preemption\":\"checkpoint\"}"), text);
    assertEquals(sharing, mapper.readValue(text, PodSharing.class));
  }

  private static PodSharing.Shared shared(PodSharing sharing) {
    return assertInstanceOf(PodSharing.Shared.class, sharing);
  }
}
