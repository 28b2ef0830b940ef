package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.T0;
import static dev.gpushare.node.kube.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.fake.FakeGpuShareReader;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeCondition;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Node status as SPEC §2 shows it, written through the status subresource of a mock API server. */
class KubeWriterNodeTest {
  static final String NODE = "gpu-hpn-1";
  static final String CORE = ShareRequestRules.CORE;
  static final String MEMORY = ShareRequestRules.MEMORY;

  MockApi api;
  FakeGpuShareReader service;
  KubeWriter writer;

  @BeforeEach
  void setUp() {
    api = new MockApi();
    service = Fixtures.service();
    api.other.nodes().resource(Fixtures.kubeletNode(NODE)).create();
    api.clearRequests();
  }

  @AfterEach
  void tearDown() {
    if (writer != null) {
      writer.close();
    }
    api.close();
  }

  void start(NodeStatusMode mode) {
    writer =
        new KubeWriter(
                api.client,
                service,
                new KubeSyncSettings(mode, 1000, 1000, Duration.ofMillis(50), "gpushare-0"))
            .start();
  }

  void flush() throws Exception {
    writer.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  Node node() {
    return api.other.nodes().withName(NODE).get();
  }

  static NodeCondition condition(Node node, String type) {
    return node.getStatus().getConditions().stream()
        .filter(c -> type.equals(c.getType()))
        .findFirst()
        .orElse(null);
  }

  @Test
  void sharingOnAddsPercentagesAndConditionsAndNoneRemovesThemLeavingTheKubeletsPartsAlone()
      throws Exception {
    Node before = node();
    service.setNode(Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0));
    start(NodeStatusMode.KUBELET);
    flush();

    Node on = node();
    for (var resources : List.of(on.getStatus().getCapacity(), on.getStatus().getAllocatable())) {
      assertEquals("1600", text(resources, CORE));
      assertEquals("1600", text(resources, MEMORY));
    }
    // KUBELET mode: CPU, memory and storage stay as the kubelet wrote them
    for (String r : List.of("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "pods")) {
      assertEquals(
          text(before.getStatus().getAllocatable(), r), text(on.getStatus().getAllocatable(), r));
      assertEquals(
          text(before.getStatus().getCapacity(), r), text(on.getStatus().getCapacity(), r));
    }
    NodeCondition valid = condition(on, "GPUSharePolicyValid");
    assertEquals("True", valid.getStatus());
    assertEquals("Valid", valid.getReason());
    assertEquals("gpu share policy config is valid.", valid.getMessage());
    assertEquals("2026-01-01T00:00:00Z", valid.getLastTransitionTime());
    NodeCondition policy = condition(on, "GPUSharePolicy");
    assertEquals("True", policy.getStatus());
    assertEquals("share-pool", policy.getReason());
    assertEquals("gpu share policy is share-pool.", policy.getMessage());
    assertEquals(
        before.getStatus().getConditions(),
        on.getStatus().getConditions().stream()
            .filter(c -> !NodeWrites.OUR_CONDITIONS.contains(c.getType()))
            .toList(),
        "the kubelet's conditions, untouched and in their order");
    assertEquals(before.getStatus().getAddresses(), on.getStatus().getAddresses());
    assertFalse(on.getMetadata().getAnnotations().containsKey(OwnAllocatable.ANNOTATION));

    service.setNode(
        Fixtures.nodeView(
            NODE,
            SharePolicy.NONE,
            16,
            T0.plusSeconds(60),
            List.of(),
            Fixtures.OWN_ALLOCATABLE,
            List.of()));
    service.nodeChanged(NODE);
    flush();

    Node off = node();
    assertNull(text(off.getStatus().getCapacity(), CORE));
    assertNull(text(off.getStatus().getCapacity(), MEMORY));
    assertNull(text(off.getStatus().getAllocatable(), CORE));
    assertNull(text(off.getStatus().getAllocatable(), MEMORY));
    assertEquals(before.getStatus().getCapacity(), off.getStatus().getCapacity());
    assertEquals(before.getStatus().getAllocatable(), off.getStatus().getAllocatable());
    NodeCondition none = condition(off, "GPUSharePolicy");
    assertEquals("False", none.getStatus());
    assertEquals("none", none.getReason());
    assertEquals("gpu share policy is none.", none.getMessage());
    assertEquals("2026-01-01T00:01:00Z", none.getLastTransitionTime());
    assertEquals(
        before.getStatus().getConditions(),
        off.getStatus().getConditions().stream()
            .filter(c -> !NodeWrites.OUR_CONDITIONS.contains(c.getType()))
            .toList());
    assertEquals(before.getMetadata().getLabels(), off.getMetadata().getLabels());
  }

  @Test
  void aPassThatFindsNothingChangedSendsNothingAndAHeartbeatAloneIsNoChange() throws Exception {
    NodeView first = Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0);
    service.setNode(first);
    start(NodeStatusMode.KUBELET);
    flush();
    api.clearRequests();

    service.nodeChanged(NODE);
    flush();
    assertEquals(List.of(), api.requests(), "the cache agrees: no request");

    // recomputed a minute later: new heartbeats, same transitions — nothing users would see
    api.clearRequests();
    service.setNode(
        Fixtures.nodeView(
            NODE,
            SharePolicy.SHARE_POOL,
            16,
            T0.plusSeconds(60),
            first.status().conditions(),
            Fixtures.OWN_ALLOCATABLE,
            List.of()));
    service.nodeChanged(NODE);
    flush();
    assertEquals(List.of(), api.requests(), "the cache agrees: no request");
  }

  @Test
  void aGpuFailureLowersThePercentages() throws Exception {
    NodeView first = Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0);
    service.setNode(first);
    start(NodeStatusMode.KUBELET);
    flush();

    service.setNode(
        Fixtures.nodeView(
            NODE,
            SharePolicy.SHARE_POOL,
            15,
            T0,
            first.status().conditions(),
            Fixtures.OWN_ALLOCATABLE,
            List.of()));
    service.nodeChanged(NODE);
    flush();

    assertEquals("1500", text(node().getStatus().getCapacity(), CORE));
    assertEquals("1500", text(node().getStatus().getAllocatable(), MEMORY));
  }

  @Test
  void virtualNodesGetTheReservedAllocatableAfterTheirOwnIsRecorded() throws Exception {
    service.setNode(Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0));
    start(NodeStatusMode.VIRTUAL);
    flush();

    List<String> writes = api.requests().stream().filter(r -> !r.startsWith("GET")).toList();
    assertEquals(
        List.of("PATCH /api/v1/nodes/" + NODE, "PATCH /api/v1/nodes/" + NODE + "/status"),
        writes,
        "the own allocatable is recorded before the first status change");
    Node on = node();
    Map<String, String> recorded =
        OwnAllocatable.parse(on.getMetadata().getAnnotations().get(OwnAllocatable.ANNOTATION));
    assertEquals(Map.of("cpu", "176", "memory", "1800Gi", "ephemeral-storage", "4608Gi"), recorded);
    var allocatable = on.getStatus().getAllocatable();
    assertEquals("144", text(allocatable, "cpu"));
    assertEquals("1640Gi", text(allocatable, "memory"));
    assertEquals("4608Gi", text(allocatable, "ephemeral-storage"));
    assertEquals("1600", text(allocatable, CORE));
    assertEquals("176", text(on.getStatus().getCapacity(), "cpu"));
    assertEquals("1800Gi", text(on.getStatus().getCapacity(), "memory"));
    assertEquals("6Ti", text(on.getStatus().getCapacity(), "ephemeral-storage"));

    // the informers take the node's own allocatable from the annotation, not from our output
    Map<String, String> own = OwnAllocatable.read(on).orElseThrow();
    assertEquals("176", own.get("cpu"));
    assertEquals("1800Gi", own.get("memory"));
    assertFalse(own.containsKey(CORE));
    NodeView again =
        Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0, List.of(), own, List.of());
    assertEquals(
        service.node(NODE).toCompletableFuture().get().status().allocatable(),
        again.status().allocatable());
    service.setNode(again);
    api.clearRequests();
    service.nodeChanged(NODE);
    flush();
    assertEquals(List.of(), api.requests(), "no feedback loop");

    // sharing off: the node's own values come back and the record goes
    service.setNode(Fixtures.nodeView(NODE, SharePolicy.NONE, 16, T0, List.of(), own, List.of()));
    service.nodeChanged(NODE);
    flush();
    Node off = node();
    assertEquals("176", text(off.getStatus().getAllocatable(), "cpu"));
    assertEquals("1800Gi", text(off.getStatus().getAllocatable(), "memory"));
    assertEquals("4608Gi", text(off.getStatus().getAllocatable(), "ephemeral-storage"));
    assertNull(text(off.getStatus().getAllocatable(), CORE));
    assertTrue(
        off.getMetadata().getAnnotations() == null
            || !off.getMetadata().getAnnotations().containsKey(OwnAllocatable.ANNOTATION));
    assertTrue(OwnAllocatable.read(off).isEmpty());
  }

  @Test
  void percentagesAKubeletZeroedAreWrittenAgainOnceTheWritersInformerSeesIt() throws Exception {
    service.setNode(Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0));
    start(NodeStatusMode.KUBELET);
    flush();
    // a kubelet that re-registers zeroes extended resources it does not know
    api.other
        .nodes()
        .withName(NODE)
        .editStatus(
            n -> {
              n.getStatus()
                  .getCapacity()
                  .put(CORE, new io.fabric8.kubernetes.api.model.Quantity("0"));
              n.getStatus()
                  .getAllocatable()
                  .put(CORE, new io.fabric8.kubernetes.api.model.Quantity("0"));
              return n;
            });

    // the writer's own informer sees the change to what gpushare owns and repairs it: no mark
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!"1600".equals(text(node().getStatus().getCapacity(), CORE))
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    flush();
    assertEquals("1600", text(node().getStatus().getCapacity(), CORE));
    assertEquals("1600", text(node().getStatus().getAllocatable(), CORE));
  }

  @Test
  void aNodeTheApiServerDoesNotHaveIsNoError() throws Exception {
    service.setNode(Fixtures.nodeView("elsewhere", SharePolicy.SHARE_POOL, 16, T0));
    start(NodeStatusMode.KUBELET);
    flush();
    assertEquals(List.of(), api.requests(), "nothing to write, nothing read");
  }
}
