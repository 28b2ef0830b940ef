package dev.gpushare.e2e;

import static dev.gpushare.e2e.RealNodeSetup.SYSTEM;
import static dev.gpushare.e2e.RealNodeSetup.eventually;
import static dev.gpushare.e2e.RealNodeSetup.lines;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real node ({@link RealNode}) end to end: a kubelet, containerd and runc built from their Go
 * modules join the test's real control plane (with kube-scheduler and kube-controller-manager) as a
 * GPU-HPN node, and run real pods in real containers.
 *
 * <ul>
 *   <li>The node registers, is Ready with its GPUs ({@code nvidia.com/gpu}) and the GPU-HPN label,
 *       reports kubelet v1.37.2 and containerd v2.4.2, and its address in the node's network.
 *   <li>A plain pod of the workload image runs in a container of its own — its cgroup is the
 *       kubelet's {@code /kubepods/besteffort/pod<UID>/<container>}, its address the pod network's
 *       — and its log is read back with the built kubectl through the API server and the kubelet.
 * </ul>
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RealNodeTest {

  @RegisterExtension
  static final KubeControlPlane.Extension KUBE =
      KubeControlPlane.extension(
          KubeControlPlane.Options.apiServerOnly().withNodeLifecycle().withScheduler(null));

  /** The operator's PostgreSQL (stopped after the node, so that the member never loses it). */
  @RegisterExtension static final RealNodeSetup.Postgres PG = new RealNodeSetup.Postgres();

  @RegisterExtension
  static final RealNode.Extension NODE =
      RealNode.extension(KUBE, RealNode.Options.named("hpn-real-1").withGpus(2));

  @Test
  @Order(1)
  void theNodeIsReadyWithItsGpus() throws IOException {
    KubeControlPlane kube = KUBE.get();
    RealNode node = NODE.get();
    Node n = kube.admin().nodes().withName(node.name()).get();
    assertEquals("reserved", n.getMetadata().getLabels().get("alibabacloud.com/node-type"));
    assertEquals("2", n.getStatus().getAllocatable().get("nvidia.com/gpu").getAmount());
    assertEquals(KubeControlPlane.VERSION, n.getStatus().getNodeInfo().getKubeletVersion());
    assertTrue(
        n.getStatus().getNodeInfo().getContainerRuntimeVersion().startsWith("containerd://"),
        () -> "runtime: " + n.getStatus().getNodeInfo());
    assertTrue(
        n.getStatus().getAddresses().stream()
            .anyMatch(
                a -> a.getType().equals("InternalIP") && a.getAddress().equals(RealNode.NODE_IP)),
        () -> "addresses: " + n.getStatus().getAddresses());
    String listed =
        kube.kubectl()
            .run("get", "node", "-l", "alibabacloud.com/node-type=reserved", "-o", "name")
            .ok()
            .out();
    assertEquals("node/" + node.name(), listed.strip());
    // The fake driver's kernel answers a caller its host PID (here: this JVM's).
    try (var c = java.nio.channels.SocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      c.connect(java.net.UnixDomainSocketAddress.of(node.dir().resolve("fake-gpu/kernel.sock")));
      String answer = new String(java.nio.channels.Channels.newInputStream(c).readAllBytes());
      assertEquals(ProcessHandle.current().pid() + "\n", answer);
    }
  }

  @Test
  @Order(2)
  void aPlainPodRunsInAContainerAndItsLogIsReadBack() throws Exception {
    KubeControlPlane kube = KUBE.get();
    RealNode node = NODE.get();
    var kubectl = kube.kubectl();
    kubectl
        .runWithInput(
            """
            apiVersion: v1
            kind: Pod
            metadata:
              name: plain
              namespace: default
            spec:
              nodeName: %s
              restartPolicy: Never
              terminationGracePeriodSeconds: 1
              containers:
              - name: main
                image: %s
                imagePullPolicy: IfNotPresent
                env:
                - {name: NVIDIA_VISIBLE_DEVICES, value: all}
                - {name: NVIDIA_DRIVER_CAPABILITIES, value: "compute,utility"}
                command:
                - /bin/sh
                - -c
                - |
                  echo "hello from $(hostname)"
                  cat /proc/self/cgroup
                  ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /dev/fake-gpu/kernel.sock
                  workload init count uuid exit:0
                  sleep 3600
            """
                .formatted(node.name(), NodeImages.WORKLOAD),
            "apply",
            "-f",
            "-")
        .ok();
    Pod pod =
        eventually(
            "pod plain is Running",
            () -> {
              Pod p = kube.admin().pods().inNamespace("default").withName("plain").get();
              assertEquals("Running", p.getStatus().getPhase(), () -> "status " + p.getStatus());
              return p;
            },
            node);
    assertTrue(
        pod.getStatus().getPodIP().startsWith(RealNode.POD_PREFIX),
        () -> "pod IP in " + RealNode.POD_CIDR + ": " + pod.getStatus().getPodIP());
    String log =
        eventually(
            "the pod's log through the API server and the kubelet",
            () -> {
              var r = kubectl.run("logs", "plain").ok();
              assertTrue(r.out().contains("hello from plain"), r::toString);
              return r.out();
            },
            node);
    String uid = pod.getMetadata().getUid();
    assertTrue(
        log.contains("/kubepods/besteffort/pod" + uid + "/"),
        () -> "the container's cgroup is the kubelet's for pod " + uid + ":\n" + log);
    // The container runtime put the fake driver where NVIDIA's puts the real one, and a CUDA
    // program of the image finds the node's GPUs through it.
    for (String path :
        List.of(
            "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
            "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
            "/dev/fake-gpu/kernel.sock")) {
      assertTrue(lines(log).contains(path), () -> path + " in the container:\n" + log);
    }
    assertTrue(lines(log).contains("init -> 0"), log);
    assertTrue(lines(log).contains("count -> 0 " + node.gpus().size()), log);
    assertTrue(log.contains("uuid -> 0 " + node.gpus().get(0)), log);
    kubectl.run("delete", "pod", "plain", "--wait=true", "--timeout=60s").ok();
  }

  @Test
  @Order(3)
  void theShippedDaemonSetRunsItsMemberOnTheNode(@TempDir Path work) throws Exception {
    KubeControlPlane kube = KUBE.get();
    RealNode node = NODE.get();
    var kubectl = kube.kubectl();
    // deploy/README.md, "Install" without cert-manager: the Secret, then bootstrap-tls.sh with an
    // overlay (its PostgreSQL URL, and the reservation this 2-core machine has room for).
    Pod member = RealNodeSetup.install(kube, node, PG.server, work, "");

    assertEquals(node.name(), member.getSpec().getNodeName());
    Container c = member.getSpec().getContainers().get(0);
    assertEquals(65532L, c.getSecurityContext().getRunAsUser());
    assertEquals(Boolean.TRUE, c.getSecurityContext().getReadOnlyRootFilesystem());
    assertEquals(List.of("ALL"), c.getSecurityContext().getCapabilities().getDrop());
    assertEquals(
        "RuntimeDefault", member.getSpec().getSecurityContext().getSeccompProfile().getType());
    // NODE_NAME from the downward API, as the container sees it.
    String env =
        kubectl.run("-n", SYSTEM, "exec", member.getMetadata().getName(), "--", "env").ok().out();
    assertTrue(env.contains("NODE_NAME=" + node.name()), env);
    // The data-plane socket in the host directory, handed to uid 65532 by the init container.
    Path dataPlane = Path.of("/run/gpushare/data-plane");
    assertEquals(
        65532,
        (int) Files.getAttribute(dataPlane, "unix:uid"),
        "the init container data-plane-dir chowned " + dataPlane);
    assertTrue(Files.exists(dataPlane.resolve("gpushare.sock")), "the member's socket");
    // The container runtime gave the member the fake NVML (utility), seeing the node's GPUs.
    String runtime = Files.readString(node.dir().resolve("nvidia-container-runtime.log"));
    assertTrue(
        runtime.contains(
            "NVIDIA_VISIBLE_DEVICES=all capabilities=utility GPUs="
                + String.join(",", node.gpus())),
        runtime);
    // The API server reaches the member's webhook through the Service, at the pod's IP.
    var admitted =
        kubectl.run(
            "apply", "--dry-run=server", "-o", "json", "-f", "deploy/examples/gpu-share-demo.yaml");
    assertEquals(0, admitted.status(), admitted::toString);
    JsonNode demo = Api.JSON.readTree(admitted.out());
    assertTrue(
        demo.at("/metadata/annotations").toString().contains("gpu-core.percentage"),
        () -> "the webhook recorded the limits: " + demo);
    assertTrue(
        demo.at("/spec/initContainers").toString().contains("\"gpushare-lib\""),
        () -> "the webhook added the pod side: " + demo);
    // The member chose NVML (the fake libnvidia-ml.so.1 where the runtime put it), and, once the
    // node's sharing is on (deploy/README.md step 3), writes the node's GPUs into its status.
    String log =
        kubectl
            .run("-n", SYSTEM, "logs", member.getMetadata().getName(), "-c", "gpushare")
            .ok()
            .out();
    String backend =
        log.lines().filter(l -> l.contains("gpushare.gpu.backend=")).findFirst().orElse("");
    // As shipped (no hostPID), NVML's host PIDs are mapped through the host's /proc, and --data is
    // the member's own private folder: neither is warned about.
    assertTrue(
        log.contains(
            "NVML's processes (host PIDs) are mapped to pods through /host/proc/<pid>/cgroup"),
        log);
    assertTrue(log.lines().noneMatch(l -> l.contains(" WARN ")), () -> "no warning:\n" + log);
    assertTrue(
        backend.contains("using") && !backend.contains("simulated"),
        () -> "the member uses NVML: '" + backend + "'\n" + log);
    System.out.println("RealNodeTest: member " + member.getMetadata().getName() + ": " + backend);
    kubectl.run("label", "node", node.name(), "alibabacloud.com/gpu-share-policy=share-pool").ok();
    eventually(
        "the member writes the node's 2 GPUs into its status",
        () -> {
          var q =
              kube.admin()
                  .nodes()
                  .withName(node.name())
                  .get()
                  .getStatus()
                  .getAllocatable()
                  .get("alibabacloud.com/gpu-core.percentage");
          assertTrue(q != null && q.getAmount().equals("200"), () -> "allocatable: " + q);
          return q;
        },
        node);
  }

  @Test
  @Order(4)
  void aSharingPodGetsThePodSideAndItsCudaProgramRunsOnItsGrant() throws Exception {
    KubeControlPlane kube = KUBE.get();
    RealNode node = NODE.get();
    var kubectl = kube.kubectl();
    // A share-pool pod as users write it (small requests: this node has 2 cores); the webhook
    // completes it, the scheduler places it on the node, the init container gpushare-lib (the
    // member's image) installs the library, and the runtime gives it the fake CUDA driver.
    kubectl
        .runWithInput(
            """
            apiVersion: v1
            kind: Pod
            metadata:
              name: share-a
              namespace: default
              labels:
                alibabacloud.com/compute-class: gpu-hpn
                alibabacloud.com/gpu-share-policy: share-pool
            spec:
              restartPolicy: Never
              terminationGracePeriodSeconds: 1
              containers:
              - name: main
                image: %s
                imagePullPolicy: IfNotPresent
                command: [/bin/sh, -c, 'workload init ctx uuid alloc:1000000 launch sync hold']
                resources:
                  requests:
                    cpu: 10m
                    memory: 32Mi
                    alibabacloud.com/gpu-core.percentage: 10
                    alibabacloud.com/gpu-memory.percentage: 10
                  limits:
                    memory: 64Mi
                    alibabacloud.com/gpu-core.percentage: 50
                    alibabacloud.com/gpu-memory.percentage: 50
            """
                .formatted(NodeImages.WORKLOAD),
            "apply",
            "-f",
            "-")
        .ok();
    String log =
        eventually(
            "the sharing pod's CUDA program runs on its grant",
            () -> {
              var r = kubectl.run("logs", "share-a", "-c", "main");
              assertTrue(r.out().contains("sync -> 0"), r::toString);
              return r.out();
            },
            node);
    assertTrue(lines(log).contains("init -> 0"), log);
    assertTrue(log.lines().noneMatch(l -> l.startsWith("gpushare: ")), log);
    // The member granted it one of the node's GPUs, and wrote it into the pod (SPEC §7).
    String uuid =
        eventually(
            "the pod's granted GPU in its annotations",
            () -> {
              Pod pod = kube.admin().pods().inNamespace("default").withName("share-a").get();
              assertEquals(node.name(), pod.getSpec().getNodeName());
              String u = pod.getMetadata().getAnnotations().get("gpushare.dev/gpu-uuid");
              assertTrue(
                  u != null && node.gpus().contains(u),
                  () -> "annotations " + pod.getMetadata().getAnnotations());
              return u;
            },
            node);
    assertTrue(log.contains("uuid -> 0 " + uuid), () -> "the program sees its grant:\n" + log);
    System.out.println("RealNodeTest: share-a on " + uuid + ":\n" + log);
    kubectl.run("delete", "pod", "share-a", "--wait=true", "--timeout=60s").ok();
  }
}
