package dev.gpushare.http.api;

import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.Problem;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /healthz}: {@code 200} while the process lives. {@code GET /readyz}: {@code 200} once
 * the service is ready (journal recovered, every node's arbiter reconciled with its bound pods) and
 * while its journal can write, else a {@code 503} problem whose detail says why ({@link
 * GpuShareReader#notReady()}).
 */
public final class HealthRoutes extends ApiDirectives {
  private final GpuShareReader service;

  public HealthRoutes(GpuShareReader service) {
    this.service = service;
  }

  public Route route() {
    return concat(
        path("healthz", () -> get(() -> complete(json(StatusCodes.OK, Map.of("status", "ok"))))),
        path("readyz", () -> get(() -> complete(readiness()))));
  }

  private HttpResponse readiness() {
    Optional<String> why = service.notReady();
    if (why.isEmpty()) {
      return json(StatusCodes.OK, Map.of("status", "ready"));
    }
    return Problem.of(new ServiceException(Kind.UNAVAILABLE, "not ready: " + why.get()))
        .toResponse();
  }
}
