package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code POST /v1/namespaces/{ns}/pods/{name}/compute} (issue 26) over HTTP against a real runtime
 * (the default {@code gpushare.gpu}: compute-limit auto, no MPS, so the library limits; a manual
 * clock): a good report answers the PodView showing it, which {@code GET} of the pod and {@code
 * /metrics} then show too; every bad field is named (400 for the shape, 422 for the values), an
 * unknown pod is a 404, a pod that shares no GPU a 409, another media type a 415. Access by token
 * is {@code AccessOverHttpTest}'s.
 */
class ComputeReportRoutesTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final ManualClock CLOCK = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  static final String GOOD = "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":12.5}";

  @TempDir static Path snapshots;
  static ActorTestKit kit;
  static GpuShareService service;
  static ServerBinding binding;
  static URI base;
  static final HttpClient HTTP = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    kit = ActorTestKit.create("compute-report-test", MetricsOverRuntimeTest.config(snapshots));
    service =
        MetricsOverRuntimeTest.await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
                CLOCK));
    binding =
        MetricsOverRuntimeTest.await(
            new HttpApi(service, FakeGpuShareServiceAccess.journal(), i -> {})
                .bind(kit.system(), "127.0.0.1", 0));
    base = URI.create("http://127.0.0.1:" + binding.localAddress().getPort());
    MetricsOverRuntimeTest.await(service.putNode(MetricsOverRuntimeTest.node("cr", 2, null)));
    MetricsOverRuntimeTest.await(service.createPod(MetricsOverRuntimeTest.pod("cr", "a", 10, 30)));
    MetricsOverRuntimeTest.await(service.createPod(MetricsOverRuntimeTest.pod("cr", "b", 10, 40)));
    MetricsOverRuntimeTest.await(
        service.createPod(
            new PodManifest(
                "default",
                "cpu",
                null,
                "cr",
                Map.of(),
                Map.of(),
                List.of(
                    new PodManifest.ContainerResources(
                        "main", Map.of("cpu", "1"), Map.of("cpu", "1"))))));
    MetricsOverRuntimeTest.await(service.demand("default", "a"));
  }

  @AfterAll
  static void stop() throws Exception {
    if (binding != null) {
      binding.unbind().toCompletableFuture().get();
    }
    kit.shutdownTestKit();
  }

  static HttpResponse<String> send(String method, String path, String body, String contentType)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path));
    if (contentType != null) {
      b.header("Content-Type", contentType);
    }
    b.method(
        method,
        body == null
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  static HttpResponse<String> report(String pod, String body) throws Exception {
    return send(
        "POST", "/v1/namespaces/default/pods/" + pod + "/compute", body, "application/json");
  }

  /** The problem of {@code r}, checked to be one with {@code status}. */
  static JsonNode problem(HttpResponse<String> r, int status) throws Exception {
    assertEquals(status, r.statusCode(), r.body());
    assertEquals(
        "application/problem+json", r.headers().firstValue("Content-Type").orElse(""), r.body());
    return JSON.readTree(r.body());
  }

  static List<String> fields(JsonNode problem) {
    List<String> fields = new ArrayList<>();
    problem.path("errors").forEach(e -> fields.add(e.path("field").asText()));
    return fields;
  }

  @Test
  void aGoodReportAnswersThePodViewAndTheViewAndTheMetricsShowIt() throws Exception {
    // before any report: the library's aim, nothing measured
    JsonNode before =
        JSON.readTree(send("GET", "/v1/namespaces/default/pods/b", null, null).body());
    assertEquals(
        JSON.readTree(
            "{\"mode\":\"library\",\"aimPercent\":40,\"heldSeconds\":0.0,"
                + "\"measuredPercent\":null,\"reportedAt\":null}"),
        before.path("computeLimit"));
    assertTrue(before.path("computeLimit").path("heldSeconds").isDouble(), "0.0, a number");

    HttpResponse<String> r = report("a", GOOD);
    assertEquals(200, r.statusCode(), r.body());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(""));
    JsonNode view = JSON.readTree(r.body());
    assertEquals("a", view.path("name").asText());
    assertEquals("Running", view.path("state").asText());
    JsonNode shown =
        JSON.readTree(
            "{\"mode\":\"library\",\"aimPercent\":30,\"heldSeconds\":12.5,"
                + "\"measuredPercent\":29.4,\"reportedAt\":\""
                + CLOCK.now()
                + "\"}");
    assertEquals(shown, view.path("computeLimit"));
    List<String> order = new ArrayList<>();
    view.path("computeLimit").fieldNames().forEachRemaining(order::add);
    assertEquals(
        List.of("mode", "aimPercent", "heldSeconds", "measuredPercent", "reportedAt"), order);

    JsonNode read = JSON.readTree(send("GET", "/v1/namespaces/default/pods/a", null, null).body());
    assertEquals(shown, read.path("computeLimit"));

    HttpResponse<String> metrics = send("GET", "/metrics", null, null);
    assertEquals(200, metrics.statusCode());
    ExpositionText m = ExpositionText.parse(metrics.body());
    String[] a = {"namespace", "default", "pod", "a", "node", "cr"};
    assertEquals(30, m.value("gpushare_pod_compute_aim_percent", a));
    assertEquals(29.4, m.value("gpushare_pod_compute_measured_percent", a));
    assertEquals(12.5, m.value("gpushare_pod_compute_held_seconds_total", a));
    assertEquals("counter", m.types.get("gpushare_pod_compute_held_seconds_total"));
    assertEquals("gauge", m.types.get("gpushare_pod_compute_aim_percent"));
    assertTrue(m.find("gpushare_pod_compute_held_seconds_total", "pod", "b").isEmpty());

    // the next report replaces it; numbers may be written as integers
    JsonNode next =
        JSON.readTree(
            report("a", "{\"heldSeconds\":20,\"measuredPercent\":30,\"aimPercent\":30.0}").body());
    assertEquals(20.0, next.path("computeLimit").path("heldSeconds").asDouble());
    assertEquals(30.0, next.path("computeLimit").path("measuredPercent").asDouble());
  }

  static Stream<Arguments> malformed() {
    return Stream.of(
        Arguments.of("{\"measuredPercent\":29.4,\"heldSeconds\":12.5}", List.of("aimPercent")),
        Arguments.of(
            "{\"aimPercent\":null,\"measuredPercent\":29.4,\"heldSeconds\":12.5}",
            List.of("aimPercent")),
        Arguments.of(
            "{\"aimPercent\":\"30\",\"measuredPercent\":29.4,\"heldSeconds\":12.5}",
            List.of("aimPercent")),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":\"lots\",\"heldSeconds\":12.5}",
            List.of("measuredPercent")),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":true}",
            List.of("heldSeconds")),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":[1]}",
            List.of("heldSeconds")),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":12.5,\"pid\":7}",
            List.of("pid")),
        Arguments.of("{}", List.of("aimPercent", "measuredPercent", "heldSeconds")),
        Arguments.of("[30,29.4,12.5]", List.of("body")));
  }

  @ParameterizedTest
  @MethodSource("malformed")
  void aMalformedBodyIsA400NamingEveryBadField(String body, List<String> bad) throws Exception {
    JsonNode p = problem(report("b", body), 400);
    assertEquals(bad, fields(p), p.toString());
    assertEquals(bad.get(0), p.path("field").asText());
    String message = p.path("errors").get(0).path("message").asText();
    assertTrue(message.startsWith(bad.get(0) + ": "), message);
    assertTrue(
        message.contains("number")
            || message.contains("JSON object")
            || message.contains("unknown"),
        message);
    assertUnreported("b");
  }

  static Stream<Arguments> againstTheRules() {
    return Stream.of(
        Arguments.of(
            "{\"aimPercent\":-1,\"measuredPercent\":29.4,\"heldSeconds\":12.5}",
            "aimPercent",
            "-1",
            "from 0 to 100"),
        Arguments.of(
            "{\"aimPercent\":101,\"measuredPercent\":29.4,\"heldSeconds\":12.5}",
            "aimPercent",
            "101",
            "from 0 to 100"),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":-0.5,\"heldSeconds\":12.5}",
            "measuredPercent",
            "-0.5",
            "from 0 to 100"),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":100.1,\"heldSeconds\":12.5}",
            "measuredPercent",
            "100.1",
            "from 0 to 100"),
        Arguments.of(
            "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":-3}",
            "heldSeconds",
            "-3",
            "at least 0"));
  }

  @ParameterizedTest
  @MethodSource("againstTheRules")
  void aValueAgainstTheRulesIsA422NamingTheFieldTheValueAndWhatIsAccepted(
      String body, String field, String value, String accepted) throws Exception {
    JsonNode p = problem(report("b", body), 422);
    assertEquals(List.of(field), fields(p));
    JsonNode error = p.path("errors").get(0);
    assertEquals(value, error.path("value").asText());
    String message = error.path("message").asText();
    assertTrue(message.startsWith(field + ": '" + value + "' given; expected "), message);
    assertTrue(message.contains(accepted), message);
    assertUnreported("b");
  }

  @Test
  void everyValueAgainstTheRulesIsNamed() throws Exception {
    JsonNode p =
        problem(report("b", "{\"aimPercent\":130,\"measuredPercent\":-1,\"heldSeconds\":-2}"), 422);
    assertEquals(List.of("aimPercent", "measuredPercent", "heldSeconds"), fields(p));
  }

  @Test
  void anUnknownPodIsA404AndAPodThatSharesNoGpuA409() throws Exception {
    JsonNode unknown = problem(report("nobody", GOOD), 404);
    assertTrue(
        unknown.path("detail").asText().contains("pod default/nobody not found"),
        unknown.toString());
    JsonNode cpu = problem(report("cpu", GOOD), 409);
    assertEquals("metadata.name", cpu.path("field").asText());
    assertTrue(cpu.path("detail").asText().contains("shares no GPU"), cpu.toString());
  }

  @Test
  void notJsonIsA400AndAnotherMediaTypeA415() throws Exception {
    problem(report("b", "{\"aimPercent\":"), 400);
    JsonNode p =
        problem(send("POST", "/v1/namespaces/default/pods/b/compute", GOOD, "text/plain"), 415);
    assertEquals("Content-Type", p.path("field").asText());
    HttpResponse<String> get = send("GET", "/v1/namespaces/default/pods/b/compute", null, null);
    assertEquals(405, get.statusCode(), get.body());
    assertEquals("POST", get.headers().firstValue("Allow").orElse(""));
    assertUnreported("b");
  }

  static void assertUnreported(String pod) throws Exception {
    JsonNode view =
        JSON.readTree(send("GET", "/v1/namespaces/default/pods/" + pod, null, null).body());
    assertTrue(view.path("computeLimit").path("reportedAt").isNull(), view.toString());
  }
}
