package dev.gpushare.http.api;

import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareReader;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /metrics}: the runtime's metrics in the Prometheus text format 0.0.4, written by the
 * Prometheus Java client ({@link PrometheusTextFormatWriter}). Each scrape asks the service for
 * {@link GpuShareReader#scrapeMetrics()}: the state gauges computed from its node and pod views as
 * they are now, and the counters and histograms of its own registry ({@link GpuShareMetrics}). The
 * names, labels and meaning of every metric are in the README ("Metrics").
 */
public final class MetricsRoutes extends ApiDirectives {
  /** {@code text/plain; version=0.0.4; charset=utf-8}. */
  static final ContentType PROMETHEUS_TEXT =
      ContentTypes.parse(PrometheusTextFormatWriter.CONTENT_TYPE);

  private static final PrometheusTextFormatWriter WRITER =
      PrometheusTextFormatWriter.builder().setIncludeCreatedTimestamps(false).build();

  private final GpuShareReader service;

  public MetricsRoutes(GpuShareReader service) {
    this.service = service;
  }

  public Route route() {
    return path(
        "metrics",
        () ->
            get(
                () ->
                    answer(
                        service::scrapeMetrics,
                        snapshots ->
                            HttpResponse.create()
                                .withEntity(
                                    HttpEntities.create(PROMETHEUS_TEXT, render(snapshots))))));
  }

  /** The exposition text of {@code snapshots}, UTF-8. */
  static byte[] render(MetricSnapshots snapshots) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
    try {
      WRITER.write(out, snapshots);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}
