package dev.gpushare.http.auth;

import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * Who may do what: decides a request's {@link Scope} for the bearer token it carries. Every
 * endpoint except the public ones goes through it (HttpApi); a refusal changes nothing.
 */
public interface Access {

  /** The answer for one request. */
  sealed interface Decision permits Allowed, Unauthenticated, Forbidden {}

  /** Allowed, for {@code who} (for logs). */
  record Allowed(String who) implements Decision {}

  /** 401: no token, or one that proves no identity; {@code why} says which. */
  record Unauthenticated(String why) implements Decision {}

  /** 403: a known identity without the permission; {@code why} names both. */
  record Forbidden(String why) implements Decision {}

  /** Decides {@code scope} for {@code token} (empty: the request had no bearer token). */
  CompletionStage<Decision> decide(Optional<String> token, Scope scope);

  /** Every request allowed: the routes' own tests, which are not about access. */
  Access NONE =
      (token, scope) -> java.util.concurrent.CompletableFuture.completedFuture(new Allowed("-"));
}
