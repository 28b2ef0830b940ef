package dev.gpushare.http.extender;

import dev.gpushare.http.server.Problem;
import dev.gpushare.http.tls.ServerTls;
import dev.gpushare.node.api.GpuShareReader;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * The scheduler extender on a listener of its own, over mutual TLS ({@link ServerTls#mutual}): what
 * kube-scheduler can call, since its extender client authenticates with a client certificate and
 * cannot send a bearer token. It serves {@link SchedulerExtenderRoutes} and nothing else; the
 * certificate is the authorization (the client CA issues certificates for the scheduler only), so
 * no {@code Authorization} header is read. Error answers are problem+json as on the API port.
 *
 * <p>Meant to be bound by the launcher beside the API with {@code --extender-port N} and {@code
 * --extender-client-ca FILE}, the serving pair from {@code --tls-cert}/{@code --tls-key}: the flags
 * {@code deploy/scheduler-extender/} passes ({@link ServerTls#mutual}, then {@link #bind}).
 */
public final class SchedulerExtenderServer extends AllDirectives {
  private final Route route;

  public SchedulerExtenderServer(GpuShareReader service) {
    this.route = new SchedulerExtenderRoutes(service).route();
  }

  /** Binds the extender on {@code host:port} ({@code 0}: a free port) over mutual TLS. */
  public static CompletionStage<ServerBinding> bind(
      ActorSystem<?> system, GpuShareReader service, String host, int port, ServerTls tls) {
    return Http.get(system)
        .newServerAt(host, port)
        .enableHttps(tls.serverContext())
        .bind(new SchedulerExtenderServer(service).route());
  }

  /** The extender's routes under the API's error policy: every answer is a response from here. */
  public Route route() {
    return handleExceptions(
        ExceptionHandler.newBuilder()
            .matchAny(failure -> complete(Problem.of(failure).toResponse()))
            .build(),
        () ->
            handleRejections(
                RejectionHandler.newBuilder()
                    .handleNotFound(
                        extractRequest(
                            request ->
                                complete(
                                    Problem.http(
                                            StatusCodes.NOT_FOUND,
                                            "no resource at "
                                                + request.getUri().path()
                                                + "; this listener serves only POST "
                                                + SchedulerExtenderRoutes.FILTER_PATH
                                                + " and POST "
                                                + SchedulerExtenderRoutes.PRIORITIZE_PATH,
                                            List.of())
                                        .toResponse())))
                    .build()
                    .withFallback(
                        RejectionHandler.defaultHandler()
                            .mapRejectionResponse(Problem::fromRejection)),
                () -> route));
  }
}
