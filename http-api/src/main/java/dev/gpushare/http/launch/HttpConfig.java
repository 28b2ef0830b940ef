package dev.gpushare.http.launch;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigValue;
import dev.gpushare.http.server.HttpLimits;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * The API server's limits {@code gpushare.http} of {@link EmbeddedConfig} ({@link HttpLimits}),
 * checked with the same rules and messages (key, where it was set, the value given, what is
 * accepted):
 *
 * <pre>
 * gpushare.http {
 *   header-read-timeout = 10s       # a connection without a request in flight this long is closed
 *   max-connections = 4096          # connections held at once; above max-watches
 *   max-watches = 1024              # watches and grant long polls at once, from everyone
 *   max-watches-per-client = 128    # the same from one remote address; at most max-watches
 * }
 * </pre>
 *
 * Every key is optional; an absent key takes its default ({@link HttpLimits#DEFAULT}).
 */
final class HttpConfig {

  static final String AT = HttpLimits.AT;

  static final Set<String> KEYS =
      Set.of("header-read-timeout", "max-connections", "max-watches", "max-watches-per-client");

  static final Duration MAX_HEADER_READ_TIMEOUT = Duration.ofMinutes(5);
  static final int MAX_CONNECTIONS = 1_000_000;

  private HttpConfig() {}

  /** {@code gpushare.http} of the {@code gpushare} section; {@code null} after an error. */
  static HttpLimits read(ConfigObject section, ConfigErrors errors) {
    HttpLimits d = HttpLimits.DEFAULT;
    ConfigObject http = errors.object(section, "http", "gpushare", false);
    if (http == null) {
      return section.get("http") == null ? d : null;
    }
    errors.unknownKeys(http, AT, KEYS);
    Duration timeout =
        http.get("header-read-timeout") == null
            ? d.headerReadTimeout()
            : headerReadTimeout(http, errors);
    Integer connections =
        count(http, "max-connections", d.maxConnections(), MAX_CONNECTIONS, "4096", errors);
    Integer watches = count(http, "max-watches", d.maxWatches(), MAX_CONNECTIONS, "1024", errors);
    Integer perClient =
        count(
            http,
            "max-watches-per-client",
            d.maxWatchesPerClient(),
            MAX_CONNECTIONS,
            "128",
            errors);
    if (timeout == null || connections == null || watches == null || perClient == null) {
      return null;
    }
    boolean ok = true;
    if (perClient > watches) {
      errors.addGiven(
          AT + ".max-watches-per-client",
          "'" + perClient + "' given, with " + AT + ".max-watches = " + watches,
          "expected at most " + AT + ".max-watches (one client cannot hold more than everyone)");
      ok = false;
    }
    if (connections <= watches) {
      errors.addGiven(
          AT + ".max-connections",
          "'" + connections + "' given, with " + AT + ".max-watches = " + watches,
          "expected more connections than "
              + AT
              + ".max-watches, so that ordinary requests and /healthz find a connection while"
              + " every watch is held (e.g. 4 times as many)");
      ok = false;
    }
    return ok ? new HttpLimits(timeout, connections, watches, perClient) : null;
  }

  private static Duration headerReadTimeout(ConfigObject http, ConfigErrors errors) {
    ConfigValue value = http.get("header-read-timeout");
    try {
      Duration d = http.toConfig().getDuration("header-read-timeout");
      if (!d.isNegative() && !d.isZero() && d.compareTo(MAX_HEADER_READ_TIMEOUT) <= 0) {
        return d;
      }
    } catch (ConfigException e) {
      // reported below, with the accepted form
    }
    errors.add(
        AT + ".header-read-timeout",
        value,
        "expected a duration above 0 and at most 5 minutes, such as 10s or 500ms");
    return null;
  }

  private static Integer count(
      ConfigObject http, String key, int dflt, int max, String example, ConfigErrors errors) {
    if (http.get(key) == null) {
      return dflt;
    }
    return errors.scalar(
        http,
        key,
        AT,
        "a whole number from 1 to " + max + ", such as " + example,
        text -> {
          try {
            int n = Integer.parseInt(text);
            return n >= 1 && n <= max ? Optional.of(n) : Optional.empty();
          } catch (NumberFormatException e) {
            return Optional.empty();
          }
        });
  }
}
