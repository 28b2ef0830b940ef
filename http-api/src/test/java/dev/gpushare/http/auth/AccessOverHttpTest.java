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

  /**
   * The API server's side: who each token is, for which audiences, and what RBAC allows whom. A
   * TokenReview answers as the API server does: a review without {@code spec.audiences} is for the
   * API server's own audience ({@link #API_AUDIENCE}); a token is authenticated when one of its
   * audiences is asked for, and {@code status.audiences} lists those.
   */
  static final class Reviews extends KubernetesCrudDispatcher {
    final List<String> tokenReviews = new ArrayList<>();

    /** The {@code spec.audiences} of each TokenReview, in order ({@code []} when absent). */
    final List<List<String>> reviewAudiences = new ArrayList<>();

    final List<JsonNode> accessReviews = new ArrayList<>();

    @Override
    public synchronized MockResponse dispatch(RecordedRequest request) {
      try {
        String path = request.getPath();
        if (path.startsWith("/apis/authentication.k8s.io/v1/tokenreviews")) {
          ObjectNode review = (ObjectNode) JSON.readTree(request.getBody().getBytes());
          String token = review.path("spec").path("token").asText();
          List<String> audiences = new ArrayList<>();
          review.path("spec").path("audiences").forEach(a -> audiences.add(a.asText()));
          tokenReviews.add(token);
          reviewAudiences.add(audiences);
          review.set("status", JSON.valueToTree(status(token, audiences)));
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
                  || ((user.equals("bob") || user.equals("carol"))
                      && (verb.equals("get") || verb.equals("list")));
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

    /** The review's status for {@code token} asked for {@code asked} (empty: the API's own). */
    static Map<String, Object> status(String token, List<String> asked) {
      Token t = TOKENS.get(token);
      if (t == null) {
        return Map.of("authenticated", false);
      }
      if (t.error() != null) {
        return Map.of("authenticated", false, "error", t.error());
      }
      if (t.ignoresAudiences()) {
        return Map.of("authenticated", true, "user", t.user());
      }
      List<String> wanted = asked.isEmpty() ? List.of(API_AUDIENCE) : asked;
      List<String> granted = wanted.stream().filter(t.audiences()::contains).toList();
      if (granted.isEmpty()) {
        return Map.of(
            "authenticated",
            false,
            "error",
            "[invalid bearer token, token audiences "
                + t.audiences()
                + " is invalid for the target audiences "
                + wanted
                + "]");
      }
      return Map.of("authenticated", true, "user", t.user(), "audiences", granted);
    }
  }

  static final String API_AUDIENCE = "https://kubernetes.default.svc.cluster.local";

  /**
   * A token the mock API server knows: its audiences, its user; {@code ignoresAudiences}: answered
   * as an API server that does not look at {@code spec.audiences} (no {@code status.audiences}).
   */
  record Token(
      List<String> audiences, Map<String, Object> user, boolean ignoresAudiences, String error) {
    static Token of(String audience, Map<String, Object> user) {
      return new Token(List.of(audience), user, false, null);
    }
  }

  static final Map<String, Object> POD_A_USER =
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
              "authentication.kubernetes.io/pod-uid", List.of("uid-a")));

  static final Map<String, Token> TOKENS =
      Map.ofEntries(
          Map.entry(
              "alice-token",
              Token.of(
                  API_AUDIENCE,
                  Map.of("username", "alice", "uid", "u-1", "groups", List.of("admins")))),
          Map.entry(
              "bob-token",
              Token.of(
                  API_AUDIENCE,
                  Map.of("username", "bob", "uid", "u-2", "groups", List.of("viewers")))),
          // the projected token the webhook mounts: audience gpushare, bound to pod team/a
          Map.entry("pod-a-token", Token.of("gpushare", POD_A_USER)),
          // the pod's default ServiceAccount token: bound to team/a, but for the API server
          Map.entry("pod-a-api-token", Token.of(API_AUDIENCE, POD_A_USER)),
          // bound to team/a, for some other service
          Map.entry("pod-a-vault-token", Token.of("vault", POD_A_USER)),
          // an API server that answers without looking at spec.audiences
          Map.entry("pod-a-unchecked-token", new Token(List.of(), POD_A_USER, true, null)),
          Map.entry(
              "expired-token",
              new Token(List.of(), Map.of(), false, "[invalid bearer token, token has expired]")),
          // for the cache's test alone (answers stay cached from one test to the next)
          Map.entry("pod-a-token-2", Token.of("gpushare", POD_A_USER)),
          Map.entry("pod-a-api-token-2", Token.of(API_AUDIENCE, POD_A_USER)),
          Map.entry(
              "carol-token",
              Token.of(
                  API_AUDIENCE,
                  Map.of("username", "carol", "uid", "u-3", "groups", List.of("viewers")))));

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
                kube,
                Executors.newFixedThreadPool(2),
                Clock.systemUTC(),
                Duration.ofSeconds(10),
                "gpushare"));
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
      REVIEWS.reviewAudiences.clear();
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
    assertEquals(List.of(List.of("gpushare")), REVIEWS.reviewAudiences, "for the pod audience");
  }

  static final String REPORT = "{\"aimPercent\":30,\"measuredPercent\":29.4,\"heldSeconds\":12.5}";

  static HttpResponse<String> report(String pod, String token) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(base.resolve("/v1/namespaces/team/pods/" + pod + "/compute"))
            .header("Authorization", "Bearer " + token)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(REPORT))
            .build();
    return http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  @Test
  void aPodsTokenReportsItsOwnPodsComputeOnly() throws Exception {
    HttpResponse<String> own = report("a", "pod-a-token");
    assertEquals(200, own.statusCode(), own.body());
    assertEquals(
        29.4, JSON.readTree(own.body()).path("computeLimit").path("measuredPercent").asDouble());
    assertEquals(List.of(), REVIEWS.accessReviews, "its own pod needs no RBAC");

    HttpResponse<String> other = report("b", "pod-a-token");
    assertEquals(403, other.statusCode(), other.body());
    assertTrue(
        detail(other)
            .contains("system:serviceaccount:team:runner may not create pods/compute \"team/b\""),
        other.body());
    assertTrue(detail(other).contains("may use its own pod team/a"), other.body());
    HttpResponse<String> apiToken = report("a", "pod-a-api-token");
    assertEquals(403, apiToken.statusCode(), "the pod's ordinary token: " + apiToken.body());
    assertEquals(List.of("reportCompute team/a"), service.calls, "only its own pod's report ran");
  }

  @Test
  void aPodsTokenForTheApiServerIsRefusedItsOwnPodNamingTheAudience() throws Exception {
    HttpResponse<String> own = send("POST", "/v1/namespaces/team/pods/a/demand", "pod-a-api-token");
    assertEquals(403, own.statusCode(), own.body());
    assertTrue(
        detail(own)
            .startsWith("system:serviceaccount:team:runner may not create pods/demand \"team/a\""),
        own.body());
    assertTrue(
        detail(own)
            .endsWith(
                "; a pod's own data plane needs a token with audience gpushare (the projected"
                    + " token the webhook mounts)"),
        own.body());
    assertEquals(1, REVIEWS.accessReviews.size(), "RBAC decided, not the pod shortcut");
    assertEquals(
        List.of(List.of("gpushare"), List.of()),
        REVIEWS.reviewAudiences,
        "reviewed for the pod audience first, then for the API server's");
    assertEquals(List.of(), service.calls, "nothing ran");
  }

  @Test
  void anApiServerThatDoesNotConfirmTheAudienceGrantsNoPodShortcut() throws Exception {
    HttpResponse<String> own = send("GET", "/v1/namespaces/team/pods/a", "pod-a-unchecked-token");
    assertEquals(403, own.statusCode(), own.body());
    assertTrue(detail(own).contains("needs a token with audience gpushare"), own.body());
    assertEquals(List.of(), service.calls, "nothing ran");
  }

  @Test
  void aTokenForAnotherAudienceIsNotValid() throws Exception {
    HttpResponse<String> own =
        send("POST", "/v1/namespaces/team/pods/a/demand", "pod-a-vault-token");
    assertEquals(401, own.statusCode(), own.body());
    assertTrue(detail(own).startsWith("the bearer token is not valid"), own.body());
    assertTrue(detail(own).contains("is invalid for the target audiences"), own.body());
    assertEquals(List.of(), REVIEWS.accessReviews, "no identity, no RBAC");
    assertEquals(List.of(), service.calls, "nothing ran");
  }

  @Test
  void anAudienceReviewAndAPlainOneAreCachedApart() throws Exception {
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> own = send("GET", "/v1/namespaces/team/pods/a", "pod-a-api-token-2");
      assertEquals(403, own.statusCode(), "the plain review's identity every time: " + own.body());
      HttpResponse<String> carol = send("GET", "/v1/namespaces/team/pods/a", "carol-token");
      assertEquals(200, carol.statusCode(), carol.body());
    }
    assertEquals(
        List.of(List.of("gpushare"), List.of(), List.of("gpushare"), List.of()),
        REVIEWS.reviewAudiences,
        "each token reviewed once for each audience, then each answer from its own cache");
    assertEquals(
        List.of("pod-a-api-token-2", "pod-a-api-token-2", "carol-token", "carol-token"),
        REVIEWS.tokenReviews);
    // the pod's projected token is reviewed anew: the other token's answers are not its own
    assertEquals(200, send("GET", "/v1/namespaces/team/pods/a", "pod-a-token-2").statusCode());
    assertEquals(5, REVIEWS.tokenReviews.size());
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
  void aPodsHistoryIsGetPodsHistoryInItsNamespaceAndNotPartOfThePodsDataPlane() throws Exception {
    HttpResponse<String> viewer = send("GET", "/v1/namespaces/team/pods/a/history", "bob-token");
    assertEquals(200, viewer.statusCode(), viewer.body());
    JsonNode asked = REVIEWS.accessReviews.get(REVIEWS.accessReviews.size() - 1);
    assertEquals("bob", asked.path("user").asText());
    assertEquals("get", asked.path("resourceAttributes").path("verb").asText());
    assertEquals("pods", asked.path("resourceAttributes").path("resource").asText());
    assertEquals("history", asked.path("resourceAttributes").path("subresource").asText());
    assertEquals("team", asked.path("resourceAttributes").path("namespace").asText());
    assertEquals("a", asked.path("resourceAttributes").path("name").asText());

    // A pod's own token reads its pod's view, but not its history: that names other pods.
    HttpResponse<String> own = send("GET", "/v1/namespaces/team/pods/a/history", "pod-a-token");
    assertEquals(403, own.statusCode(), own.body());
    assertTrue(detail(own).contains("may not get pods/history \"team/a\""), own.body());
    HttpResponse<String> none = send("GET", "/v1/namespaces/team/pods/a/history", null);
    assertEquals(401, none.statusCode(), none.body());
  }

  @Test
  void theMembersAdminTokenNeedsNoReviewAndPublicEndpointsNoToken() throws Exception {
    assertEquals(200, send("GET", "/v1/nodes", LOCAL_ADMIN).statusCode());
    assertEquals(List.of(), REVIEWS.tokenReviews, "the admin token is the member's own");
    assertEquals(200, send("GET", "/healthz", null).statusCode());
    assertEquals(401, send("GET", "/metrics", null).statusCode());
  }
}
