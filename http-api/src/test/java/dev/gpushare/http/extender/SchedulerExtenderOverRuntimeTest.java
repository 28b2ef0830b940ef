package dev.gpushare.http.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.http.api.FakeGpuShareServiceAccess;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extender against a real arbiter (sharded, persistent actors over the in-memory journal): the
 * filter reads the policy in force, the exclusive pods that keep sharing off and the shares the
 * GPUs hold as the arbiter decided them, and the scores follow.
 */
class SchedulerExtenderOverRuntimeTest {
  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ServerBinding binding;
  static final HttpClient CLIENT = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    kit =
        ActorTestKit.create(
            "extender-runtime-test",
            ConfigFactory.parseString(
                    "pekko.loglevel = WARNING\n"
                        + "pekko.persistence.journal.plugin ="
                        + " \"pekko.persistence.journal.inmem\"\n"
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
    binding =
        await(
            new HttpApi(service, FakeGpuShareServiceAccess.journal(), now -> {})
                .bind(kit.system(), "127.0.0.1", 0));

    await(service.putNode(node("pool", "share-pool", 2)));
    await(service.putNode(node("fixed", "static", 1)));
    await(service.putNode(node("excl", "none", 1)));
    // share-pool: a pod with limit 100 runs on GPU 0, GPU 1 stays free
    await(service.createPod(sharing("a", "pool", "share-pool", 10, 100)));
    await(service.demand("default", "a"));
    // static: a pod pinned with request 60
    await(service.createPod(sharing("s", "fixed", "static", 60, 100)));
    // an exclusive pod, then the label asks for sharing: it stays off (ExclusiveGPUPodsPresent)
    await(service.createPod(exclusive("train", "excl")));
    Map<String, String> label = new HashMap<>();
    label.put("alibabacloud.com/gpu-share-policy", "share-pool");
    await(service.patchNode("excl", label, Map.of()));
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    kit.shutdownTestKit();
  }

  @Test
  void theFilterSeesWhatTheArbiterDecided() throws Exception {
    assertEquals(PodState.RUNNING, await(service.pod("default", "a")).state());
    JsonNode r = filter(sharing("new", null, "share-pool", 10, 100));
    assertEquals(List.of("pool"), texts(r.get("NodeNames")), r.toString());
    assertTrue(
        r.at("/FailedNodes/excl").asText().contains("ExclusiveGPUPodsPresent"), r.toString());
    assertTrue(r.at("/FailedNodes/excl").asText().contains("default/train"), r.toString());
    assertTrue(r.at("/FailedAndUnresolvableNodes/fixed").asText().contains("static in force"));
    assertTrue(
        r.at("/FailedAndUnresolvableNodes/cpu-only").asText().contains("not managed by gpushare"));

    // static pins requests: 40 fits beside the pinned 60, 50 does not
    JsonNode fits = filter(sharing("s2", null, "static", 40, 100));
    assertTrue(texts(fits.get("NodeNames")).contains("fixed"), fits.toString());
    JsonNode full = filter(sharing("s3", null, "static", 50, 100));
    assertEquals(
        "no healthy GPU of node fixed can hold the pod's requests (static pins requests on a GPU),"
            + " core 50%, memory 50%, beside what it holds (core and memory each at most 100%):"
            + " GPU 0 holds core 60%, memory 60%",
        full.at("/FailedNodes/fixed").asText());

    // the exclusive pod's kind may go to the blocked node and to unknown nodes only
    JsonNode ex = filter(exclusive("train2", null));
    assertEquals(List.of("excl", "cpu-only"), texts(ex.get("NodeNames")));
  }

  @Test
  void theScoresComeFromTheArbitersGpus() throws Exception {
    JsonNode scores = prioritize(sharing("new2", null, "share-pool", 10, 50), "");
    // pool: GPU 0 is full (a's limit 100), the 50 % share breaks GPU 1: +399 thousandths
    assertEquals(1, score(scores, "pool"), scores.toString());
    assertEquals(0, score(scores, "fixed"));
    assertEquals(0, score(scores, "excl"));
    JsonNode bestFit = prioritize(sharing("new2", null, "share-pool", 10, 50), "?policy=bestfit");
    // best fit: 100 of the node's 400 core+memory percent would stay free: round(10 x 0.75)
    assertEquals(8, score(bestFit, "pool"), bestFit.toString());
  }

  // ---- helpers ----

  static JsonNode filter(PodManifest pod) throws Exception {
    return call("/scheduler/filter", pod);
  }

  static JsonNode prioritize(PodManifest pod, String query) throws Exception {
    return call("/scheduler/prioritize" + query, pod);
  }

  static JsonNode call(String path, PodManifest pod) throws Exception {
    ObjectNode args = Json.mapper().createObjectNode();
    args.set("Pod", podJson(pod));
    args.putNull("Nodes");
    args.putArray("NodeNames").add("pool").add("fixed").add("excl").add("cpu-only");
    HttpRequest request =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(args.toString()))
            .build();
    HttpResponse<String> r = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return Json.mapper().readTree(r.body());
  }

  /** The pod as a v1.Pod in JSON. */
  static JsonNode podJson(PodManifest pod) {
    ObjectNode root = Json.mapper().createObjectNode();
    ObjectNode metadata = root.putObject("metadata");
    metadata.put("name", pod.name()).put("namespace", pod.namespace());
    metadata.set("labels", Json.mapper().valueToTree(pod.labels()));
    ObjectNode container = root.putObject("spec").putArray("containers").addObject();
    container.put("name", "main");
    ObjectNode resources = container.putObject("resources");
    resources.set("requests", Json.mapper().valueToTree(pod.containers().get(0).requests()));
    resources.set("limits", Json.mapper().valueToTree(pod.containers().get(0).limits()));
    return root;
  }

  static int score(JsonNode list, String host) {
    for (JsonNode e : list) {
      if (e.get("Host").asText().equals(host)) {
        return e.get("Score").asInt();
      }
    }
    throw new AssertionError(host + " not in " + list);
  }

  static List<String> texts(JsonNode array) {
    List<String> out = new java.util.ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  static NodeManifest node(String name, String policy, int gpus) {
    return new NodeManifest(
        name,
        Map.of("alibabacloud.com/gpu-share-policy", policy),
        Map.of(),
        Map.of("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", Integer.toString(gpus)),
        Map.of());
  }

  static PodManifest sharing(String name, String node, String policy, int request, int limit) {
    return new PodManifest(
        "default",
        name,
        null,
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
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(limit),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(limit)))));
  }

  static PodManifest exclusive(String name, String node) {
    return new PodManifest(
        "default",
        name,
        null,
        node,
        Map.of(),
        Map.of(),
        List.of(
            new PodManifest.ContainerResources(
                "main", Map.of("nvidia.com/gpu", "1"), Map.of("nvidia.com/gpu", "1"))));
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }
}
