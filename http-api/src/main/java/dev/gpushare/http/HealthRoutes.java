package dev.gpushare.http;

import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.Map;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /healthz}: {@code 200} while the process lives. {@code GET /readyz}: {@code 200} once
 * the service is ready (journal recovered, every node's arbiter reconciled with its bound pods),
 * else a {@code 503} problem.
 */
public final class HealthRoutes extends ApiDirectives {
  private final GpuShareService service;

  public HealthRoutes(GpuShareService service) {
    this.service = service;
  }

  public Route route() {
    return concat(
        path("healthz", () -> get(() -> complete(json(StatusCodes.OK, Map.of("status", "ok"))))),
        path(
            "readyz",
            () ->
                get(
                    () ->
                        complete(
                            service.ready()
                                ? json(StatusCodes.OK, Map.of("status", "ready"))
                                : Problem.of(
                                        new ServiceException(
                                            Kind.UNAVAILABLE,
                                            "not ready: the journal is still being recovered or a"
                                                + " node's arbiter has not reconciled with its bound pods;"
                                                + " retry shortly"))
                                    .toResponse()))));
  }
}
