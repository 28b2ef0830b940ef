package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.gpu;
import static dev.gpushare.e2e.Checks.keys;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Manifests.COMPUTE_CLASS;
import static dev.gpushare.e2e.Manifests.CORE;
import static dev.gpushare.e2e.Manifests.MEMORY;
import static dev.gpushare.e2e.Manifests.POLICY_LABEL;
import static dev.gpushare.e2e.Manifests.QOS_ANNOTATION;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kubernetes mode end to end (issue "Kubernetes mode", item 5): the server runs as a child JVM with
 * {@code --kubernetes} against a fabric8 mock API server in CRUD mode, and everything a user does
 * goes through the API server with the calls {@code kubectl} makes — {@code label}/{@code annotate}
 * (JSON merge patches), {@code create -f} (POST of a manifest), {@code delete} — while workloads
 * raise and release demand through the data-plane API (API.md). What gpushare writes is read back
 * from the API server: node status and conditions (SPEC §2), pod annotations {@code
 * gpushare.dev/gpu-index}/{@code gpushare.dev/gpu-uuid}, the pod condition {@code
 * Interruption.GPUShareReclaim} and {@code events.k8s.io/v1} Events (SPEC §7).
 *
 * <p>One API server and one gpushare in KUBELET mode serve the ordered tests that use distinct
 * nodes; the VIRTUAL-mode reference node and the SIGKILL/relist test each get their own pair.
 * Everything asynchronous (informers, the writer) is awaited with a deadline.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubernetesModeTest {

  static final Duration AWAIT = Duration.ofSeconds(30);
  static final String NS = Api.NS;

  /** The child's {@code POD_NAME}: the Events' {@code reportingInstance}. */
  static final String POD_NAME = "gpushare-e2e-0";

  static final String CORE_LIMIT = "alibabacloud.com/gpu-core-limit";
  static final String MEMORY_LIMIT = "alibabacloud.com/gpu-memory-limit";
  static final String GPU_INDEX = "gpushare.dev/gpu-index";
  static final String GPU_UUID = "gpushare.dev/gpu-uuid";
  static final String OWN_ALLOCATABLE = "gpushare.dev/own-allocatable";
  static final String NODE_TYPE = "alibabacloud.com/node-type";
  static final String EXCLUSIVE_GPU = "nvidia.com/gpu";
  static final String VALID = "GPUSharePolicyValid";
  static final String POLICY = "GPUSharePolicy";
  static final String RECLAIM = "Interruption.GPUShareReclaim";
  static final String REFERENCE_QOS =
      "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
          + " \"reservedEphemeralStorage\": \"1.5Ti\"}";

  /** The reference node's own status (deploy/examples/node-status-reference.yaml, sharing off). */
  static final Map<String, String> REF_CAPACITY =
      Map.of("cpu", "176", "memory", "1800Gi", "ephemeral-storage", "6Ti", EXCLUSIVE_GPU, "16");

  static final Map<String, String> REF_ALLOCATABLE =
      Map.of("cpu", "176", "memory", "1800Gi", "ephemeral-storage", "4608Gi", EXCLUSIVE_GPU, "16");

  Cluster main;

  /** The API server each cluster of this class runs against: the fabric8 mock here. */
  KubeApiServer apiServer() {
    return new KubeApiServer();
  }

  @BeforeAll
  void startMainCluster(@TempDir Path dir) {
    main = Cluster.start(this::apiServer, "KubernetesModeTest-kubelet", dir, "kubelet");
  }

  @AfterAll
  void stopMainCluster() {
    if (main != null) {
      main.close();
    }
  }

  // ================================================================ 1 + 5, KUBELET mode

  @Test
  @Order(1)
  void kubeletNodeGainsPercentagesAndConditionsAndLosesThemWithTheLabel() {
    KubeApiServer k = main.kube;
    String n = "hpn-kubelet";
    k.createNode(referenceNode(n, null, null));

    // kubectl label node hpn-kubelet alibabacloud.com/gpu-share-policy=share-pool
    k.label(n, POLICY_LABEL, "share-pool");
    Node on =
        eventually(
            main,
            "node " + n + " shows sharing on (KUBELET: percentages and conditions only)",
            () -> {
              Node x = k.node(n);
              assertResources("capacity", x.getStatus().getCapacity(), with(REF_CAPACITY, 1600));
              assertResources(
                  "allocatable", x.getStatus().getAllocatable(), with(REF_ALLOCATABLE, 1600));
              assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
              assertNodeCondition(
                  x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
              return x;
            });
    assertPercentageText(on, "1600");
    assertKubeletPartsKept(on);
    assertFalse(
        annotations(on).containsKey(OWN_ALLOCATABLE),
        () -> "KUBELET mode records no own allocatable: " + on.getMetadata());
    JsonNode view = main.api.node(n);
    assertEquals("share-pool", view.path("policy").asText(), () -> "arbiter view: " + view);
    assertEquals(16, view.path("gpus").size(), () -> "16 GPUs: " + view);
    eventually(
        main,
        "Event GPUSharePolicyChanged on node " + n,
        () ->
            assertOneEvent(
                k.eventsAbout("Node", n),
                on.getMetadata().getUid(),
                "Normal",
                "GPUSharePolicyChanged",
                "gpu share policy is share-pool."));

    // kubectl label node hpn-kubelet alibabacloud.com/gpu-share-policy-   (absent = none)
    k.label(n, POLICY_LABEL, null);
    Node off =
        eventually(
            main,
            "node " + n + " shows sharing off once the label is removed",
            () -> {
              Node x = k.node(n);
              assertResources("capacity", x.getStatus().getCapacity(), REF_CAPACITY);
              assertResources("allocatable", x.getStatus().getAllocatable(), REF_ALLOCATABLE);
              assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
              assertNodeCondition(x, POLICY, "False", "none", "gpu share policy is none.");
              return x;
            });
    assertKubeletPartsKept(off);
    assertEquals("none", main.api.node(n).path("policy").asText(), "arbiter policy after off");
  }

  /**
   * A kubelet that re-registers writes its own status and drops the extended resources it does not
   * know; the informer sees what gpushare owns change and the writer restores it at once, not only
   * at the periodic resync.
   */
  @Test
  @Order(8)
  void percentagesZeroedByAKubeletAreRestoredAtOnce() {
    KubeApiServer k = main.kube;
    String n = "hpn-reregistered";
    k.createNode(referenceNode(n, null, null));
    k.label(n, POLICY_LABEL, "share-pool");
    eventually(
        main, "node " + n + " shows sharing on", () -> assertPercentageText(k.node(n), "1600"));

    // The kubelet's status update: its own capacity and allocatable, nothing of ours.
    k.kubectl
        .nodes()
        .withName(n)
        .editStatus(
            node -> {
              node.getStatus().getCapacity().remove("alibabacloud.com/gpu-core.percentage");
              node.getStatus().getCapacity().remove("alibabacloud.com/gpu-memory.percentage");
              node.getStatus().getAllocatable().remove("alibabacloud.com/gpu-core.percentage");
              node.getStatus().getAllocatable().remove("alibabacloud.com/gpu-memory.percentage");
              return node;
            });
    eventually(
        main,
        "node " + n + " has its percentage resources back",
        () -> assertPercentageText(k.node(n), "1600"));
  }

  // ================================================================ 2: exclusive-GPU pods

  @Test
  @Order(2)
  void exclusiveGpuPodKeepsSharingOffUntilItIsDeleted() {
    KubeApiServer k = main.kube;
    String n = "excl-node";
    String pod = "cuda-exclusive";
    k.createNode(smallNode(n, 2, "none", null));
    k.create(
        """
        apiVersion: v1
        kind: Pod
        metadata:
          name: %s
          namespace: default
        spec:
          nodeName: %s
          containers:
          - name: cuda
            image: registry.example/cuda:v1
            resources:
              limits: {nvidia.com/gpu: 1}
              requests: {nvidia.com/gpu: 1}
        """
            .formatted(pod, n));
    k.kubeletRuns(pod);
    eventually(
        main,
        "the arbiter knows pod " + pod,
        () -> {
          Api.Resp r = main.api.get(Api.podPath(pod));
          assertEquals(200, r.status(), () -> "GET pod: " + r);
          assertEquals(n, r.json().path("node").asText(), () -> "bound to " + n + ": " + r);
        });

    k.label(n, POLICY_LABEL, "share-pool");
    Node blocked =
        eventually(
            main,
            "node " + n + " says why sharing stays off",
            () -> {
              Node x = k.node(n);
              NodeCondition valid = condition(x, VALID);
              assertNotNull(valid, () -> "condition " + VALID + ": " + x.getStatus());
              assertEquals("False", valid.getStatus(), () -> VALID + ": " + valid);
              assertEquals(
                  "ExclusiveGPUPodsPresent", valid.getReason(), () -> VALID + ": " + valid);
              assertTrue(
                  valid.getMessage().contains(NS + "/" + pod),
                  () -> "the message names the pod " + NS + "/" + pod + ": " + valid.getMessage());
              assertNodeCondition(x, POLICY, "False", "none", "gpu share policy is none.");
              assertNoPercentages(x);
              return x;
            });
    String blockedMessage = condition(blocked, VALID).getMessage();
    eventually(
        main,
        "Warning Event ExclusiveGPUPodsPresent on node " + n,
        () ->
            assertOneEvent(
                k.eventsAbout("Node", n),
                blocked.getMetadata().getUid(),
                "Warning",
                "ExclusiveGPUPodsPresent",
                blockedMessage));
    assertEquals("none", main.api.node(n).path("policy").asText(), "arbiter: sharing stays off");

    // kubectl delete pod cuda-exclusive
    k.deletePod(pod);
    eventually(
        main,
        "node " + n + " shares once the exclusive pod is gone",
        () -> {
          Node x = k.node(n);
          assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
          assertNodeCondition(x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
          assertPercentageText(x, "200");
        });
    eventually(
        main,
        "the arbiter forgets pod " + pod,
        () -> assertEquals(404, main.api.get(Api.podPath(pod)).status()));
    assertEquals("share-pool", main.api.node(n).path("policy").asText(), "arbiter policy");
  }

  // ================================================================ 3: bad QoS annotation

  @Test
  @Order(3)
  void badQosAnnotationIsReportedAndTheLastValidConfigIsKept() {
    KubeApiServer k = main.kube;
    String n = "qos-node";
    k.createNode(smallNode(n, 1, "share-pool", null));
    String good = "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}";
    // kubectl annotate node qos-node alibabacloud.com/gpu-share-qos-config='{…}'
    k.annotate(n, QOS_ANNOTATION, good);
    eventually(
        main,
        "the arbiter applies the good QoS config",
        () -> assertQos(main.api.node(n), true, 60, "0"));
    eventually(
        main,
        "node " + n + " is valid",
        () ->
            assertNodeCondition(
                k.node(n), VALID, "True", "Valid", "gpu share policy config is valid."));

    String bad =
        "{\"preemptEnabled\": \"yes\", \"podMaxDurationMinutes\": 0, \"colour\": \"blue\"}";
    // the same edit through `kubectl edit` (fabric8 edit: read, change, JSON patch)
    k.kubectl
        .nodes()
        .withName(n)
        .edit(
            x ->
                new NodeBuilder(x)
                    .editMetadata()
                    .addToAnnotations(QOS_ANNOTATION, bad)
                    .endMetadata()
                    .build());
    Node invalid =
        eventually(
            main,
            "node " + n + " reports the invalid QoS config",
            () -> {
              Node x = k.node(n);
              NodeCondition valid = condition(x, VALID);
              assertNotNull(valid, () -> "condition " + VALID + ": " + x.getStatus());
              assertEquals("False", valid.getStatus(), () -> VALID + ": " + valid);
              assertEquals("InvalidQoSConfig", valid.getReason(), () -> VALID + ": " + valid);
              for (String field : List.of("preemptEnabled", "podMaxDurationMinutes", "colour")) {
                assertTrue(
                    valid.getMessage().contains(field),
                    () -> "the message names the field " + field + ": " + valid.getMessage());
              }
              // the policy itself stays in force, with the last valid QoS config
              assertNodeCondition(
                  x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
              assertPercentageText(x, "100");
              return x;
            });
    String message = condition(invalid, VALID).getMessage();
    eventually(
        main,
        "Warning Event InvalidQoSConfig on node " + n,
        () ->
            assertOneEvent(
                k.eventsAbout("Node", n),
                invalid.getMetadata().getUid(),
                "Warning",
                "InvalidQoSConfig",
                message));
    JsonNode view = main.api.node(n);
    assertQos(view, true, 60, "0");
    assertEquals("share-pool", view.path("policy").asText(), () -> "arbiter view: " + view);

    // malformed JSON: another error, another Event; still the last valid config
    k.annotate(n, QOS_ANNOTATION, "{\"preemptEnabled\": tru");
    Node malformed =
        eventually(
            main,
            "node " + n + " reports the malformed QoS config",
            () -> {
              Node x = k.node(n);
              NodeCondition valid = condition(x, VALID);
              assertEquals("InvalidQoSConfig", valid.getReason(), () -> VALID + ": " + valid);
              assertFalse(valid.getMessage().equals(message), () -> "a new message: " + valid);
              assertTrue(
                  valid.getMessage().contains(QOS_ANNOTATION),
                  () -> "the message names the annotation: " + valid.getMessage());
              return x;
            });
    String malformedMessage = condition(malformed, VALID).getMessage();
    eventually(
        main,
        "a second Warning Event InvalidQoSConfig on node " + n,
        () ->
            assertOneEvent(
                k.eventsAbout("Node", n),
                malformed.getMetadata().getUid(),
                "Warning",
                "InvalidQoSConfig",
                malformedMessage));
    assertQos(main.api.node(n), true, 60, "0");

    // fixed: valid again, the new config applies
    k.annotate(n, QOS_ANNOTATION, "{\"preemptEnabled\": false, \"podMaxDurationMinutes\": 30}");
    eventually(
        main,
        "node " + n + " is valid again",
        () -> {
          assertNodeCondition(
              k.node(n), VALID, "True", "Valid", "gpu share policy config is valid.");
          assertQos(main.api.node(n), false, 30, "0");
        });
  }

  // ================================================================ 4: SPEC §5 and preemption

  @Test
  @Order(4)
  void referenceExampleWithPodsFromTheApiServer() {
    KubeApiServer k = main.kube;
    String n = "ref-example";
    k.createNode(smallNode(n, 2, "share-pool", null));
    eventually(
        main,
        "the arbiter registers " + n,
        () -> assertEquals("share-pool", main.api.node(n).path("policy").asText()));
    String a = "ref-a";
    String b = "ref-b";
    String c = "ref-c";
    String d = "ref-d";
    // A and B: requests 50, limits 50. C and D: requests 50, limits 100 (as the webhook wrote
    // them).
    for (String p : List.of(a, b)) {
      k.create(sharePodYaml(p, n, 50, 50));
    }
    for (String p : List.of(c, d)) {
      k.create(sharePodYaml(p, n, 50, 100));
    }
    for (String p : List.of(a, b, c, d)) {
      k.kubeletRuns(p);
    }
    for (String p : List.of(a, b, c, d)) {
      JsonNode v = awaitArbiterPod(main, p);
      assertHibernation(v);
      assertEquals("share-pool", v.path("policy").asText(), () -> "policy: " + v);
      assertEquals(n, v.path("node").asText(), () -> "node: " + v);
      assertEquals(50, v.path("requests").path("core").asInt(), () -> "requests: " + v);
      assertEquals(50, v.path("requests").path("memory").asInt(), () -> "requests: " + v);
      int limit = p.equals(a) || p.equals(b) ? 50 : 100;
      assertEquals(limit, v.path("limits").path("core").asInt(), () -> "limits (annotation): " + v);
      assertEquals(limit, v.path("limits").path("memory").asInt(), () -> "limits: " + v);
      assertEquals(
          k.pod(p).getMetadata().getUid(), v.path("uid").asText(), () -> "uid from the API: " + v);
    }

    // T1: A on GPU 0, C on GPU 1; then D, then B queue (head-of-line blocking).
    Api api = main.api;
    assertRunningOn(api.demand(a), 0);
    assertRunningOn(api.demand(c), 1);
    assertReady(api.demand(d), 1);
    assertReady(api.demand(b), 2);
    JsonNode queue = api.queue(n);
    assertEquals(keys(d, b), queueOrder(queue), () -> "queue at T1: " + queue);
    JsonNode t1 = api.node(n);
    assertGpu(t1, 0, 50, 50, a);
    assertGpu(t1, 1, 100, 100, c);
    String uuid0 = gpu(t1, 0).path("uuid").asText();
    String uuid1 = gpu(t1, 1).path("uuid").asText();
    eventually(
        main,
        "device annotations at T1",
        () -> {
          assertDevice(k.pod(a), "0", uuid0);
          assertDevice(k.pod(c), "1", uuid1);
          assertDevice(k.pod(d), null, null);
          assertDevice(k.pod(b), null, null);
        });

    // T2: C finishes; phase 1: D gets GPU 1; phase 2: B gets GPU 0 beside A.
    assertHibernation(api.release(c));
    assertRunningOn(api.pod(d), 1);
    assertRunningOn(api.pod(b), 0);
    assertRunningOn(api.pod(a), 0);
    assertEquals(0, api.queue(n).size(), () -> "queue after T2: " + api.queue(n));
    JsonNode t2 = api.node(n);
    assertGpu(t2, 0, 100, 100, a, b);
    assertGpu(t2, 1, 100, 100, d);
    eventually(
        main,
        "device annotations after T2",
        () -> {
          assertDevice(k.pod(a), "0", uuid0);
          assertDevice(k.pod(b), "0", uuid0);
          assertDevice(k.pod(d), "1", uuid1);
          assertDevice(k.pod(c), null, null);
        });
    for (String p : List.of(a, b, c, d)) {
      Pod pod = k.pod(p);
      String limit = p.equals(a) || p.equals(b) ? "50" : "100";
      assertEquals(limit, annotations(pod).get(CORE_LIMIT), () -> "webhook's annotation: " + pod);
      assertEquals(limit, annotations(pod).get(MEMORY_LIMIT), () -> "webhook's annotation: " + pod);
      assertNotNull(condition(pod, "Ready"), () -> "the kubelet's condition stays: " + pod);
      assertNull(condition(pod, RECLAIM), () -> "no preemption here: " + pod.getStatus());
    }
  }

  @Test
  @Order(5)
  void preemptionWritesEventsAndPodConditions() {
    KubeApiServer k = main.kube;
    String n = "preempt-node";
    k.createNode(
        smallNode(n, 1, "share-pool", "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}"));
    eventually(
        main, "the arbiter applies the QoS", () -> assertQos(main.api.node(n), true, 60, "0"));
    String old = "old";
    String neu = "new";
    for (String p : List.of(old, neu)) {
      k.create(sharePodYaml(p, n, 10, 100));
      k.kubeletRuns(p);
      awaitArbiterPod(main, p);
    }
    Api api = main.api;
    assertRunningOn(api.demand(old), 0);
    assertReady(api.demand(neu), 1);
    api.advance(3600);
    assertRunningOn(api.pod(old), 0); // 60 minutes is not *more* than 60
    api.advance(1);
    assertReady(api.pod(old), 1);
    assertRunningOn(api.pod(neu), 0);
    String uuid = api.pod(neu).path("gpu").path("uuid").asText();

    Pod oldPod = k.pod(old);
    Pod newPod = k.pod(neu);
    eventually(
        main,
        "Events GPUSharePreempted / GPUSharePreempt",
        () -> {
          assertOneEvent(
              k.eventsAbout("Pod", old),
              oldPod.getMetadata().getUid(),
              "Warning",
              "GPUSharePreempted",
              "GPU is preempted by new.");
          assertOneEvent(
              k.eventsAbout("Pod", neu),
              newPod.getMetadata().getUid(),
              "Warning",
              "GPUSharePreempt",
              "GPU is preempted from old.");
        });
    eventually(
        main,
        "pod conditions " + RECLAIM + " and device annotations",
        () -> {
          Pod o = k.pod(old);
          Pod w = k.pod(neu);
          assertPodCondition(o, RECLAIM, "True", "GPUSharePreempted", "GPU is preempted by new.");
          assertPodCondition(w, RECLAIM, "True", "GPUSharePreempt", "GPU is preempted from old.");
          assertNotNull(condition(o, "Ready"), () -> "the kubelet's Ready stays: " + o);
          assertNotNull(condition(w, "Ready"), () -> "the kubelet's Ready stays: " + w);
          assertEquals("Running", o.getStatus().getPhase(), "the kubelet's phase stays");
          assertDevice(w, "0", uuid);
          assertDevice(o, null, null);
        });
    // the arbiter's own record says the same
    JsonNode ov = api.pod(old);
    assertNotNull(Checks.event(ov, "GPUSharePreempted"), () -> "PodView events: " + ov);
  }

  // ================================================================ 1 + 5, VIRTUAL mode

  @Test
  @Order(6)
  void virtualNodeShowsTheReferenceStatusOnAndOff(@TempDir Path dir) {
    try (Cluster v = Cluster.start(this::apiServer, "KubernetesModeTest-virtual", dir, "virtual")) {
      KubeApiServer k = v.kube;
      String n = "hpn-virtual";
      k.createNode(referenceNode(n, null, null));

      k.label(n, POLICY_LABEL, "share-pool");
      eventually(
          v,
          "node " + n + " reserves CPU and memory for the sharing module",
          () -> {
            Node x = k.node(n);
            assertResources("capacity", x.getStatus().getCapacity(), with(REF_CAPACITY, 1600));
            Map<String, String> alloc = with(REF_ALLOCATABLE, 1600);
            alloc.put("cpu", "144");
            alloc.put("memory", "1640Gi");
            assertResources("allocatable", x.getStatus().getAllocatable(), alloc);
            assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
            assertNodeCondition(x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
          });

      // a reservation that bites: 6Ti − 2Ti = 4Ti, below the node's own 4608Gi
      k.annotate(n, QOS_ANNOTATION, "{\"reservedEphemeralStorage\": \"2Ti\"}");
      eventually(
          v,
          "ephemeral storage 6Ti − 2Ti",
          () -> assertQuantity("ephemeral-storage", "4Ti", allocatable(k.node(n))));

      // kubectl annotate node … alibabacloud.com/gpu-share-qos-config='{… "1.5Ti"}' --overwrite
      k.annotate(n, QOS_ANNOTATION, REFERENCE_QOS);
      Node on =
          eventually(
              v,
              "node " + n + " shows deploy/examples/node-status-reference.yaml (sharing on)",
              () -> {
                Node x = k.node(n);
                Map<String, String> alloc = with(REF_ALLOCATABLE, 1600);
                alloc.put("cpu", "144");
                alloc.put("memory", "1640Gi");
                alloc.put("ephemeral-storage", "4608Gi");
                assertResources("capacity", x.getStatus().getCapacity(), with(REF_CAPACITY, 1600));
                assertResources("allocatable", x.getStatus().getAllocatable(), alloc);
                assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
                assertNodeCondition(
                    x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
                return x;
              });
      assertPercentageText(on, "1600");
      assertKubeletPartsKept(on);
      assertQos(v.api.node(n), true, 120, "1.5Ti");
      String own = annotations(on).get(OWN_ALLOCATABLE);
      assertNotNull(own, () -> "VIRTUAL records the own allocatable: " + on.getMetadata());
      Map<String, String> recorded = new TreeMap<>();
      readJson(own).properties().forEach(e -> recorded.put(e.getKey(), e.getValue().asText()));
      assertEquals(
          new TreeSet<>(List.of("cpu", "ephemeral-storage", "memory")),
          recorded.keySet(),
          () -> OWN_ALLOCATABLE + ": " + own);
      assertQuantity("cpu", "176", quantities(recorded));
      assertQuantity("memory", "1800Gi", quantities(recorded));
      assertQuantity("ephemeral-storage", "4608Gi", quantities(recorded));

      // the reference pod (deploy/examples/gpu-share-demo.yaml) as the webhook admits it, bound
      // here
      Pod demo = asTheWebhookAdmitsIt(demoPod(), n);
      k.kubectl.pods().inNamespace(NS).resource(demo).create();
      k.kubeletRuns("gpu-share-demo");
      JsonNode dv = awaitArbiterPod(v, "gpu-share-demo");
      assertHibernation(dv);
      assertEquals(10, dv.path("requests").path("core").asInt(), () -> "requests: " + dv);
      assertEquals(100, dv.path("limits").path("core").asInt(), () -> "limits: " + dv);
      assertEquals(100, dv.path("limits").path("memory").asInt(), () -> "limits: " + dv);
      JsonNode running = v.api.demand("gpu-share-demo");
      assertRunningOn(running, 0);
      String uuid = running.path("gpu").path("uuid").asText();
      eventually(
          v, "the demo pod's device", () -> assertDevice(k.pod("gpu-share-demo"), "0", uuid));
      assertHibernation(v.api.release("gpu-share-demo"));
      eventually(
          v, "no device after release", () -> assertDevice(k.pod("gpu-share-demo"), null, null));

      // turning sharing off waits for the shared pod (PolicyChangePending), then applies
      k.label(n, POLICY_LABEL, "none");
      eventually(
          v,
          "policy none is pending while gpu-share-demo is bound",
          () -> {
            Node x = k.node(n);
            NodeCondition valid = condition(x, VALID);
            assertNotNull(valid, () -> "condition " + VALID + ": " + x.getStatus());
            assertEquals("False", valid.getStatus(), () -> VALID + ": " + valid);
            assertEquals("PolicyChangePending", valid.getReason(), () -> VALID + ": " + valid);
            assertTrue(
                valid.getMessage().contains(NS + "/gpu-share-demo"),
                () -> "names the pod in the way: " + valid.getMessage());
            assertNodeCondition(x, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
            assertQuantity("cpu", "144", allocatable(x));
          });
      k.deletePod("gpu-share-demo");
      Node off =
          eventually(
              v,
              "node " + n + " shows deploy/examples/node-status-reference.yaml (sharing off)",
              () -> {
                Node x = k.node(n);
                assertResources("capacity", x.getStatus().getCapacity(), REF_CAPACITY);
                assertResources("allocatable", x.getStatus().getAllocatable(), REF_ALLOCATABLE);
                assertNodeCondition(x, VALID, "True", "Valid", "gpu share policy config is valid.");
                assertNodeCondition(x, POLICY, "False", "none", "gpu share policy is none.");
                assertFalse(
                    annotations(x).containsKey(OWN_ALLOCATABLE),
                    () -> "the own-allocatable record is removed: " + x.getMetadata());
                return x;
              });
      assertKubeletPartsKept(off);
      assertEquals("none", v.api.node(n).path("policy").asText(), "arbiter policy after off");
    }
  }

  // ================================================================ 6: SIGKILL and relist

  @Test
  @Order(7)
  void sigkillAndRelistWriteNothingTwiceAndPodsKeepTheirDevices(@TempDir Path dir) {
    String ref = "hpn-restart";
    String one = "one-gpu";
    try (Cluster c =
        Cluster.start(
            this::apiServer,
            "KubernetesModeTest-restart",
            dir,
            "virtual",
            kube -> {
              // labelled before gpushare starts: the initial list registers them
              kube.createNode(referenceNode(ref, "share-pool", REFERENCE_QOS));
              kube.createNode(
                  smallNode(
                      one,
                      1,
                      "share-pool",
                      "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}"));
            })) {
      KubeApiServer k = c.kube;
      eventually(
          c,
          "both nodes share",
          () -> {
            assertQuantity("cpu", "144", allocatable(k.node(ref)));
            assertPercentageText(k.node(ref), "1600");
            assertPercentageText(k.node(one), "100");
          });
      for (String p : List.of("old-r", "new-r")) {
        k.create(sharePodYaml(p, one, 10, 100));
        k.kubeletRuns(p);
        awaitArbiterPod(c, p);
      }
      k.create(sharePodYaml("probe-r", ref, 10, 100));
      k.create(sharePodYaml("keep-r", ref, 10, 100));
      awaitArbiterPod(c, "probe-r");
      awaitArbiterPod(c, "keep-r");
      assertRunningOn(c.api.demand("keep-r"), 0);
      assertRunningOn(c.api.demand("old-r"), 0);
      assertReady(c.api.demand("new-r"), 1);
      c.api.advance(3601);
      assertRunningOn(c.api.pod("new-r"), 0);
      assertReady(c.api.pod("old-r"), 1);
      String newUuid = c.api.pod("new-r").path("gpu").path("uuid").asText();
      String keepUuid = c.api.pod("keep-r").path("gpu").path("uuid").asText();
      eventually(
          c,
          "everything written before the crash",
          () -> {
            assertDevice(k.pod("new-r"), "0", newUuid);
            assertDevice(k.pod("keep-r"), "0", keepUuid);
            assertPodCondition(
                k.pod("old-r"), RECLAIM, "True", "GPUSharePreempted", "GPU is preempted by new-r.");
            assertEquals(1, count(k.eventsAbout("Pod", "old-r"), "GPUSharePreempted"));
            assertEquals(1, count(k.eventsAbout("Pod", "new-r"), "GPUSharePreempt"));
            assertEquals(1, count(k.eventsAbout("Node", ref), "GPUSharePolicyChanged"));
            assertEquals(1, count(k.eventsAbout("Node", one), "GPUSharePolicyChanged"));
          });
      Map<String, String> eventsBefore = eventSummary(k.events());

      // SIGKILL; meanwhile others change what gpushare owns (a kubelet re-registering zeroes the
      // extended resources, a user strips an annotation and a condition)
      c.server.crash();
      k.kubectl
          .nodes()
          .withName(ref)
          .editStatus(
              x -> {
                Node y = new NodeBuilder(x).build();
                y.getStatus().getCapacity().put(CORE, new Quantity("0"));
                y.getStatus().getAllocatable().put(CORE, new Quantity("0"));
                return y;
              });
      k.removePodAnnotations("new-r", GPU_INDEX, GPU_UUID);
      k.kubectl
          .pods()
          .inNamespace(NS)
          .withName("old-r")
          .editStatus(
              x -> {
                Pod y = new PodBuilder(x).build();
                y.getStatus().getConditions().removeIf(cond -> RECLAIM.equals(cond.getType()));
                return y;
              });
      c.restart();

      eventually(
          c,
          "the restarted writer repairs what others changed, computing from the own allocatable",
          () -> {
            Node x = k.node(ref);
            Map<String, String> alloc = with(REF_ALLOCATABLE, 1600);
            alloc.put("cpu", "144");
            alloc.put("memory", "1640Gi");
            assertResources("allocatable", x.getStatus().getAllocatable(), alloc);
            assertResources("capacity", x.getStatus().getCapacity(), with(REF_CAPACITY, 1600));
            assertDevice(k.pod("new-r"), "0", newUuid);
            assertPodCondition(
                k.pod("old-r"), RECLAIM, "True", "GPUSharePreempted", "GPU is preempted by new-r.");
          });
      // keep-r holds GPU 0 with limit 100: best fit puts the probe on GPU 1
      assertRunningOn(c.api.demand("probe-r"), 1);
      String probeUuid = c.api.pod("probe-r").path("gpu").path("uuid").asText();
      eventually(c, "the probe's device", () -> assertDevice(k.pod("probe-r"), "1", probeUuid));
      // barrier: the writer's own count of unfinished work (its passes run in priority order on
      // several workers, Events after decisions, so no single write shows that the rest is done)
      eventually(
          c,
          "the restarted writer has nothing left to write",
          () ->
              assertEquals(
                  0.0,
                  metric(c.api.get("/metrics").body(), "gpushare_kubernetes_writer_backlog"),
                  "backlog"));

      Map<String, String> eventsAfter = eventSummary(k.events());
      assertEquals(eventsBefore, eventsAfter, "no Event is written twice after a relist");
      Map<String, Integer> perReason = new TreeMap<>();
      for (Event e : k.events()) {
        perReason.merge(
            e.getRegarding().getKind()
                + "/"
                + e.getRegarding().getName()
                + " "
                + e.getReason()
                + ": "
                + e.getNote(),
            1,
            Integer::sum);
      }
      perReason.forEach(
          (what, times) -> assertEquals(1, times, () -> "Event written " + times + "×: " + what));
      // …and the restarted writer wrote none of them again, not even one the API server refused as
      // existing: it found them when it started (its own count of Event writes)
      assertEquals(
          0.0,
          metric(c.api.get("/metrics").body(), "gpushare_kubernetes_writes_total{kind=\"event\"}"),
          "Events the restarted member wrote");

      // the pods kept their devices, in the arbiter and in the API server
      assertRunningOn(c.api.pod("new-r"), 0);
      assertEquals(newUuid, c.api.pod("new-r").path("gpu").path("uuid").asText());
      assertRunningOn(c.api.pod("keep-r"), 0);
      assertEquals(keepUuid, c.api.pod("keep-r").path("gpu").path("uuid").asText());
      assertReady(c.api.pod("old-r"), 1);
      assertDevice(k.pod("keep-r"), "0", keepUuid);
      assertDevice(k.pod("new-r"), "0", newUuid);
      assertDevice(k.pod("old-r"), null, null);
    }
  }

  // ================================================================ the cluster

  /** A mock API server and a gpushare child in Kubernetes mode pointed at it. */
  static final class Cluster implements AutoCloseable {
    final KubeApiServer kube;
    final Path dir;
    final String label;
    final String mode;
    ServerProcess server;
    Api api;
    private String memberConfig = "";
    private List<String> memberArgs = List.of();

    private Cluster(KubeApiServer kube, Path dir, String label, String mode) {
      this.kube = kube;
      this.dir = dir;
      this.label = label;
      this.mode = mode;
    }

    static Cluster start(
        java.util.function.Supplier<KubeApiServer> servers, String label, Path dir, String mode) {
      return start(servers, label, dir, mode, kube -> {});
    }

    /** {@code before} prepares the API server before gpushare starts. */
    static Cluster start(
        java.util.function.Supplier<KubeApiServer> servers,
        String label,
        Path dir,
        String mode,
        Consumer<KubeApiServer> before) {
      return start(servers, label, dir, mode, before, "", List.of());
    }

    /**
     * As above, with {@code memberConfig} (HOCON) added inside the member's {@code gpushare { }}
     * and {@code memberArgs} added to its command line.
     */
    static Cluster start(
        java.util.function.Supplier<KubeApiServer> servers,
        String label,
        Path dir,
        String mode,
        Consumer<KubeApiServer> before,
        String memberConfig,
        List<String> memberArgs) {
      KubeApiServer kube = servers.get();
      Cluster c = new Cluster(kube, dir, label, mode);
      c.memberConfig = memberConfig;
      c.memberArgs = List.copyOf(memberArgs);
      try {
        before.accept(kube);
        c.launch();
        return c;
      } catch (RuntimeException e) {
        kube.close();
        throw e;
      }
    }

    private void launch() {
      Path config = dir.resolve("gpushare.conf");
      try {
        Files.writeString(
            config,
            """
            gpushare {
              nodes = []
              kubernetes {
                node-status-mode = %s
                qps = 200
                burst = 400
                max-backoff = 2s
              }
            %s
            }
            """
                .formatted(mode, memberConfig));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      List<String> jvm = kube.clientProperties();
      Map<String, String> env = kube.memberEnvironment();
      env.put("POD_NAME", POD_NAME);
      List<String> args = new ArrayList<>(List.of("--kubernetes", "--config", config.toString()));
      args.addAll(memberArgs);
      server =
          ServerProcess.start(label, dir.resolve("data"), jvm, env, args.toArray(String[]::new));
      api = server.api();
    }

    /** Starts the child again on the same data, after {@link ServerProcess#crash()}. */
    void restart() {
      server.restart();
      api = server.api();
    }

    String diagnostics() {
      List<String> recent = kube.recentExchanges();
      return "\nserver log: "
          + (server == null ? "-" : server.logFile())
          + "\nlast API-server requests:\n  "
          + String.join("\n  ", recent.subList(Math.max(0, recent.size() - 25), recent.size()));
    }

    /** Stops the child, then fails if its log shows the API server refusing it (RBAC). */
    @Override
    public void close() {
      try {
        if (server != null) {
          server.stop();
          kube.assertNoDenials(server.logFile());
        }
      } finally {
        kube.close();
      }
    }
  }

  // ================================================================ awaiting

  interface Check {
    void run() throws Exception;
  }

  static void eventually(Cluster c, String what, Check check) {
    eventually(
        c,
        what,
        () -> {
          check.run();
          return null;
        });
  }

  /** Polls {@code check} until it passes or {@link #AWAIT} is over; then its last failure. */
  static <T> T eventually(Cluster c, String what, Callable<T> check) {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    while (true) {
      try {
        return check.call();
      } catch (AssertionError | KubernetesClientException | NullPointerException e) {
        if (System.nanoTime() - deadline > 0) {
          AssertionError failure =
              new AssertionError(
                  what
                      + ": not within "
                      + AWAIT.toSeconds()
                      + " s; last check: "
                      + e
                      + c.diagnostics(),
                  e);
          throw failure;
        }
      } catch (Exception e) {
        throw new AssertionError(what + ": " + e + c.diagnostics(), e);
      }
      try {
        Thread.sleep(25); // poll interval
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }

  static JsonNode awaitArbiterPod(Cluster c, String name) {
    return eventually(
        c,
        "the arbiter knows pod " + name,
        () -> {
          Api.Resp r = c.api.get(Api.podPath(name));
          assertEquals(200, r.status(), () -> "GET pod: " + r);
          return r.json();
        });
  }

  // ================================================================ manifests

  /** The reference GPU-HPN node as its kubelet registers it (SPEC §2, sharing off). */
  static Node referenceNode(String name, String policy, String qos) {
    return kubeletNode(name, policy, qos, REF_CAPACITY, REF_ALLOCATABLE);
  }

  static Node smallNode(String name, int gpus, String policy, String qos) {
    Map<String, String> own =
        Map.of(
            "cpu",
            "32",
            "memory",
            "256Gi",
            "ephemeral-storage",
            "1Ti",
            EXCLUSIVE_GPU,
            String.valueOf(gpus));
    return kubeletNode(name, policy, qos, own, own);
  }

  static Node kubeletNode(
      String name,
      String policy,
      String qos,
      Map<String, String> capacity,
      Map<String, String> allocatable) {
    NodeBuilder b =
        new NodeBuilder()
            .withNewMetadata()
            .withName(name)
            .addToLabels(NODE_TYPE, "reserved")
            .addToLabels("kubernetes.io/hostname", name)
            .endMetadata();
    if (policy != null) {
      b.editMetadata().addToLabels(POLICY_LABEL, policy).endMetadata();
    }
    if (qos != null) {
      b.editMetadata().addToAnnotations(QOS_ANNOTATION, qos).endMetadata();
    }
    return b.withNewStatus()
        .withCapacity(quantities(capacity))
        .withAllocatable(quantities(allocatable))
        .addNewCondition()
        .withType("Ready")
        .withStatus("True")
        .withReason("KubeletReady")
        .withMessage("kubelet is posting ready status")
        .withLastHeartbeatTime("2026-01-01T00:00:00Z")
        .withLastTransitionTime("2026-01-01T00:00:00Z")
        .endCondition()
        .addNewAddress()
        .withType("InternalIP")
        .withAddress("10.0.0.7")
        .endAddress()
        .endStatus()
        .build();
  }

  /**
   * A share-pool pod as the admission webhook leaves it (SPEC §3): container limits equal to the
   * requests, the limits in the annotations.
   */
  static String sharePodYaml(String name, String node, int request, int limit) {
    return """
        apiVersion: v1
        kind: Pod
        metadata:
          name: %1$s
          namespace: default
          labels:
            %2$s: gpu-hpn
            %3$s: share-pool
          annotations:
            %4$s: "%7$d"
            %5$s: "%7$d"
        spec:
          nodeName: %6$s
          containers:
          - name: main
            image: registry.example/stress:v1
            command: [sleep]
            args: [1000h]
            resources:
              requests: {cpu: "1", memory: 1Gi, %8$s: %9$d, %10$s: %9$d}
              limits: {cpu: "1", memory: 1Gi, %8$s: %9$d, %10$s: %9$d}
        """
        .formatted(
            name,
            COMPUTE_CLASS,
            POLICY_LABEL,
            CORE_LIMIT,
            MEMORY_LIMIT,
            node,
            limit,
            CORE,
            request,
            MEMORY);
  }

  /** The reference manifest users write, deploy/examples/gpu-share-demo.yaml, unchanged. */
  static Pod demoPod() {
    try (InputStream in =
        KubernetesModeTest.class.getResourceAsStream("/examples/gpu-share-demo.yaml")) {
      if (in == null) {
        throw new IllegalStateException(
            "no test resource examples/gpu-share-demo.yaml (deploy/examples/ on the test class"
                + " path, src-test/pom.xml)");
      }
      return Serialization.unmarshal(in, Pod.class);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * What the mutating webhook makes of a pod (SPEC §3): percentage limits into the annotations,
   * container limits equal to the requests; and what the scheduler adds: {@code spec.nodeName}.
   */
  static Pod asTheWebhookAdmitsIt(Pod pod, String node) {
    var container = pod.getSpec().getContainers().get(0);
    Map<String, Quantity> limits = container.getResources().getLimits();
    Map<String, Quantity> requests = container.getResources().getRequests();
    Map<String, String> annotations =
        pod.getMetadata().getAnnotations() == null
            ? new LinkedHashMap<>()
            : new LinkedHashMap<>(pod.getMetadata().getAnnotations());
    annotations.put(CORE_LIMIT, limits.get(CORE).toString());
    annotations.put(MEMORY_LIMIT, limits.get(MEMORY).toString());
    pod.getMetadata().setAnnotations(annotations);
    limits.put(CORE, requests.get(CORE));
    limits.put(MEMORY, requests.get(MEMORY));
    pod.getSpec().setNodeName(node);
    return pod;
  }

  // ================================================================ assertions

  static Map<String, Quantity> quantities(Map<String, String> map) {
    Map<String, Quantity> out = new LinkedHashMap<>();
    map.forEach((k, v) -> out.put(k, new Quantity(v)));
    return out;
  }

  /** {@code own} plus both percentage resources at {@code percent}. */
  static Map<String, String> with(Map<String, String> own, int percent) {
    Map<String, String> out = new TreeMap<>(own);
    out.put(CORE, String.valueOf(percent));
    out.put(MEMORY, String.valueOf(percent));
    return out;
  }

  static Map<String, Quantity> allocatable(Node n) {
    return n.getStatus().getAllocatable();
  }

  /** Exactly these resources, each equal by value (as the API server compares quantities). */
  static void assertResources(String what, Map<String, Quantity> actual, Map<String, String> want) {
    Map<String, Quantity> got = actual == null ? Map.of() : actual;
    assertEquals(
        new TreeSet<>(want.keySet()),
        new TreeSet<>(got.keySet()),
        () -> what + ": resource names; was " + new TreeMap<>(got));
    want.forEach((name, q) -> assertQuantity(name, q, got));
  }

  static void assertQuantity(String name, String want, Map<String, Quantity> got) {
    Quantity q = got == null ? null : got.get(name);
    assertNotNull(q, () -> name + " missing: " + got);
    assertEquals(
        0,
        Quantity.getAmountInBytes(new Quantity(want)).compareTo(Quantity.getAmountInBytes(q)),
        () -> name + ": want " + want + ", was " + q);
  }

  static void assertPercentageText(Node n, String text) {
    for (var resources : List.of(n.getStatus().getCapacity(), n.getStatus().getAllocatable())) {
      for (String r : List.of(CORE, MEMORY)) {
        Quantity q = resources.get(r);
        assertNotNull(q, () -> r + " missing: " + resources);
        assertEquals(text, q.toString(), () -> r + " as text: " + resources);
      }
    }
  }

  static void assertNoPercentages(Node n) {
    for (var resources : List.of(n.getStatus().getCapacity(), n.getStatus().getAllocatable())) {
      assertFalse(resources.containsKey(CORE), () -> "no " + CORE + " while off: " + resources);
      assertFalse(resources.containsKey(MEMORY), () -> "no " + MEMORY + " while off: " + resources);
    }
  }

  /** The kubelet's condition untouched (gpushare patches only its own), and its address. */
  static void assertKubeletPartsKept(Node n) {
    NodeCondition ready =
        n.getStatus().getConditions().stream()
            .filter(c -> c.getType().equals("Ready"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("the kubelet's condition: " + n.getStatus()));
    assertEquals("KubeletReady", ready.getReason());
    assertEquals("2026-01-01T00:00:00Z", ready.getLastHeartbeatTime());
    assertEquals("10.0.0.7", n.getStatus().getAddresses().get(0).getAddress());
  }

  static NodeCondition condition(Node n, String type) {
    if (n.getStatus() == null || n.getStatus().getConditions() == null) {
      return null;
    }
    return n.getStatus().getConditions().stream()
        .filter(c -> type.equals(c.getType()))
        .findFirst()
        .orElse(null);
  }

  static PodCondition condition(Pod p, String type) {
    if (p.getStatus() == null || p.getStatus().getConditions() == null) {
      return null;
    }
    return p.getStatus().getConditions().stream()
        .filter(c -> type.equals(c.getType()))
        .findFirst()
        .orElse(null);
  }

  static void assertNodeCondition(
      Node n, String type, String status, String reason, String message) {
    NodeCondition c = condition(n, type);
    assertNotNull(c, () -> "condition " + type + " missing: " + n.getStatus().getConditions());
    assertEquals(status, c.getStatus(), () -> type + ".status: " + c);
    assertEquals(reason, c.getReason(), () -> type + ".reason: " + c);
    assertEquals(message, c.getMessage(), () -> type + ".message: " + c);
    assertFalse(isBlank(c.getLastTransitionTime()), () -> type + ".lastTransitionTime: " + c);
    assertFalse(isBlank(c.getLastHeartbeatTime()), () -> type + ".lastHeartbeatTime: " + c);
  }

  static void assertPodCondition(Pod p, String type, String status, String reason, String msg) {
    PodCondition c = condition(p, type);
    assertNotNull(c, () -> "pod condition " + type + " missing: " + p.getStatus());
    assertEquals(status, c.getStatus(), () -> type + ".status: " + c);
    assertEquals(reason, c.getReason(), () -> type + ".reason: " + c);
    assertEquals(msg, c.getMessage(), () -> type + ".message: " + c);
    assertFalse(isBlank(c.getLastTransitionTime()), () -> type + ".lastTransitionTime: " + c);
  }

  /** The device annotations: both with these values, or ({@code index} null) neither. */
  static void assertDevice(Pod p, String index, String uuid) {
    Map<String, String> a = annotations(p);
    assertEquals(index, a.get(GPU_INDEX), () -> p.getMetadata().getName() + " " + GPU_INDEX);
    assertEquals(uuid, a.get(GPU_UUID), () -> p.getMetadata().getName() + " " + GPU_UUID);
  }

  static Map<String, String> annotations(Node n) {
    return Optional.ofNullable(n.getMetadata().getAnnotations()).orElse(Map.of());
  }

  static Map<String, String> annotations(Pod p) {
    return Optional.ofNullable(p.getMetadata().getAnnotations()).orElse(Map.of());
  }

  static void assertQos(JsonNode node, boolean preempt, int minutes, String reserved) {
    JsonNode q = node.path("qos");
    assertEquals(preempt, q.path("preemptEnabled").asBoolean(!preempt), () -> "qos: " + q);
    assertEquals(minutes, q.path("podMaxDurationMinutes").asInt(-1), () -> "qos: " + q);
    assertEquals(reserved, q.path("reservedEphemeralStorage").asText(), () -> "qos: " + q);
  }

  /** Exactly one Event with this reason and note, written as SPEC §7 and KubeEvents say. */
  static Event assertOneEvent(
      List<Event> events, String uid, String type, String reason, String note) {
    List<Event> matching = new ArrayList<>();
    for (Event e : events) {
      if (reason.equals(e.getReason()) && note.equals(e.getNote())) {
        matching.add(e);
      }
    }
    assertEquals(
        1,
        matching.size(),
        () -> "one Event " + reason + " \"" + note + "\"; all: " + eventSummary(events).values());
    Event e = matching.get(0);
    assertEquals(type, e.getType(), () -> "type of " + e);
    assertEquals("gpushare", e.getReportingController(), () -> "reportingController of " + e);
    assertEquals(POD_NAME, e.getReportingInstance(), () -> "reportingInstance of " + e);
    assertEquals(uid, e.getRegarding().getUid(), () -> "regarding.uid of " + e);
    assertNotNull(e.getEventTime(), () -> "eventTime of " + e);
    assertFalse(isBlank(e.getAction()), () -> "action of " + e);
    assertEquals(NS, e.getMetadata().getNamespace(), () -> "namespace of " + e);
    return e;
  }

  static long count(List<Event> events, String reason) {
    return events.stream().filter(e -> reason.equals(e.getReason())).count();
  }

  /** name → "Kind/name reason: note", sorted by name. */
  static Map<String, String> eventSummary(List<Event> events) {
    Map<String, String> out = new TreeMap<>();
    for (Event e : events) {
      out.put(
          e.getMetadata().getName(),
          e.getRegarding().getKind()
              + "/"
              + e.getRegarding().getName()
              + " "
              + e.getType()
              + " "
              + e.getReason()
              + ": "
              + e.getNote());
    }
    return out;
  }

  static JsonNode readJson(String text) {
    try {
      return Api.JSON.readTree(text);
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + text, e);
    }
  }

  static boolean isBlank(String s) {
    return s == null || s.isBlank();
  }

  /** The value of one series in a Prometheus text exposition ({@code name{labels}} as printed). */
  static double metric(String metrics, String series) {
    for (String line : metrics.split("\n")) {
      if (line.startsWith(series + " ")) {
        return Double.parseDouble(line.substring(series.length() + 1).trim());
      }
    }
    throw new AssertionError("no series " + series + " in /metrics:\n" + metrics);
  }
}
