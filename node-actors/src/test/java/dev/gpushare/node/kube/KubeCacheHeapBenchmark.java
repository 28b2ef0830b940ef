package dev.gpushare.node.kube;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * Heap per object of the writer's cache (src-test/BENCHMARKS.md, "The writer at scale"): {@code
 * --objects} pods as the API server returns them — the reference manifest {@code
 * deploy/examples/gpu-share-demo.yaml} with what the webhook, the scheduler and the kubelet add
 * (managed fields, the injected init container, volumes and environment, the kubelet's status and
 * container statuses) and gpushare's own annotations and condition — then the same number of
 * GPU-HPN nodes as a kubelet reports them; each kept as {@link KubeCache} keeps it (trimmed), and,
 * for comparison, whole. Used heap after full GCs, divided by the objects.
 *
 * <p>A plain {@code main} in test sources (no Surefire pattern matches it). Run from the repository
 * root: {@code mvn -B -q -o -pl node-actors test-compile} then {@code java -cp
 * node-actors/target/test-classes:node-actors/target/classes:$(cat cp.txt)
 * dev.gpushare.node.kube.KubeCacheHeapBenchmark [--objects 20000]}, {@code cp.txt} from {@code mvn
 * -q -o -pl node-actors dependency:build-classpath -Dmdep.includeScope=test
 * -Dmdep.outputFile=$PWD/cp.txt}.
 */
public final class KubeCacheHeapBenchmark {
  private KubeCacheHeapBenchmark() {}

  public static void main(String[] args) throws Exception {
    int n = 20_000;
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--objects")) {
        n = Integer.parseInt(args[i + 1]);
      }
    }
    Pod template = realisticPod();
    Node nodeTemplate = realisticNode();
    System.out.printf(
        Locale.ROOT,
        "KubeCacheHeapBenchmark: %,d objects; a pod is %,d bytes of JSON, a node %,d; Java %s%n",
        n,
        Serialization.asJson(template).length(),
        Serialization.asJson(nodeTemplate).length(),
        System.getProperty("java.version"));
    String json = Serialization.asJson(template);
    String nodeJson = Serialization.asJson(nodeTemplate);
    for (String what : List.of("trimmed", "whole")) {
      boolean trim = what.equals("trimmed");
      long pods =
          perObject(
              n,
              i -> {
                Pod p = Serialization.unmarshal(json, Pod.class);
                p.getMetadata().setName("pod-" + i);
                p.getMetadata().setUid(UUID.randomUUID().toString());
                return trim ? KubeCache.trim(p) : p;
              });
      long nodes =
          perObject(
              n,
              i -> {
                Node x = Serialization.unmarshal(nodeJson, Node.class);
                x.getMetadata().setName("gpu-hpn-" + i);
                x.getMetadata().setUid(UUID.randomUUID().toString());
                return trim ? KubeCache.trim(x) : x;
              });
      System.out.printf(
          Locale.ROOT, "| %s | %,d bytes per pod | %,d bytes per node |%n", what, pods, nodes);
    }
  }

  interface Make {
    Object make(int i);
  }

  /** Used heap after full GCs with {@code n} objects held, less without, over {@code n}. */
  static long perObject(int n, Make make) {
    long before = usedAfterGc();
    List<Object> held = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      held.add(make.make(i));
    }
    long after = usedAfterGc();
    long per = (after - before - 4L * n) / n; // less the list's own reference per object
    if (held.size() != n) {
      throw new IllegalStateException("kept alive until here");
    }
    return per;
  }

  static long usedAfterGc() {
    var memory = ManagementFactory.getMemoryMXBean();
    long last = Long.MAX_VALUE;
    for (int i = 0; i < 10; i++) {
      System.gc();
      long used = memory.getHeapMemoryUsage().getUsed();
      if (used >= last) {
        return used;
      }
      last = used;
    }
    return last;
  }

  static Pod realisticPod() throws Exception {
    Pod demo =
        Serialization.unmarshal(
            Files.readString(Path.of("deploy/examples/gpu-share-demo.yaml")), Pod.class);
    String t = "2026-12-08T00:00:00Z";
    return new PodBuilder(demo)
        .editMetadata()
        .withNamespace("team-a")
        .withResourceVersion("123456789")
        .withCreationTimestamp(t)
        .addToAnnotations("gpushare.dev/core-limit", "50")
        .addToAnnotations("gpushare.dev/memory-limit", "50")
        .addToAnnotations(KubeWriter.GPU_INDEX_ANNOTATION, "3")
        .addToAnnotations(KubeWriter.GPU_UUID_ANNOTATION, "GPU-" + UUID.randomUUID())
        .addNewManagedField()
        .withManager("kubectl-client-side-apply")
        .withOperation("Update")
        .withApiVersion("v1")
        .withTime(t)
        .withFieldsType("FieldsV1")
        .endManagedField()
        .addNewManagedField()
        .withManager("kubelet")
        .withOperation("Update")
        .withApiVersion("v1")
        .withTime(t)
        .withSubresource("status")
        .withFieldsType("FieldsV1")
        .endManagedField()
        .endMetadata()
        .editSpec()
        .withNodeName("gpu-hpn-0")
        .withServiceAccountName("default")
        .addNewInitContainer()
        .withName("gpushare-lib")
        .withImage("registry.example/gpushare:0.1.0")
        .withCommand("/bin/cp", "/opt/gpushare/lib/libgpushare.so", "/gpushare/")
        .addNewVolumeMount()
        .withName("gpushare-lib")
        .withMountPath("/gpushare")
        .endVolumeMount()
        .endInitContainer()
        .addNewVolume()
        .withName("gpushare-lib")
        .withNewEmptyDir()
        .endEmptyDir()
        .endVolume()
        .addNewVolume()
        .withName("gpushare-token")
        .withNewProjected()
        .addNewSource()
        .withNewServiceAccountToken()
        .withAudience("gpushare")
        .withExpirationSeconds(600L)
        .withPath("token")
        .endServiceAccountToken()
        .endSource()
        .endProjected()
        .endVolume()
        .endSpec()
        .withNewStatus()
        .withPhase("Running")
        .withHostIP("10.0.0.7")
        .withPodIP("10.244.3.17")
        .withStartTime(t)
        .withQosClass("Burstable")
        .addNewCondition()
        .withType("PodScheduled")
        .withStatus("True")
        .withLastTransitionTime(t)
        .endCondition()
        .addNewCondition()
        .withType("Initialized")
        .withStatus("True")
        .withLastTransitionTime(t)
        .endCondition()
        .addNewCondition()
        .withType("ContainersReady")
        .withStatus("True")
        .withLastTransitionTime(t)
        .endCondition()
        .addNewCondition()
        .withType("Ready")
        .withStatus("True")
        .withLastTransitionTime(t)
        .endCondition()
        .addNewCondition()
        .withType("Interruption.GPUShareReclaim")
        .withStatus("True")
        .withReason("GPUSharePreempted")
        .withMessage("GPU is preempted by other.")
        .withLastTransitionTime(t)
        .endCondition()
        .addNewContainerStatus()
        .withName("main")
        .withImage("registry.example/cuda-sample:12")
        .withImageID("registry.example/cuda-sample@sha256:" + "0".repeat(64))
        .withContainerID("containerd://" + "1".repeat(64))
        .withReady(true)
        .withRestartCount(0)
        .withStarted(true)
        .withNewState()
        .withNewRunning()
        .withStartedAt(t)
        .endRunning()
        .endState()
        .endContainerStatus()
        .endStatus()
        .build();
  }

  static Node realisticNode() {
    String t = "2026-12-08T00:00:00Z";
    NodeBuilder b =
        new NodeBuilder(Fixtures.kubeletNode("gpu-hpn-0"))
            .editMetadata()
            .withResourceVersion("123456789")
            .addToLabels("kubernetes.io/hostname", "gpu-hpn-0")
            .addToLabels("kubernetes.io/os", "linux")
            .addToLabels("kubernetes.io/arch", "amd64")
            .addToAnnotations("node.alpha.kubernetes.io/ttl", "0")
            .addToAnnotations("volumes.kubernetes.io/controller-managed-attach-detach", "true")
            .addNewManagedField()
            .withManager("kubelet")
            .withOperation("Update")
            .withApiVersion("v1")
            .withTime(t)
            .withSubresource("status")
            .withFieldsType("FieldsV1")
            .endManagedField()
            .endMetadata()
            .editStatus()
            .addToCapacity("alibabacloud.com/gpu-core.percentage", new Quantity("1600"))
            .addToAllocatable("alibabacloud.com/gpu-core.percentage", new Quantity("1600"))
            .addNewCondition()
            .withType("GPUSharePolicy")
            .withStatus("True")
            .withReason("share-pool")
            .withMessage("gpu share policy is share-pool.")
            .withLastHeartbeatTime(t)
            .withLastTransitionTime(t)
            .endCondition()
            .withNewNodeInfo()
            .withArchitecture("amd64")
            .withBootID(UUID.randomUUID().toString())
            .withContainerRuntimeVersion("containerd://2.4.2")
            .withKernelVersion("6.8.0")
            .withKubeProxyVersion("v1.37.2")
            .withKubeletVersion("v1.37.2")
            .withMachineID(UUID.randomUUID().toString().replace("-", ""))
            .withOperatingSystem("linux")
            .withOsImage("Ubuntu 24.04 LTS")
            .withSystemUUID(UUID.randomUUID().toString())
            .endNodeInfo()
            .endStatus();
    Node node = b.build();
    for (int i = 0; i < 20; i++) {
      node.getStatus()
          .getImages()
          .add(
              new io.fabric8.kubernetes.api.model.ContainerImageBuilder()
                  .withNames("registry.example/image-" + i + "@sha256:" + "2".repeat(64))
                  .withSizeBytes(123_456_789L)
                  .build());
    }
    return node;
  }
}
