package dev.gpushare.http.server;

import java.time.Duration;

/**
 * What the API's HTTP server holds open at most ({@code gpushare.http}, read and checked by the
 * launcher's configuration), so that no client can lock the others out: connections that say
 * nothing are closed, the number of connections is bounded well above the number of long-lived
 * requests, and watches and long polls are capped per client and in all.
 *
 * @param headerReadTimeout how long a connection may go without a request in flight: from the
 *     connection's start to the end of its first request's head, and between two requests of a
 *     keep-alive connection; then the server closes it ({@link ConnectionGuard})
 * @param maxConnections connections held at once ({@code pekko.http.server.max-connections}); one
 *     more waits in the kernel's accept queue until one closes
 * @param maxWatches watches (Server-Sent Events) and grant long polls held at once, from everyone;
 *     below {@code maxConnections}, so that ordinary requests always find a connection
 * @param maxWatchesPerClient the same, from one remote address; at most {@code maxWatches}
 */
public record HttpLimits(
    Duration headerReadTimeout, int maxConnections, int maxWatches, int maxWatchesPerClient) {

  /** The configuration section of these limits. */
  public static final String AT = "gpushare.http";

  public static final HttpLimits DEFAULT = new HttpLimits(Duration.ofSeconds(10), 4096, 1024, 128);

  public HttpLimits {
    if (headerReadTimeout.isNegative() || headerReadTimeout.isZero()) {
      throw new IllegalArgumentException("headerReadTimeout must be above 0: " + headerReadTimeout);
    }
    if (maxWatchesPerClient < 1 || maxWatches < maxWatchesPerClient) {
      throw new IllegalArgumentException(
          "expected 1 <= maxWatchesPerClient <= maxWatches: "
              + maxWatchesPerClient
              + ", "
              + maxWatches);
    }
    if (maxConnections <= maxWatches) {
      throw new IllegalArgumentException(
          "maxConnections must be above maxWatches: " + maxConnections + ", " + maxWatches);
    }
  }
}
