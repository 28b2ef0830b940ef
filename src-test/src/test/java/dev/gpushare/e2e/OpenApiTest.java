package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.PathType;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion.VersionFlag;
import com.networknt.schema.ValidationMessage;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OpenAPI document ({@code GET /v1/openapi.json}) against the real server process: every
 * endpoint is called for real — successes and the failures a client meets (400, 401, 404, 409, 415,
 * 422) — and each answer is checked against the operation the document gives for its method and
 * path: the status code is one the operation lists, the content type one that response lists, the
 * JSON body valid against that response's schema (JSON Schema 2020-12, {@code $ref}s into {@code
 * #/components/schemas}, with formats asserted), documented headers present, and each Server- Sent
 * Event's data valid against the stream's {@code x-sse-data} schema. Request bodies that the server
 * accepted are checked against the request schemas too, and query parameters sent must be
 * documented.
 *
 * <p>Coverage both ways: every operation of the document got a 2xx answer here at least once (so
 * the server has that route), every secured operation answers 401 without a token, and for every
 * documented path the methods the server answers (its {@code Allow} on a {@code 405}) are exactly
 * the documented ones. {@link #theValidatorRejectsWhatTheDocumentDoesNotAllow} proves the checks
 * can fail.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OpenApiTest {
  private static final String DOC_IRI = "https://gpushare.dev/v1/openapi.json";
  private static final YAMLMapper YAML = new YAMLMapper();
  private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch");
  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(10))
          .build();

  private ServerProcess server;
  private Api api;
  private JsonNode doc;
  private JsonSchemaFactory factory;
  private SchemaValidatorsConfig config;
  private final Map<String, JsonSchema> schemas = new ConcurrentHashMap<>();

  /** Operations ("GET /v1/nodes/{node}") that answered 2xx here. */
  private final Set<String> served = new TreeSet<>();

  /** Answers checked against the document, and events of streams. */
  private int checked;

  private int eventsChecked;

  /** Whether bodies are sent chunked, without a Content-Length. */
  private boolean chunked;

  /** Every answer that does not match the document, reported together at the end. */
  private final List<String> failures = new ArrayList<>();

  @BeforeAll
  void start(@TempDir Path dir) throws IOException {
    Path conf = dir.resolve("gpushare.conf");
    Files.writeString(
        conf,
        """
        gpushare.gpu {
          backend = simulated
          telemetry-interval = 200ms
        }
        """);
    server =
        ServerProcess.start(
            "OpenApiTest", dir.resolve("data"), List.of(), Map.of(), "--config", conf.toString());
    api = server.api();
    // The document is public: fetched without a token.
    Api.Resp r = api.withToken(Optional.empty()).get("/v1/openapi.json");
    assertEquals(200, r.status(), () -> "GET /v1/openapi.json: " + r);
    assertTrue(r.contentType().startsWith("application/json"), r::toString);
    doc = r.json();
    String text = r.body();
    factory =
        JsonSchemaFactory.getInstance(
            VersionFlag.V202012, b -> b.schemaLoaders(l -> l.schemas(Map.of(DOC_IRI, text))));
    config =
        SchemaValidatorsConfig.builder()
            .formatAssertionsEnabled(true)
            .pathType(PathType.JSON_POINTER)
            .build();
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  // ================================================================ the scenario

  @Test
  void everyEndpointAnswersAsTheDocumentSays() throws Exception {
    String n = Manifests.unique("oas");
    String s = Manifests.unique("oas-static");
    String a = n + "-a";
    String b = n + "-b";
    String y = n + "-y";
    String cpu = n + "-cpu";
    String st = s + "-p";

    // ---- public endpoints, without a token
    Api anonymous = api.withToken(Optional.empty());
    expect(anonymous, "GET", "/v1/openapi.json", Map.of(), "", null, null, 200);
    expect(anonymous, "GET", "/healthz", Map.of(), "", null, null, 200);
    awaitStatus(anonymous, "/readyz", 200);
    Exchange page = expect(anonymous, "GET", "/dashboard", Map.of(), "", null, null, 200);
    for (String file : dashboardFiles(page.body())) {
      expect(anonymous, "GET", "/dashboard/{file}", Map.of("file", file), "", null, null, 200);
    }
    expect(
        anonymous,
        "GET",
        "/dashboard/{file}",
        Map.of("file", "no-such-file.js"),
        "",
        null,
        null,
        404);

    // ---- every secured operation refuses a request without a token, as documented (401)
    for (String operation : documentedOperations()) {
      String method = operation.substring(0, operation.indexOf(' '));
      String template = operation.substring(operation.indexOf(' ') + 1);
      if (isPublic(operation)) {
        continue;
      }
      Map<String, String> params = new LinkedHashMap<>();
      for (Matcher m = Pattern.compile("\\{(\\w+)}").matcher(template); m.find(); ) {
        params.put(m.group(1), m.group(1).equals("index") ? "0" : "x");
      }
      Exchange e = call(anonymous, method, template, params, "", null, null);
      if (e.status() != 401) {
        failures.add(operation + " without a token: want 401, got " + e);
      }
    }
    Exchange bad =
        call(
            api.withToken(Optional.of("not-the-token")),
            "GET",
            "/v1/nodes",
            Map.of(),
            "",
            null,
            null);
    if (bad.status() != 401) {
      failures.add("GET /v1/nodes with an invalid token: want 401, got " + bad);
    }

    // ---- nodes: JSON and YAML manifests, merge patches, GPU health
    ObjectNode node = Manifests.node(n, 2, "share-pool", Manifests.qos(true, 120));
    expect("PUT", "/v1/nodes/{node}", Map.of("node", n), "", node, "application/json", 201);
    expect("PUT", "/v1/nodes/{node}", Map.of("node", n), "", yaml(node), "application/yaml", 200);
    expect(
        "PUT",
        "/v1/nodes/{node}",
        Map.of("node", s),
        "",
        Manifests.node(s, 1, "static", null),
        "application/json",
        201);
    expect("PUT", "/v1/nodes/{node}", Map.of("node", n), "", "{\"kind\":", "application/json", 400);
    expect(
        "PUT",
        "/v1/nodes/{node}",
        Map.of("node", n),
        "",
        "{\"kind\":\"Pod\",\"apiVersion\":\"v2\"}",
        "application/json",
        422);
    expect("PUT", "/v1/nodes/{node}", Map.of("node", n), "", "kind: Node", "text/plain", 415);
    expect(
        "PUT",
        "/v1/nodes/{node}",
        Map.of("node", n),
        "",
        "{\"kind\":\"Node\",\"pad\":\"" + "x".repeat(1_100_000) + "\"}",
        "application/json",
        400);
    chunked = true; // the same without a Content-Length: the limit is met while reading
    expect(
        "PUT",
        "/v1/nodes/{node}",
        Map.of("node", n),
        "",
        "{\"kind\":\"Node\",\"pad\":\"" + "x".repeat(1_100_000) + "\"}",
        "application/json",
        400);
    chunked = false;
    expect("GET", "/v1/nodes", Map.of(), "", null, null, 200);
    expect("GET", "/v1/nodes/{node}", Map.of("node", n), "", null, null, 200);
    expect("GET", "/v1/nodes/{node}", Map.of("node", n + "-gone"), "", null, null, 404);
    expect(
        "PATCH",
        "/v1/nodes/{node}",
        Map.of("node", n),
        "",
        "{\"metadata\":{\"labels\":{\"team\":\"a\"},\"annotations\":{\"note\":null}}}",
        "application/merge-patch+json",
        200);
    expect(
        "PATCH",
        "/v1/nodes/{node}",
        Map.of("node", n),
        "",
        "{\"spec\":{\"unschedulable\":true}}",
        "application/json",
        422);
    expect("PATCH", "/v1/nodes/{node}", Map.of("node", n), "", "{}", "text/plain", 415);
    expect("PATCH", "/v1/nodes/{node}", Map.of("node", n), "", "{", "application/json", 400);
    expect(
        "PATCH",
        "/v1/nodes/{node}",
        Map.of("node", n + "-gone"),
        "",
        "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}",
        "application/json",
        404);
    String health = "/v1/nodes/{node}/gpus/{index}/health";
    expect(
        "PUT",
        health,
        Map.of("node", n, "index", "1"),
        "",
        "{\"health\":\"Unhealthy\"}",
        "application/json",
        200);
    expect(
        "PUT",
        health,
        Map.of("node", n, "index", "1"),
        "",
        "{\"health\":\"Healthy\"}",
        "application/json",
        200);
    expect(
        "PUT",
        health,
        Map.of("node", n, "index", "1"),
        "",
        "{\"health\":\"Sick\"}",
        "application/json",
        422);
    expect("PUT", health, Map.of("node", n, "index", "1"), "", "{", "application/json", 400);
    expect(
        "PUT",
        health,
        Map.of("node", n, "index", "7"),
        "",
        "{\"health\":\"Healthy\"}",
        "application/json",
        404);

    // ---- pods: JSON and YAML manifests, a pod that shares no GPU, a static pod
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.sharePod(a, n, 50, 100),
        "application/json",
        201);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.sharePod(b, n, 50, 100),
        "application/json",
        201);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        yaml(Manifests.sharePod(y, null, 20, 50)),
        "application/yaml",
        201);
    expect("POST", "/v1/pods", Map.of(), "", Manifests.cpuOnlyPod(cpu, n), "application/json", 201);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.staticPod(st, s, 50, 50),
        "application/json",
        201);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.sharePod(a, n, 50, 100),
        "application/json",
        409);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.sharePod(n + "-far", n + "-gone", 50, 100),
        "application/json",
        404);
    expect(
        "POST",
        "/v1/pods",
        Map.of(),
        "",
        Manifests.sharePod(n + "-bad", n, 150, 100),
        "application/json",
        422);
    expect("POST", "/v1/pods", Map.of(), "", "kind: Pod\n  - :", "application/yaml", 400);
    expect("POST", "/v1/pods", Map.of(), "", "{}", "text/plain", 415);
    expect("GET", "/v1/pods", Map.of(), "", null, null, 200);
    expect("GET", "/v1/pods", Map.of(), "?node=" + n, null, null, 200);
    expect("GET", "/v1/pods", Map.of(), "?node=" + n + "-gone", null, null, 404);
    String pod = "/v1/namespaces/{namespace}/pods/{name}";
    expect("GET", pod, podOf(cpu), "", null, null, 200);
    expect("GET", pod, podOf(st), "", null, null, 200);
    expect("GET", pod, podOf(n + "-gone"), "", null, null, 404);

    // ---- data plane: a runs, b queues behind it, the long poll, the pod's SSE watch
    String demand = pod + "/demand";
    String grant = pod + "/grant";
    BlockingQueue<SseEvent> bEvents = new LinkedBlockingQueue<>();
    try (Stream watch = stream(pod + "/watch", podOf(b), bEvents)) {
      expect("POST", demand, podOf(a), "", null, null, 200);
      expect("POST", demand, podOf(b), "", null, null, 200);
      expect("GET", grant, podOf(b), "?timeoutSeconds=1", null, null, 200);
      expect("GET", grant, podOf(a), "", null, null, 200);
      expect("GET", grant, podOf(a), "?timeoutSeconds=301", null, null, 400);
      expect("GET", grant, podOf(a), "?timeoutSeconds=soon", null, null, 400);
      expect("GET", grant, podOf(n + "-gone"), "?timeoutSeconds=0", null, null, 404);
      expect("GET", "/v1/nodes/{node}/queue", Map.of("node", n), "", null, null, 200);
      expect("GET", "/v1/nodes/{node}/queue", Map.of("node", n + "-gone"), "", null, null, 404);
      expect("POST", demand, podOf(cpu), "", null, null, 409);
      expect("POST", demand, podOf(n + "-gone"), "", null, null, 404);
      // b: Hibernation (now), Ready (queued)
      awaitEvents(watch, bEvents, 2, e -> true);
    }
    expect("GET", pod + "/watch", podOf(n + "-gone"), "", null, null, 404);

    // ---- telemetry: a's GPU scripted; a's view then has usage and workload
    JsonNode aView = api.pod(a);
    String scriptPath = "/v1/nodes/{node}/gpus/{index}/processes";
    Map<String, String> aGpu = Map.of("node", n, "index", aView.path("gpu").path("index").asText());
    expect(
        "PUT",
        scriptPath,
        aGpu,
        "",
        "{\"processes\":[{\"pid\":4242,\"podUid\":\""
            + aView.path("uid").asText()
            + "\",\"usedMemoryMiB\":1024,\"smUtilizationPercent\":30}]}",
        "application/json",
        200);
    expect(
        "PUT", scriptPath, aGpu, "", "{\"processes\":[{\"pid\":\"x\"}]}", "application/json", 400);
    expect(
        "PUT",
        scriptPath,
        aGpu,
        "",
        "{\"processes\":[{\"pid\":0,\"podUid\":\"u\",\"usedMemoryMiB\":1}]}",
        "application/json",
        422);
    expect(
        "PUT",
        scriptPath,
        Map.of("node", n, "index", "9"),
        "",
        "{\"processes\":[]}",
        "application/json",
        404);
    awaitPod(a, "usage sampled", v -> v.path("usage").path("processes").asInt() == 1);
    // ---- the host PIDs of a's processes, as the telemetry saw them (its compute limiter asks)
    Exchange processes = expect("GET", pod + "/processes", podOf(a), "", null, null, 200);
    assertEquals("[4242]", json(processes).path("hostPids").toString(), processes.toString());
    expect("GET", pod + "/processes", podOf(n + "-gone"), "", null, null, 404);
    // ---- the compute limiter's report (issue 26): a's view then shows it in computeLimit
    String compute = pod + "/compute";
    String report = "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":12.5}";
    expect("POST", compute, podOf(a), "", report, "application/json", 200);
    expect("POST", compute, podOf(a), "", "{\"aimPercent\":\"x\"}", "application/json", 400);
    expect(
        "POST",
        compute,
        podOf(a),
        "",
        "{\"aimPercent\":130,\"measuredPercent\":29.4,\"heldSeconds\":12.5}",
        "application/json",
        422);
    expect("POST", compute, podOf(a), "", report, "text/plain", 415);
    expect("POST", compute, podOf(cpu), "", report, "application/json", 409);
    expect("POST", compute, podOf(n + "-gone"), "", report, "application/json", 404);
    expect("GET", pod, podOf(a), "", null, null, 200);
    expect("GET", "/metrics", Map.of(), "", null, null, 200);

    // ---- the change stream: a node change and a pod change, then a deletion
    BlockingQueue<SseEvent> changes = new LinkedBlockingQueue<>();
    try (Stream watch = stream("/v1/watch", Map.of(), changes)) {
      expect(
          "PATCH",
          "/v1/nodes/{node}",
          Map.of("node", n),
          "",
          "{\"metadata\":{\"labels\":{\"team\":\"b\"}}}",
          "application/json",
          200);
      expect("DELETE", demand, podOf(a), "", null, null, 200);
      expect("DELETE", demand, podOf(n + "-gone"), "", null, null, 404);
      expect("DELETE", pod, podOf(y), "", null, null, 200);
      expect("DELETE", pod, podOf(n + "-gone"), "", null, null, 404);
      awaitEvents(watch, changes, 1, e -> "node".equals(e.json().path("kind").asText()));
      awaitEvents(watch, changes, 1, e -> e.json().path("deleted").asBoolean(false));
    }

    // ---- journal
    Exchange ids = expect("GET", "/v1/journal/persistence-ids", Map.of(), "", null, null, 200);
    String podId = null;
    for (JsonNode id : json(ids).path("items")) {
      if (id.asText().startsWith("Pod|default/" + a + "/")) {
        podId = id.asText();
      }
    }
    assertTrue(podId != null, () -> "no persistence id of pod " + a + ": " + ids.body());
    String events = "/v1/journal/events";
    expect("GET", events, Map.of(), "?persistenceId=" + Api.enc(podId), null, null, 200);
    expect(
        "GET",
        events,
        Map.of(),
        "?persistenceId=" + Api.enc(podId) + "&fromSequenceNr=2&limit=3",
        null,
        null,
        200);
    expect("GET", events, Map.of(), "", null, null, 400);
    expect("GET", events, Map.of(), "?persistenceId=x&limit=0", null, null, 400);

    // ---- a pod's history: a's record and its node's decisions (a was demanded and released)
    String history = "/v1/namespaces/{namespace}/pods/{name}/history";
    Exchange whole = expect("GET", history, podOf(a), "", null, null, 200);
    assertTrue(json(whole).path("items").size() >= 3, whole::body);
    Exchange first = expect("GET", history, podOf(a), "?after=0&limit=1", null, null, 200);
    long next = json(first).path("next").asLong();
    expect("GET", history, podOf(a), "?after=" + next + "&limit=1000", null, null, 200);
    expect("GET", history, podOf(n + "-never"), "", null, null, 200);
    expect("GET", history, podOf(a), "?after=-1", null, null, 400);
    expect("GET", history, podOf(a), "?limit=1001", null, null, 400);
    expect("GET", history, podOf("Not_A_Name"), "", null, null, 404);

    // ---- the clock
    expect("GET", "/v1/clock", Map.of(), "", null, null, 200);
    expect("POST", "/v1/clock/advance", Map.of(), "", "{\"seconds\":60}", "application/json", 200);
    expect("POST", "/v1/clock/advance", Map.of(), "", "{\"seconds\":-1}", "application/json", 422);
    expect("POST", "/v1/clock/advance", Map.of(), "", "{\"minutes\":1}", "application/json", 422);
    expect("POST", "/v1/clock/advance", Map.of(), "", "{", "application/json", 400);
    expect("POST", "/v1/clock/advance", Map.of(), "", "{\"seconds\":1}", "text/plain", 415);

    expect("DELETE", pod, podOf(b), "", null, null, 200);

    // ---- coverage: every documented operation answered 2xx here at least once
    Set<String> unserved = new TreeSet<>(documentedOperations());
    unserved.removeAll(served);
    if (!unserved.isEmpty()) {
      failures.add("documented but never answered 2xx here: " + unserved);
    }
    System.out.printf(
        "OpenApiTest: %d answers and %d events checked, %d of %d operations answered 2xx%n",
        checked, eventsChecked, served.size(), documentedOperations().size());
    assertTrue(
        failures.isEmpty(),
        () ->
            failures.size() + " answers differ from the document:\n" + String.join("\n", failures));
  }

  /**
   * For every documented path, the methods the server answers there (the {@code Allow} of its
   * {@code 405}) are exactly the methods the document gives: no undocumented route on a documented
   * path, no documented route the server lacks.
   */
  @Test
  void theServerAnswersExactlyTheDocumentedMethodsOnEveryPath() {
    List<String> wrong = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = doc.path("paths").properties().iterator();
        it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      String template = e.getKey();
      Set<String> documented = new TreeSet<>();
      e.getValue()
          .fieldNames()
          .forEachRemaining(
              m -> {
                if (METHODS.contains(m)) {
                  documented.add(m.toUpperCase(Locale.ROOT));
                }
              });
      String path = template.replaceAll("\\{index}", "0").replaceAll("\\{(\\w+)}", "probe-$1");
      Exchange r = send(api, "OPTIONS", path, null, null);
      Set<String> allowed =
          r.header("Allow")
              .map(
                  v ->
                      List.of(v.split(",")).stream()
                          .map(String::strip)
                          .filter(x -> !x.isEmpty())
                          .collect(Collectors.toCollection(TreeSet::new)))
              .orElse(new TreeSet<>());
      if (r.status() != 405 || !allowed.equals(documented)) {
        wrong.add(
            template
                + ": documented "
                + documented
                + ", server allows "
                + allowed
                + " ("
                + r
                + ")");
      }
    }
    assertTrue(wrong.isEmpty(), () -> String.join("\n", wrong));
  }

  /**
   * The checks can fail: a real PodView with an undocumented field, a state the document does not
   * list, a required field missing, or a null where none is allowed is rejected; so is a status
   * code the operation does not list.
   */
  @Test
  void theValidatorRejectsWhatTheDocumentDoesNotAllow() throws Exception {
    String n = Manifests.unique("oas-neg");
    api.putNode(n, 1, "share-pool", null);
    JsonNode real = api.createPod(Manifests.sharePod(n + "-p", n, 50, 50));
    assertEquals(List.of(), messages("PodView", real), "the real view is valid");

    ObjectNode extra = real.deepCopy();
    extra.put("surprise", 1);
    assertFalse(messages("PodView", extra).isEmpty(), "an undocumented field must fail");
    ObjectNode state = real.deepCopy();
    state.put("state", "Sleeping");
    assertFalse(messages("PodView", state).isEmpty(), "an undocumented state must fail");
    ObjectNode missing = real.deepCopy();
    missing.remove("uid");
    assertFalse(messages("PodView", missing).isEmpty(), "a missing required field must fail");
    ObjectNode nul = real.deepCopy();
    nul.putNull("events");
    assertFalse(messages("PodView", nul).isEmpty(), "null where none is allowed must fail");
    ObjectNode deep = real.deepCopy();
    deep.withArray("events").addObject().put("type", "Normal");
    assertFalse(messages("PodView", deep).isEmpty(), "a bad nested event must fail");

    int before = failures.size();
    Set<String> servedBefore = new TreeSet<>(served);
    check("GET", "/v1/nodes", new Exchange(418, "application/json", "{}", Map.of()), null, null);
    check(
        "GET",
        "/v1/clock",
        new Exchange(200, "application/json", "{\"now\":\"yesterday\",\"manual\":true}", Map.of()),
        null,
        null);
    check("GET", "/v1/clock", new Exchange(200, "text/plain", "now", Map.of()), null, null);
    check(
        "GET",
        "/v1/no-such-path",
        new Exchange(200, "application/json", "{}", Map.of()),
        null,
        null);
    List<String> caught = new ArrayList<>(failures.subList(before, failures.size()));
    failures.subList(before, failures.size()).clear();
    served.retainAll(servedBefore);
    assertEquals(4, caught.size(), () -> "each wrong answer is one failure: " + caught);
  }

  // ================================================================ calls and checks

  /** A response with what the checks need. */
  record Exchange(int status, String contentType, String body, Map<String, List<String>> headers) {
    Optional<String> header(String name) {
      return headers.entrySet().stream()
          .filter(e -> e.getKey().equalsIgnoreCase(name))
          .flatMap(e -> e.getValue().stream())
          .findFirst();
    }

    @Override
    public String toString() {
      String shown = body.length() > 400 ? body.substring(0, 400) + "…" : body;
      return status + " (" + contentType + ") " + shown;
    }
  }

  private Exchange expect(
      String method,
      String template,
      Map<String, String> params,
      String query,
      Object body,
      String contentType,
      int status) {
    return expect(api, method, template, params, query, body, contentType, status);
  }

  /** Calls, checks against the document, and asserts the status this scenario expects. */
  private Exchange expect(
      Api client,
      String method,
      String template,
      Map<String, String> params,
      String query,
      Object body,
      String contentType,
      int status) {
    Exchange e = call(client, method, template, params, query, body, contentType);
    if (e.status() != status) {
      failures.add(
          method
              + " "
              + expand(template, params)
              + query
              + ": scenario wants "
              + status
              + ", got "
              + e);
    }
    return e;
  }

  private Exchange call(
      Api client,
      String method,
      String template,
      Map<String, String> params,
      String query,
      Object body,
      String contentType) {
    String text = body == null ? null : Api.write(body);
    Exchange e = send(client, method, expand(template, params) + query, text, contentType);
    check(method, template + query, e, text, contentType);
    return e;
  }

  private Exchange send(Api client, String method, String path, String body, String contentType) {
    HttpRequest.Builder b = client.request(path);
    if (body == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      b.method(
          method,
          chunked
              ? HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(bytes))
              : HttpRequest.BodyPublishers.ofByteArray(bytes));
      b.header("Content-Type", contentType);
    }
    try {
      HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return new Exchange(
          r.statusCode(),
          r.headers().firstValue("Content-Type").orElse(""),
          r.body(),
          r.headers().map());
    } catch (IOException e) {
      throw new UncheckedIOException(method + " " + path + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /**
   * Checks one answer against the document's operation for {@code method} on {@code
   * templateAndQuery} (a path template, then the query sent); records what differs in {@link
   * #failures} and a 2xx in {@link #served}.
   */
  private void check(
      String method, String templateAndQuery, Exchange e, String requestBody, String requestType) {
    int q = templateAndQuery.indexOf('?');
    String template = q < 0 ? templateAndQuery : templateAndQuery.substring(0, q);
    String query = q < 0 ? "" : templateAndQuery.substring(q + 1);
    String what = method + " " + templateAndQuery + " → " + e;
    JsonNode pathItem = doc.path("paths").path(template);
    JsonNode operation = pathItem.path(method.toLowerCase(Locale.ROOT));
    if (!operation.isObject()) {
      failures.add("undocumented operation: " + what);
      return;
    }
    String opName = method + " " + template;
    checked++;
    JsonNode response = operation.path("responses").path(Integer.toString(e.status()));
    if (response.isMissingNode()) {
      response = operation.path("responses").path("default");
    }
    if (response.isMissingNode()) {
      failures.add("status " + e.status() + " not documented for " + what);
      return;
    }
    response = resolve(response);
    if (e.status() >= 200 && e.status() < 300) {
      served.add(opName);
      checkRequest(opName, operation, pathItem, query, requestBody, requestType);
    }
    for (Iterator<String> h = response.path("headers").fieldNames(); h.hasNext(); ) {
      String header = h.next();
      if (e.header(header).isEmpty()) {
        failures.add("documented header " + header + " missing: " + what);
      }
    }
    JsonNode content = response.path("content");
    if (!content.isObject() || content.isEmpty()) {
      if (!e.body().isEmpty()) {
        failures.add("a body where none is documented: " + what);
      }
      return;
    }
    String media = mediaType(e.contentType());
    JsonNode mediaEntry = content.path(media);
    if (mediaEntry.isMissingNode()) {
      failures.add(
          "content type "
              + media
              + " not documented (documented: "
              + iterable(content.fieldNames())
              + "): "
              + what);
      return;
    }
    if (isJson(media)) {
      JsonNode body;
      try {
        body = Api.JSON.readTree(e.body());
      } catch (JsonProcessingException ex) {
        failures.add("body is not JSON: " + what);
        return;
      }
      List<String> invalid = validate(mediaEntry.path("schema"), body);
      if (!invalid.isEmpty()) {
        failures.add("body does not match the schema " + invalid + ": " + what);
      }
    }
  }

  /** What the client sent on a 2xx: documented query parameters, a documented, valid body. */
  private void checkRequest(
      String opName,
      JsonNode operation,
      JsonNode pathItem,
      String query,
      String body,
      String type) {
    Map<String, JsonNode> declared = new LinkedHashMap<>();
    for (JsonNode p : iterable(pathItem.path("parameters"), operation.path("parameters"))) {
      JsonNode param = resolve(p);
      if (param.path("in").asText().equals("query")) {
        declared.put(param.path("name").asText(), param);
      }
    }
    Set<String> sent = new TreeSet<>();
    for (String pair : query.isEmpty() ? new String[0] : query.split("&")) {
      String name = pair.contains("=") ? pair.substring(0, pair.indexOf('=')) : pair;
      sent.add(name);
      if (!declared.containsKey(name)) {
        failures.add(opName + ": query parameter " + name + " is not documented");
      }
    }
    declared.forEach(
        (name, param) -> {
          if (param.path("required").asBoolean(false) && !sent.contains(name)) {
            failures.add(opName + ": 2xx without the required query parameter " + name);
          }
        });
    JsonNode requestBody = resolve(operation.path("requestBody"));
    if (body == null) {
      if (requestBody.path("required").asBoolean(false)) {
        failures.add(opName + ": 2xx without the required body");
      }
      return;
    }
    JsonNode entry = requestBody.path("content").path(mediaType(type));
    if (entry.isMissingNode()) {
      failures.add(opName + ": accepted a body of undocumented type " + type);
      return;
    }
    JsonNode parsed;
    try {
      parsed = isJson(mediaType(type)) ? Api.JSON.readTree(body) : YAML.readTree(body);
    } catch (IOException ex) {
      failures.add(opName + ": accepted a body that does not parse as " + type);
      return;
    }
    List<String> invalid = validate(entry.path("schema"), parsed);
    if (!invalid.isEmpty()) {
      failures.add(
          opName + ": accepted a body the request schema refuses " + invalid + ": " + body);
    }
  }

  /** The messages of validating {@code value} against the schema node (a $ref or inline). */
  private List<String> validate(JsonNode schemaNode, JsonNode value) {
    String key = schemaNode.toString();
    JsonSchema schema =
        schemas.computeIfAbsent(
            key,
            k ->
                schemaNode.has("$ref")
                    ? factory.getSchema(
                        SchemaLocation.of(DOC_IRI + schemaNode.get("$ref").asText()), config)
                    : factory.getSchema(schemaNode, config));
    return schema.validate(value).stream().map(ValidationMessage::getMessage).sorted().toList();
  }

  private List<String> messages(String component, JsonNode value) {
    return validate(
        Api.JSON.createObjectNode().put("$ref", "#/components/schemas/" + component), value);
  }

  /** A {@code $ref} to a component (responses, parameters, request bodies) resolved. */
  private JsonNode resolve(JsonNode node) {
    JsonNode n = node;
    for (int i = 0; i < 8 && n.has("$ref"); i++) {
      String ref = n.get("$ref").asText();
      assertTrue(ref.startsWith("#/"), () -> "only local references: " + ref);
      n = doc.at(ref.substring(1));
      if (n.isMissingNode()) {
        fail("unresolved $ref " + ref);
      }
    }
    return n;
  }

  /** Every documented operation, {@code "GET /v1/nodes/{node}"}. */
  private Set<String> documentedOperations() {
    Set<String> ops = new TreeSet<>();
    doc.path("paths")
        .properties()
        .forEach(
            e ->
                e.getValue()
                    .fieldNames()
                    .forEachRemaining(
                        m -> {
                          if (METHODS.contains(m)) {
                            ops.add(m.toUpperCase(Locale.ROOT) + " " + e.getKey());
                          }
                        }));
    return ops;
  }

  /** Whether the operation needs no token: its own {@code security} is empty. */
  private boolean isPublic(String operation) {
    String method = operation.substring(0, operation.indexOf(' ')).toLowerCase(Locale.ROOT);
    String template = operation.substring(operation.indexOf(' ') + 1);
    JsonNode security = doc.path("paths").path(template).path(method).path("security");
    if (security.isMissingNode()) {
      security = doc.path("security");
    }
    return security.isArray() && security.isEmpty();
  }

  // ================================================================ Server-Sent Events

  record SseEvent(String name, String data, JsonNode json) {}

  /** An open event stream; closing it ends the request. */
  private final class Stream implements AutoCloseable {
    private final InputStream body;
    private final Thread reader;
    private final String what;
    private final JsonNode dataSchema;
    private final String eventName;

    Stream(InputStream body, Thread reader, String what, JsonNode dataSchema, String eventName) {
      this.body = body;
      this.reader = reader;
      this.what = what;
      this.dataSchema = dataSchema;
      this.eventName = eventName;
    }

    @Override
    public void close() {
      try {
        body.close();
      } catch (IOException e) {
        // gone already
      }
      reader.interrupt();
    }
  }

  /**
   * Opens {@code GET template} as an event stream, checks its status, content type and headers
   * against the document, and reads its events into {@code out} on a thread of its own.
   */
  private Stream stream(String template, Map<String, String> params, BlockingQueue<SseEvent> out)
      throws InterruptedException {
    String path = expand(template, params);
    HttpRequest req = api.request(path).header("Accept", "text/event-stream").GET().build();
    req = HttpRequest.newBuilder(req, (k, v) -> true).timeout(Duration.ofMinutes(5)).build();
    HttpResponse<InputStream> r;
    try {
      r = CLIENT.send(req, HttpResponse.BodyHandlers.ofInputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String type = r.headers().firstValue("Content-Type").orElse("");
    check(
        "GET",
        template,
        // the body of a stream is read below; status, type and headers are checked here
        new Exchange(r.statusCode(), type, "", r.headers().map()),
        null,
        null);
    assertEquals(200, r.statusCode(), () -> "GET " + path + ": " + r.statusCode());
    JsonNode media =
        doc.at(
            "/paths/"
                + template.replace("~", "~0").replace("/", "~1")
                + "/get/responses/200/content/text~1event-stream");
    assertTrue(media.isObject(), () -> template + ": 200 text/event-stream not documented");
    CountDownLatch open = new CountDownLatch(1);
    InputStream body = r.body();
    Thread reader = new Thread(() -> readSse(body, out, open), "sse-" + template.replace('/', '_'));
    reader.setDaemon(true);
    reader.start();
    Stream s =
        new Stream(
            body,
            reader,
            "GET " + path,
            media.path("x-sse-data"),
            media.path("x-sse-event").asText(null));
    // the stream's first bytes (a comment or the first event) say the server is streaming
    assertTrue(open.await(20, TimeUnit.SECONDS), () -> "GET " + path + ": nothing streamed");
    return s;
  }

  /**
   * Waits for {@code count} events matching {@code wanted}; every event read meanwhile is checked
   * against the stream's documented event name and data schema.
   */
  private void awaitEvents(
      Stream s, BlockingQueue<SseEvent> in, int count, Predicate<SseEvent> wanted)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    int found = 0;
    List<SseEvent> seen = new ArrayList<>();
    while (found < count) {
      long left = deadline - System.nanoTime();
      SseEvent e = left <= 0 ? null : in.poll(left, TimeUnit.NANOSECONDS);
      if (e == null) {
        fail(s.what + ": " + count + " wanted events not within 30 s; seen " + seen);
      }
      seen.add(e);
      eventsChecked++;
      if (s.eventName != null && !s.eventName.equals(e.name())) {
        failures.add(s.what + ": event name " + e.name() + ", documented " + s.eventName);
      }
      if (e.json() == null) {
        failures.add(s.what + ": event data is not JSON: " + e.data());
        continue;
      }
      List<String> invalid = validate(s.dataSchema, e.json());
      if (!invalid.isEmpty()) {
        failures.add(
            s.what + ": event data does not match x-sse-data " + invalid + ": " + e.data());
      }
      if (wanted.test(e)) {
        found++;
      }
    }
  }

  /** Server-Sent Events: "event:" and "data:" lines up to a blank line make one event. */
  private static void readSse(InputStream in, BlockingQueue<SseEvent> out, CountDownLatch open) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      StringBuilder data = new StringBuilder();
      String name = null;
      String line;
      while ((line = r.readLine()) != null) {
        open.countDown();
        if (line.isEmpty()) {
          if (data.length() > 0) {
            String d = data.toString();
            JsonNode json;
            try {
              json = Api.JSON.readTree(d);
            } catch (JsonProcessingException e) {
              json = null;
            }
            out.add(new SseEvent(name == null ? "message" : name, d, json));
          }
          data.setLength(0);
          name = null;
        } else if (line.startsWith("data:")) {
          if (data.length() > 0) {
            data.append('\n');
          }
          String d = line.substring(5);
          data.append(d.startsWith(" ") ? d.substring(1) : d);
        } else if (line.startsWith("event:")) {
          name = line.substring(6).strip();
        }
      }
    } catch (IOException e) {
      // closed by the test
    }
  }

  // ================================================================ helpers

  private JsonNode awaitPod(String name, String what, Predicate<JsonNode> condition)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    JsonNode last = null;
    while (System.nanoTime() < deadline) {
      last = api.pod(name);
      if (condition.test(last)) {
        return last;
      }
      Thread.sleep(50);
    }
    fail(name + ": not within 30 s: " + what + "; last " + last);
    return null;
  }

  private void awaitStatus(Api client, String path, int status) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      Exchange e = call(client, "GET", path, Map.of(), "", null, null);
      if (e.status() == status) {
        return;
      }
      if (System.nanoTime() > deadline) {
        fail("GET " + path + ": not " + status + " within 30 s: " + e);
      }
      Thread.sleep(100);
    }
  }

  /** The files the dashboard page loads (script, style, icon), as {@code /dashboard/{file}}. */
  private static Set<String> dashboardFiles(String html) {
    Set<String> files = new TreeSet<>();
    Matcher m = Pattern.compile("(?:src|href)=\"([^\"]+)\"").matcher(html);
    while (m.find()) {
      String ref = m.group(1);
      if (ref.startsWith("http") || ref.startsWith("data:") || ref.startsWith("#")) {
        continue;
      }
      String file = ref.replaceFirst("^(\\./|/dashboard/)", "");
      if (!file.isEmpty() && !file.contains("/")) {
        files.add(file);
      }
    }
    assertFalse(files.isEmpty(), () -> "the dashboard page loads no file of its own: " + html);
    return files;
  }

  private static Map<String, String> podOf(String name) {
    return Map.of("namespace", Api.NS, "name", name);
  }

  private static String expand(String template, Map<String, String> params) {
    String path = template;
    for (Map.Entry<String, String> e : params.entrySet()) {
      path = path.replace("{" + e.getKey() + "}", e.getValue());
    }
    assertFalse(path.contains("{"), () -> "unexpanded path " + template + " " + params);
    return path;
  }

  private static String yaml(ObjectNode manifest) {
    try {
      return YAML.writeValueAsString(manifest);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static JsonNode json(Exchange e) {
    try {
      return Api.JSON.readTree(e.body());
    } catch (JsonProcessingException ex) {
      throw new AssertionError("not JSON: " + e, ex);
    }
  }

  private static String mediaType(String contentType) {
    int semi = contentType.indexOf(';');
    return (semi < 0 ? contentType : contentType.substring(0, semi))
        .strip()
        .toLowerCase(Locale.ROOT);
  }

  private static boolean isJson(String media) {
    return media.equals("application/json") || media.endsWith("+json");
  }

  private static List<String> iterable(Iterator<String> names) {
    List<String> list = new ArrayList<>();
    names.forEachRemaining(list::add);
    return list;
  }

  private static List<JsonNode> iterable(JsonNode... arrays) {
    List<JsonNode> list = new ArrayList<>();
    for (JsonNode array : arrays) {
      array.forEach(list::add);
    }
    return list;
  }
}
