package dev.gpushare.http.api;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.http.auth.Access;
import dev.gpushare.http.auth.Scope;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.ConnectionGuard;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.http.server.Problem;
import dev.gpushare.http.server.WatchLimits;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.persistence.JournalInspector;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpMethod;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.Allow;
import org.apache.pekko.http.javadsl.model.headers.Authorization;
import org.apache.pekko.http.javadsl.model.headers.HttpChallenge;
import org.apache.pekko.http.javadsl.model.headers.WWWAuthenticate;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.MethodRejection;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import scala.concurrent.duration.FiniteDuration;

/**
 * The whole HTTP API of API.md: every {@code *Routes} class under one error policy, and the server
 * binding. Every error answer is {@code application/problem+json} ({@link Problem}): refusals of
 * the arbiter by their kind, an unknown path {@code 404}, a wrong method {@code 405} with {@code
 * Allow}, an unsupported body {@code 415}, an ask timeout {@code 503}, anything unexpected {@code
 * 500} (logged, never with a stack trace to the client).
 *
 * <p>The server holds what {@link HttpLimits} allows: every connection goes through a {@link
 * ConnectionGuard} (closed after {@code headerReadTimeout} without a request in flight), at most
 * {@code maxConnections} at once, and watches and long polls count against {@link WatchLimits}, so
 * that {@code /healthz} and ordinary requests are served while a client holds all it may.
 */
public final class HttpApi extends ApiDirectives {

  /**
   * The server's idle timeout: longer than the longest grant long poll, so that a waiting
   * connection is not cut.
   */
  static final FiniteDuration IDLE_TIMEOUT =
      FiniteDuration.create(DataPlaneRoutes.MAX_GRANT_TIMEOUT_SECONDS + 60, TimeUnit.SECONDS);

  /**
   * The least accept queue ({@code pekko.http.server.backlog}, default 100): a burst of connections
   * waits there instead of having its SYNs dropped (a client retries a dropped SYN only after a
   * second or more). The kernel caps it at {@code net.core.somaxconn}.
   */
  static final int MIN_BACKLOG = 1024;

  /** The {@code route} label of the HTTP metrics, one per API path. */
  private static final RouteTemplates ROUTES = RouteTemplates.ofApi();

  private final Route routes;
  private final Access access;
  private final HttpLimits limits;
  private final GpuShareMetrics metrics;

  /**
   * The API without access control ({@link Access#NONE}): for the routes' own tests.
   *
   * @param clockAdvanced told the new instant after each completed {@code POST /v1/clock/advance}
   */
  public HttpApi(
      GpuShareService service, JournalInspector journal, Consumer<Instant> clockAdvanced) {
    this(service, journal, clockAdvanced, Access.NONE);
  }

  /**
   * @param clockAdvanced told the new instant after each completed {@code POST /v1/clock/advance}
   * @param access who may do what: every request but the public ones ({@link Scope}) is decided
   *     there before any route runs
   */
  public HttpApi(
      GpuShareService service,
      JournalInspector journal,
      Consumer<Instant> clockAdvanced,
      Access access) {
    this(service, journal, clockAdvanced, access, HttpLimits.DEFAULT);
  }

  /**
   * @param limits what the server holds open at most ({@code gpushare.http})
   */
  public HttpApi(
      GpuShareService service,
      JournalInspector journal,
      Consumer<Instant> clockAdvanced,
      Access access,
      HttpLimits limits) {
    this.access = access;
    this.limits = limits;
    this.metrics = service.metrics();
    WatchLimits watches = WatchLimits.of(limits);
    this.routes =
        concat(
            new HealthRoutes(service).route(),
            new OpenApiRoutes().route(),
            new MetricsRoutes(service).route(),
            new NodeRoutes(service).route(),
            new PodRoutes(service).route(),
            new DataPlaneRoutes(service, watches).route(),
            new DashboardRoutes(service, DashboardRoutes.HEARTBEAT, watches).route(),
            new JournalRoutes(journal).route(),
            new ClockRoutes(service, clockAdvanced).route(),
            new dev.gpushare.http.extender.SchedulerExtenderRoutes(service).route());
  }

  /**
   * The routes with the error policy applied: every request gets a response from here, and is
   * counted in the HTTP metrics ({@link GpuShareMetrics#httpRequest}) when its response starts.
   */
  public Route route() {
    return measured(
        () ->
            handleExceptions(
                ExceptionHandler.newBuilder()
                    .matchAny(failure -> complete(Problem.of(failure).toResponse()))
                    .build(),
                () -> handleRejections(rejectionHandler(), () -> authorized(routes))));
  }

  /**
   * {@code inner}, with each response counted by method, route template and status, and timed from
   * the request's arrival to the response's start: the response's head, so a watch stream counts
   * once when it opens, however long it then runs.
   */
  private Route measured(java.util.function.Supplier<Route> inner) {
    return extractRequest(
        request -> {
          long start = System.nanoTime();
          String method = request.method().name();
          String route = ROUTES.of(request.getUri().path());
          return mapResponse(
              response -> {
                metrics.httpRequest(
                    method,
                    route,
                    response.status().intValue(),
                    Duration.ofNanos(System.nanoTime() - start));
                return response;
              },
              inner);
        });
  }

  /**
   * {@code inner} if the request's bearer token may do what it asks ({@link Scope}); else 401 (no
   * or an invalid token, with {@code WWW-Authenticate: Bearer}) or 403, and nothing runs.
   */
  private Route authorized(Route inner) {
    return extractRequest(
        request -> {
          Scope scope = Scope.of(request.method().name(), request.getUri().path());
          if (scope.isPublic()) {
            return inner;
          }
          Optional<String> token =
              request
                  .getHeader(Authorization.class)
                  .map(Authorization::credentials)
                  .filter(c -> c.scheme().equalsIgnoreCase("bearer"))
                  .map(c -> c.token())
                  .filter(t -> !t.isBlank());
          return onSuccess(
              access.decide(token, scope),
              decision -> {
                if (decision instanceof Access.Allowed) {
                  return inner;
                }
                if (decision instanceof Access.Unauthenticated u) {
                  return complete(
                      Problem.http(
                              StatusCodes.UNAUTHORIZED,
                              u.why(),
                              List.of(
                                  new FieldError(
                                      "Authorization",
                                      token.isPresent() ? "Bearer (hidden)" : "(none)",
                                      u.why())))
                          .toResponse()
                          .addHeader(
                              WWWAuthenticate.create(HttpChallenge.create("Bearer", "gpushare"))));
                }
                Access.Forbidden f = (Access.Forbidden) decision;
                return complete(
                    Problem.http(
                            StatusCodes.FORBIDDEN,
                            f.why(),
                            List.of(new FieldError("Authorization", "Bearer (hidden)", f.why())))
                        .toResponse());
              });
        });
  }

  /**
   * Binds the API on {@code host:port} ({@code 0} picks a free port): each connection behind its
   * {@link ConnectionGuard}, at most {@code maxConnections} of them.
   */
  public CompletionStage<ServerBinding> bind(ActorSystem<?> system, String host, int port) {
    return Http.get(system)
        .newServerAt(host, port)
        .adaptSettings(this::serverSettings)
        .bindFlow(ConnectionGuard.around(limits.headerReadTimeout(), route().flow(system)));
  }

  /**
   * Pekko's settings with the limits: the idle timeout at least {@link #IDLE_TIMEOUT} (silence in
   * both directions; the guard closes connections that say nothing much sooner), {@code
   * max-connections} from {@code gpushare.http}, an accept queue of at least {@link #MIN_BACKLOG},
   * and the remote address on every request (what {@link WatchLimits} counts by).
   */
  private ServerSettings serverSettings(ServerSettings settings) {
    ServerSettings adapted =
        settings
            .withMaxConnections(limits.maxConnections())
            .withBacklog(Math.max(settings.getBacklog(), MIN_BACKLOG))
            .withRemoteAddressAttribute(true);
    scala.concurrent.duration.Duration configured = adapted.getTimeouts().idleTimeout();
    if (configured.isFinite() && configured.lt(IDLE_TIMEOUT)) {
      return adapted.withTimeouts(adapted.getTimeouts().withIdleTimeout(IDLE_TIMEOUT));
    }
    return adapted;
  }

  private RejectionHandler rejectionHandler() {
    return RejectionHandler.newBuilder()
        .handleAll(MethodRejection.class, this::methodNotAllowed)
        .handleNotFound(
            extractRequest(
                request ->
                    complete(
                        Problem.http(
                                StatusCodes.NOT_FOUND,
                                "no resource at "
                                    + request.getUri().path()
                                    + "; API.md lists the paths of this API",
                                List.of())
                            .toResponse())))
        .build()
        .withFallback(
            RejectionHandler.defaultHandler().mapRejectionResponse(Problem::fromRejection));
  }

  private Route methodNotAllowed(List<MethodRejection> rejections) {
    List<HttpMethod> allowed =
        rejections.stream().map(MethodRejection::supported).distinct().toList();
    String names = allowed.stream().map(HttpMethod::name).collect(Collectors.joining(", "));
    return extractRequest(
        request -> {
          String message =
              "method "
                  + request.method().name()
                  + " is not allowed on "
                  + request.getUri().path()
                  + "; allowed: "
                  + names;
          return complete(
              Problem.http(
                      StatusCodes.METHOD_NOT_ALLOWED,
                      message,
                      List.of(new FieldError("method", request.method().name(), message)))
                  .toResponse()
                  .addHeader(Allow.create(allowed.toArray(HttpMethod[]::new))));
        });
  }
}
