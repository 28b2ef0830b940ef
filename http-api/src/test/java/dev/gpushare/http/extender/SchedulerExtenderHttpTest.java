package dev.gpushare.http.extender;

import static dev.gpushare.http.extender.ExtenderViews.gpu;
import static dev.gpushare.http.extender.ExtenderViews.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.http.api.FakeGpuShareServiceAccess;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.http.auth.Access;
import dev.gpushare.http.auth.Scope;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The extender over the whole HTTP API (a real server on a free port, the arbiter stubbed): the
 * JSON of kube-scheduler's {@code extender/v1} both ways, parsed from a request as kube-scheduler
 * writes it, the filter's reasons, the scores, the error answers and the access scope.
 */
class SchedulerExtenderHttpTest {
  static final FakeGpuShareService SERVICE = new FakeGpuShareService();
  static final List<Scope> ASKED = new CopyOnWriteArrayList<>();
  static volatile boolean allow = true;
  static ActorTestKit kit;
  static ServerBinding binding;
  static HttpClient client;

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("SchedulerExtenderHttpTest");
    Access access =
        (token, scope) -> {
          ASKED.add(scope);
          return CompletableFuture.completedFuture(
              allow
                  ? new Access.Allowed("system:kube-scheduler")
                  : new Access.Forbidden(
                      "system:kube-scheduler may not " + scope.describe() + " in gpushare.dev"));
        };
    binding =
        new HttpApi(SERVICE, FakeGpuShareServiceAccess.journal(), now -> {}, access)
            .bind(kit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get();
    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    kit.shutdownTestKit();
  }

  @BeforeEach
  void clear() {
    SERVICE.reset();
    ASKED.clear();
    allow = true;
    SERVICE.setNode(node("gpu-a", SharePolicy.SHARE_POOL, gpu(0, 50, 50), gpu(1, 0, 0)));
    SERVICE.setNode(node("gpu-b", SharePolicy.SHARE_POOL, gpu(0, 30, 30), gpu(1, 30, 30)));
    SERVICE.setNode(node("gpu-full", SharePolicy.SHARE_POOL, gpu(0, 100, 60), gpu(1, 60, 60)));
    SERVICE.setNode(node("gpu-static", SharePolicy.STATIC, gpu(0, 0, 0)));
    SERVICE.setNode(
        node(
            "gpu-blocked",
            "share-pool",
            SharePolicy.NONE,
            NodeSharing.EXCLUSIVE_GPU_PODS_PRESENT,
            "gpu share policy share-pool cannot take effect while pods hold exclusive GPUs"
                + " (nvidia.com/gpu): ml/train; sharing stays off until they are gone.",
            gpu(0, 0, 0)));
  }

  // ---- a request as kube-scheduler writes it ----

  /**
   * {@code ExtenderArgs} as kube-scheduler 1.30 marshals it for an extender without {@code
   * nodeCacheCapable}: Go field names (no json tags) on the outside, Kubernetes' own lowercase
   * names inside; the pod as the admission webhook left it (limits moved to annotations), from the
   * scheduler's cache (no kind/apiVersion); {@code NodeNames} null.
   */
  static final String EXTENDER_ARGS =
      """
      {
        "Pod": {
          "metadata": {
            "name": "gpu-share-demo",
            "namespace": "default",
            "uid": "3f1c2a4e-8b6d-4a55-9d0e-6c2f7a1b9e10",
            "resourceVersion": "48213",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
              "alibabacloud.com/compute-class": "gpu-hpn",
              "alibabacloud.com/gpu-share-policy": "share-pool"
            },
            "annotations": {
              "alibabacloud.com/gpu-core-limit": "50",
              "alibabacloud.com/gpu-memory-limit": "50"
            },
            "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update"}]
          },
          "spec": {
            "volumes": [{"name": "kube-api-access-x", "projected": {"defaultMode": 420}}],
            "containers": [{
              "name": "notebook",
              "image": "registry.example/notebook:1",
              "resources": {
                "limits": {
                  "alibabacloud.com/gpu-core.percentage": "10",
                  "alibabacloud.com/gpu-memory.percentage": "10",
                  "cpu": "4", "memory": "16Gi"
                },
                "requests": {
                  "alibabacloud.com/gpu-core.percentage": "10",
                  "alibabacloud.com/gpu-memory.percentage": "10",
                  "cpu": "2", "memory": "8Gi"
                }
              },
              "terminationMessagePolicy": "File",
              "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always",
            "schedulerName": "gpushare-scheduler",
            "tolerations": [{"key": "alibabacloud.com/gpu-share", "operator": "Exists",
                             "effect": "NoSchedule"}],
            "priority": 0
          },
          "status": {"phase": "Pending", "qosClass": "Burstable"}
        },
        "Nodes": {
          "metadata": {},
          "items": [
            %s
          ]
        },
        "NodeNames": null
      }
      """
          .formatted(
              String.join(
                  ",\n",
                  nodeJson("gpu-a"),
                  nodeJson("gpu-b"),
                  nodeJson("gpu-full"),
                  nodeJson("gpu-static"),
                  nodeJson("gpu-blocked"),
                  nodeJson("cpu-1")));

  /** A v1.Node as the scheduler sends it (abridged status). */
  static String nodeJson(String name) {
    return """
        {"metadata": {"name": "%s", "uid": "uid-%s", "resourceVersion": "7",
                      "labels": {"kubernetes.io/hostname": "%s"}},
         "spec": {"podCIDR": "10.244.1.0/24"},
         "status": {"capacity": {"cpu": "176", "nvidia.com/gpu": "2"},
                    "allocatable": {"cpu": "144", "alibabacloud.com/gpu-core.percentage": "200"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}"""
        .formatted(name, name, name);
  }

  @Test
  void filterAnswersExtenderFilterResultWithTheGoFieldNames() throws Exception {
    HttpResponse<String> r = post("/scheduler/filter", EXTENDER_ARGS);
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElseThrow());
    JsonNode result = Json.mapper().readTree(r.body());
    assertEquals(
        List.of("Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"),
        names(result),
        "k8s.io/kube-scheduler/extender/v1 ExtenderFilterResult, in the Go struct's order");
    assertEquals("", result.get("Error").asText());
    assertTrue(result.get("NodeNames").isNull());
    // the nodes that pass come back as they were sent (a 50 % limit fits gpu-a and gpu-b)
    JsonNode sent = Json.mapper().readTree(EXTENDER_ARGS).path("Nodes").path("items");
    JsonNode items = result.path("Nodes").path("items");
    assertEquals(2, items.size(), result.toString());
    assertEquals(sent.get(0), items.get(0));
    assertEquals(sent.get(1), items.get(1));
    assertTrue(result.path("Nodes").path("metadata").isObject());

    JsonNode failed = result.get("FailedNodes");
    assertEquals(List.of("gpu-full", "gpu-blocked"), names(failed));
    assertEquals(
        "no healthy GPU of node gpu-full can hold the pod's limits (share-pool reserves limits on"
            + " a GPU), core 50%, memory 50%, beside what it holds (core and memory each at most"
            + " 100%): GPU 0 holds core 100%, memory 60%; GPU 1 holds core 60%, memory 60%",
        failed.get("gpu-full").asText());
    assertTrue(
        failed.get("gpu-blocked").asText().contains("ExclusiveGPUPodsPresent"), failed.toString());
    JsonNode unresolvable = result.get("FailedAndUnresolvableNodes");
    assertEquals(List.of("gpu-static", "cpu-1"), names(unresolvable));
    assertTrue(unresolvable.get("gpu-static").asText().contains("static in force"));
    assertTrue(unresolvable.get("cpu-1").asText().contains("not managed by gpushare"));
    assertEquals(List.of("nodes"), SERVICE.calls, "one read of the arbiter's nodes");
  }

  @Test
  void withNodeCacheCapableTheSchedulerSendsAndGetsNames() throws Exception {
    ObjectNode args = (ObjectNode) Json.mapper().readTree(EXTENDER_ARGS);
    args.putNull("Nodes");
    args.putArray("NodeNames").add("gpu-a").add("gpu-static").add("gpu-b");
    JsonNode result = Json.mapper().readTree(post("/scheduler/filter", args.toString()).body());
    assertTrue(result.get("Nodes").isNull());
    assertEquals(List.of("gpu-a", "gpu-b"), texts(result.get("NodeNames")));
    assertEquals(List.of("gpu-static"), names(result.get("FailedAndUnresolvableNodes")));
  }

  @Test
  void keysAreMatchedIgnoringCaseAsGosDecoderDoes() throws Exception {
    String lower =
        EXTENDER_ARGS
            .replace("\"Pod\":", "\"pod\":")
            .replace("\"Nodes\":", "\"nodes\":")
            .replace("\"NodeNames\":", "\"nodenames\":");
    JsonNode result = Json.mapper().readTree(post("/scheduler/filter", lower).body());
    assertEquals(2, result.path("Nodes").path("items").size(), result.toString());
  }

  @Test
  void aPodThatBreaksTheSharingRulesGetsAnErrorNamingEveryFieldAndNoNode() throws Exception {
    String bad =
        EXTENDER_ARGS
            .replace("\"gpu-hpn\"", "\"general-purpose\"")
            .replace("\"alibabacloud.com/gpu-core-limit\": \"50\"", "\"x\": \"y\"");
    HttpResponse<String> r = post("/scheduler/filter", bad);
    assertEquals(200, r.statusCode(), "kube-scheduler reads the Error of a 200");
    JsonNode result = Json.mapper().readTree(r.body());
    String error = result.get("Error").asText();
    assertTrue(
        error.startsWith(
            "pod default/gpu-share-demo cannot be placed by gpushare, its spec breaks the GPU"
                + " sharing rules (SPEC §3): "),
        error);
    assertTrue(error.contains("metadata.labels[alibabacloud.com/compute-class]"), error);
    assertTrue(error.contains("metadata.annotations[alibabacloud.com/gpu-core-limit]"), error);
    assertTrue(result.get("Nodes").isNull());
    assertTrue(result.get("FailedNodes").isEmpty());
    assertEquals(List.of(), SERVICE.calls, "the arbiter is not asked");
  }

  @Test
  void podsWithoutGpusPassEverywhereAndExclusivePodsAvoidSharingNodes() throws Exception {
    ObjectNode args = (ObjectNode) Json.mapper().readTree(EXTENDER_ARGS);
    ObjectNode metadata = (ObjectNode) args.path("Pod").path("metadata");
    metadata.putObject("labels");
    metadata.putObject("annotations");
    ObjectNode resources =
        (ObjectNode) args.path("Pod").path("spec").path("containers").get(0).path("resources");
    resources.putObject("limits").put("cpu", "1");
    resources.putObject("requests").put("cpu", "1");
    JsonNode plain = Json.mapper().readTree(post("/scheduler/filter", args.toString()).body());
    assertEquals(6, plain.path("Nodes").path("items").size());
    assertEquals(List.of(), SERVICE.calls, "nothing to look up for a pod without GPUs");

    resources.putObject("limits").put("nvidia.com/gpu", "1");
    JsonNode exclusive = Json.mapper().readTree(post("/scheduler/filter", args.toString()).body());
    List<String> passed = new ArrayList<>();
    exclusive.path("Nodes").path("items").forEach(n -> passed.add(n.at("/metadata/name").asText()));
    assertEquals(List.of("gpu-blocked", "cpu-1"), passed);
    assertEquals(
        List.of("gpu-a", "gpu-b", "gpu-full", "gpu-static"),
        names(exclusive.get("FailedAndUnresolvableNodes")));
  }

  @Test
  void thousandsOfWholeNodesFitInOneRequest() throws Exception {
    // without nodeCacheCapable every candidate comes whole: 3000 nodes of ~4 KiB are ~12 MB,
    // beyond Pekko's default 8m max-content-length
    ObjectNode args = (ObjectNode) Json.mapper().readTree(EXTENDER_ARGS);
    com.fasterxml.jackson.databind.node.ArrayNode items =
        ((ObjectNode) args.path("Nodes")).putArray("items");
    String padding = "x".repeat(4000);
    for (int i = 0; i < 3000; i++) {
      ObjectNode n = items.addObject();
      n.putObject("metadata").put("name", "cpu-" + i).putObject("annotations").put("pad", padding);
    }
    String body = args.toString();
    assertTrue(body.length() > 12_000_000, "body " + body.length());
    HttpResponse<String> r = post("/scheduler/filter", body);
    assertEquals(200, r.statusCode(), r.body().substring(0, Math.min(500, r.body().length())));
    JsonNode result = Json.mapper().readTree(r.body());
    assertEquals(3000, result.get("FailedAndUnresolvableNodes").size());
  }

  @Test
  void aBodyBeyond64MiBIsRefusedAsAProblem() throws Exception {
    byte[] body = new byte[65 * 1024 * 1024];
    java.util.Arrays.fill(body, (byte) ' ');
    HttpRequest request =
        HttpRequest.newBuilder(uri("/scheduler/filter"))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer scheduler-token")
            .POST(HttpRequest.BodyPublishers.ofByteArray(body))
            .build();
    HttpResponse<String> r;
    try {
      r = client.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (java.io.IOException closed) {
      // The server answered and closed the connection while the client was still writing the
      // 65 MiB (a broken pipe before the client read the answer; seen on a busy CI machine):
      // refused all the same, and nothing reached the service.
      assertEquals(List.of(), SERVICE.calls, closed.toString());
      return;
    }
    // Pekko refuses a declared Content-Length over the limit itself (400, "Request too large");
    // a chunked body gets the extender's 413 with the nodeCacheCapable hint
    assertTrue(r.statusCode() == 400 || r.statusCode() == 413, r.body());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
    assertTrue(r.body().contains("too large") || r.body().contains("larger than"), r.body());
    assertEquals(List.of(), SERVICE.calls);
  }

  // ---- prioritize ----

  @Test
  void prioritizeAnswersHostPriorityListWithFragmentationAwareScoresByDefault() throws Exception {
    HttpResponse<String> r = post("/scheduler/prioritize", EXTENDER_ARGS);
    assertEquals(200, r.statusCode(), r.body());
    JsonNode list = Json.mapper().readTree(r.body());
    assertTrue(list.isArray());
    for (JsonNode entry : list) {
      assertEquals(List.of("Host", "Score"), names(entry), "extender/v1 HostPriority");
      assertTrue(entry.get("Score").isIntegralNumber());
    }
    assertEquals(
        Map.of(
            "gpu-a", 9, "gpu-b", 8, "gpu-full", 0, "gpu-static", 0, "gpu-blocked", 0, "cpu-1", 0),
        scores(list));
    assertEquals(
        List.of("gpu-a", "gpu-b", "gpu-full", "gpu-static", "gpu-blocked", "cpu-1"),
        hosts(list),
        "every candidate, in the order sent");
    assertTrue(SERVICE.calls.containsAll(List.of("nodes", "pods *")), SERVICE.calls.toString());
  }

  @Test
  void bestFitIsTheBaselineAndOrdersTheHandMadeCaseTheOtherWay() throws Exception {
    JsonNode fgd =
        Json.mapper().readTree(post("/scheduler/prioritize?policy=fgd", EXTENDER_ARGS).body());
    JsonNode bestFit =
        Json.mapper().readTree(post("/scheduler/prioritize?policy=bestfit", EXTENDER_ARGS).body());
    assertTrue(scores(fgd).get("gpu-a") > scores(fgd).get("gpu-b"));
    assertEquals(5, scores(bestFit).get("gpu-a"));
    assertEquals(6, scores(bestFit).get("gpu-b"));
    assertEquals(0, scores(bestFit).get("gpu-full"));
  }

  @Test
  void anUnknownPolicyIsA400NamingTheParameter() throws Exception {
    HttpResponse<String> r = post("/scheduler/prioritize?policy=spread", EXTENDER_ARGS);
    assertEquals(400, r.statusCode());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
    JsonNode problem = Json.mapper().readTree(r.body());
    assertEquals("policy", problem.get("field").asText());
    assertEquals(
        "query parameter policy: 'spread' given; expected one of fgd, bestfit (default fgd)",
        problem.get("detail").asText());
  }

  @Test
  void prioritizeScoresZeroForAPodWithoutAShareOrWithAnInvalidSpec() throws Exception {
    String bad = EXTENDER_ARGS.replace("\"gpu-hpn\"", "\"general-purpose\"");
    JsonNode list = Json.mapper().readTree(post("/scheduler/prioritize", bad).body());
    assertEquals(6, list.size());
    list.forEach(e -> assertEquals(0, e.get("Score").asInt()));
  }

  // ---- errors ----

  @Test
  void aBodyThatIsNotJsonIsA400Problem() throws Exception {
    for (String path : List.of("/scheduler/filter", "/scheduler/prioritize")) {
      HttpResponse<String> r = post(path, "{\"Pod\": {");
      assertEquals(400, r.statusCode(), path);
      assertEquals(
          "application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
      JsonNode problem = Json.mapper().readTree(r.body());
      assertEquals("body", problem.get("field").asText());
      assertTrue(problem.get("detail").asText().contains("not valid JSON"), r.body());
    }
    assertEquals(List.of(), SERVICE.calls);
  }

  @Test
  void aBodyThatIsNotExtenderArgsIsA400NamingEveryField() throws Exception {
    HttpResponse<String> r =
        post("/scheduler/filter", "{\"Pod\": {\"metadata\": {}}, \"Nodes\": {\"items\": 3}}");
    assertEquals(400, r.statusCode());
    JsonNode problem = Json.mapper().readTree(r.body());
    List<String> fields = new ArrayList<>();
    problem.get("errors").forEach(e -> fields.add(e.get("field").asText()));
    assertEquals(List.of("Pod.metadata.name", "Pod.spec.containers", "Nodes.items"), fields);

    JsonNode noNodes =
        Json.mapper().readTree(post("/scheduler/filter", "{\"Pod\": {\"metadata\": {}}}").body());
    JsonNode last = noNodes.get("errors").get(noNodes.get("errors").size() - 1);
    assertEquals("Nodes", last.get("field").asText());
    assertTrue(
        last.get("message").asText().startsWith("Nodes: missing; required"), last.toString());
    assertEquals(400, post("/scheduler/filter", "[1, 2]").statusCode());
  }

  @Test
  void onlyJsonBodiesAndOnlyPost() throws Exception {
    HttpRequest yaml =
        HttpRequest.newBuilder(uri("/scheduler/filter"))
            .header("Content-Type", "application/yaml")
            .POST(HttpRequest.BodyPublishers.ofString(EXTENDER_ARGS))
            .build();
    assertEquals(415, client.send(yaml, HttpResponse.BodyHandlers.ofString()).statusCode());
    HttpRequest get = HttpRequest.newBuilder(uri("/scheduler/filter")).GET().build();
    HttpResponse<String> r = client.send(get, HttpResponse.BodyHandlers.ofString());
    assertEquals(405, r.statusCode());
    assertEquals("POST", r.headers().firstValue("Allow").orElseThrow());
  }

  @Test
  void aFailureToReadTheArbiterIsItsProblem() throws Exception {
    SERVICE.failWith = new TimeoutException("ask timed out");
    HttpResponse<String> r = post("/scheduler/filter", EXTENDER_ARGS);
    assertEquals(503, r.statusCode());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElseThrow());
  }

  // ---- access ----

  @Test
  void theExtenderIsCreateSchedulerAndARefusalRunsNothing() throws Exception {
    assertEquals("create scheduler", Scope.of("POST", "/scheduler/filter").describe());
    assertEquals("create scheduler", Scope.of("POST", "/scheduler/prioritize").describe());
    assertFalse(Scope.of("POST", "/scheduler/filter").isPublic());
    assertEquals(Optional.empty(), Scope.of("POST", "/scheduler/filter").name());

    post("/scheduler/filter", EXTENDER_ARGS);
    assertEquals("create scheduler", ASKED.get(0).describe());
    assertEquals("scheduler", ASKED.get(0).resource());

    SERVICE.calls.clear();
    allow = false;
    HttpResponse<String> r = post("/scheduler/prioritize", EXTENDER_ARGS);
    assertEquals(403, r.statusCode());
    assertEquals(List.of(), SERVICE.calls);
  }

  // ---- helpers ----

  static URI uri(String path) {
    return URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path);
  }

  static HttpResponse<String> post(String path, String body) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(uri(path))
            .header("Content-Type", "application/json")
            .header("Authorization", "Bearer scheduler-token")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  static List<String> names(JsonNode object) {
    List<String> out = new ArrayList<>();
    for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      out.add(it.next());
    }
    return out;
  }

  static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  static Map<String, Integer> scores(JsonNode list) {
    Map<String, Integer> out = new java.util.LinkedHashMap<>();
    list.forEach(e -> out.put(e.get("Host").asText(), e.get("Score").asInt()));
    return out;
  }

  static List<String> hosts(JsonNode list) {
    List<String> out = new ArrayList<>();
    list.forEach(e -> out.add(e.get("Host").asText()));
    return out;
  }
}
