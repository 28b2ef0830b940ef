package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/** The HTTP API of API.md, seen from a client: thin, JSON in and out, no server classes. */
public final class Api {

  public static final ObjectMapper JSON = new ObjectMapper();
  public static final String NS = "default";
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(10))
          .build();

  private final URI base;
  private final Supplier<Optional<String>> token;

  /** A client that sends no token (a server without access control, or to test refusals). */
  public Api(URI base) {
    this(base, Optional::empty);
  }

  /** A client that sends {@code Authorization: Bearer <token>} when {@code token} gives one. */
  public Api(URI base, Supplier<Optional<String>> token) {
    this.base = base;
    this.token = token;
  }

  /** The same server with another token (or none: {@code Optional.empty()}). */
  public Api withToken(Optional<String> other) {
    return new Api(base, () -> other);
  }

  /** The token this client sends, if any. */
  public Optional<String> token() {
    return token.get();
  }

  public URI base() {
    return base;
  }

  /** A response: status, content type and body; {@link #json()} parses the body. */
  public record Resp(String method, String path, int status, String contentType, String body) {
    public JsonNode json() {
      try {
        return JSON.readTree(body == null || body.isEmpty() ? "null" : body);
      } catch (JsonProcessingException e) {
        throw new AssertionError(
            method + " " + path + " → " + status + ": body is not JSON: " + body, e);
      }
    }

    @Override
    public String toString() {
      return method + " " + path + " → " + status + " (" + contentType + ") " + body;
    }
  }

  // ---------------------------------------------------------------- raw requests

  public Resp get(String path) {
    return send("GET", path, null, null);
  }

  public Resp delete(String path) {
    return send("DELETE", path, null, null);
  }

  public Resp post(String path, String body, String contentType) {
    return send("POST", path, body, contentType);
  }

  public Resp postJson(String path, Object body) {
    return send("POST", path, write(body), "application/json");
  }

  public Resp put(String path, String body, String contentType) {
    return send("PUT", path, body, contentType);
  }

  public Resp patch(String path, String body, String contentType) {
    return send("PATCH", path, body, contentType);
  }

  public HttpRequest.Builder request(String path) {
    return authorized(HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT));
  }

  private HttpRequest.Builder authorized(HttpRequest.Builder b) {
    token.get().ifPresent(t -> b.header("Authorization", "Bearer " + t));
    return b;
  }

  public Resp send(String method, String path, String body, String contentType) {
    HttpRequest.Builder b = request(path);
    if (body == null) {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      b.method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
      b.header("Content-Type", contentType);
    }
    try {
      HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
      return toResp(method, path, r);
    } catch (IOException e) {
      throw new UncheckedIOException(method + " " + path + " failed: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public CompletableFuture<Resp> sendAsync(String method, String path) {
    HttpRequest req = request(path).method(method, HttpRequest.BodyPublishers.noBody()).build();
    return CLIENT
        .sendAsync(req, HttpResponse.BodyHandlers.ofString())
        .thenApply(r -> toResp(method, path, r));
  }

  /** Opens a streaming GET (SSE); the caller reads and closes the stream. */
  public HttpResponse<InputStream> openStream(String path) {
    HttpRequest req =
        authorized(HttpRequest.newBuilder(base.resolve(path)))
            .header("Accept", "text/event-stream")
            .build();
    try {
      return CLIENT.send(req, HttpResponse.BodyHandlers.ofInputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static Resp toResp(String method, String path, HttpResponse<String> r) {
    return new Resp(
        method, path, r.statusCode(), r.headers().firstValue("Content-Type").orElse(""), r.body());
  }

  static String write(Object o) {
    try {
      return o instanceof String s ? s : JSON.writeValueAsString(o);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(e);
    }
  }

  public static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  // ---------------------------------------------------------------- checked helpers

  /** Asserts a 2xx answer and returns its JSON body. */
  public static JsonNode ok(Resp r) {
    if (r.status() < 200 || r.status() > 299) {
      fail("expected 2xx: " + r);
    }
    return r.json();
  }

  public static String podPath(String name) {
    return "/v1/namespaces/" + NS + "/pods/" + name;
  }

  /** Registers (or replaces) a simulated node; answers its NodeView (read back with GET). */
  public JsonNode putNode(String name, int gpus, String policy, String qosJson) {
    ObjectNode m = Manifests.node(name, gpus, policy, qosJson);
    Resp r = put("/v1/nodes/" + name, write(m), "application/json");
    ok(r);
    return node(name);
  }

  public JsonNode node(String name) {
    return ok(get("/v1/nodes/" + name));
  }

  public JsonNode nodes() {
    return ok(get("/v1/nodes")).get("items");
  }

  /** The queue endpoint's items. */
  public JsonNode queue(String node) {
    return ok(get("/v1/nodes/" + node + "/queue")).get("items");
  }

  /** PATCH with the labels/annotations maps (null value = remove), as application/json. */
  public JsonNode patchNode(String node, Map<String, String> labels, Map<String, String> ann) {
    return ok(patchNodeRaw(node, labels, ann, "application/json"));
  }

  public Resp patchNodeRaw(
      String node, Map<String, String> labels, Map<String, String> ann, String contentType) {
    ObjectNode patch = JSON.createObjectNode();
    ObjectNode meta = patch.putObject("metadata");
    if (labels != null) {
      ObjectNode l = meta.putObject("labels");
      labels.forEach((k, v) -> l.put(k, v));
    }
    if (ann != null) {
      ObjectNode a = meta.putObject("annotations");
      ann.forEach((k, v) -> a.put(k, v));
    }
    return patch("/v1/nodes/" + node, write(patch), contentType);
  }

  /** POST /v1/pods; asserts 201 and answers the PodView. */
  public JsonNode createPod(ObjectNode manifest) {
    Resp r = post("/v1/pods", write(manifest), "application/json");
    assertEquals(201, r.status(), () -> "create pod: " + r);
    return r.json();
  }

  public JsonNode pod(String name) {
    return ok(get(podPath(name)));
  }

  /** GET /v1/pods?node= items. */
  public JsonNode pods(String node) {
    return ok(get("/v1/pods?node=" + enc(node))).get("items");
  }

  public JsonNode allPods() {
    return ok(get("/v1/pods")).get("items");
  }

  public JsonNode demand(String name) {
    return ok(post(podPath(name) + "/demand", null, null));
  }

  public JsonNode release(String name) {
    return ok(delete(podPath(name) + "/demand"));
  }

  public JsonNode deletePod(String name) {
    return ok(delete(podPath(name)));
  }

  public JsonNode clock() {
    return ok(get("/v1/clock"));
  }

  public JsonNode advance(long seconds) {
    ObjectNode b = JSON.createObjectNode().put("seconds", seconds);
    return ok(postJson("/v1/clock/advance", b));
  }

  /** Asserts a problem+json answer with the given status; answers its body. */
  public static JsonNode problem(Resp r, int status) {
    assertEquals(status, r.status(), () -> "status of " + r);
    assertTrue(
        r.contentType().startsWith("application/problem+json"),
        () -> "content type must be application/problem+json: " + r);
    JsonNode p = r.json();
    assertTrue(p.isObject(), () -> "problem must be an object: " + r);
    assertEquals(status, p.path("status").asInt(), () -> "problem.status: " + r);
    assertTrue(p.hasNonNull("type"), () -> "problem.type missing: " + r);
    assertTrue(
        p.hasNonNull("title") && !p.get("title").asText().isBlank(),
        () -> "problem.title missing: " + r);
    assertTrue(
        p.hasNonNull("detail") && !p.get("detail").asText().isBlank(),
        () -> "problem.detail missing: " + r);
    return p;
  }

  /** Asserts problem+json with status and that {@code field} contains {@code fieldPart}. */
  public static JsonNode problem(Resp r, int status, String fieldPart) {
    JsonNode p = problem(r, status);
    String field = p.path("field").asText("");
    assertTrue(
        field.contains(fieldPart),
        () -> "problem.field must name '" + fieldPart + "', was '" + field + "': " + r);
    JsonNode errors = p.path("errors");
    assertTrue(errors.isArray() && errors.size() > 0, () -> "problem.errors[]: " + r);
    boolean named = false;
    for (JsonNode e : errors) {
      assertTrue(!e.path("message").asText("").isBlank(), () -> "errors[].message missing: " + r);
      named |= e.path("field").asText("").contains(fieldPart);
    }
    boolean found = named;
    assertTrue(found, () -> "an errors[].field must name '" + fieldPart + "': " + r);
    return p;
  }
}
