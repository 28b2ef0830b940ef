package dev.gpushare.http.server;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.pekko.http.javadsl.model.AttributeKeys;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaType;
import org.apache.pekko.http.javadsl.model.RemoteAddress;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * What every {@code *Routes} class shares: JSON answers written by the one {@link Json} mapper,
 * service stages turned into responses (a failed stage becomes its {@link Problem}), bodies read
 * whole, and query-parameter checks whose errors name the parameter, the value and the range.
 */
public abstract class ApiDirectives extends AllDirectives {

  /** How long a client may take to send a body. */
  public static final Duration BODY_TIMEOUT = Duration.ofSeconds(10);

  /** The largest body accepted (a manifest or a patch is a few KiB). */
  public static final long MAX_BODY_BYTES = 1024 * 1024;

  /** {@code {"items":[…]}}, the list shape of API.md. */
  public record Items<T>(List<T> items) {}

  protected static HttpResponse json(StatusCode status, Object body) {
    return HttpResponse.create()
        .withStatus(status)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, Json.bytes(body)));
  }

  /**
   * Completes with {@code onSuccess} of the stage's value, or with the problem its failure
   * describes; a call that throws instead of failing its stage is treated the same.
   */
  protected <T> Route answer(
      Supplier<CompletionStage<T>> call, Function<T, HttpResponse> onSuccess) {
    CompletionStage<T> stage;
    try {
      stage = call.get();
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    return completeWithFuture(
        stage.handle(
            (value, failure) -> {
              if (failure != null) {
                return Problem.of(failure).toResponse();
              }
              try {
                return onSuccess.apply(value);
              } catch (RuntimeException e) {
                return Problem.of(e).toResponse();
              }
            }));
  }

  /** Completes with {@code 200} and the stage's value as JSON. */
  public <T> Route answerOk(Supplier<CompletionStage<T>> call) {
    return answer(call, value -> json(StatusCodes.OK, value));
  }

  /** Reads the whole body (at most {@link #MAX_BODY_BYTES}) before routing on. */
  public Route withBody(Function<HttpEntity.Strict, Route> inner) {
    return extractStrictEntity(BODY_TIMEOUT, MAX_BODY_BYTES, inner);
  }

  /** A query parameter that is not acceptable: {@code 400} naming it, its value and the range. */
  public static ServiceException badParameter(String name, String value, String accepted) {
    String given = value == null ? "missing" : "'" + value + "' given";
    return ServiceException.of(
        Kind.MALFORMED,
        new FieldError(name, value, "query parameter " + name + ": " + given + "; " + accepted));
  }

  /** An integer query parameter within {@code [min, max]}, or its default when absent. */
  public static long longParameter(
      String name, Optional<String> raw, long dflt, long min, long max) {
    if (raw.isEmpty()) {
      return dflt;
    }
    String accepted = "expected an integer from " + min + " to " + max;
    long value;
    try {
      value = Long.parseLong(raw.get());
    } catch (NumberFormatException e) {
      throw badParameter(name, raw.get(), accepted);
    }
    if (value < min || value > max) {
      throw badParameter(name, raw.get(), accepted);
    }
    return value;
  }

  /** The manifest format of a body, from its Content-Type; else a {@code 415} problem. */
  public static ManifestReader.Format manifestFormat(HttpEntity entity) {
    MediaType media = entity.getContentType().mediaType();
    return ManifestReader.formatOf(media.mainType(), media.subType())
        .orElseThrow(
            () ->
                unsupportedMediaType(entity.getContentType(), ManifestReader.ACCEPTED_MEDIA_TYPES));
  }

  /** A body whose Content-Type is not among {@code accepted}: {@code 415} naming both. */
  public static ProblemException unsupportedMediaType(ContentType given, List<String> accepted) {
    String shown = given.mediaType().toString();
    String message =
        "Content-Type: '" + shown + "' given; send one of " + String.join(", ", accepted);
    return new ProblemException(
        Problem.http(
            StatusCodes.UNSUPPORTED_MEDIA_TYPE,
            message,
            List.of(new FieldError("Content-Type", shown, message))));
  }

  /** Whether the body's media type is one of {@code accepted} ({@code type/subtype}). */
  public static boolean isOneOf(HttpEntity entity, List<String> accepted) {
    MediaType media = entity.getContentType().mediaType();
    String given = (media.mainType() + "/" + media.subType()).toLowerCase(Locale.ROOT);
    return accepted.contains(given);
  }

  /**
   * {@code inner}, a watch or a long poll, if {@link WatchLimits} has room for one more from this
   * request's remote address; else its refusal ({@code 429} or {@code 503}) at once. The place is
   * held until the response has ended: at once for a plain answer, at the end of a stream's bytes
   * for a stream, at the latest when the connection ends.
   */
  public Route asWatch(WatchLimits limits, Supplier<Route> inner) {
    return extractRequest(
        request -> {
          WatchLimits.Admission admission = limits.tryAcquire(clientOf(request));
          if (admission instanceof WatchLimits.Refused refused) {
            return complete(refused.response());
          }
          WatchLimits.Permit permit = (WatchLimits.Permit) admission;
          request.getAttribute(ConnectionGuard.CONNECTION).ifPresent(c -> c.hold(permit));
          return mapResponse(
              response -> releasedAfter(response, permit),
              () ->
                  handleExceptions(
                      ExceptionHandler.newBuilder()
                          .matchAny(failure -> complete(Problem.of(failure).toResponse()))
                          .build(),
                      inner));
        });
  }

  /** The remote address the request came from (the connection's, never a forwarding header). */
  public static String clientOf(HttpRequest request) {
    return request
        .getAttribute(AttributeKeys.remoteAddress)
        .flatMap(RemoteAddress::getAddress)
        .map(InetAddress::getHostAddress)
        .orElse("unknown");
  }

  private static HttpResponse releasedAfter(HttpResponse response, WatchLimits.Permit permit) {
    if (response.entity().isStrict()) {
      permit.release();
      return response;
    }
    return response.transformEntityDataBytes(
        Flow.of(ByteString.class)
            .watchTermination(
                (mat, done) -> {
                  done.whenComplete((d, failure) -> permit.release());
                  return mat;
                }));
  }

  /** Routes under {@code /v1/namespaces/{ns}/pods/{name}}, with the namespace and the name. */
  public Route podPath(BiFunction<String, String, Route> inner) {
    return pathPrefix(
        PathMatchers.segment("v1")
            .slash("namespaces")
            .slash(PathMatchers.segment())
            .slash("pods")
            .slash(PathMatchers.segment()),
        inner);
  }
}
