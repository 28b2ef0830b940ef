package dev.gpushare.http.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.http.api.FakeGpuShareServiceAccess;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.node.fake.FakeGpuShareService;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Access over real HTTP (ISSUE 6 point 1): Kubernetes mode's TokenReview and SubjectAccessReview
 * against a mock API server that plays the reviews, beside the member's admin token. Missing,
 * wrong, expired and other-pod tokens get 401/403 and the service is not called at all.
 */
class AccessOverHttpTest {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String LOCAL_ADMIN = "local-admin-token";
  static final Reviews REVIEWS = new Reviews();
  static KubernetesMockServer server;
  static KubernetesClient kube;
  static ActorTestKit kit;
  static ServerBinding binding;
  static FakeGpuShareService service;
  static HttpClient http = HttpClient.newHttpClient();
  static URI base;

  /** The API server's side: who each token is, and what RBAC allows whom. */
  static final class Reviews extends KubernetesCrudDispatcher {
    final List<String> tokenReviews = new ArrayList<>();
    final List<JsonNode> accessReviews = new ArrayList<>();

    @Override
    public synchronized MockResponse dispatch(RecordedRequest request) {
      try {
        String path = request.getPath();
        if (path.startsWith("/apis/authentication.k8s.io/v1/tokenreviews")) {
          ObjectNode review = (ObjectNode) JSON.readTree(request.getBody().getBytes());
          String token = review.path("spec").path("token").asText();
          tokenReviews.add(token);
          review.set("status", JSON.valueToTree(identity(token)));
          return new MockResponse().setResponseCode(201).setBody(JSON.writeValueAsString(review));
        }
        if (path.startsWith("/apis/authorization.k8s.io/v1/subjectaccessreviews")) {
          ObjectNode review = (ObjectNode) JSON.readTree(request.getBody().getBytes());
          accessReviews.add(review.path("spec"));
          JsonNode spec = review.path("spec");
          String user = spec.path("user").asText();
          String verb = spec.path("resourceAttributes").path("verb").asText();
          boolean allowed =
              user.equals("alice")
                  || (user.equals("bob") && (verb.equals("get") || verb.equals("list")));
          review.set(
              "status",
              JSON.valueToTree(
                  allowed
                      ? Map.of("allowed", true)
                      : Map.of("allowed", false, "reason", "RBAC: no rule for " + user)));
          return new MockResponse().setResponseCode(201).setBody(JSON.writeValueAsString(review));
        }
      } catch (java.io.IOException e) {
        return new MockResponse().setResponseCode(400).setBody(e.toString());
      }
      return super.dispatch(request);
    }

    static Map<String, Object> identity(String token) {
      switch (token) {
        case "alice-token":
          return Map.of(
              "authenticated",
              true,
              "user",
              Map.of("username", "alice", "uid", "u-1", "groups", List.of("admins")));
        case "bob-token":
          return Map.of(
              "authenticated",
              true,
              "user",
              Map.of("username", "bob", "uid", "u-2", "groups", List.of("viewers")));
        case "pod-a-token":
          return Map.of(
              "authenticated",
              true,
              "user",
              Map.of(
                  "username",
                  "system:serviceaccount:team:runner",
                  "uid",
                  "sa-1",
                  "groups",
                  List.of("system:serviceaccounts", "system:serviceaccounts:team"),
                  "extra",
                  Map.of(
                      "authentication.kubernetes.io/pod-name", List.of("a"),
                      "authentication.kubernetes.io/pod-uid", List.of("uid-a"))));
        case "expired-token":
          return Map.of(
              "authenticated", false, "error", "[invalid bearer token, token has expired]");
        default:
          return Map.of("authenticated", false);
      }
    }
  }

  @BeforeAll
  static void start() throws Exception {
    server =
        new KubernetesMockServer(
            new Context(), new MockWebServer(), new HashMap<>(), REVIEWS, false);
    server.init();
    kube = server.createClient();
    kit = ActorTestKit.create("AccessOverHttpTest");
    service = new FakeGpuShareService();
    Access access =
        new AnyOf(
            AdminToken.of(LOCAL_ADMIN),
            new KubernetesAccess(
                kube, Executors.newFixedThreadPool(2), Clock.systemUTC(), Duration.ofSeconds(10)));
    binding =
        new HttpApi(service, FakeGpuShareServiceAccess.journal(), i -> {}, access)
            .bind(kit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get();
    base = URI.create("http://127.0.0.1:" + binding.localAddress().getPort());
  }

  @AfterAll
  static void stop() throws Exception {
    binding.unbind().toCompletableFuture().get();
    kit.shutdownTestKit();
    kube.close();
    server.destroy();
  }

  @BeforeEach
  void clear() {
    service.reset();
    service.addPod("team", "a", "n1");
    service.addPod("team", "b", "n1");
    synchronized (REVIEWS) {
      REVIEWS.tokenReviews.clear();
      REVIEWS.accessReviews.clear();
    }
  }

  static HttpResponse<String> send(String method, String path, String token) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path));
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    b.method(method, HttpRequest.BodyPublishers.noBody());
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  static String detail(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body()).path("detail").asText();
  }

  @Test
  void noTokenIs401WithAChallengeAndNothingRuns() throws Exception {
    HttpResponse<String> r = send("POST", "/v1/namespaces/team/pods/a/demand", null);
    assertEquals(401, r.statusCode(), r.body());
    assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElse(""));
    assertTrue(
        r.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"), r.toString());
    assertTrue(detail(r).startsWith("no bearer token"), r.body());
    assertEquals(List.of(), service.calls, "nothing ran");
    assertEquals(List.of(), REVIEWS.tokenReviews, "no review for no token");
  }

  @Test
  void aWrongOrExpiredTokenIs401WithTheApiServersReason() throws Exception {
    HttpResponse<String> wrong = send("GET", "/v1/nodes", "made-up");
    assertEquals(401, wrong.statusCode(), wrong.body());
    assertTrue(detail(wrong).startsWith("the bearer token is not valid"), wrong.body());
    HttpResponse<String> expired =
        send("DELETE", "/v1/namespaces/team/pods/a/demand", "expired-token");
    assertEquals(401, expired.statusCode(), expired.body());
    assertTrue(detail(expired).contains("token has expired"), expired.body());
    assertTrue(!expired.body().contains("expired-token"), "the token is never echoed");
    assertEquals(List.of(), service.calls, "nothing ran");
  }

  @Test
  void aPodsTokenActsOnItsOwnPodOnlyAndWithoutRbac() throws Exception {
    assertEquals(
        200, send("POST", "/v1/namespaces/team/pods/a/demand", "pod-a-token").statusCode());
    assertEquals(200, send("GET", "/v1/namespaces/team/pods/a", "pod-a-token").statusCode());
    assertEquals(List.of(), REVIEWS.accessReviews, "its own pod needs no RBAC");

    HttpResponse<String> other = send("POST", "/v1/namespaces/team/pods/b/demand", "pod-a-token");
    assertEquals(403, other.statusCode(), other.body());
    assertTrue(
        detail(other)
            .contains("system:serviceaccount:team:runner may not create pods/demand \"team/b\""),
        other.body());
    assertTrue(detail(other).contains("may use its own pod team/a"), other.body());
    HttpResponse<String> nodes = send("PUT", "/v1/nodes/n1", "pod-a-token");
    assertEquals(403, nodes.statusCode(), nodes.body());
    assertEquals(
        List.of("demand team/a", "pod team/a"), service.calls, "only its own pod's calls ran");
    assertEquals(1, REVIEWS.tokenReviews.size(), "one TokenReview, then the cache");
  }

  @Test
  void rbacDecidesForUsersThroughSubjectAccessReviews() throws Exception {
    assertEquals(200, send("GET", "/v1/nodes", "bob-token").statusCode());
    HttpResponse<String> put = send("PUT", "/v1/nodes/n1/gpus/0/health", "bob-token");
    assertEquals(403, put.statusCode(), put.body());
    assertTrue(detail(put).startsWith("bob may not update nodes/gpus \"n1\""), put.body());
    JsonNode asked = REVIEWS.accessReviews.get(REVIEWS.accessReviews.size() - 1);
    assertEquals("bob", asked.path("user").asText());
    assertEquals("gpushare.dev", asked.path("resourceAttributes").path("group").asText());
    assertEquals("nodes", asked.path("resourceAttributes").path("resource").asText());
    assertEquals("gpus", asked.path("resourceAttributes").path("subresource").asText());
    assertEquals("update", asked.path("resourceAttributes").path("verb").asText());
    assertEquals("n1", asked.path("resourceAttributes").path("name").asText());
    assertEquals(List.of("nodes"), service.calls, "the refused PUT did not run");

    service.reset();
    service.addPod("team", "b", "n1");
    assertEquals(
        200, send("POST", "/v1/namespaces/team/pods/b/demand", "alice-token").statusCode());
    assertEquals(List.of("demand team/b"), service.calls);
  }

  @Test
  void theMembersAdminTokenNeedsNoReviewAndPublicEndpointsNoToken() throws Exception {
    assertEquals(200, send("GET", "/v1/nodes", LOCAL_ADMIN).statusCode());
    assertEquals(List.of(), REVIEWS.tokenReviews, "the admin token is the member's own");
    assertEquals(200, send("GET", "/healthz", null).statusCode());
    assertEquals(401, send("GET", "/metrics", null).statusCode());
  }
}
