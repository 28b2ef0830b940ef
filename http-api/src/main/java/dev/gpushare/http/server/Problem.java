package dev.gpushare.http.server;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.node.api.ServiceException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpCharsets;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.model.IllegalRequestException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An error answer, {@code application/problem+json} (RFC 9457): {@code type}, {@code title}, {@code
 * status}, {@code detail}, {@code field} (the first field at fault, or {@code null}) and the
 * extension {@code errors}, every field at fault with the value given and what would be accepted.
 *
 * <p>Refusals of the arbiter ({@link ServiceException}) get a stable type URI per kind ({@code
 * https://gpushare.dev/problems/invalid}); plain HTTP failures (unknown path, wrong method,
 * unsupported media type, internal error) are {@code about:blank} with the status's reason phrase
 * as title. A stack trace never reaches the client: unexpected failures are logged with a reference
 * that the detail repeats.
 */
public record Problem(
    String type, String title, int status, String detail, String field, List<FieldError> errors) {

  public static final String TYPE_BASE = "https://gpushare.dev/problems/";
  public static final ContentType CONTENT_TYPE =
      ContentTypes.create(
          MediaTypes.applicationWithFixedCharset("problem+json", HttpCharsets.UTF_8));

  private static final Logger LOG = LoggerFactory.getLogger(Problem.class);

  public Problem {
    errors = List.copyOf(errors);
  }

  /** A refusal of the arbiter, or of the API's own input checks. */
  public static Problem of(ServiceException e) {
    ServiceException.Kind kind = e.kind();
    return new Problem(
        TYPE_BASE + kind.name().toLowerCase(Locale.ROOT).replace('_', '-'),
        kind.title,
        kind.status,
        e.getMessage(),
        e.field(),
        e.errors());
  }

  /** A plain HTTP failure: {@code about:blank}, titled with the status's reason phrase. */
  public static Problem http(StatusCode status, String detail, List<FieldError> errors) {
    return new Problem(
        "about:blank",
        status.reason(),
        status.intValue(),
        detail,
        errors.isEmpty() ? null : errors.get(0).field(),
        errors);
  }

  /**
   * Pekko's own rejection answer (plain text) rewritten as a problem, status kept; an answer that
   * is a problem already is left as it is. For {@code RejectionHandler.mapRejectionResponse}.
   */
  public static HttpResponse fromRejection(HttpResponse response) {
    if (response.entity().getContentType().equals(CONTENT_TYPE)) {
      return response;
    }
    String detail =
        response.entity() instanceof HttpEntity.Strict strict
            ? strict.getData().decodeString(StandardCharsets.UTF_8)
            : response.status().reason();
    return response.withEntity(
        http(response.status(), detail, List.<FieldError>of()).toResponse().entity());
  }

  /** What the client is told about a failed stage or a thrown exception. */
  public static Problem of(Throwable failure) {
    Throwable cause = unwrap(failure);
    if (cause instanceof ServiceException e) {
      return of(e);
    }
    if (cause instanceof ProblemException e) {
      return e.problem();
    }
    if (cause instanceof IllegalRequestException e) {
      String message = "body: " + e.info().formatPretty();
      return http(e.status(), message, List.of(new FieldError("body", null, message)));
    }
    if (cause instanceof TimeoutException) {
      LOG.warn("request timed out inside the arbiter: {}", cause.toString());
      return new Problem(
          TYPE_BASE + "timeout",
          "Timed out",
          503,
          "the arbiter did not answer in time (ask timeout); the outcome is unknown, retry the"
              + " request",
          null,
          List.of());
    }
    String reference = UUID.randomUUID().toString();
    LOG.error("internal error, reference {}", reference, cause);
    return http(
        StatusCodes.INTERNAL_SERVER_ERROR,
        "internal error; the server log has the details under reference " + reference,
        List.of());
  }

  public HttpResponse toResponse() {
    return HttpResponse.create()
        .withStatus(status)
        .withEntity(HttpEntities.create(CONTENT_TYPE, Json.bytes(this)));
  }

  private static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
