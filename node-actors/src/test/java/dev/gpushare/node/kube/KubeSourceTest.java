package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.PodView;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The informers against a CRUD mock API server, feeding the real service (sharded persistent actors
 * on an in-memory journal): nodes and pods arrive as kubectl would create them, changes and
 * deletions follow, and a relist (a new source over the same service) changes nothing.
 */
class KubeSourceTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static MockApi api;

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "kube-source-test",
            ConfigFactory.parseString(
                    "pekko.loglevel = WARNING\n"
                        + "pekko.persistence.journal.plugin = \"pekko.persistence.journal.inmem\"\n"
                        + "pekko.persistence.snapshot-store.plugin ="
                        + " \"pekko.persistence.snapshot-store.local\"\n"
                        + "pekko.persistence.snapshot-store.local.dir = \""
                        + snapshots.toString().replace("\\", "/")
                        + "\"\n"
                        + "pekko.actor.serialization-bindings {\n"
                        + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                        + "}\n")
                .withFallback(GpuShareRuntime.config())
                .withFallback(ConfigFactory.load()));
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
                new ManualClock(Instant.parse("2026-01-01T00:00:00Z"))));
    api = new MockApi();
  }

  @AfterAll
  static void stop() {
    api.close();
    kit.shutdownTestKit();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  /** Polls until {@code check} holds: informers and the service work asynchronously. */
  static void eventually(String what, Supplier<Boolean> check) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!check.get()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 30 s: " + what);
      }
      Thread.onSpinWait();
      Thread.sleep(20);
    }
  }

  static Node node(String name, String policy) {
    NodeBuilder b =
        new NodeBuilder()
            .withNewMetadata()
            .withName(name)
            .addToLabels("alibabacloud.com/node-type", "reserved")
            .endMetadata()
            .withNewStatus()
            .addToCapacity("cpu", new Quantity("32"))
            .addToCapacity("memory", new Quantity("256Gi"))
            .addToCapacity("nvidia.com/gpu", new Quantity("2"))
            .addToAllocatable("cpu", new Quantity("32"))
            .addToAllocatable("memory", new Quantity("256Gi"))
            .addToAllocatable("nvidia.com/gpu", new Quantity("2"))
            .endStatus();
    if (policy != null) {
      b.editMetadata().addToLabels("alibabacloud.com/gpu-share-policy", policy).endMetadata();
    }
    return b.build();
  }

  static Pod sharingPod(String name, String node) {
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace("default")
        .withUid("uid-" + name)
        .addToLabels("alibabacloud.com/compute-class", "gpu-hpn")
        .addToLabels("alibabacloud.com/gpu-share-policy", "share-pool")
        .addToAnnotations("alibabacloud.com/gpu-core-limit", "100")
        .addToAnnotations("alibabacloud.com/gpu-memory-limit", "100")
        .endMetadata()
        .withNewSpec()
        .withNodeName(node)
        .addNewContainer()
        .withName("main")
        .withImage("busybox")
        .withNewResources()
        .addToRequests("alibabacloud.com/gpu-core.percentage", new Quantity("10"))
        .addToRequests("alibabacloud.com/gpu-memory.percentage", new Quantity("10"))
        .addToLimits("alibabacloud.com/gpu-core.percentage", new Quantity("10"))
        .addToLimits("alibabacloud.com/gpu-memory.percentage", new Quantity("10"))
        .endResources()
        .endContainer()
        .endSpec()
        .build();
  }

  static Optional<PodView> pod(String name) {
    try {
      return Optional.of(await(service.pod("default", name)));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof ServiceException) {
        return Optional.empty();
      }
      throw new IllegalStateException(e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static String policy(String node) {
    try {
      return await(service.node(node)).policy().label();
    } catch (Exception e) {
      return "unknown";
    }
  }

  @Test
  void labelled_nodes_and_their_pods_reach_the_arbiter_and_a_relist_changes_nothing()
      throws Exception {
    // A pod bound before its node is labelled waits, and arrives once the node does.
    api.other.resource(node("k1", null)).create();
    String earlyUid = api.other.resource(sharingPod("early", "k1")).create().getMetadata().getUid();
    String lateUid;
    KubeSource source = new KubeSource(api.client, service, Optional.empty());
    try {
      await(source.start());
      assertTrue(pod("early").isEmpty(), "not managed yet: the node carries no policy label");
      api.other
          .nodes()
          .withName("k1")
          .edit(
              n ->
                  new NodeBuilder(n)
                      .editMetadata()
                      .addToLabels("alibabacloud.com/gpu-share-policy", "share-pool")
                      .endMetadata()
                      .build());
      eventually("node k1 share-pool", () -> "share-pool".equals(policy("k1")));
      eventually("pod early known", () -> pod("early").isPresent());
      assertEquals(earlyUid, pod("early").get().uid(), "the API server's uid");
      assertEquals(PodState.HIBERNATION, pod("early").get().state());

      lateUid = api.other.resource(sharingPod("late", "k1")).create().getMetadata().getUid();
      eventually("pod late known", () -> pod("late").isPresent());
      assertEquals(PodState.RUNNING, await(service.demand("default", "late")).state());

      api.other.pods().inNamespace("default").withName("early").delete();
      eventually("pod early gone", () -> pod("early").isEmpty());
    } finally {
      source.close();
    }

    // A relist over the same service: every object is delivered again as an add.
    KubeSource relisted = new KubeSource(api.client, service, Optional.empty());
    try {
      await(relisted.start());
      PodView late = pod("late").orElseThrow();
      assertEquals(lateUid, late.uid());
      assertEquals(PodState.RUNNING, late.state(), "the grant survives the relist");
      assertTrue(pod("early").isEmpty());

      // Removing the label turns sharing off once no shared pod is in the way.
      api.other.pods().inNamespace("default").withName("late").delete();
      eventually("pod late gone", () -> pod("late").isEmpty());
      api.other
          .nodes()
          .withName("k1")
          .edit(
              n ->
                  new NodeBuilder(n)
                      .editMetadata()
                      .removeFromLabels("alibabacloud.com/gpu-share-policy")
                      .endMetadata()
                      .build());
      eventually("node k1 none", () -> "none".equals(policy("k1")));
    } finally {
      relisted.close();
    }
  }

  @Test
  void a_pod_recreated_under_the_same_name_replaces_the_old_one() throws Exception {
    api.other.resource(node("k2", "share-pool")).create();
    KubeSource source = new KubeSource(api.client, service, Optional.empty());
    try {
      await(source.start());
      eventually("node k2 share-pool", () -> "share-pool".equals(policy("k2")));
      String first = api.other.resource(sharingPod("same", "k2")).create().getMetadata().getUid();
      eventually("pod same known", () -> pod("same").isPresent());
      assertEquals(PodState.RUNNING, await(service.demand("default", "same")).state());
      api.other.pods().inNamespace("default").withName("same").delete();
      String second = api.other.resource(sharingPod("same", "k2")).create().getMetadata().getUid();
      assertTrue(!first.equals(second), "the API server gave the new pod a new uid");
      eventually("the new uid", () -> pod("same").map(p -> p.uid().equals(second)).orElse(false));
      assertEquals(
          PodState.HIBERNATION, pod("same").get().state(), "the new pod holds nothing yet");
      assertEquals(
          0, await(service.node("k2")).gpus().stream().mapToInt(g -> g.inUse().core()).sum());
    } finally {
      source.close();
    }
  }
}
