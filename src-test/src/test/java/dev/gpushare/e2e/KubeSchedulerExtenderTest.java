package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.KubernetesModeTest.CORE_LIMIT;
import static dev.gpushare.e2e.KubernetesModeTest.MEMORY_LIMIT;
import static dev.gpushare.e2e.KubernetesModeTest.awaitArbiterPod;
import static dev.gpushare.e2e.KubernetesModeTest.kubeletNode;
import static dev.gpushare.e2e.Manifests.COMPUTE_CLASS;
import static dev.gpushare.e2e.Manifests.CORE;
import static dev.gpushare.e2e.Manifests.MEMORY;
import static dev.gpushare.e2e.Manifests.POLICY_LABEL;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.gpushare.e2e.KubeControlPlane.Kubectl;
import dev.gpushare.e2e.KubernetesModeTest.Cluster;
import dev.gpushare.http.extender.SchedulerExtenderRoutes;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real kube-scheduler (v1.37.2, built from the Go modules) with the <b>shipped</b>
 * scheduler-extender configuration ({@code deploy/scheduler-extender/kube-scheduler-config.yaml}:
 * profile {@code gpushare-scheduler}, the extender at {@code
 * https://gpushare.gpushare-system.svc:8444/scheduler} with its weight, managed resources and
 * mutual TLS, leader election on the Lease {@code gpushare-system/gpushare-scheduler}) asks a
 * member in Kubernetes mode, over the extender's own mutual-TLS listener behind the gpushare
 * Service, where share-pool pods go (issue 33, item 5; SPEC §8).
 *
 * <p>What differs from a cluster, and only that: there are no Secret mounts, so the config's {@code
 * tlsConfig} file paths point at where this test wrote the files, and there is no pod, so the
 * scheduler's in-cluster ServiceAccount credential is a kubeconfig with a TokenRequest token of the
 * shipped ServiceAccount {@code gpushare-scheduler} ({@code clientConnection.kubeconfig}, {@link
 * KubeControlPlane#startScheduler}); its rights are the component's RBAC objects, applied as
 * shipped. The certificates are what cert-manager makes of {@code certificate-*.yaml}: the
 * webhook's CA and serving certificate for {@code gpushare.gpushare-system.svc} (served on the
 * extender port too), the scheduler's client CA and its client certificate ({@code CN
 * system:kube-scheduler}, client auth), made with openssl. The Service is {@code
 * deploy/service.yaml} with {@code service-extender.yaml}'s strategic-merge patch, and {@link
 * ClusterNetwork} plays cluster DNS and kube-proxy for the scheduler ({@code HTTPS_PROXY}).
 *
 * <p>Nodes are created as their kubelets register them (status, {@code Ready}, no taints; no
 * kubelet and no node lifecycle controller run), pods with kubectl, and what the scheduler decides
 * is read back with kubectl: {@code spec.nodeName}, and for a pod with no room anywhere the
 * condition {@code PodScheduled=False}, whose message carries the extender's reasons. Those are
 * compared with the member's own answer to the same question on its API port ({@code POST
 * /scheduler/filter} and {@code /scheduler/prioritize} with the pod and nodes as the scheduler sent
 * them) and with where the arbiter then grants the pod its GPU. Every RBAC denial in the member's
 * or the scheduler's log fails the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubeSchedulerExtenderTest {

  static final Duration AWAIT = Duration.ofSeconds(90);
  static final String NS = Api.NS;
  static final String SYSTEM_NS = "gpushare-system";
  static final String SCHEDULER = "gpushare-scheduler";
  static final String SERVICE_HOST = "gpushare." + SYSTEM_NS + ".svc";
  static final Path COMPONENT = Path.of("deploy/scheduler-extender");

  /** The component's objects for the scheduler's identity and rights, in apply order. */
  static final List<String> SCHEDULER_RBAC =
      List.of(
          "serviceaccount-gpushare-scheduler.yaml",
          "clusterrolebinding-gpushare-scheduler.yaml",
          "clusterrolebinding-gpushare-volume-scheduler.yaml",
          "rolebinding-gpushare-scheduler-authentication-reader.yaml",
          "role-gpushare-scheduler-lease.yaml",
          "rolebinding-gpushare-scheduler-lease.yaml",
          "clusterrole-gpushare-scheduler-extender.yaml",
          "clusterrolebinding-gpushare-scheduler-extender.yaml");

  // the nodes: GPU-HPN nodes of each kind, and two the scheduler refuses by itself
  static final String ROOM = "hpn-room";
  static final String FULL = "hpn-full";
  static final String STATIC = "hpn-static";
  static final String PLAIN = "gpu-plain";
  static final String CPU = "cpu-only";
  static final String A = "hpn-a";
  static final String B = "hpn-b";

  private Cluster cluster;
  private KubeControlPlane plane;
  private Path tls;
  private int extenderPort;

  @BeforeAll
  void start(@TempDir Path dir) throws IOException {
    tls = Files.createDirectories(dir.resolve("tls"));
    int webhookPort = KubeControlPlane.freePort();
    extenderPort = KubeControlPlane.freePort();
    Certificates.write(tls);
    cluster =
        Cluster.start(
            RealKubeApiServer::start,
            "KubeSchedulerExtenderTest",
            dir,
            "kubelet",
            kube -> prepare((RealKubeApiServer) kube, dir),
            // the DaemonSet serves the pods' data plane (deploy/configmap.yaml's pod-side)
            "pod-side.socket = \""
                + Files.createDirectories(dir.resolve("run")).resolve("gpushare.sock")
                + "\"",
            // the DaemonSet's flags with daemonset-extender.yaml's additions
            List.of(
                "--webhook-port",
                String.valueOf(webhookPort),
                "--tls-cert",
                tls.resolve("webhook/tls.crt").toString(),
                "--tls-key",
                tls.resolve("webhook/tls.key").toString(),
                "--extender-port",
                String.valueOf(extenderPort),
                "--extender-client-ca",
                tls.resolve("scheduler-ca/ca.crt").toString()));
    await(
        "the member serves the extender",
        () -> {
          assertTrue(
              Files.readString(cluster.server.logFile()).contains("scheduler extender listening"),
              () -> "no extender listener in " + cluster.server.logFile());
          return null;
        });

    register(node(ROOM, 1, "share-pool"));
    register(node(FULL, 1, "share-pool"));
    register(node(STATIC, 1, "static"));
    register(node(PLAIN, 1, null));
    register(node(CPU, 0, null));
    for (String n : List.of(ROOM, FULL, STATIC)) {
      awaitPercentages(n, 1);
    }
    // hpn-full's one GPU is held by a running pod's limits (100 %; it requests 10 %), so the
    // scheduler's own resource fit still sees room there
    holdGpu("full-hog", FULL, 10, 100, 0);
  }

  /** What the cluster has before the member starts: Service, scheduler RBAC, the scheduler. */
  private void prepare(RealKubeApiServer kube, Path dir) {
    plane = kube.plane();
    Kubectl kubectl = plane.kubectl();
    kubectl.run("apply", "--server-side", "-f", "deploy/service.yaml").ok();
    // kustomize's strategic merge of the component's Service patch
    kubectl
        .run(
            "-n",
            SYSTEM_NS,
            "patch",
            "service",
            "gpushare",
            "--type=strategic",
            "--patch-file=" + COMPONENT.resolve("service-extender.yaml"))
        .ok();
    for (String file : SCHEDULER_RBAC) {
      kubectl.run("apply", "--server-side", "-f", COMPONENT.resolve(file).toString()).ok();
    }
    // the member plays the pod behind the Service's extender port
    plane.network().route(SYSTEM_NS, "gpushare", "extender", extenderPort);

    // the scheduler's credential: its ServiceAccount's token, as the Deployment's pod has it
    String token = plane.token(SYSTEM_NS, SCHEDULER, null, 4 * 3600, null);
    Path kubeconfig = plane.tokenKubeconfig(SCHEDULER, token);
    Kubectl asScheduler = plane.kubectl(kubeconfig);
    assertEquals(
        "yes",
        asScheduler
            .run("auth", "can-i", "create", "pods", "--subresource=binding", "-A")
            .out()
            .strip());
    assertEquals(
        "yes",
        asScheduler
            .run("-n", SYSTEM_NS, "auth", "can-i", "update", "leases/" + SCHEDULER)
            .out()
            .strip());
    assertEquals("no", asScheduler.run("auth", "can-i", "list", "secrets", "-A").out().strip());
    plane.startScheduler(schedulerConfig(dir), kubeconfig);
  }

  /**
   * The shipped KubeSchedulerConfiguration with only its {@code tlsConfig} file paths rewritten to
   * where the Secrets' files are here (the Deployment mounts them at those paths in a cluster).
   */
  private Path schedulerConfig(Path dir) {
    try {
      ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
      Path shipped =
          KubeControlPlane.repositoryRoot()
              .resolve(COMPONENT)
              .resolve("kube-scheduler-config.yaml");
      JsonNode original = yaml.readTree(shipped.toFile());
      ObjectNode config = original.deepCopy();
      ObjectNode tlsConfig = (ObjectNode) config.path("extenders").get(0).path("tlsConfig");
      assertEquals("/etc/gpushare-scheduler/server-ca/ca.crt", tlsConfig.path("caFile").asText());
      tlsConfig.put("caFile", tls.resolve("webhook/ca.crt").toString());
      tlsConfig.put("certFile", tls.resolve("scheduler-client/tls.crt").toString());
      tlsConfig.put("keyFile", tls.resolve("scheduler-client/tls.key").toString());
      // everything else as shipped
      ObjectNode rest = config.deepCopy();
      ObjectNode shippedRest = original.deepCopy();
      for (ObjectNode c : List.of(rest, shippedRest)) {
        ObjectNode t = (ObjectNode) c.path("extenders").get(0).path("tlsConfig");
        t.remove(List.of("caFile", "certFile", "keyFile"));
      }
      assertEquals(shippedRest, rest);
      Path file = dir.resolve("kube-scheduler-config.yaml");
      yaml.writeValue(file.toFile(), config);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @AfterAll
  void stop() {
    if (plane != null) {
      // kube-scheduler's log beside the member's, for whoever reads a failure
      try {
        Path logs = cluster.server.logFile().getParent();
        Files.copy(
            plane.dir().resolve("kube-scheduler.log"),
            logs.resolve("KubeSchedulerExtenderTest-kube-scheduler.log"),
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      } catch (IOException | RuntimeException e) {
        // diagnostics only
      }
    }
    if (cluster != null) {
      cluster.close(); // the member, its RBAC-denial check, then the control plane
    }
  }

  // ================================================================ scheduling

  @Test
  @Order(1)
  void aSharePoolPodGoesToTheGpuHpnNodeWithRoomAndTheArbiterGrantsItThere() {
    String pod = "share-1";
    create(sharePod(pod, null, 10, 50));
    String node = awaitBound(pod);
    assertEquals(ROOM, node, "the only GPU-HPN node of its model with room");

    // The scheduler reached the extender through the Service, as in a cluster.
    List<ClusterNetwork.Connect> extenderCalls =
        plane.network().connects().stream()
            .filter(c -> c.target().equals(SERVICE_HOST + ":8444"))
            .toList();
    assertTrue(!extenderCalls.isEmpty(), () -> "no CONNECT to the extender:\n" + plane.network());
    for (ClusterNetwork.Connect c : extenderCalls) {
      assertEquals(extenderPort, c.loopbackPort(), c::toString);
      assertEquals(SYSTEM_NS + "/gpushare", c.service(), c::toString);
    }

    // The member's own filter for the same pod (as the scheduler saw it: unbound) and nodes.
    JsonNode filter = filter(pod, ROOM, FULL, STATIC);
    assertEquals(List.of(ROOM), passed(filter), filter::toString);
    assertTrue(filter.path("NodeNames").isNull(), filter::toString);
    assertEquals("", filter.path("Error").asText(), filter::toString);
    Map<String, String> failed = reasons(filter.path("FailedNodes"));
    Map<String, String> unresolvable = reasons(filter.path("FailedAndUnresolvableNodes"));
    assertEquals(List.of(FULL), List.copyOf(failed.keySet()), filter::toString);
    assertTrue(
        failed.get(FULL).startsWith("no healthy GPU of node " + FULL + " can hold"),
        filter::toString);
    assertEquals(List.of(STATIC), List.copyOf(unresolvable.keySet()), filter::toString);
    assertTrue(
        unresolvable.get(STATIC).contains("gpu share policy static in force"), filter::toString);

    // Bound, run and asking for its GPU: the arbiter grants it on hpn-room.
    cluster.kube.kubeletRuns(pod);
    JsonNode view = awaitArbiterPod(cluster, pod);
    assertEquals(ROOM, view.path("node").asText(), view::toString);
    assertRunningOn(cluster.api.demand(pod), 0);
  }

  @Test
  @Order(2)
  void aPodWithoutRoomAnywhereStaysPendingWithTheArbitersReasons() {
    String pod = "too-big";
    create(sharePod(pod, null, 10, 100));
    PodCondition scheduled = awaitNotScheduled(pod);
    assertEquals("Unschedulable", scheduled.getReason(), scheduled::toString);
    String message = scheduled.getMessage();
    assertTrue(message.startsWith("0/5 nodes are available"), message);
    assertEquals("", nodeName(pod), "still unbound");

    // Every GPU-HPN node was refused by the extender with the reason the member gives.
    JsonNode filter = filter(pod, ROOM, FULL, STATIC);
    assertEquals(List.of(), passed(filter), filter::toString);
    Map<String, String> refused = new TreeMap<>(reasons(filter.path("FailedNodes")));
    refused.putAll(reasons(filter.path("FailedAndUnresolvableNodes")));
    assertEquals(List.of(FULL, ROOM, STATIC), List.copyOf(refused.keySet()), filter::toString);
    assertTrue(refused.get(ROOM).contains("GPU 0 holds core 50%, memory 50%"), refused::toString);
    refused.forEach(
        (n, reason) ->
            assertTrue(
                message.contains(reason),
                () ->
                    "the scheduler's message has the extender's reason for "
                        + n
                        + ":\n"
                        + reason
                        + "\nmessage:\n"
                        + message));
    // the two nodes without the percentage resources the scheduler refuses by itself
    assertTrue(message.contains("Insufficient " + CORE), message);
    plane.kubectl().run("-n", NS, "delete", "pod", pod, "--wait=false").ok();
  }

  @Test
  @Order(3)
  void ofTwoNodesWithRoomTheOneTheArbiterScoresHigherWinsAndItsGpuIsTheOneGranted() {
    KubeApiServer k = cluster.kube;
    register(node(A, 2, "share-pool"));
    register(node(B, 2, "share-pool"));
    awaitPercentages(A, 2);
    awaitPercentages(B, 2);
    // hpn-a: one GPU holds 40 %; a 60 % pod completes it. hpn-b: two empty GPUs.
    int held = holdGpu("hold-40", A, 40, 40, -1);

    String pod = "share-2";
    create(sharePod(pod, null, 10, 60));
    String node = awaitBound(pod);

    // The member's answers for the pod as the scheduler saw it.
    JsonNode filter = filter(pod, ROOM, FULL, STATIC, A, B);
    assertEquals(List.of(A, B), passed(filter), filter::toString);
    JsonNode scores = prioritize(pod, A, B);
    Map<String, Integer> byNode = new LinkedHashMap<>();
    scores.forEach(s -> byNode.put(s.path("Host").asText(), s.path("Score").asInt()));
    assertTrue(
        byNode.get(A) > byNode.get(B),
        () -> "completing a GPU scores higher than opening one: " + byNode);
    assertEquals(A, node, () -> "the scheduler's choice vs the arbiter's scores " + byNode);

    k.kubeletRuns(pod);
    awaitArbiterPod(cluster, pod);
    assertRunningOn(cluster.api.demand(pod), held);
  }

  @Test
  @Order(4)
  void aPodThatBreaksTheSharingRulesGetsTheExtendersErrorAsASchedulerError() {
    // as a share-pool pod, but without the compute-class label (SPEC §3): no webhook runs here
    String pod = "no-class";
    create(sharePod(pod, null, 10, 50).replace("    " + COMPUTE_CLASS + ": gpu-hpn\n", ""));
    JsonNode filter = filter(pod, ROOM, A, B);
    String error = filter.path("Error").asText();
    assertTrue(error.contains(COMPUTE_CLASS), filter::toString);
    assertTrue(filter.path("Nodes").isNull(), filter::toString);
    PodCondition scheduled = awaitNotScheduled(pod);
    // kube-scheduler takes an extender's Error as a failure of the attempt, not as a verdict on
    // the nodes: reason SchedulerError (retried with backoff), the Error as the message
    assertEquals("SchedulerError", scheduled.getReason(), scheduled::toString);
    assertTrue(
        scheduled.getMessage().contains(error),
        () -> "the extender's Error in the message:\n" + error + "\n" + scheduled.getMessage());
    assertEquals("", nodeName(pod), "still unbound");
    await(
        "a FailedScheduling Event on " + pod,
        () -> {
          var events =
              plane
                  .kubectl()
                  .run(
                      "-n",
                      NS,
                      "get",
                      "events",
                      "--field-selector=involvedObject.name=" + pod,
                      "-o",
                      "jsonpath={.items[*].reason}")
                  .ok();
          assertTrue(events.out().contains("FailedScheduling"), events::toString);
          return null;
        });
    plane.kubectl().run("-n", NS, "delete", "pod", pod, "--wait=false").ok();
  }

  @Test
  @Order(5)
  void theSchedulerLeadsOnItsLeaseWithTheShippedRbacAndIsNeverRefused() throws IOException {
    var lease =
        plane
            .kubectl()
            .run(
                "-n", SYSTEM_NS, "get", "lease", SCHEDULER, "-o", "jsonpath={.spec.holderIdentity}")
            .ok();
    assertTrue(!lease.out().isBlank(), () -> "the Lease has a holder: " + lease);
    List<String> denials =
        Files.readAllLines(plane.dir().resolve("kube-scheduler.log")).stream()
            .filter(l -> RealKubeApiServer.DENIAL.matcher(l).find())
            .toList();
    assertEquals(
        List.of(), denials, "kube-scheduler, on the component's RBAC, was refused by the API");
  }

  // ================================================================ helpers

  /**
   * A share-pool pod as the admission webhook leaves it (SPEC §3), for the gpushare-scheduler;
   * {@code node} null: unbound, the scheduler places it.
   */
  static String sharePod(String name, String node, int request, int limit) {
    return """
        apiVersion: v1
        kind: Pod
        metadata:
          name: %1$s
          namespace: %11$s
          labels:
            %2$s: gpu-hpn
            %3$s: share-pool
          annotations:
            %4$s: "%7$d"
            %5$s: "%7$d"
        spec:
          schedulerName: %12$s
        %6$s  containers:
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
            node == null ? "" : "  nodeName: " + node + "\n",
            limit,
            CORE,
            request,
            MEMORY,
            NS,
            SCHEDULER);
  }

  /**
   * A GPU-HPN node as its kubelet registers it ({@code gpus} 0: a node without GPUs), with the
   * {@code pods} capacity a kubelet reports (110 by default), without which the scheduler finds
   * "Too many pods" on it.
   */
  static Node node(String name, int gpus, String policy) {
    Map<String, String> own = new LinkedHashMap<>();
    own.put("cpu", "32");
    own.put("memory", "256Gi");
    own.put("ephemeral-storage", "1Ti");
    own.put("pods", "110");
    if (gpus > 0) {
      own.put(KubernetesModeTest.EXCLUSIVE_GPU, String.valueOf(gpus));
    }
    return kubeletNode(name, policy, null, own, own);
  }

  /**
   * A node as its kubelet registers it, and Ready: the API server's TaintNodesByCondition admission
   * gives every new node {@code node.kubernetes.io/not-ready:NoSchedule}, which the node lifecycle
   * controller removes once the kubelet reports Ready; neither runs here, so the test removes it.
   */
  private void register(Node node) {
    cluster.kube.createNode(node);
    String name = node.getMetadata().getName();
    plane.kubectl().run("taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-").ok();
    Node registered = cluster.kube.node(name);
    assertTrue(
        registered.getSpec().getTaints() == null || registered.getSpec().getTaints().isEmpty(),
        () -> "no taints: " + registered.getSpec());
  }

  /** {@code kubectl create -f -}. */
  private void create(String yaml) {
    plane.kubectl().runWithInput(yaml, "create", "-f", "-").ok();
  }

  /**
   * A running pod bound to {@code node} by its manifest that holds {@code limit} % of one GPU (its
   * demand granted); answers the GPU's index ({@code gpu} ≥ 0: must be that one).
   */
  private int holdGpu(String pod, String node, int request, int limit, int gpu) {
    create(sharePod(pod, node, request, limit));
    cluster.kube.kubeletRuns(pod);
    awaitArbiterPod(cluster, pod);
    JsonNode granted = cluster.api.demand(pod);
    int index = granted.path("gpu").path("index").asInt(-1);
    assertRunningOn(granted, gpu >= 0 ? gpu : index);
    return index;
  }

  /** Waits until the member has given node {@code n} its percentage resources. */
  private void awaitPercentages(String n, int gpus) {
    await(
        "node " + n + " has " + (100 * gpus) + " of each percentage resource allocatable",
        () -> {
          Node x = cluster.kube.node(n);
          Map<String, Quantity> a = x.getStatus().getAllocatable();
          assertEquals(new Quantity(String.valueOf(100 * gpus)), a.get(CORE), a::toString);
          assertEquals(new Quantity(String.valueOf(100 * gpus)), a.get(MEMORY), a::toString);
          return x;
        });
  }

  /** The condition PodScheduled=False that the scheduler writes on a pod it could not place. */
  private PodCondition awaitNotScheduled(String pod) {
    return await(
        "PodScheduled=False on " + pod,
        () -> {
          Pod p = cluster.kube.pod(pod);
          PodCondition c = KubernetesModeTest.condition(p, "PodScheduled");
          assertNotNull(c, () -> "no PodScheduled condition yet: " + p.getStatus());
          assertEquals("False", c.getStatus(), c::toString);
          return c;
        });
  }

  /** The node the scheduler bound {@code pod} to, read back with kubectl. */
  private String awaitBound(String pod) {
    return await(
        "the scheduler binds " + pod,
        () -> {
          String node = nodeName(pod);
          assertTrue(!node.isEmpty(), () -> pod + " is not bound yet: " + conditions(pod));
          return node;
        });
  }

  private String nodeName(String pod) {
    return plane
        .kubectl()
        .run("-n", NS, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
        .ok()
        .out()
        .strip();
  }

  private String conditions(String pod) {
    return plane
        .kubectl()
        .run("-n", NS, "get", "pod", pod, "-o", "jsonpath={.status.conditions}")
        .out();
  }

  /** {@code kubectl get KIND NAME -o json}. */
  private ObjectNode getJson(String kind, String name) {
    List<String> args = new ArrayList<>(List.of("get", kind, name, "-o", "json"));
    if (kind.equals("pod")) {
      args.addAll(0, List.of("-n", NS));
    }
    String out = plane.kubectl().run(args.toArray(String[]::new)).ok().out();
    try {
      return (ObjectNode) Api.JSON.readTree(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * {@code ExtenderArgs} as kube-scheduler sends them ({@code nodeCacheCapable: false}): the pod as
   * it was while pending (no {@code spec.nodeName}), the nodes whole.
   */
  private String extenderArgs(String pod, String... nodes) {
    ObjectNode args = Api.JSON.createObjectNode();
    ObjectNode p = getJson("pod", pod);
    ((ObjectNode) p.path("spec")).remove("nodeName");
    args.set("Pod", p);
    ObjectNode list = args.putObject("Nodes");
    list.putObject("metadata");
    var items = list.putArray("items");
    for (String n : nodes) {
      items.add(getJson("node", n));
    }
    args.putNull("NodeNames");
    return args.toString();
  }

  /** The member's filter on its API port, with the admin token. */
  private JsonNode filter(String pod, String... nodes) {
    Api.Resp r =
        cluster.api.post(
            SchedulerExtenderRoutes.FILTER_PATH, extenderArgs(pod, nodes), "application/json");
    assertEquals(200, r.status(), r::toString);
    return r.json();
  }

  private JsonNode prioritize(String pod, String... nodes) {
    Api.Resp r =
        cluster.api.post(
            SchedulerExtenderRoutes.PRIORITIZE_PATH, extenderArgs(pod, nodes), "application/json");
    assertEquals(200, r.status(), r::toString);
    return r.json();
  }

  static List<String> passed(JsonNode filter) {
    List<String> out = new ArrayList<>();
    filter
        .path("Nodes")
        .path("items")
        .forEach(n -> out.add(n.path("metadata").path("name").asText()));
    return out;
  }

  static Map<String, String> reasons(JsonNode map) {
    Map<String, String> out = new TreeMap<>();
    map.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
    return out;
  }

  /** Polls {@code check} until it passes or {@link #AWAIT} is over; then its last failure. */
  private <T> T await(String what, Callable<T> check) {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    while (true) {
      try {
        return check.call();
      } catch (AssertionError | RuntimeException e) {
        if (System.nanoTime() - deadline > 0) {
          throw new AssertionError(
              what
                  + ": not within "
                  + AWAIT.toSeconds()
                  + " s; last check: "
                  + e
                  + "\nkube-scheduler log:\n"
                  + plane.log("kube-scheduler", 30)
                  + "\ncluster network:\n"
                  + plane.network()
                  + cluster.diagnostics(),
              e);
        }
      } catch (Exception e) {
        throw new AssertionError(what + ": " + e, e);
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }

  // ================================================================ certificates

  /**
   * What cert-manager makes of the shipped Certificates, laid out as their Secrets' keys: {@code
   * webhook/} (gpushare-webhook-tls: tls.crt, tls.key, ca.crt — certificate-webhook.yaml, signed by
   * certificate-ca.yaml's CA), {@code scheduler-ca/} (gpushare-scheduler-ca — the members mount its
   * tls.crt as ca.crt), {@code scheduler-client/} (gpushare-scheduler-client-tls). RSA 2048, keys
   * PKCS#8 as the Certificates ask.
   */
  static final class Certificates {
    private Certificates() {}

    static void write(Path dir) throws IOException {
      Path webhook = Files.createDirectories(dir.resolve("webhook"));
      Path schedulerCa = Files.createDirectories(dir.resolve("scheduler-ca"));
      Path client = Files.createDirectories(dir.resolve("scheduler-client"));
      Path webhookCa = Files.createDirectories(dir.resolve("webhook-ca"));
      KubeControlPlane.Pki.ca(webhookCa, "gpushare-webhook-ca");
      KubeControlPlane.Pki.leaf(
          webhook,
          webhookCa,
          "/CN=" + SERVICE_HOST,
          "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:"
              + SERVICE_HOST
              + ",DNS:"
              + SERVICE_HOST
              + ".cluster.local");
      KubeControlPlane.Pki.ca(schedulerCa, "gpushare-scheduler-client-ca");
      KubeControlPlane.Pki.leaf(
          client, schedulerCa, "/CN=system:kube-scheduler", "extendedKeyUsage=clientAuth");
    }
  }
}
