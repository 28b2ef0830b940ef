package dev.gpushare.http.api;

import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.http.server.WatchLimits;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.headers.CacheControl;
import org.apache.pekko.http.javadsl.model.headers.CacheDirectives;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The data plane of a pod's workload (API.md "Data plane"), under {@code
 * /v1/namespaces/{ns}/pods/{name}}: {@code POST demand} raises demand, {@code DELETE demand}
 * withdraws it or releases the GPU, {@code GET grant?timeoutSeconds=N} answers as soon as the pod
 * is Running or at the timeout (default 30, 0 to 300; the PodView either way), and {@code GET
 * watch} streams Server-Sent Events: one {@code data: <PodView JSON>} event now and one per change,
 * ending when the pod is deleted, and {@code POST compute} takes the report of the pod's compute
 * limiter ({@link ComputeReportBody}), and {@code GET processes} answers the host PIDs of the pod's
 * processes as the member's telemetry last saw them (what the limiter matches NVML's samples
 * against: NVML names processes by host PIDs). An idle watch carries a comment line every {@link
 * #HEARTBEAT} so that proxies keep it open. Watches and long polls count against {@link
 * WatchLimits}.
 */
public final class DataPlaneRoutes extends ApiDirectives {
  static final long DEFAULT_GRANT_TIMEOUT_SECONDS = 30;
  static final long MAX_GRANT_TIMEOUT_SECONDS = 300;
  static final Duration HEARTBEAT = Duration.ofSeconds(15);

  /** What a compute report's body may be sent as. */
  static final List<String> JSON_MEDIA_TYPES = List.of("application/json");

  /** Beyond the long poll itself, how long the arbiter may take to answer. */
  private static final Duration GRANT_SLACK = Duration.ofSeconds(30);

  private final GpuShareService service;
  private final WatchLimits watches;

  /** With the default {@link HttpLimits}. */
  public DataPlaneRoutes(GpuShareService service) {
    this(service, WatchLimits.of(HttpLimits.DEFAULT));
  }

  DataPlaneRoutes(GpuShareService service, WatchLimits watches) {
    this.service = service;
    this.watches = watches;
  }

  public Route route() {
    return podPath(
        (namespace, name) ->
            concat(
                path(
                    "demand",
                    () ->
                        concat(
                            post(() -> answerOk(() -> service.demand(namespace, name))),
                            delete(() -> answerOk(() -> service.release(namespace, name))))),
                path("compute", () -> post(() -> withBody(body -> compute(namespace, name, body)))),
                path("grant", () -> get(() -> grant(namespace, name))),
                path(
                    "processes",
                    () -> get(() -> answerOk(() -> service.processes(namespace, name)))),
                path("watch", () -> get(() -> watch(namespace, name)))));
  }

  /**
   * {@code POST compute} with {@code {"aimPercent":…,"measuredPercent":…,"heldSeconds":…}} ({@link
   * ComputeReportBody}, {@code application/json}): the pod's compute limiter reports; answers the
   * PodView, whose {@code computeLimit} shows the report.
   */
  private Route compute(String namespace, String name, HttpEntity.Strict body) {
    if (!isOneOf(body, JSON_MEDIA_TYPES)) {
      throw unsupportedMediaType(body.getContentType(), JSON_MEDIA_TYPES);
    }
    ComputeReport report =
        ComputeReportBody.read(
            ManifestReader.parse(
                body.getData().toArray(), ManifestReader.Format.JSON, ComputeReportBody.EXPECTED));
    return answerOk(() -> service.reportCompute(namespace, name, report));
  }

  private Route grant(String namespace, String name) {
    return parameterOptional(
        "timeoutSeconds",
        raw -> {
          Duration timeout =
              Duration.ofSeconds(
                  longParameter(
                      "timeoutSeconds",
                      raw,
                      DEFAULT_GRANT_TIMEOUT_SECONDS,
                      0,
                      MAX_GRANT_TIMEOUT_SECONDS));
          return asWatch(
              watches,
              () ->
                  withRequestTimeout(
                      timeout.plus(GRANT_SLACK),
                      () -> answerOk(() -> service.awaitGrant(namespace, name, timeout))));
        });
  }

  /** The pod is looked up first, so that an unknown pod is a 404 problem, not an empty stream. */
  private Route watch(String namespace, String name) {
    return asWatch(
        watches,
        () ->
            answer(
                () -> service.pod(namespace, name),
                found ->
                    HttpResponse.create()
                        .addHeader(CacheControl.create(CacheDirectives.NO_CACHE))
                        .withEntity(
                            HttpEntities.create(
                                MediaTypes.TEXT_EVENT_STREAM.toContentType(),
                                events(service.watch(namespace, name))))));
  }

  /** Server-Sent Events framing: {@code data: <json>} and a blank line per view. */
  static Source<ByteString, NotUsed> events(Source<PodView, NotUsed> views) {
    return views
        .map(view -> ByteString.fromString("data: " + Json.text(view) + "\n\n"))
        .keepAlive(HEARTBEAT, () -> ByteString.fromString(":\n\n"));
  }
}
