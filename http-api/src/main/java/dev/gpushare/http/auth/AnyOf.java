package dev.gpushare.http.auth;

import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * The member's admin token first, then the other access (Kubernetes mode's reviews): a request with
 * the admin token is allowed without asking the API server; any other token is decided there.
 */
public record AnyOf(AdminToken admin, Access other) implements Access {
  @Override
  public CompletionStage<Decision> decide(Optional<String> token, Scope scope) {
    if (token.isPresent() && admin.matches(token.get())) {
      return java.util.concurrent.CompletableFuture.completedFuture(new Allowed("admin"));
    }
    return other.decide(token, scope);
  }
}
