package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ClockView;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Consumer;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * The simulation clock (API.md): {@code GET /v1/clock} answers {@code {"now","manual"}}; {@code
 * POST /v1/clock/advance} with {@code {"seconds":N}}, N an integer from 0 to {@link #MAX_SECONDS}
 * (ten years), moves a manual clock forward, firing the timers due in between, and answers the
 * clock. With the system clock the advance is a {@code 409}. Every completed advance is handed to
 * {@code advanced} (the launcher records it so that a restart resumes from it).
 */
public final class ClockRoutes extends ApiDirectives {
  /** Ten years of 365 days. */
  static final long MAX_SECONDS = 10L * 365 * 24 * 3600;

  private static final List<String> MEDIA_TYPES = List.of("application/json");

  private final GpuShareService service;
  private final Consumer<Instant> advanced;

  public ClockRoutes(GpuShareService service, Consumer<Instant> advanced) {
    this.service = service;
    this.advanced = advanced;
  }

  public Route route() {
    return pathPrefix(
        "v1",
        () ->
            pathPrefix(
                "clock",
                () ->
                    concat(
                        pathEnd(() -> get(() -> complete(json(StatusCodes.OK, service.clock())))),
                        path("advance", () -> post(() -> withBody(this::advance))))));
  }

  private Route advance(HttpEntity.Strict body) {
    if (!isOneOf(body, MEDIA_TYPES)) {
      throw unsupportedMediaType(body.getContentType(), MEDIA_TYPES);
    }
    Duration by =
        Duration.ofSeconds(
            seconds(
                ManifestReader.parse(
                    body.getData().toArray(),
                    ManifestReader.Format.JSON,
                    "{\"seconds\":N}, N an integer from 0 to " + MAX_SECONDS)));
    if (!service.clock().manual()) {
      throw new ServiceException(
          Kind.CONFLICT,
          "the clock is the system clock and cannot be advanced; start the server with --clock"
              + " manual to drive time by hand");
    }
    return answer(
        () -> service.advance(by),
        (ClockView clock) -> {
          advanced.accept(clock.now());
          return json(StatusCodes.OK, clock);
        });
  }

  /** The {@code seconds} of an advance body; {@code 422} naming it when not an integer in range. */
  static long seconds(JsonNode body) {
    String accepted = "must be an integer from 0 to " + MAX_SECONDS + " (ten years)";
    if (!body.isObject()) {
      throw invalid("body", body.toString(), "must be a JSON object {\"seconds\":N}");
    }
    for (var names = body.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!name.equals("seconds")) {
        throw invalid(
            name, body.get(name).toString(), "unknown field; the body is {\"seconds\":N}");
      }
    }
    JsonNode seconds = body.get("seconds");
    if (seconds == null || seconds.isNull()) {
      throw invalid("seconds", null, "required; " + accepted);
    }
    if (!seconds.isIntegralNumber()
        || !seconds.canConvertToLong()
        || seconds.asLong() < 0
        || seconds.asLong() > MAX_SECONDS) {
      throw invalid("seconds", seconds.toString(), accepted);
    }
    return seconds.asLong();
  }

  private static ServiceException invalid(String field, String value, String rule) {
    String given = value == null ? "missing" : "'" + value + "' given";
    return ServiceException.of(
        Kind.INVALID, new FieldError(field, value, field + ": " + given + "; " + rule));
  }
}
