package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.NodeSharing.SharingConfig;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class NodeStatusCalculatorTest {

  private static final String CORE = ShareRequestRules.CORE;
  private static final String MEMORY = ShareRequestRules.MEMORY;
  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final Instant T1 = Instant.parse("2026-01-01T00:05:00Z");

  private static final QosConfig REFERENCE_QOS = new QosConfig(true, 120, "1.5Ti");

  /**
   * The reference GPU-HPN node of {@code deploy/examples/node-status-reference.yaml}, as it is own.
   */
  private static NodeManifest reference() {
    return node(
        Map.of(
            "cpu", "176", "memory", "1800Gi", "nvidia.com/gpu", "16", "ephemeral-storage", "6Ti"),
        Map.of(
            "cpu",
            "176",
            "memory",
            "1800Gi",
            "nvidia.com/gpu",
            "16",
            "ephemeral-storage",
            "4608Gi"));
  }

  private static NodeManifest node(Map<String, String> capacity, Map<String, String> allocatable) {
    return new NodeManifest("gpu-hpn-node-1", Map.of(), Map.of(), capacity, allocatable);
  }

  private static SharingConfig on(SharePolicy policy, QosConfig qos) {
    return new SharingConfig(policy, qos, policy, NodeSharing.VALID, NodeSharing.VALID_MESSAGE);
  }

  private static NodeStatus status(NodeManifest node, SharingConfig config) {
    return NodeStatusCalculator.desired(node, 16, config, ReservedPerGpu.DEFAULT, List.of(), T0);
  }

  @Test
  void reproducesTheReferenceStatusWithSharePoolOn() {
    NodeStatus status = status(reference(), on(SharePolicy.SHARE_POOL, REFERENCE_QOS));
    assertEquals(
        Map.of(
            CORE,
            "1600",
            MEMORY,
            "1600",
            "cpu",
            "144",
            "memory",
            "1640Gi",
            "nvidia.com/gpu",
            "16",
            "ephemeral-storage",
            "4608Gi"),
        status.allocatable());
    assertEquals(
        Map.of(
            CORE,
            "1600",
            MEMORY,
            "1600",
            "cpu",
            "176",
            "memory",
            "1800Gi",
            "nvidia.com/gpu",
            "16",
            "ephemeral-storage",
            "6Ti"),
        status.capacity());
    assertEquals(
        List.of(
            new NodeCondition(
                "GPUSharePolicyValid",
                "True",
                "Valid",
                "gpu share policy config is valid.",
                T0,
                T0),
            new NodeCondition(
                "GPUSharePolicy", "True", "share-pool", "gpu share policy is share-pool.", T0, T0)),
        status.conditions());
  }

  @Test
  void reproducesTheReferenceStatusWithSharingOff() {
    NodeStatus status = status(reference(), SharingConfig.INITIAL);
    Map<String, String> own = Map.of("cpu", "176", "memory", "1800Gi", "nvidia.com/gpu", "16");
    Map<String, String> allocatable = new TreeMap<>(own);
    allocatable.put("ephemeral-storage", "4608Gi");
    Map<String, String> capacity = new TreeMap<>(own);
    capacity.put("ephemeral-storage", "6Ti");
    assertEquals(allocatable, status.allocatable());
    assertEquals(capacity, status.capacity());
    assertEquals(
        List.of(
            new NodeCondition(
                "GPUSharePolicyValid",
                "True",
                "Valid",
                "gpu share policy config is valid.",
                T0,
                T0),
            new NodeCondition(
                "GPUSharePolicy", "False", "none", "gpu share policy is none.", T0, T0)),
        status.conditions());
  }

  @Test
  void resourcesAreSortedByName() {
    NodeStatus status = status(reference(), on(SharePolicy.SHARE_POOL, REFERENCE_QOS));
    assertEquals(
        List.of(CORE, MEMORY, "cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"),
        List.copyOf(status.capacity().keySet()));
    assertEquals(
        List.copyOf(status.capacity().keySet()), List.copyOf(status.allocatable().keySet()));
  }

  @Test
  void turningSharingOffDropsPercentagesLeftInTheOwnResources() {
    Map<String, String> capacity = new TreeMap<>(reference().capacity());
    capacity.put(CORE, "1600");
    capacity.put(MEMORY, "1600");
    NodeStatus status = status(node(capacity, Map.of()), SharingConfig.INITIAL);
    assertEquals(reference().capacity(), status.capacity());
  }

  @Test
  void staticReservesCpuAndMemoryButNotEphemeralStorage() {
    NodeStatus status = status(reference(), on(SharePolicy.STATIC, REFERENCE_QOS));
    assertEquals("144", status.allocatable().get("cpu"));
    assertEquals("1640Gi", status.allocatable().get("memory"));
    assertEquals("4608Gi", status.allocatable().get("ephemeral-storage"));
    assertEquals("1600", status.allocatable().get(CORE));
    assertEquals("True", status.conditions().get(1).status());
    assertEquals("static", status.conditions().get(1).reason());
    assertEquals("gpu share policy is static.", status.conditions().get(1).message());
  }

  @Test
  void ephemeralStorageIsCappedByCapacityMinusTheReserve() {
    NodeManifest node = node(Map.of("nvidia.com/gpu", "16", "ephemeral-storage", "6Ti"), Map.of());
    NodeStatus status = status(node, on(SharePolicy.SHARE_POOL, REFERENCE_QOS));
    assertEquals("4608Gi", status.allocatable().get("ephemeral-storage"));
    assertEquals("6Ti", status.capacity().get("ephemeral-storage"));
  }

  @Test
  void theOwnEphemeralStorageStandsWhenBelowTheCap() {
    NodeManifest node =
        node(
            Map.of("nvidia.com/gpu", "16", "ephemeral-storage", "6Ti"),
            Map.of("nvidia.com/gpu", "16", "ephemeral-storage", "4Ti"));
    NodeStatus status = status(node, on(SharePolicy.SHARE_POOL, REFERENCE_QOS));
    assertEquals("4Ti", status.allocatable().get("ephemeral-storage"));
  }

  @Test
  void reservesAreFlooredAtZero() {
    NodeManifest node =
        node(
            Map.of("cpu", "8", "memory", "64Gi", "nvidia.com/gpu", "8", "ephemeral-storage", "1Ti"),
            Map.of());
    NodeStatus status =
        NodeStatusCalculator.desired(
            node,
            8,
            on(SharePolicy.SHARE_POOL, REFERENCE_QOS),
            ReservedPerGpu.DEFAULT,
            List.of(),
            T0);
    assertEquals("0", status.allocatable().get("cpu"));
    assertEquals("0", status.allocatable().get("memory"));
    assertEquals("0", status.allocatable().get("ephemeral-storage"));
  }

  @Test
  void percentagesCountHealthyGpusWhileReservesCountAllGpus() {
    NodeStatus status =
        NodeStatusCalculator.desired(
            reference(),
            15,
            on(SharePolicy.SHARE_POOL, QosConfig.DEFAULT),
            ReservedPerGpu.DEFAULT,
            List.of(),
            T0);
    assertEquals("1500", status.capacity().get(CORE));
    assertEquals("1500", status.allocatable().get(MEMORY));
    assertEquals("144", status.allocatable().get("cpu"));
  }

  @Test
  void aConfiguredReserveAppliesPerGpu() {
    NodeStatus status =
        NodeStatusCalculator.desired(
            reference(),
            16,
            on(SharePolicy.STATIC, QosConfig.DEFAULT),
            new ReservedPerGpu("500m", "512Mi"),
            List.of(),
            T0);
    assertEquals("168", status.allocatable().get("cpu"));
    assertEquals("1792Gi", status.allocatable().get("memory"));
  }

  @Test
  void anInvalidConfigShowsItsReasonAndMessage() {
    SharingConfig pending =
        new SharingConfig(
            SharePolicy.SHARE_POOL,
            QosConfig.DEFAULT,
            SharePolicy.STATIC,
            NodeSharing.POLICY_CHANGE_PENDING,
            "gpu share policy static is wanted, but share-pool stays active");
    NodeStatus status = status(reference(), pending);
    assertEquals(
        new NodeCondition(
            "GPUSharePolicyValid",
            "False",
            "PolicyChangePending",
            "gpu share policy static is wanted, but share-pool stays active",
            T0,
            T0),
        status.conditions().get(0));
    assertEquals("share-pool", status.conditions().get(1).reason());
  }

  @Test
  void transitionTimeStaysWhileStatusAndReasonStay() {
    SharingConfig config = on(SharePolicy.SHARE_POOL, REFERENCE_QOS);
    List<NodeCondition> before = status(reference(), config).conditions();
    List<NodeCondition> after =
        NodeStatusCalculator.desired(reference(), 16, config, ReservedPerGpu.DEFAULT, before, T1)
            .conditions();
    for (NodeCondition c : after) {
      assertEquals(T1, c.lastHeartbeatTime(), c.type());
      assertEquals(T0, c.lastTransitionTime(), c.type());
    }
  }

  @Test
  void transitionTimeMovesWhenTheStatusChanges() {
    List<NodeCondition> before =
        status(reference(), on(SharePolicy.SHARE_POOL, REFERENCE_QOS)).conditions();
    NodeCondition policy =
        NodeStatusCalculator.desired(
                reference(), 16, SharingConfig.INITIAL, ReservedPerGpu.DEFAULT, before, T1)
            .conditions()
            .get(1);
    assertEquals("False", policy.status());
    assertEquals(T1, policy.lastTransitionTime());
  }

  @Test
  void transitionTimeMovesWhenOnlyTheReasonChanges() {
    SharingConfig invalidQos =
        new SharingConfig(
            SharePolicy.SHARE_POOL,
            QosConfig.DEFAULT,
            SharePolicy.SHARE_POOL,
            "InvalidQoSConfig",
            "x");
    SharingConfig pending =
        new SharingConfig(
            SharePolicy.SHARE_POOL,
            QosConfig.DEFAULT,
            SharePolicy.STATIC,
            "PolicyChangePending",
            "y");
    List<NodeCondition> before = status(reference(), invalidQos).conditions();
    List<NodeCondition> after =
        NodeStatusCalculator.desired(reference(), 16, pending, ReservedPerGpu.DEFAULT, before, T1)
            .conditions();
    assertEquals(T1, after.get(0).lastTransitionTime());
    assertEquals(T0, after.get(1).lastTransitionTime(), "GPUSharePolicy stayed share-pool");
  }

  @Test
  void transitionTimeStaysWhenOnlyTheMessageChanges() {
    SharingConfig first =
        new SharingConfig(
            SharePolicy.NONE,
            QosConfig.DEFAULT,
            SharePolicy.SHARE_POOL,
            "ExclusiveGPUPodsPresent",
            "a");
    SharingConfig second =
        new SharingConfig(
            SharePolicy.NONE,
            QosConfig.DEFAULT,
            SharePolicy.SHARE_POOL,
            "ExclusiveGPUPodsPresent",
            "a, b");
    List<NodeCondition> before = status(reference(), first).conditions();
    NodeCondition valid =
        NodeStatusCalculator.desired(reference(), 16, second, ReservedPerGpu.DEFAULT, before, T1)
            .conditions()
            .get(0);
    assertEquals("a, b", valid.message());
    assertEquals(T0, valid.lastTransitionTime());
    assertEquals(T1, valid.lastHeartbeatTime());
  }

  @Test
  void aConditionSeenForTheFirstTimeTransitionsNow() {
    List<NodeCondition> unrelated =
        List.of(new NodeCondition("Ready", "True", "KubeletReady", "ok", T0, T0));
    List<NodeCondition> conditions =
        NodeStatusCalculator.desired(
                reference(), 16, SharingConfig.INITIAL, ReservedPerGpu.DEFAULT, unrelated, T1)
            .conditions();
    assertEquals(2, conditions.size());
    conditions.forEach(c -> assertEquals(T1, c.lastTransitionTime()));
  }

  @Test
  void refusesANegativeHealthyGpuCount() {
    assertThrows(
        IllegalArgumentException.class,
        () ->
            NodeStatusCalculator.desired(
                reference(), -1, SharingConfig.INITIAL, ReservedPerGpu.DEFAULT, List.of(), T0));
  }

  @Test
  void theReferenceManifestIsValid() {
    assertEquals(List.of(), NodeStatusCalculator.validateManifest(reference()));
    assertEquals(
        List.of(),
        NodeStatusCalculator.validateManifest(node(Map.of("nvidia.com/gpu", "0"), Map.of())));
  }

  @ParameterizedTest
  @ValueSource(strings = {"Node_1", "", "-node", "node-"})
  void theNodeNameMustBeADns1123Subdomain(String name) {
    NodeManifest node =
        new NodeManifest(name, Map.of(), Map.of(), reference().capacity(), Map.of());
    List<FieldError> errors = NodeStatusCalculator.validateManifest(node);
    assertEquals(1, errors.size(), errors.toString());
    assertEquals("metadata.name", errors.get(0).field());
    assertTrue(errors.get(0).message().contains("DNS-1123 subdomain"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"65", "1.5", "abc", "-1", "2k"})
  void theGpuCountMustBeAnIntegerUpTo64(String given) {
    List<FieldError> errors =
        NodeStatusCalculator.validateManifest(node(Map.of("nvidia.com/gpu", given), Map.of()));
    assertEquals(1, errors.size(), errors.toString());
    assertEquals("status.capacity[nvidia.com/gpu]", errors.get(0).field());
    assertEquals(given, errors.get(0).value());
    assertTrue(errors.get(0).message().contains("an integer from 0 to 64"));
  }

  @Test
  void theGpuCountIsRequired() {
    List<FieldError> errors =
        NodeStatusCalculator.validateManifest(node(Map.of("cpu", "176"), Map.of()));
    assertEquals(1, errors.size());
    assertEquals("status.capacity[nvidia.com/gpu]", errors.get(0).field());
    assertTrue(
        errors
            .get(0)
            .message()
            .contains("is missing; want the node's GPU count, an integer from 0 to 64"));
  }

  @Test
  void everyBadResourceIsReported() {
    NodeManifest node =
        node(
            Map.of(
                "nvidia.com/gpu",
                "16",
                "cpu",
                "lots",
                "memory",
                "1800GB",
                "ephemeral-storage",
                "6Ti"),
            Map.of(
                "nvidia.com/gpu", "17", "ephemeral-storage", "7Ti", "pods", "110", "cpu", "100"));
    List<FieldError> errors = NodeStatusCalculator.validateManifest(node);
    assertEquals(
        List.of(
            "status.capacity[cpu]",
            "status.capacity[memory]",
            "status.allocatable[ephemeral-storage]",
            "status.allocatable[nvidia.com/gpu]",
            "status.allocatable[pods]"),
        errors.stream().map(FieldError::field).toList());
    assertTrue(
        errors
            .get(2)
            .message()
            .contains("at most the capacity status.capacity[ephemeral-storage], 6Ti"));
  }

  @Test
  void anUnparsableAllocatableValueIsReported() {
    List<FieldError> errors =
        NodeStatusCalculator.validateManifest(
            node(Map.of("nvidia.com/gpu", "16", "cpu", "176"), Map.of("cpu", "1 76")));
    assertEquals(
        List.of("status.allocatable[cpu]"), errors.stream().map(FieldError::field).toList());
    assertTrue(errors.get(0).message().contains("\"1 76\""));
  }
}
