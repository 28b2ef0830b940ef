package dev.gpushare.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * How a request reaches the server: the JDK's HTTP client for {@code http://} and {@code https://}
 * ({@link HttpTransport}), or HTTP/1.1 over a Unix socket for {@code unix:/path} ({@link
 * UnixTransport}: the member's node-local data-plane socket). {@link ApiClient} is the one code
 * path above it: tokens, JSON, problems and errors are the same on both.
 */
interface Transport {

  /** A Unix socket path has at most this many bytes ({@code sun_path} is 108 with its NUL). */
  int MAX_UNIX_PATH_BYTES = 107;

  /** What every message names the server as: the URL, or {@code unix:/path}. */
  String server();

  /**
   * The host a request would carry its token to across a network in clear text: a plain {@code
   * http://} server that is not a loopback address; empty for {@code https://}, loopback and Unix
   * sockets.
   */
  Optional<String> clearTextHost();

  /** One request, its whole answer. An {@link IOException} when there is no answer. */
  Answer send(Call call) throws IOException, InterruptedException;

  /** As {@link #send}, without blocking; fails with the same {@link IOException}s. */
  CompletableFuture<Answer> sendAsync(Call call);

  /** A request whose answer is read as it comes (Server-Sent Events); the caller closes it. */
  Opened open(Call call) throws IOException, InterruptedException;

  /**
   * A request: method, path with query (already encoded), the bearer token if any, what it accepts,
   * a body (empty: none) and the time the answer may take ({@code null}: no limit, for streams).
   */
  record Call(
      String method,
      String path,
      Optional<String> token,
      String accept,
      byte[] body,
      Duration timeout) {}

  /** A whole answer: status and body as text. */
  record Answer(int status, String body) {}

  /** An answer being read: status and the open body. */
  record Opened(int status, InputStream body) {}

  /**
   * {@code --server} or {@code $GPUSHARE_SERVER} ({@code what} says which): {@code unix:/path}, or
   * an http or https URL with a host; anything else is a usage error naming it and what is
   * accepted.
   */
  static Transport of(String value, String what) {
    String v = value.strip();
    if (v.regionMatches(true, 0, "unix:", 0, 5)) {
      return new UnixTransport(unixPath(value, v.substring(5), what));
    }
    URI uri;
    try {
      uri = URI.create(v);
    } catch (IllegalArgumentException e) {
      throw new CliException(what + " '" + value + "': not a URL; " + ACCEPTED);
    }
    String scheme = uri.getScheme();
    if (scheme == null
        || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
        || uri.getHost() == null) {
      throw new CliException(what + " '" + value + "': " + ACCEPTED);
    }
    return new HttpTransport(uri);
  }

  /** What {@code --server} accepts, for usage errors. */
  String ACCEPTED =
      "give an http:// or https:// URL with a host (e.g. http://127.0.0.1:8080) or unix:/PATH, the"
          + " absolute path of the node's data-plane socket (e.g."
          + " unix:/run/gpushare/data-plane/gpushare.sock)";

  private static Path unixPath(String value, String path, String what) {
    if (path.isEmpty() || !path.startsWith("/")) {
      throw new CliException(
          what
              + " '"
              + value
              + "': "
              + (path.isEmpty() ? "no socket path" : "not an absolute path")
              + " after unix:; "
              + ACCEPTED);
    }
    int bytes = path.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_UNIX_PATH_BYTES) {
      throw new CliException(
          what
              + " '"
              + value
              + "': the socket path has "
              + bytes
              + " bytes, a Unix socket's at most "
              + MAX_UNIX_PATH_BYTES
              + "; "
              + ACCEPTED);
    }
    try {
      return Path.of(path);
    } catch (InvalidPathException e) {
      throw new CliException(what + " '" + value + "': not a path (" + e.getReason() + ")");
    }
  }
}
