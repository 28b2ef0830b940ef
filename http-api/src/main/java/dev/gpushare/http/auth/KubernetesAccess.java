package dev.gpushare.http.auth;

import io.fabric8.kubernetes.api.model.authentication.TokenReview;
import io.fabric8.kubernetes.api.model.authentication.TokenReviewBuilder;
import io.fabric8.kubernetes.api.model.authentication.UserInfo;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReview;
import io.fabric8.kubernetes.api.model.authorization.v1.SubjectAccessReviewBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * Kubernetes mode's access (the kube-rbac-proxy model): a bearer token is an identity only if the
 * API server's TokenReview says so; a pod's own token may use its own pod's data plane ({@link
 * Scope#podDataPlane()}); everything else is decided by a SubjectAccessReview of the request's
 * {@link Scope} in the API group {@value Scope#API_GROUP} — RBAC rules in {@code deploy/} grant it.
 *
 * <p>The pod shortcut needs a token minted for this service: a projected ServiceAccount token of
 * the audience {@code podAudience} ({@code gpushare.pod-side.token-audience}, the one the webhook
 * mounts), bound to its pod (the claims {@code authentication.kubernetes.io/pod-name} and {@code
 * pod-uid}). Each token is first reviewed with {@code spec.audiences: [podAudience]}; only when the
 * API server authenticates it and {@code status.audiences} holds that audience may it use its own
 * pod. Otherwise it is reviewed again without audiences (the API server's own), and that identity
 * gets a SubjectAccessReview only — a token any pod can hand to anyone (its default ServiceAccount
 * token, which the API server accepts) never stands for the pod by itself.
 *
 * <p>Answers are cached for a short time ({@code cacheFor}, default 10 s, at most {@value
 * #MAX_CACHED} entries per cache, keyed by the token's SHA-256, never the token itself, and by the
 * audience reviewed, so an audience review and a plain one never stand for each other), so a busy
 * workload costs the API server one review per interval; a revoked or expired token stops working
 * at most that long after. Calls to the API server block and run on {@code blocking}.
 */
public final class KubernetesAccess implements Access {
  static final int MAX_CACHED = 10_000;
  static final String POD_NAME_CLAIM = "authentication.kubernetes.io/pod-name";
  static final String POD_UID_CLAIM = "authentication.kubernetes.io/pod-uid";
  static final String SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

  private final KubernetesClient client;
  private final Executor blocking;
  private final Clock clock;
  private final Duration cacheFor;
  private final String podAudience;

  /** Reviews with {@code spec.audiences: [podAudience]}. */
  private final Map<String, Cached<Identity>> audienceIdentities = lru();

  /** Reviews without audiences: the API server's own. */
  private final Map<String, Cached<Identity>> apiIdentities = lru();

  private final Map<String, Cached<Decision>> decisions = lru();

  private record Cached<T>(T value, Instant until) {}

  /**
   * Who a token is, as TokenReview said; {@code pod} is {@code ns/name} for a bound pod token;
   * {@code forPods}: reviewed and accepted for the pod audience.
   */
  record Identity(UserInfo user, Optional<String> pod, boolean forPods, String invalid) {}

  /**
   * @param podAudience the audience a token needs to use its own pod's data plane ({@code
   *     gpushare.pod-side.token-audience}); not blank
   */
  public KubernetesAccess(
      KubernetesClient client,
      Executor blocking,
      Clock clock,
      Duration cacheFor,
      String podAudience) {
    if (podAudience == null || podAudience.isBlank()) {
      throw new IllegalArgumentException("podAudience must not be blank");
    }
    this.client = client;
    this.blocking = blocking;
    this.clock = clock;
    this.cacheFor = cacheFor;
    this.podAudience = podAudience;
  }

  @Override
  public CompletionStage<Decision> decide(Optional<String> token, Scope scope) {
    if (token.isEmpty()) {
      return CompletableFuture.completedFuture(
          new Unauthenticated(
              "no bearer token: send \"Authorization: Bearer <token>\" (a ServiceAccount token,"
                  + " or a user's token the API server accepts)"));
    }
    String key = sha256(token.get());
    return CompletableFuture.supplyAsync(() -> decideBlocking(key, token.get(), scope), blocking);
  }

  private Decision decideBlocking(String key, String token, Scope scope) {
    Identity who = cached(audienceIdentities, key, () -> review(token, Optional.of(podAudience)));
    if (who.invalid() == null && who.forPods()) {
      if (who.pod().isPresent() && scope.podDataPlane()) {
        String own = who.pod().get();
        String asked = scope.namespace().get() + "/" + scope.name().get();
        if (own.equals(asked)) {
          return new Allowed("pod " + own);
        }
      }
      return cached(decisions, "pods " + key + " " + scope, () -> subjectAccessReview(who, scope));
    }
    Identity plain = cached(apiIdentities, key, () -> review(token, Optional.empty()));
    if (plain.invalid() != null) {
      // Neither audience: a pod's data plane is told both answers, the pod audience's first.
      String why =
          scope.podDataPlane() && who.invalid() != null
              ? "for audience " + podAudience + ": " + who.invalid() + "; for the API server: "
              : "";
      return new Unauthenticated("the bearer token is not valid: " + why + plain.invalid());
    }
    return cached(decisions, "api " + key + " " + scope, () -> subjectAccessReview(plain, scope));
  }

  /**
   * TokenReview of {@code token}, for {@code audience} or (empty) for the API server's own; an
   * identity for an audience only when the answer lists it in {@code status.audiences}.
   */
  private Identity review(String token, Optional<String> audience) {
    TokenReview review =
        client
            .authentication()
            .v1()
            .tokenReviews()
            .create(
                new TokenReviewBuilder()
                    .withNewSpec()
                    .withToken(token)
                    .withAudiences(audience.map(List::of).orElse(null))
                    .endSpec()
                    .build());
    var status = review.getStatus();
    if (status == null || !Boolean.TRUE.equals(status.getAuthenticated())) {
      String error = status == null ? null : status.getError();
      return new Identity(
          null,
          Optional.empty(),
          false,
          error == null || error.isBlank() ? "the API server does not know it" : error);
    }
    if (audience.isPresent()
        && (status.getAudiences() == null || !status.getAudiences().contains(audience.get()))) {
      return new Identity(
          null,
          Optional.empty(),
          false,
          "the API server did not confirm the audience " + audience.get());
    }
    UserInfo user = status.getUser();
    return new Identity(user, boundPod(user), audience.isPresent(), null);
  }

  /** {@code ns/name} of the pod a bound ServiceAccount token belongs to, if it is one. */
  static Optional<String> boundPod(UserInfo user) {
    Map<String, List<String>> extra = user.getExtra() == null ? Map.of() : user.getExtra();
    List<String> pod = extra.get(POD_NAME_CLAIM);
    String username = user.getUsername() == null ? "" : user.getUsername();
    if (pod == null || pod.isEmpty() || !username.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      return Optional.empty();
    }
    String[] sa = username.substring(SERVICE_ACCOUNT_PREFIX.length()).split(":", 2);
    return Optional.of(sa[0] + "/" + pod.get(0));
  }

  private Decision subjectAccessReview(Identity who, Scope scope) {
    UserInfo user = who.user();
    SubjectAccessReview review =
        client
            .authorization()
            .v1()
            .subjectAccessReview()
            .create(
                new SubjectAccessReviewBuilder()
                    .withNewSpec()
                    .withUser(user.getUsername())
                    .withUid(user.getUid())
                    .withGroups(user.getGroups())
                    .withExtra(user.getExtra())
                    .withNewResourceAttributes()
                    .withGroup(Scope.API_GROUP)
                    .withResource(scope.resource())
                    .withSubresource(scope.subresource().orElse(null))
                    .withVerb(scope.verb())
                    .withNamespace(scope.namespace().orElse(null))
                    .withName(scope.name().orElse(null))
                    .endResourceAttributes()
                    .endSpec()
                    .build());
    var status = review.getStatus();
    String name = user.getUsername();
    if (status != null && Boolean.TRUE.equals(status.getAllowed())) {
      return new Allowed(name);
    }
    String reason =
        status == null || status.getReason() == null || status.getReason().isBlank()
            ? "no RBAC rule allows it"
            : status.getReason();
    String own;
    if (who.forPods()) {
      own =
          who.pod().map(p -> "; a pod's ServiceAccount token may use its own pod " + p).orElse("");
    } else if (scope.podDataPlane() && name != null && name.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      own = "; " + audienceNeeded(podAudience);
    } else {
      own = "";
    }
    return new Forbidden(
        name
            + " may not "
            + scope.describe()
            + " (API group "
            + Scope.API_GROUP
            + "): "
            + reason
            + own);
  }

  /** What a ServiceAccount token without the pod audience is told on a pod's data plane. */
  static String audienceNeeded(String audience) {
    return "a pod's own data plane needs a token with audience "
        + audience
        + " (the projected token the webhook mounts)";
  }

  private <T> T cached(Map<String, Cached<T>> cache, String key, java.util.function.Supplier<T> f) {
    Instant now = clock.instant();
    synchronized (cache) {
      Cached<T> hit = cache.get(key);
      if (hit != null && now.isBefore(hit.until())) {
        return hit.value();
      }
    }
    T value = f.get();
    synchronized (cache) {
      cache.put(key, new Cached<>(value, now.plus(cacheFor)));
    }
    return value;
  }

  private static <T> Map<String, Cached<T>> lru() {
    return new LinkedHashMap<>(256, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Cached<T>> eldest) {
        return size() > MAX_CACHED;
      }
    };
  }

  private static String sha256(String token) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
