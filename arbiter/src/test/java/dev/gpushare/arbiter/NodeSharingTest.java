package dev.gpushare.arbiter;

import static dev.gpushare.arbiter.NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT;
import static dev.gpushare.arbiter.NodeSharing.INVALID_POLICY;
import static dev.gpushare.arbiter.NodeSharing.INVALID_QOS_CONFIG;
import static dev.gpushare.arbiter.NodeSharing.POLICY_CHANGE_PENDING;
import static dev.gpushare.arbiter.NodeSharing.VALID;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.NodeSharing.Resolution;
import dev.gpushare.arbiter.NodeSharing.SharingConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NodeSharingTest {

  private static final String REFERENCE_QOS =
      "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
          + " \"reservedEphemeralStorage\": \"1.5Ti\"}";
  private static final QosConfig REFERENCE = new QosConfig(true, 120, "1.5Ti");

  private static final SharingConfig SHARE_POOL_ON =
      new SharingConfig(
          SharePolicy.SHARE_POOL,
          REFERENCE,
          SharePolicy.SHARE_POOL,
          VALID,
          NodeSharing.VALID_MESSAGE);

  private static Map<String, String> policy(String value) {
    return Map.of(SharePolicy.LABEL, value);
  }

  private static Map<String, String> qos(String json) {
    return Map.of(QosConfig.ANNOTATION, json);
  }

  private static SharingConfig resolve(
      SharingConfig previous, Map<String, String> labels, Map<String, String> annotations) {
    return NodeSharing.resolve(previous, labels, annotations, List.of(), List.of());
  }

  private static void assertMentions(String message, String... parts) {
    for (String part : parts) {
      assertTrue(message.contains(part), "\"" + part + "\" not in: " + message);
    }
  }

  @Test
  void initiallySharingIsOffAndValid() {
    assertEquals(
        new SharingConfig(
            SharePolicy.NONE,
            QosConfig.DEFAULT,
            SharePolicy.NONE,
            "Valid",
            "gpu share policy config is valid."),
        SharingConfig.INITIAL);
  }

  @Test
  void anAbsentLabelMeansNone() {
    assertEquals(SharingConfig.INITIAL, resolve(SHARE_POOL_ON, Map.of(), Map.of()));
  }

  @Test
  void theReferenceLabelAndAnnotationTurnOnSharePool() {
    assertEquals(
        SHARE_POOL_ON, resolve(SharingConfig.INITIAL, policy("share-pool"), qos(REFERENCE_QOS)));
  }

  @Test
  void sharePoolWithoutAnAnnotationUsesTheDefaultQos() {
    SharingConfig config = resolve(SHARE_POOL_ON, policy("share-pool"), Map.of());
    assertEquals(QosConfig.DEFAULT, config.activeQos());
    assertEquals(VALID, config.validReason());
  }

  @Test
  void staticTakesEffectWhenNoPodIsInTheWay() {
    SharingConfig config = resolve(SHARE_POOL_ON, policy("static"), Map.of());
    assertEquals(SharePolicy.STATIC, config.active());
    assertEquals(SharePolicy.STATIC, config.desired());
    assertEquals(VALID, config.validReason());
  }

  @Test
  void anInvalidLabelKeepsThePreviousPolicyAndQos() {
    Resolution r =
        NodeSharing.resolveWithErrors(
            SHARE_POOL_ON,
            policy("sharepool"),
            qos("{\"podMaxDurationMinutes\": 5}"),
            List.of(),
            List.of());
    SharingConfig config = r.config();
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(REFERENCE, config.activeQos());
    assertEquals(SharePolicy.SHARE_POOL, config.desired());
    assertEquals(INVALID_POLICY, config.validReason());
    assertMentions(
        config.validMessage(),
        "metadata.labels[alibabacloud.com/gpu-share-policy] is \"sharepool\"",
        "share-pool, static, none",
        "share-pool stays active");
    assertEquals(1, r.configErrors().size());
    assertEquals("sharepool", r.configErrors().get(0).value());
  }

  @Test
  void anInvalidQosConfigKeepsTheLastValidOneAndSaysWhyFieldByField() {
    Resolution r =
        NodeSharing.resolveWithErrors(
            SHARE_POOL_ON,
            policy("share-pool"),
            qos("{\"preemptEnabled\": \"yes\", \"podMaxDurationMinutes\": 0}"),
            List.of(),
            List.of());
    SharingConfig config = r.config();
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(REFERENCE, config.activeQos());
    assertEquals(INVALID_QOS_CONFIG, config.validReason());
    assertEquals(FieldErrors.summary(r.configErrors()), config.validMessage());
    assertEquals(2, r.configErrors().size());
    assertMentions(
        config.validMessage(), ".preemptEnabled is \"yes\"", ".podMaxDurationMinutes is 0");
  }

  private static Resolution onNodeWith(String storageCapacity, String reserved) {
    return NodeSharing.resolveWithErrors(
        SHARE_POOL_ON,
        policy("share-pool"),
        qos("{\"reservedEphemeralStorage\": \"" + reserved + "\"}"),
        Map.of("cpu", "176", "ephemeral-storage", storageCapacity),
        List.of(),
        List.of());
  }

  @Test
  void reservingMoreEphemeralStorageThanTheNodeHasIsAnInvalidQosConfig() {
    Resolution r = onNodeWith("6Ti", "100Ti");
    SharingConfig config = r.config();
    assertEquals(INVALID_QOS_CONFIG, config.validReason());
    assertEquals(REFERENCE, config.activeQos(), "the last valid QoS config stays in force");
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(1, r.configErrors().size());
    FieldError e = r.configErrors().get(0);
    assertEquals(QosConfig.FIELD + ".reservedEphemeralStorage", e.field());
    assertEquals("100Ti", e.value());
    assertMentions(
        config.validMessage(),
        "reservedEphemeralStorage is \"100Ti\"",
        "at most the node's ephemeral-storage capacity",
        "status.capacity[ephemeral-storage] = 6Ti");
  }

  @Test
  void reservingUpToTheWholeEphemeralStorageIsValid() {
    for (String reserved : List.of("6Ti", "6144Gi", "1.5Ti", "0")) {
      Resolution r = onNodeWith("6Ti", reserved);
      assertEquals(VALID, r.config().validReason(), reserved);
      assertEquals(reserved, r.config().activeQos().reservedEphemeralStorage());
    }
    assertEquals(INVALID_QOS_CONFIG, onNodeWith("6Ti", "6145Gi").config().validReason());
  }

  @Test
  void withoutAnEphemeralStorageCapacityNothingIsCheckedAgainstIt() {
    Resolution r =
        NodeSharing.resolveWithErrors(
            SHARE_POOL_ON,
            policy("share-pool"),
            qos("{\"reservedEphemeralStorage\": \"100Ti\"}"),
            Map.of("cpu", "16"),
            List.of(),
            List.of());
    assertEquals(VALID, r.config().validReason());
  }

  @Test
  void anInvalidQosConfigWhenTurningSharePoolOnKeepsThePreviousQos() {
    SharingConfig config = resolve(SharingConfig.INITIAL, policy("share-pool"), qos("{"));
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(QosConfig.DEFAULT, config.activeQos());
    assertEquals(INVALID_QOS_CONFIG, config.validReason());
    assertMentions(config.validMessage(), "is not valid JSON");
  }

  @Test
  void theQosConfigDoesNotMatterUnderStaticOrNone() {
    for (String label : List.of("static", "none")) {
      Resolution r =
          NodeSharing.resolveWithErrors(
              SHARE_POOL_ON, policy(label), qos("not json"), List.of(), List.of());
      assertEquals(VALID, r.config().validReason(), label);
      assertEquals(List.of(), r.configErrors());
      assertEquals(REFERENCE, r.config().activeQos(), "the last valid QoS is kept for later");
    }
  }

  @Test
  void exclusiveGpuPodsKeepSharingOff() {
    SharingConfig config =
        NodeSharing.resolve(
            SharingConfig.INITIAL,
            policy("share-pool"),
            Map.of(),
            List.of(),
            List.of("ml/train-2", "default/train-1"));
    assertEquals(SharePolicy.NONE, config.active());
    assertEquals(SharePolicy.SHARE_POOL, config.desired());
    assertEquals(EXCLUSIVE_GPU_PODS_PRESENT, config.validReason());
    assertMentions(
        config.validMessage(), "share-pool", "nvidia.com/gpu", "default/train-1, ml/train-2");
  }

  @Test
  void exclusiveGpuPodsDoNotMatterWhileSharingIsOff() {
    SharingConfig config =
        NodeSharing.resolve(
            SharingConfig.INITIAL, Map.of(), Map.of(), List.of(), List.of("default/x"));
    assertEquals(VALID, config.validReason());
  }

  @Test
  void switchingModelsWaitsForTheSharedPods() {
    SharingConfig config =
        NodeSharing.resolve(
            SHARE_POOL_ON,
            policy("static"),
            Map.of(),
            List.of("default/b", "default/a"),
            List.of());
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(SharePolicy.STATIC, config.desired());
    assertEquals(POLICY_CHANGE_PENDING, config.validReason());
    assertEquals(
        "gpu share policy static is wanted, but share-pool stays active until the shared pods"
            + " bound to the node are gone: default/a, default/b.",
        config.validMessage());
  }

  @Test
  void turningSharingOffWaitsForTheSharedPods() {
    SharingConfig config =
        NodeSharing.resolve(SHARE_POOL_ON, Map.of(), Map.of(), List.of("default/a"), List.of());
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertEquals(SharePolicy.NONE, config.desired());
    assertEquals(POLICY_CHANGE_PENDING, config.validReason());
  }

  @Test
  void thePendingChangeTakesEffectOnceThePodsAreGone() {
    SharingConfig pending =
        NodeSharing.resolve(
            SHARE_POOL_ON, policy("static"), Map.of(), List.of("default/a"), List.of());
    SharingConfig after =
        NodeSharing.resolve(pending, policy("static"), Map.of(), List.of(), List.of());
    assertEquals(SharePolicy.STATIC, after.active());
    assertEquals(VALID, after.validReason());
  }

  @Test
  void sharedPodsDoNotBlockWhenThePolicyIsUnchanged() {
    SharingConfig config =
        NodeSharing.resolve(
            SHARE_POOL_ON,
            policy("share-pool"),
            qos(REFERENCE_QOS),
            List.of("default/a"),
            List.of());
    assertEquals(SHARE_POOL_ON, config);
  }

  @Test
  void anInvalidPolicyOutranksEveryOtherProblem() {
    SharingConfig config =
        NodeSharing.resolve(
            SHARE_POOL_ON, policy("both"), qos("{"), List.of("default/a"), List.of("default/x"));
    assertEquals(INVALID_POLICY, config.validReason());
  }

  @Test
  void anInvalidQosOutranksExclusivePodsButExclusivePodsStillKeepSharingOff() {
    SharingConfig config =
        NodeSharing.resolve(
            SharingConfig.INITIAL, policy("share-pool"), qos("{"), List.of(), List.of("default/x"));
    assertEquals(INVALID_QOS_CONFIG, config.validReason());
    assertEquals(SharePolicy.NONE, config.active());
  }

  @Test
  void exclusivePodsOutrankAPendingChange() {
    SharingConfig config =
        NodeSharing.resolve(
            SHARE_POOL_ON, policy("static"), Map.of(), List.of("default/a"), List.of("default/x"));
    assertEquals(EXCLUSIVE_GPU_PODS_PRESENT, config.validReason());
  }

  @Test
  void anInvalidQosOutranksAPendingChangeToSharePool() {
    SharingConfig staticOn =
        new SharingConfig(
            SharePolicy.STATIC,
            QosConfig.DEFAULT,
            SharePolicy.STATIC,
            VALID,
            NodeSharing.VALID_MESSAGE);
    SharingConfig config =
        NodeSharing.resolve(
            staticOn, policy("share-pool"), qos("[]"), List.of("default/a"), List.of());
    assertEquals(INVALID_QOS_CONFIG, config.validReason());
    assertEquals(SharePolicy.STATIC, config.active());
  }

  @Test
  void sharingConfigRoundTripsThroughJson() throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    SharingConfig pending =
        NodeSharing.resolve(
            SHARE_POOL_ON, policy("static"), Map.of(), List.of("default/a"), List.of());
    assertEquals(
        pending, mapper.readValue(mapper.writeValueAsString(pending), SharingConfig.class));
  }
}
