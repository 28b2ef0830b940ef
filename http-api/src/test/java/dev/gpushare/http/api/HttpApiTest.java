package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.UsageView;
import dev.gpushare.node.api.Views.WorkloadView;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The HTTP mapping against a real server on a free port and an in-memory service: paths, status
 * codes, content types, the problem+json shape, query-parameter checks and SSE framing.
 */
class HttpApiTest {
  private static final FakeGpuShareService SERVICE = new FakeGpuShareService();
  private static final FakeJournalInspector JOURNAL = new FakeJournalInspector();
  private static final List<Instant> ADVANCED = new CopyOnWriteArrayList<>();
  private static ActorTestKit testKit;
  private static ServerBinding binding;
  private static HttpClient client;

  @BeforeAll
  static void start() throws Exception {
    testKit = ActorTestKit.create("HttpApiTest");
    binding =
        new HttpApi(SERVICE, JOURNAL, ADVANCED::add)
            .bind(testKit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get();
    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void clear() {
    SERVICE.reset();
    JOURNAL.reset();
    ADVANCED.clear();
  }

  // ---- health and metrics ----

  @Test
  void healthzAnswers200WhileTheProcessLives() throws Exception {
    SERVICE.ready = false;
    HttpResponse<String> r = send("GET", "/healthz", null, null);
    assertEquals(200, r.statusCode());
    assertEquals("ok", json(r).get("status").asText());
  }

  @Test
  void readyzFollowsTheServicesReadiness() throws Exception {
    assertEquals(200, send("GET", "/readyz", null, null).statusCode());
    SERVICE.ready = false;
    JsonNode problem = problem(send("GET", "/readyz", null, null), 503);
    assertEquals("https://gpushare.dev/problems/unavailable", problem.get("type").asText());
  }

  @Test
  void metricsArePrometheusText() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Running"));
    HttpResponse<String> r = send("GET", "/metrics", null, null);
    assertEquals(200, r.statusCode());
    String type = r.headers().firstValue("Content-Type").orElseThrow();
    assertTrue(type.startsWith("text/plain"), type);
    assertTrue(type.contains("version=0.0.4"), type);
    ExpositionText m = ExpositionText.parse(r.body());
    assertEquals(1, m.value("gpushare_queue_length", "node", "node-1"));
    assertEquals(
        50,
        m.value("gpushare_gpu_core_in_use_percent", "node", "node-1", "gpu", "0", "uuid", "GPU-0"));
    assertEquals(1, m.value("gpushare_pods", "node", "node-1", "state", "Running"));
    assertEquals("counter", m.types.get("gpushare_journal_errors_total"));
  }

  @Test
  void memberReadyFollowsReadyz() throws Exception {
    ExpositionText m = ExpositionText.parse(send("GET", "/metrics", null, null).body());
    assertEquals(1, m.value("gpushare_member_ready"));
    SERVICE.ready = false;
    assertEquals(503, send("GET", "/readyz", null, null).statusCode());
    m = ExpositionText.parse(send("GET", "/metrics", null, null).body());
    assertEquals(0, m.value("gpushare_member_ready"));
  }

  @Test
  void requestsAreCountedByMethodRouteTemplateAndCode() throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Running"));
    String pod = "/v1/namespaces/{namespace}/pods/{name}";
    ExpositionText before = ExpositionText.parse(send("GET", "/metrics", null, null).body());
    assertEquals(200, send("GET", "/v1/namespaces/default/pods/a", null, null).statusCode());
    assertEquals(404, send("GET", "/v1/namespaces/default/pods/nobody", null, null).statusCode());
    assertEquals(404, send("GET", "/no/such/path/x1", null, null).statusCode());
    assertEquals(404, send("GET", "/no/such/path/x2", null, null).statusCode());
    assertEquals(405, send("DELETE", "/healthz", null, null).statusCode());
    ExpositionText after = ExpositionText.parse(send("GET", "/metrics", null, null).body());

    assertEquals(1, delta(before, after, "GET", pod, "200"));
    assertEquals(1, delta(before, after, "GET", pod, "404"));
    // Unknown paths share one bounded label; a wrong method keeps its path's template.
    assertEquals(2, delta(before, after, "GET", "other", "404"));
    assertEquals(1, delta(before, after, "DELETE", "/healthz", "405"));
    assertTrue(after.find("gpushare_http_requests_total", "route", "/no/such/path/x1").isEmpty());
    // The scrape before this one was counted too, with the histogram beside the counter.
    assertTrue(
        after.value(
                "gpushare_http_requests_total", "method", "GET", "route", "/metrics", "code", "200")
            >= 1);
    assertTrue(
        after.value("gpushare_http_request_duration_seconds_count", "method", "GET", "route", pod)
            >= 2);
    assertEquals("histogram", after.types.get("gpushare_http_request_duration_seconds"));
  }

  @Test
  void aWatchStreamIsCountedWhenItOpens() throws Exception {
    ExpositionText before = ExpositionText.parse(send("GET", "/metrics", null, null).body());
    HttpRequest request = HttpRequest.newBuilder(uri("/v1/watch")).GET().build();
    HttpResponse<InputStream> stream =
        client
            .sendAsync(request, BodyHandlers.ofInputStream())
            .get(10, java.util.concurrent.TimeUnit.SECONDS);
    try {
      assertEquals(200, stream.statusCode());
      ExpositionText after = ExpositionText.parse(send("GET", "/metrics", null, null).body());
      assertEquals(1, delta(before, after, "GET", "/v1/watch", "200"));
    } finally {
      stream.body().close();
    }
  }

  private static double delta(
      ExpositionText before, ExpositionText after, String method, String route, String code) {
    String[] labels = {"method", method, "route", route, "code", code};
    double was =
        before.has("gpushare_http_requests_total", labels)
            ? before.value("gpushare_http_requests_total", labels)
            : 0;
    return after.value("gpushare_http_requests_total", labels) - was;
  }

  // ---- generic errors ----

  @Test
  void anUnknownPathIsA404Problem() throws Exception {
    JsonNode problem = problem(send("GET", "/v1/nothing-here", null, null), 404);
    assertEquals("about:blank", problem.get("type").asText());
    assertEquals("Not Found", problem.get("title").asText());
    assertTrue(problem.get("detail").asText().contains("/v1/nothing-here"));
  }

  @Test
  void aWrongMethodIsA405ProblemWithAllow() throws Exception {
    HttpResponse<String> r = send("DELETE", "/v1/nodes", null, null);
    JsonNode problem = problem(r, 405);
    assertEquals("method", problem.get("field").asText());
    assertTrue(problem.get("detail").asText().contains("DELETE"), problem.toString());
    assertEquals("GET", r.headers().firstValue("Allow").orElseThrow());
  }

  @Test
  void aTimeoutInsideTheArbiterIsA503Problem() throws Exception {
    SERVICE.failWith = new TimeoutException("Ask timed out after [10000 ms]");
    JsonNode problem = problem(send("GET", "/v1/nodes", null, null), 503);
    assertEquals("https://gpushare.dev/problems/timeout", problem.get("type").asText());
  }

  @Test
  void anUnexpectedFailureIsA500ProblemWithoutStackTrace() throws Exception {
    SERVICE.failWith = new IllegalStateException("secret internals at Foo.java:12");
    HttpResponse<String> r = send("GET", "/v1/nodes", null, null);
    JsonNode problem = problem(r, 500);
    assertFalse(r.body().contains("secret internals"), r.body());
    assertFalse(r.body().contains("Exception"), r.body());
    assertTrue(problem.get("detail").asText().contains("reference"));
  }

  // ---- nodes ----

  @Test
  void nodesAreListedAsItems() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    HttpResponse<String> r = send("GET", "/v1/nodes", null, null);
    assertEquals(200, r.statusCode());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElseThrow());
    JsonNode items = json(r).get("items");
    assertEquals(1, items.size());
    assertEquals("node-1", items.get(0).get("name").asText());
    assertEquals(50, items.get(0).get("gpus").get(0).get("inUse").get("core").asInt());
  }

  @Test
  void anUnknownNodeIsA404ProblemFromTheService() throws Exception {
    JsonNode problem = problem(send("GET", "/v1/nodes/ghost", null, null), 404);
    assertEquals("https://gpushare.dev/problems/not-found", problem.get("type").asText());
    assertEquals("name", problem.get("field").asText());
    assertEquals("node ghost", problem.get("errors").get(0).get("value").asText());
  }

  @Test
  void theQueueOfANodeIsListedAsItems() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    JsonNode entry = json(send("GET", "/v1/nodes/node-1/queue", null, null)).get("items").get(0);
    assertEquals("default/d", entry.get("pod").asText());
    assertEquals(1, entry.get("position").asInt());
    assertEquals(3, entry.get("waitingSeconds").asInt());
    assertEquals(100, entry.get("limits").get("core").asInt());
  }

  @Test
  void putNodeFromYamlCreatesThenReplaces() throws Exception {
    String yaml =
        """
        apiVersion: v1
        kind: Node
        metadata:
          name: node-2
          labels:
            alibabacloud.com/gpu-share-policy: share-pool
        status:
          capacity:
            nvidia.com/gpu: "2"
            cpu: 176
            memory: 1800Gi
        """;
    HttpResponse<String> first = send("PUT", "/v1/nodes/node-2", "application/yaml", yaml);
    assertEquals(201, first.statusCode(), first.body());
    assertEquals("/v1/nodes/node-2", first.headers().firstValue("Location").orElseThrow());
    assertEquals("node-2", json(first).get("name").asText());
    assertEquals(
        "share-pool", json(first).get("labels").get("alibabacloud.com/gpu-share-policy").asText());
    HttpResponse<String> second = send("PUT", "/v1/nodes/node-2", "application/x-yaml", yaml);
    assertEquals(200, second.statusCode(), second.body());
  }

  @Test
  void putNodeWithAnotherNameInTheManifestIsA422NamingMetadataName() throws Exception {
    String body = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"other\"}}";
    JsonNode problem = problem(send("PUT", "/v1/nodes/node-2", "application/json", body), 422);
    assertEquals("metadata.name", problem.get("field").asText());
    assertEquals("other", problem.get("errors").get(0).get("value").asText());
    assertTrue(SERVICE.calls.isEmpty());
  }

  @Test
  void putNodeAsPlainTextIsA415NamingTheContentType() throws Exception {
    JsonNode problem = problem(send("PUT", "/v1/nodes/node-2", "text/plain", "kind: Node"), 415);
    assertEquals("Content-Type", problem.get("field").asText());
    assertEquals("text/plain", problem.get("errors").get(0).get("value").asText());
    assertTrue(problem.get("detail").asText().contains("application/yaml"));
  }

  @Test
  void patchSetsAndRemovesLabels() throws Exception {
    SERVICE.nodes.put(
        "node-1", FakeGpuShareService.node("node-1", Map.of("a", "1", "b", "2"), Map.of("x", "y")));
    HttpResponse<String> r =
        send(
            "PATCH",
            "/v1/nodes/node-1",
            "application/merge-patch+json",
            "{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\"}}}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(
        Map.of("b", "2", "c", "3"), Json.mapper().convertValue(json(r).get("labels"), Map.class));
    assertTrue(SERVICE.lastLabelPatch.containsKey("a"));
    assertNull(SERVICE.lastLabelPatch.get("a"));
  }

  @Test
  void patchWithNullAnnotationsRemovesEveryAnnotation() throws Exception {
    SERVICE.nodes.put(
        "node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of("x", "1", "y", "2")));
    HttpResponse<String> r =
        send(
            "PATCH",
            "/v1/nodes/node-1",
            "application/json",
            "{\"metadata\":{\"annotations\":null}}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(0, json(r).get("annotations").size());
  }

  @Test
  void patchOfSpecOrStatusIsA422NamingTheField() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    JsonNode problem =
        problem(
            send(
                "PATCH",
                "/v1/nodes/node-1",
                "application/merge-patch+json",
                "{\"spec\":{\"unschedulable\":true},\"metadata\":{\"name\":\"x\"}}"),
            422);
    List<String> fields = new ArrayList<>();
    problem.get("errors").forEach(e -> fields.add(e.get("field").asText()));
    assertEquals(List.of("spec", "metadata.name"), fields);
    assertTrue(SERVICE.calls.isEmpty());
  }

  @Test
  void patchAsYamlIsA415() throws Exception {
    problem(send("PATCH", "/v1/nodes/node-1", "application/yaml", "metadata: {}"), 415);
  }

  // ---- scripted GPU processes ----

  private static final String PROCESSES = "/v1/nodes/node-1/gpus/1/processes";

  @Test
  void scriptingProcessesAnswersTheNodeView() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    HttpResponse<String> r =
        send(
            "PUT",
            PROCESSES,
            "application/json",
            "{\"processes\":[{\"pid\":4242,\"podUid\":\"uid-a\",\"usedMemoryMiB\":1024,"
                + "\"smUtilizationPercent\":30},"
                + "{\"pid\":4243,\"podUid\":\"uid-b\",\"usedMemoryMiB\":0,"
                + "\"smUtilizationPercent\":null},"
                + "{\"pid\":4244,\"podUid\":\"uid-c\",\"usedMemoryMiB\":10}]}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElseThrow());
    assertEquals("node-1", json(r).get("name").asText());
    assertEquals(
        List.of(
            new GpuProcess(4242, "uid-a", 1024, OptionalInt.of(30)),
            new GpuProcess(4243, "uid-b", 0, OptionalInt.empty()),
            new GpuProcess(4244, "uid-c", 10, OptionalInt.empty())),
        SERVICE.lastScript);
    assertTrue(SERVICE.calls.get(0).startsWith("scriptGpu node-1 1 "), SERVICE.calls.toString());
  }

  @Test
  void noProcessesMakeTheGpuIdleAgain() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    HttpResponse<String> r = send("PUT", PROCESSES, "application/json", "{\"processes\":[]}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(List.of(), SERVICE.lastScript);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "processes|{}",
        "processes|{\"processes\":null}",
        "processes|{\"processes\":{\"pid\":1}}",
        "processes[0]|{\"processes\":[5]}",
        "body|[]",
        "extra|{\"processes\":[],\"extra\":1}",
        "processes[0].pid|{\"processes\":[{\"podUid\":\"u\",\"usedMemoryMiB\":1}]}",
        "processes[0].pid|{\"processes\":[{\"pid\":\"42\",\"podUid\":\"u\",\"usedMemoryMiB\":1}]}",
        "processes[0].pid|{\"processes\":[{\"pid\":1.5,\"podUid\":\"u\",\"usedMemoryMiB\":1}]}",
        "processes[0].podUid|{\"processes\":[{\"pid\":1,\"usedMemoryMiB\":1}]}",
        "processes[0].podUid|{\"processes\":[{\"pid\":1,\"podUid\":7,\"usedMemoryMiB\":1}]}",
        "processes[0].usedMemoryMiB|{\"processes\":[{\"pid\":1,\"podUid\":\"u\"}]}",
        "processes[1].usedMemoryMiB|{\"processes\":[{\"pid\":1,\"podUid\":\"u\",\"usedMemoryMiB\":1},"
            + "{\"pid\":2,\"podUid\":\"u\",\"usedMemoryMiB\":\"1Gi\"}]}",
        "processes[0].smUtilizationPercent|{\"processes\":[{\"pid\":1,\"podUid\":\"u\","
            + "\"usedMemoryMiB\":1,\"smUtilizationPercent\":\"30%\"}]}",
        "processes[0].sm|{\"processes\":[{\"pid\":1,\"podUid\":\"u\",\"usedMemoryMiB\":1,\"sm\":3}]}"
      })
  void aMalformedProcessListIsA400NamingTheField(String fieldAndBody) throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    String field = fieldAndBody.substring(0, fieldAndBody.indexOf('|'));
    String body = fieldAndBody.substring(fieldAndBody.indexOf('|') + 1);
    JsonNode problem = problem(send("PUT", PROCESSES, "application/json", body), 400);
    assertEquals("https://gpushare.dev/problems/malformed", problem.get("type").asText());
    assertEquals(field, problem.get("field").asText(), problem.toString());
    assertTrue(SERVICE.calls.isEmpty(), SERVICE.calls.toString());
  }

  @Test
  void everyMalformedProcessFieldIsListed() throws Exception {
    JsonNode problem =
        problem(
            send(
                "PUT",
                PROCESSES,
                "application/json",
                "{\"processes\":[{\"pid\":\"x\",\"usedMemoryMiB\":-1},{\"pid\":2}]}"),
            400);
    List<String> fields = new ArrayList<>();
    problem.get("errors").forEach(e -> fields.add(e.get("field").asText()));
    assertEquals(
        List.of(
            "processes[0].pid",
            "processes[0].podUid",
            "processes[1].podUid",
            "processes[1].usedMemoryMiB"),
        fields);
    assertEquals("x", problem.get("errors").get(0).get("value").asText());
  }

  @Test
  void malformedProcessJsonIsA400OnTheBody() throws Exception {
    JsonNode problem =
        problem(send("PUT", PROCESSES, "application/json", "{\"processes\":[ }"), 400);
    assertEquals("body", problem.get("field").asText());
    assertTrue(problem.get("detail").asText().contains("processes"), problem.toString());
    problem(send("PUT", PROCESSES, "application/json", ""), 400);
  }

  @Test
  void aNonIntegerGpuIndexIsAnsweredAsTheHealthRouteDoes() throws Exception {
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    HttpResponse<String> health =
        send("PUT", "/v1/nodes/node-1/gpus/one/health", "application/json", "{}");
    HttpResponse<String> processes =
        send(
            "PUT", "/v1/nodes/node-1/gpus/one/processes", "application/json", "{\"processes\":[]}");
    assertEquals(404, processes.statusCode(), processes.body());
    assertEquals(health.statusCode(), processes.statusCode());
    problem(processes, 404);
    assertTrue(SERVICE.calls.isEmpty(), SERVICE.calls.toString());
  }

  @Test
  void scriptingAnUnknownNodeOrAgainstTheRulesIsTheServicesProblem() throws Exception {
    JsonNode missing =
        problem(
            send(
                "PUT",
                "/v1/nodes/ghost/gpus/0/processes",
                "application/json",
                "{\"processes\":[]}"),
            404);
    assertEquals("https://gpushare.dev/problems/not-found", missing.get("type").asText());
    SERVICE.failWith =
        ServiceException.of(
            ServiceException.Kind.INVALID,
            new FieldError("processes[0].pid", "0", "processes[0].pid must be > 0"));
    JsonNode invalid =
        problem(
            send(
                "PUT",
                PROCESSES,
                "application/json",
                "{\"processes\":[{\"pid\":0,\"podUid\":\"u\",\"usedMemoryMiB\":1}]}"),
            422);
    assertEquals("processes[0].pid", invalid.get("field").asText());
  }

  @Test
  void aPodsUsageAndWorkloadAreWrittenAndNullWhenUnknown() throws Exception {
    PodView plain = FakeGpuShareService.pod("default", "a", "node-1", "Running");
    SERVICE.pods.put("default/a", plain);
    SERVICE.pods.put(
        "default/b",
        new PodView(
            "default",
            "b",
            "uid-b",
            "node-1",
            SharePolicy.SHARE_POOL,
            PodState.RUNNING,
            plain.requests(),
            plain.limits(),
            plain.gpu(),
            null,
            null,
            12L,
            List.of(),
            List.of(),
            new UsageView(1024, 40779, null, 60, 1),
            new WorkloadView(Map.of("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "50")),
            null));
    JsonNode a = json(send("GET", "/v1/namespaces/default/pods/a", null, null));
    assertTrue(a.has("usage") && a.get("usage").isNull(), "usage is written as null: " + a);
    assertTrue(a.has("workload") && a.get("workload").isNull(), "as gpu is: " + a);
    JsonNode b = json(send("GET", "/v1/namespaces/default/pods/b", null, null));
    JsonNode usage = b.get("usage");
    assertEquals(1024, usage.get("memoryUsedMiB").asLong());
    assertEquals(40779, usage.get("memoryLimitMiB").asLong());
    assertTrue(usage.has("absoluteUtilization") && usage.get("absoluteUtilization").isNull());
    assertEquals(60, usage.get("relativeUtilization").asInt());
    assertEquals(1, usage.get("processes").asInt());
    assertEquals(
        "50", b.get("workload").get("env").get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").asText());
  }

  // ---- pods ----

  @Test
  void theReferenceYamlCreatesAPod() throws Exception {
    String yaml = resource("examples/gpu-share-demo.yaml");
    HttpResponse<String> r = send("POST", "/v1/pods", "application/yaml", yaml);
    assertEquals(201, r.statusCode(), r.body());
    assertEquals(
        "/v1/namespaces/default/pods/gpu-share-demo",
        r.headers().firstValue("Location").orElseThrow());
    JsonNode pod = json(r);
    assertEquals("gpu-share-demo", pod.get("name").asText());
    assertTrue(pod.has("gpu") && pod.get("gpu").isNull(), "gpu is written as null: " + pod);
    assertTrue(pod.get("runningSeconds").isNull());
    assertEquals(
        Map.of(
            "cpu", "5",
            "memory", "50Gi",
            "alibabacloud.com/gpu-core.percentage", "100",
            "alibabacloud.com/gpu-memory.percentage", "100"),
        SERVICE.createdPods.get(0).containers().get(0).limits());
  }

  @Test
  void aPodWithoutNamespaceGoesToDefault() throws Exception {
    String body =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
            + "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}";
    HttpResponse<String> r = send("POST", "/v1/pods", "application/json; charset=utf-8", body);
    assertEquals(201, r.statusCode(), r.body());
    assertEquals("default", SERVICE.createdPods.get(0).namespace());
  }

  @Test
  void malformedJsonIsA400WithTheLocation() throws Exception {
    JsonNode problem =
        problem(
            send("POST", "/v1/pods", "application/json", "{\"kind\":\"Pod\",\n  \"x\": }"), 400);
    assertEquals("body", problem.get("field").asText());
    assertTrue(problem.get("detail").asText().contains("line 2"), problem.toString());
  }

  @Test
  void aKeyTwiceInABodyIsA400NamingTheKeyAndNothingReachesTheService() throws Exception {
    String pod =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"name\":\"q\"},"
            + "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}";
    JsonNode problem = problem(send("POST", "/v1/pods", "application/json", pod), 400);
    assertEquals("metadata.name", problem.get("field").asText());
    assertEquals("name", problem.get("errors").get(0).get("value").asText());
    assertTrue(
        problem.get("detail").asText().contains("\"name\" appears again"), problem.toString());

    String yaml = "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\nspec: {}\n";
    assertEquals(
        "spec", problem(send("POST", "/v1/pods", "text/yaml", yaml), 400).get("field").asText());

    String patch =
        "{\"metadata\":{\"labels\":{\"alibabacloud.com/gpu-share-policy\":\"share-pool\","
            + "\"alibabacloud.com/gpu-share-policy\":\"none\"}}}";
    JsonNode patched =
        problem(send("PATCH", "/v1/nodes/node-1", "application/merge-patch+json", patch), 400);
    assertEquals(
        "metadata.labels[alibabacloud.com/gpu-share-policy]", patched.get("field").asText());

    JsonNode advance =
        problem(
            send("POST", "/v1/clock/advance", "application/json", "{\"seconds\":1,\"seconds\":9}"),
            400);
    assertEquals("seconds", advance.get("field").asText());
    assertTrue(SERVICE.calls.isEmpty(), () -> "no call reached the service: " + SERVICE.calls);
    assertTrue(SERVICE.createdPods.isEmpty());
    assertTrue(ADVANCED.isEmpty());
  }

  @Test
  void aDeploymentIsA422NamingKind() throws Exception {
    String body =
        "{\"apiVersion\":\"v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"p\"},"
            + "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}";
    JsonNode problem = problem(send("POST", "/v1/pods", "application/json", body), 422);
    assertEquals("kind", problem.get("field").asText());
    assertEquals("Deployment", problem.get("errors").get(0).get("value").asText());
  }

  @Test
  void aBodyOverOneMebibyteIsRefusedWithTheLimit() throws Exception {
    String huge = "{\"kind\":\"Pod\",\"pad\":\"" + "x".repeat(1024 * 1024) + "\"}";
    JsonNode problem = problem(send("POST", "/v1/pods", "application/json", huge), 400);
    assertEquals("body", problem.get("field").asText());
    assertTrue(problem.get("detail").asText().contains("1048576"), problem.toString());
    assertTrue(SERVICE.calls.isEmpty());
  }

  @Test
  void aPodManifestWithoutContentTypeIsA415() throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(uri("/v1/pods")).POST(BodyPublishers.ofString("{}")).build();
    problem(client.send(request, BodyHandlers.ofString()), 415);
  }

  @Test
  void aDuplicatePodIsA409FromTheService() throws Exception {
    String yaml = resource("examples/gpu-share-demo.yaml");
    assertEquals(201, send("POST", "/v1/pods", "text/yaml", yaml).statusCode());
    JsonNode problem = problem(send("POST", "/v1/pods", "text/yaml", yaml), 409);
    assertEquals("https://gpushare.dev/problems/conflict", problem.get("type").asText());
  }

  @Test
  void podsAreListedAndFilteredByNode() throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Running"));
    SERVICE.pods.put("default/b", FakeGpuShareService.pod("default", "b", "node-2", "Ready"));
    assertEquals(2, json(send("GET", "/v1/pods", null, null)).get("items").size());
    JsonNode items = json(send("GET", "/v1/pods?node=node-2", null, null)).get("items");
    assertEquals(1, items.size());
    assertEquals("b", items.get(0).get("name").asText());
    assertEquals(2, json(send("GET", "/v1/pods?node=", null, null)).get("items").size());
  }

  @Test
  void aPodIsReadAndDeleted() throws Exception {
    SERVICE.pods.put("team/a", FakeGpuShareService.pod("team", "a", "node-1", "Running"));
    JsonNode pod = json(send("GET", "/v1/namespaces/team/pods/a", null, null));
    assertEquals(1, pod.get("gpu").get("index").asInt());
    HttpResponse<String> deleted = send("DELETE", "/v1/namespaces/team/pods/a", null, null);
    assertEquals(200, deleted.statusCode());
    assertEquals("a", json(deleted).get("name").asText());
    problem(send("GET", "/v1/namespaces/team/pods/a", null, null), 404);
  }

  // ---- data plane ----

  @Test
  void demandAndReleaseAnswerThePodView() throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Hibernation"));
    HttpResponse<String> raised = send("POST", "/v1/namespaces/default/pods/a/demand", null, null);
    assertEquals(200, raised.statusCode());
    assertEquals("Ready", json(raised).get("state").asText());
    assertEquals(1, json(raised).get("queuePosition").asInt());
    HttpResponse<String> released =
        send("DELETE", "/v1/namespaces/default/pods/a/demand", null, null);
    assertEquals("Hibernation", json(released).get("state").asText());
  }

  @Test
  void grantWaitsThirtySecondsByDefault() throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Ready"));
    assertEquals(200, send("GET", "/v1/namespaces/default/pods/a/grant", null, null).statusCode());
    assertEquals(Duration.ofSeconds(30), SERVICE.lastGrantTimeout);
    send("GET", "/v1/namespaces/default/pods/a/grant?timeoutSeconds=0", null, null);
    assertEquals(Duration.ZERO, SERVICE.lastGrantTimeout);
    send("GET", "/v1/namespaces/default/pods/a/grant?timeoutSeconds=300", null, null);
    assertEquals(Duration.ofSeconds(300), SERVICE.lastGrantTimeout);
  }

  @ParameterizedTest
  @ValueSource(strings = {"-1", "301", "abc", "1.5", ""})
  void aBadGrantTimeoutIsA400NamingTheParameter(String value) throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Ready"));
    JsonNode problem =
        problem(
            send("GET", "/v1/namespaces/default/pods/a/grant?timeoutSeconds=" + value, null, null),
            400);
    assertEquals("timeoutSeconds", problem.get("field").asText());
    assertEquals(value, problem.get("errors").get(0).get("value").asText());
    assertTrue(problem.get("detail").asText().contains("0 to 300"), problem.toString());
  }

  @ParameterizedTest
  @ValueSource(strings = {"%2010", "10%20", "%0910"})
  void aGrantTimeoutIsTakenAsWritten(String encoded) throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Ready"));
    HttpResponse<String> r =
        send("GET", "/v1/namespaces/default/pods/a/grant?timeoutSeconds=" + encoded, null, null);
    JsonNode problem = problem(r, 400);
    assertEquals("timeoutSeconds", problem.get("field").asText());
    String value = problem.get("errors").get(0).get("value").asText();
    assertEquals(value.strip(), "10", value);
    assertTrue(!value.equals("10"), "the value is shown as given: '" + value + "'");
  }

  @Test
  void watchStreamsOneServerSentEventPerChange() throws Exception {
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Hibernation"));
    HttpResponse<String> r = send("GET", "/v1/namespaces/default/pods/a/watch", null, null);
    assertEquals(200, r.statusCode());
    assertTrue(
        r.headers().firstValue("Content-Type").orElseThrow().startsWith("text/event-stream"));
    String[] events = r.body().split("\n\n");
    assertEquals(3, events.length, r.body());
    List<String> states = new ArrayList<>();
    for (String event : events) {
      assertTrue(event.startsWith("data: {"), event);
      assertFalse(event.substring(1).contains("\n"), "one line per event: " + event);
      states.add(Json.mapper().readTree(event.substring("data: ".length())).get("state").asText());
    }
    assertEquals(List.of("Hibernation", "Ready", "Running"), states);
  }

  @Test
  void watchingAnUnknownPodIsA404Problem() throws Exception {
    problem(send("GET", "/v1/namespaces/default/pods/ghost/watch", null, null), 404);
  }

  // ---- journal ----

  @Test
  void persistenceIdsAreListed() throws Exception {
    JsonNode items = json(send("GET", "/v1/journal/persistence-ids", null, null)).get("items");
    assertEquals(FakeJournalInspector.POD_ID, items.get(1).asText());
  }

  @Test
  void eventsUseDefaultsAndShowTheEvent() throws Exception {
    HttpResponse<String> r =
        send("GET", "/v1/journal/events?persistenceId=Pod%7Cdefault%2Fa%2Fuid-a", null, null);
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(FakeJournalInspector.POD_ID, JOURNAL.lastPersistenceId);
    assertEquals(1, JOURNAL.lastFrom);
    assertEquals(100, JOURNAL.lastLimit);
    JsonNode entry = json(r).get("items").get(0);
    assertEquals("2026-01-01T00:00:00Z", entry.get("timestamp").asText());
    assertEquals("DemandRaised", entry.get("type").asText());
    assertEquals("default/a", entry.get("event").get("pod").asText());
  }

  @Test
  void aPodsHistoryIsAPageOfEntriesWithCursorsAndANext() throws Exception {
    HttpResponse<String> r = send("GET", "/v1/namespaces/team/pods/a/history", null, null);
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("team/a after 0 limit 100", JOURNAL.lastHistory, "the defaults");
    JsonNode page = json(r);
    assertEquals(2, page.get("items").size());
    assertTrue(page.get("next").isNull(), page.toString());
    JsonNode first = page.get("items").get(0);
    assertEquals(7, first.get("cursor").asLong());
    assertEquals("Pod|team/a/uid-a", first.get("persistenceId").asText());
    assertEquals(1, first.get("sequenceNr").asLong());
    assertEquals("2026-01-01T00:00:00Z", first.get("timestamp").asText());
    assertEquals("PodActor.SpecSeen", first.get("type").asText());
    assertEquals("Hibernation", first.get("event").get("state").asText());

    JsonNode one = json(send("GET", "/v1/namespaces/team/pods/a/history?limit=1", null, null));
    assertEquals(7, one.get("next").asLong());
    JsonNode rest =
        json(send("GET", "/v1/namespaces/team/pods/a/history?after=7&limit=1000", null, null));
    assertEquals("team/a after 7 limit 1000", JOURNAL.lastHistory);
    assertEquals(9, rest.get("items").get(0).get("cursor").asLong());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "after=-1",
        "after=abc",
        "after=",
        "after=1.5",
        "after=99999999999999999999",
        "limit=0",
        "limit=1001",
        "limit=x"
      })
  void badHistoryParametersAreA400NamingParameterValueAndWhatIsAccepted(String query)
      throws Exception {
    JsonNode problem =
        problem(send("GET", "/v1/namespaces/team/pods/a/history?" + query, null, null), 400);
    String name = query.substring(0, query.indexOf('='));
    String value = query.substring(query.indexOf('=') + 1);
    assertEquals(name, problem.get("field").asText(), problem.toString());
    String detail = problem.get("detail").asText();
    assertTrue(detail.contains("'" + value + "' given"), detail);
    assertTrue(detail.contains("expected"), detail);
    assertTrue(JOURNAL.lastHistory == null, "nothing was read");
  }

  @Test
  void theHistoryOfANameKubernetesWouldRefuseIsA404() throws Exception {
    JsonNode problem =
        problem(send("GET", "/v1/namespaces/team/pods/A_B/history", null, null), 404);
    assertTrue(problem.get("detail").asText().contains("not a valid pod name"), problem.toString());
    assertTrue(JOURNAL.lastHistory == null);
    HttpResponse<String> post = send("POST", "/v1/namespaces/team/pods/a/history", null, null);
    assertEquals(405, post.statusCode(), post.body());
    assertEquals("GET", post.headers().firstValue("Allow").orElse(""));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "fromSequenceNr=1",
        "persistenceId=",
        "persistenceId=x&fromSequenceNr=0",
        "persistenceId=x&fromSequenceNr=abc",
        "persistenceId=x&limit=0",
        "persistenceId=x&limit=1001"
      })
  void badJournalParametersAreA400NamingTheParameter(String query) throws Exception {
    JsonNode problem = problem(send("GET", "/v1/journal/events?" + query, null, null), 400);
    String field = problem.get("field").asText();
    assertTrue(query.contains(field) || field.equals("persistenceId"), problem.toString());
    assertTrue(JOURNAL.lastPersistenceId == null);
  }

  // ---- clock ----

  @Test
  void theClockIsShown() throws Exception {
    JsonNode clock = json(send("GET", "/v1/clock", null, null));
    assertEquals("2030-05-01T12:00:00Z", clock.get("now").asText());
    assertFalse(clock.get("manual").asBoolean());
  }

  @Test
  void advancingTheSystemClockIsA409() throws Exception {
    problem(send("POST", "/v1/clock/advance", "application/json", "{\"seconds\":60}"), 409);
  }

  @Test
  void advancingAManualClockMovesItAndRecordsIt() throws Exception {
    SERVICE.manualClock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
    HttpResponse<String> r =
        send("POST", "/v1/clock/advance", "application/json", "{\"seconds\":3600}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("2026-01-01T01:00:00Z", json(r).get("now").asText());
    assertEquals(List.of(Instant.parse("2026-01-01T01:00:00Z")), ADVANCED);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"seconds\":-1}",
        "{\"seconds\":1.5}",
        "{\"seconds\":\"60\"}",
        "{\"seconds\":315360001}",
        "{}",
        "[60]",
        "{\"seconds\":1,\"minutes\":1}"
      })
  void aBadAdvanceIsA422NamingTheField(String body) throws Exception {
    SERVICE.manualClock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
    JsonNode problem = problem(send("POST", "/v1/clock/advance", "application/json", body), 422);
    assertFalse(problem.get("field").isNull(), problem.toString());
    assertTrue(ADVANCED.isEmpty());
  }

  // ---- helpers ----

  private static URI uri(String path) {
    return URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path);
  }

  private static HttpResponse<String> send(
      String method, String path, String contentType, String body)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(uri(path))
            .timeout(Duration.ofSeconds(30))
            .method(
                method,
                body == null
                    ? BodyPublishers.noBody()
                    : BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    if (contentType != null) {
      request.header("Content-Type", contentType);
    }
    return client.send(request.build(), BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  private static JsonNode json(HttpResponse<String> response) throws IOException {
    return Json.mapper().readTree(response.body());
  }

  /** Asserts the status and the RFC 9457 shape, and answers the problem. */
  private static JsonNode problem(HttpResponse<String> response, int status) throws IOException {
    assertEquals(status, response.statusCode(), response.body());
    assertEquals(
        "application/problem+json",
        response.headers().firstValue("Content-Type").orElseThrow(),
        response.body());
    JsonNode problem = json(response);
    for (String key : List.of("type", "title", "status", "detail", "field", "errors")) {
      assertTrue(problem.has(key), "problem has " + key + ": " + problem);
    }
    assertEquals(status, problem.get("status").asInt());
    assertTrue(problem.get("errors").isArray());
    problem
        .get("errors")
        .forEach(
            e -> {
              assertTrue(e.has("field") && e.has("value") && e.has("message"), e.toString());
              assertTrue(
                  e.get("message").asText().contains(e.get("field").asText()),
                  "the message names the field: " + e);
            });
    return problem;
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = HttpApiTest.class.getClassLoader().getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
