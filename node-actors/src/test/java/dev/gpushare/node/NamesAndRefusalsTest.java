package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.PodView;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.ProcessingSuccess$;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Names at Kubernetes' limits, names Kubernetes refuses, and refused creates, on the service over
 * real sharded persistent actors. Every journal write is counted per persistence id (a policy of
 * Pekko's persistence test kit journal), so a test sees exactly which ids were written and how long
 * they are.
 */
class NamesAndRefusalsTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static final ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));

  /** Events written per persistence id, since the system started. */
  static final Map<String, Integer> written = new TreeMap<>();

  /** The longest namespace (a DNS-1123 label). */
  static final String NAMESPACE = "s".repeat(63);

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "names-test",
            ConfigFactory.parseString(
                    "pekko.persistence.journal.plugin = \""
                        + PersistenceTestKitPlugin.PluginId()
                        + "\"")
                .withFallback(PersistenceTestKitPlugin.config())
                .withFallback(TestSystems.config(snapshots)));
    PersistenceTestKit.create(kit.system())
        .withPolicy(
            (persistenceId, operation) -> {
              if (operation instanceof WriteEvents write) {
                synchronized (written) {
                  written.merge(persistenceId, write.getBatch().size(), Integer::sum);
                }
              }
              return ProcessingSuccess$.MODULE$;
            });
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
                clock));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static Map<String, Integer> writes() {
    synchronized (written) {
      return new TreeMap<>(written);
    }
  }

  /** Waits (bounded) until a persistence id that {@code id} accepts has been written. */
  static void awaitWrite(java.util.function.Predicate<String> id) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
    while (writes().keySet().stream().noneMatch(id)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no such write within 30 s: " + writes().keySet());
      }
      Thread.sleep(10);
    }
  }

  /**
   * Waits (bounded) until nothing has been written for a second: the pods' records follow their
   * decisions after the answers, also those of an earlier test.
   */
  static void awaitQuiet() throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
    Map<String, Integer> last = writes();
    long since = System.nanoTime();
    while (System.nanoTime() - since < java.util.concurrent.TimeUnit.SECONDS.toNanos(1)
        && System.nanoTime() < deadline) {
      Thread.sleep(20);
      Map<String, Integer> now = writes();
      if (!now.equals(last)) {
        last = now;
        since = System.nanoTime();
      }
    }
  }

  /** A DNS-1123 subdomain of exactly 253 characters: three 63-character labels and one of 61. */
  static String longest(char c) {
    String label = String.valueOf(c).repeat(63);
    return label + "." + label + "." + label + "." + String.valueOf(c).repeat(61);
  }

  static NodeManifest node(String name, String policy, int gpus) {
    return new NodeManifest(
        name,
        Map.of("alibabacloud.com/gpu-share-policy", policy),
        Map.of(),
        Map.of("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", Integer.toString(gpus)),
        Map.of());
  }

  static PodManifest pod(
      String namespace, String name, String uid, String node, String policy, int request) {
    return new PodManifest(
        namespace,
        name,
        uid,
        node,
        Map.of(
            "alibabacloud.com/compute-class",
            "gpu-hpn",
            "alibabacloud.com/gpu-share-policy",
            policy),
        Map.of(),
        List.of(
            new PodManifest.ContainerResources(
                "main",
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(request),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(request)),
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", "100",
                    "alibabacloud.com/gpu-memory.percentage", "100"))));
  }

  static ServiceException refused(Kind kind, Supplier<CompletionStage<?>> call) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> await(call.get()));
    ServiceException refusal = assertInstanceOf(ServiceException.class, e.getCause());
    assertEquals(kind, refusal.kind(), refusal::getMessage);
    return refusal;
  }

  @Test
  void aPodWithTheLongestNamesOnANodeWithTheLongestNameWorks() throws Exception {
    String nodeName = longest('n');
    String podName = longest('p');
    String uid = UUID.randomUUID().toString();
    assertEquals(253, nodeName.length());
    await(service.putNode(node(nodeName, "share-pool", 1)));
    PodView created =
        await(service.createPod(pod(NAMESPACE, podName, uid, nodeName, "share-pool", 10)));
    assertEquals(podName, created.name());
    assertEquals(PodState.RUNNING, await(service.demand(NAMESPACE, podName)).state());
    assertEquals(0, await(service.pod(NAMESPACE, podName)).gpu().index());
    assertEquals(PodState.HIBERNATION, await(service.release(NAMESPACE, podName)).state());
    assertEquals(podName, await(service.deletePod(NAMESPACE, podName)).name());
    refused(Kind.NOT_FOUND, () -> service.pod(NAMESPACE, podName));

    // Every persistence id of these names, as written, and its length: the journal's
    // persistence_id column (VARCHAR(512), persistence-config's SchemaSetup) holds the longest.
    awaitWrite(k -> k.equals("Pod|" + NAMESPACE + "/" + podName + "/" + uid));
    Map<String, Integer> ids = writes();
    String ref = NAMESPACE + "/" + podName;
    assertEquals(358, length(ids, "Pod|" + ref + "/" + uid), "Pod|<ns>/<name>/<uid>");
    assertEquals(326, length(ids, "PodIndex|" + ref), "PodIndex|<ns>/<name>");
    assertEquals(265, length(ids, "NodeArbiter|" + nodeName), "NodeArbiter|<node>");
    assertEquals(258, length(ids, "Node|" + nodeName), "Node|<node>");
    assertEquals(280, length(ids, "/sharding/NodeArbiterShard/" + nodeName), "remembered arbiters");
    String gpu =
        ids.keySet().stream().filter(id -> id.startsWith("Gpu|" + nodeName)).findFirst().get();
    assertEquals(298, gpu.length(), "Gpu|<node>|GPU-<uuid> (simulated): " + gpu);
    int longest = ids.keySet().stream().mapToInt(String::length).max().getAsInt();
    assertEquals(358, longest, "the longest persistence id written");
    assertTrue(longest <= 512);
  }

  private static int length(Map<String, Integer> ids, String id) {
    assertTrue(ids.containsKey(id), () -> id + " was written; written: " + ids.keySet());
    return id.length();
  }

  @Test
  void namesKubernetesRefusesNameNoPodAndAreRefusedAtOnce() throws Exception {
    awaitQuiet();
    Map<String, Integer> before = writes();
    List<String[]> bad =
        List.of(
            new String[] {"default", "a|b"},
            new String[] {"a|b", "pod"},
            new String[] {"default", "Upper"},
            new String[] {"default", "x".repeat(254)},
            new String[] {"s".repeat(64), "pod"},
            new String[] {"default", "a/b"},
            new String[] {"default", "a:b"},
            new String[] {"", "pod"});
    for (String[] p : bad) {
      String ns = p[0];
      String name = p[1];
      ServiceException e = refused(Kind.NOT_FOUND, () -> service.pod(ns, name));
      assertTrue(e.getMessage().contains("not a valid pod name"), e.getMessage());
      refused(Kind.NOT_FOUND, () -> service.demand(ns, name));
      refused(Kind.NOT_FOUND, () -> service.release(ns, name));
      refused(Kind.NOT_FOUND, () -> service.deletePod(ns, name));
      refused(Kind.NOT_FOUND, () -> service.awaitGrant(ns, name, Duration.ofSeconds(1)));
      assertEquals(false, await(service.forgetPod(ns, name, null)));
    }
    refused(Kind.NOT_FOUND, () -> service.node("a|b"));
    assertEquals(before, writes(), "nothing written");
  }

  @Test
  void refusedCreatesWriteNothing() throws Exception {
    await(service.putNode(node("refusing", "share-pool", 1)));
    await(service.createPod(pod("default", "big", null, "refusing", "share-pool", 90)));
    // The accepted pod's own record follows its decision after the answer: wait for it, so that
    // only the refusals below are measured.
    awaitWrite(k -> k.startsWith("Pod|default/big/"));
    awaitQuiet();
    Map<String, Integer> before = writes();
    for (int i = 0; i < 20; i++) {
      String name = "refused-" + i;
      // 422: the pod's policy is not the node's (NodeAdmission), and the name/uid/node rules.
      ServiceException policy =
          refused(
              Kind.INVALID,
              () -> service.createPod(pod("default", name, null, "refusing", "static", 10)));
      assertEquals(
          "metadata.labels[alibabacloud.com/gpu-share-policy]", policy.field(), policy::getMessage);
      ServiceException uid =
          refused(
              Kind.INVALID,
              () ->
                  service.createPod(
                      pod("default", name, "u|" + name, "refusing", "share-pool", 1)));
      assertEquals("metadata.uid", uid.field());
      refused(
          Kind.INVALID,
          () ->
              service.createPod(
                  pod("default", name, "u".repeat(129), "refusing", "share-pool", 1)));
      ServiceException nodeName =
          refused(
              Kind.INVALID,
              () -> service.createPod(pod("default", name, null, "a|b", "share-pool", 1)));
      assertEquals("spec.nodeName", nodeName.field());
      refused(
          Kind.INVALID,
          () -> service.createPod(pod("a|b", name, null, "refusing", "share-pool", 1)));
      // 409: no room left on the node; 404: no such node.
      refused(
          Kind.CONFLICT,
          () -> service.createPod(pod("default", name, null, "refusing", "share-pool", 20)));
      refused(
          Kind.NOT_FOUND,
          () -> service.createPod(pod("default", name, null, "no-such-node", "share-pool", 1)));
      // ensurePod (the Kubernetes sync) refuses the same, before any claim.
      refused(
          Kind.INVALID,
          () -> service.ensurePod(pod("default", name, null, "refusing", "static", 10)));
    }
    assertEquals(before, writes(), "20 × 8 refused creates wrote nothing");
    // The node still takes what fits, and a create repeated with its uid is answered as before.
    String uid = UUID.randomUUID().toString();
    PodView fits =
        await(service.createPod(pod("default", "fits", uid, "refusing", "share-pool", 10)));
    assertEquals("refusing", fits.node());
    assertEquals(
        uid,
        await(service.createPod(pod("default", "fits", uid, "refusing", "share-pool", 10))).uid());
    assertNull(await(service.pod("default", "fits")).gpu());
  }
}
