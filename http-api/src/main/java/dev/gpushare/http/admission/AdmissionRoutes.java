package dev.gpushare.http.admission;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.http.launch.PodSideSettings;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.server.Problem;
import dev.gpushare.http.server.ProblemException;
import dev.gpushare.http.tls.ServerTls;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionResponse;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionReview;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaType;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.RejectionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admission webhook's HTTP face: {@code POST /admission/mutate} ({@link
 * AdmissionReviewer#mutate}) and {@code POST /admission/validate} ({@link
 * AdmissionReviewer#validate}), each taking and answering an {@code admission.k8s.io/v1}
 * AdmissionReview as {@code application/json}. A review is answered {@code 200} whether the pod is
 * allowed or denied: the decision is inside the review.
 *
 * <p>What is not a review gets an {@code application/problem+json} error: a body that is not JSON
 * or not an AdmissionReview {@code 400} naming the field, another media type {@code 415}, another
 * method {@code 405}, another path {@code 404}, a body over {@link #MAX_BODY_BYTES} {@code 400}
 * ({@code 413} when it was sent without a length). The API server treats any such answer as a
 * failed call, and with the deploy's {@code failurePolicy: Fail} refuses the pod with the error.
 *
 * <p>{@link #bindHttps} serves these routes alone, over TLS, on their own port: the API server
 * calls webhooks over HTTPS only.
 */
public final class AdmissionRoutes extends AllDirectives {
  public static final String MUTATE_PATH = "/admission/mutate";
  public static final String VALIDATE_PATH = "/admission/validate";

  /** Room for a large pod twice over (an UPDATE carries the old object too). */
  public static final long MAX_BODY_BYTES = 8L * 1024 * 1024;

  private static final Duration BODY_TIMEOUT = Duration.ofSeconds(10);
  private static final Logger LOG = LoggerFactory.getLogger(AdmissionRoutes.class);

  private final PodSideSettings podSide;

  /** The routes with the built-in pod-side settings ({@link PodSideSettings#DEFAULT}). */
  public AdmissionRoutes() {
    this(PodSideSettings.DEFAULT);
  }

  /** The routes; the mutating endpoint completes sharing pods as {@code podSide} says. */
  public AdmissionRoutes(PodSideSettings podSide) {
    this.podSide = podSide;
  }

  /** The routes with their error policy: every request gets a response from here. */
  public Route route() {
    return handleExceptions(
        ExceptionHandler.newBuilder()
            .match(MalformedReviewException.class, e -> complete(malformed(e).toResponse()))
            .match(EntityStreamSizeException.class, e -> complete(tooLarge(e).toResponse()))
            .matchAny(failure -> complete(Problem.of(failure).toResponse()))
            .build(),
        () ->
            handleRejections(
                RejectionHandler.defaultHandler().mapRejectionResponse(Problem::fromRejection),
                this::endpoints));
  }

  private Route endpoints() {
    return pathPrefix(
        "admission",
        () ->
            concat(
                path(
                    "mutate",
                    () ->
                        post(() -> reviewed("mutate", r -> AdmissionReviewer.mutate(r, podSide)))),
                path(
                    "validate",
                    () -> post(() -> reviewed("validate", AdmissionReviewer::validate)))));
  }

  /** Serves {@link #route} over HTTPS on {@code host:port} ({@code 0} picks a free port). */
  public CompletionStage<ServerBinding> bindHttps(
      ActorSystem<?> system, String host, int port, ServerTls tls) {
    return Http.get(system).newServerAt(host, port).enableHttps(tls.serverContext()).bind(route());
  }

  private Route reviewed(String endpoint, Function<JsonNode, AdmissionReview> reviewer) {
    return extractStrictEntity(
        BODY_TIMEOUT,
        MAX_BODY_BYTES,
        entity -> {
          requireJson(entity);
          AdmissionReview answer =
              reviewer.apply(AdmissionReviewer.parse(entity.getData().toArray()));
          log(endpoint, answer.getResponse());
          return complete(
              HttpResponse.create()
                  .withStatus(StatusCodes.OK)
                  .withEntity(
                      HttpEntities.create(ContentTypes.APPLICATION_JSON, Json.bytes(answer))));
        });
  }

  private static void requireJson(HttpEntity entity) {
    MediaType media = entity.getContentType().mediaType();
    String given = (media.mainType() + "/" + media.subType()).toLowerCase(Locale.ROOT);
    if (!given.equals("application/json")) {
      String message =
          "Content-Type: '" + given + "' given; send application/json, as the API server does";
      throw new ProblemException(
          Problem.http(
              StatusCodes.UNSUPPORTED_MEDIA_TYPE,
              message,
              List.of(new FieldError("Content-Type", given, message))));
    }
  }

  private static Problem malformed(MalformedReviewException e) {
    LOG.warn("admission webhook call refused: {}", e.getMessage());
    return Problem.http(StatusCodes.BAD_REQUEST, e.getMessage(), List.of(e.error()));
  }

  private static Problem tooLarge(EntityStreamSizeException e) {
    String message =
        "body: "
            + (e.actualSize().isDefined() ? e.actualSize().get() + " bytes" : "more bytes")
            + " given; want at most "
            + MAX_BODY_BYTES
            + " bytes, an AdmissionReview of one Pod";
    LOG.warn("admission webhook call refused: {}", message);
    return Problem.http(
        StatusCodes.CONTENT_TOO_LARGE, message, List.of(new FieldError("body", null, message)));
  }

  private static void log(String endpoint, AdmissionResponse response) {
    if (Boolean.FALSE.equals(response.getAllowed())) {
      LOG.info(
          "admission {} {} denied: {}",
          endpoint,
          response.getUid(),
          response.getStatus().getMessage());
    } else if (response.getPatch() != null) {
      LOG.debug("admission {} {} allowed with a patch", endpoint, response.getUid());
    }
  }
}
