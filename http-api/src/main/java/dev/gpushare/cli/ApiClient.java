package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The HTTP API of API.md as the CLI uses it: JSON answers as trees, every request but the public
 * ones with {@code Authorization: Bearer <token>} when a token was found. A refusal is an {@link
 * ApiException} (the server's problem), no answer at all an {@link UnreachableException}.
 */
final class ApiClient {
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

  private final URI server;
  private final TokenLookup.Credentials credentials;
  private final HttpClient http;

  ApiClient(URI server, TokenLookup.Credentials credentials) {
    String s = server.toString();
    this.server = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
    this.credentials = credentials;
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(CONNECT_TIMEOUT)
            .build();
  }

  /** {@code --server}: an absolute http or https URL, else a usage error naming it. */
  static URI parseServer(String value) {
    URI uri;
    try {
      uri = URI.create(value.strip());
    } catch (IllegalArgumentException e) {
      throw new CliException(
          "--server '"
              + value
              + "': not a URL; give http://HOST:PORT (default http://127.0.0.1:8080)");
    }
    String scheme = uri.getScheme();
    if (scheme == null
        || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
        || uri.getHost() == null) {
      throw new CliException(
          "--server '"
              + value
              + "': give an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080");
    }
    return uri;
  }

  URI server() {
    return server;
  }

  TokenLookup.Credentials credentials() {
    return credentials;
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  static String podPath(PodRef pod) {
    return "/v1/namespaces/" + enc(pod.namespace()) + "/pods/" + enc(pod.name());
  }

  JsonNode get(String path) {
    return send("GET", path, REQUEST_TIMEOUT);
  }

  JsonNode post(String path) {
    return send("POST", path, REQUEST_TIMEOUT);
  }

  JsonNode delete(String path) {
    return send("DELETE", path, REQUEST_TIMEOUT);
  }

  JsonNode send(String method, String path, Duration timeout) {
    try {
      HttpResponse<String> r =
          http.send(request(method, path, timeout), HttpResponse.BodyHandlers.ofString());
      return answer(r.statusCode(), r.body());
    } catch (IOException e) {
      throw new UnreachableException(server, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException(server, new IOException("interrupted"));
    }
  }

  /** As {@link #send}, without blocking: fails with the same exceptions. */
  CompletableFuture<JsonNode> sendAsync(String method, String path, Duration timeout) {
    return http.sendAsync(request(method, path, timeout), HttpResponse.BodyHandlers.ofString())
        .handle(
            (r, failure) -> {
              if (failure != null) {
                Throwable cause =
                    failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause()
                        : failure;
                throw new CompletionException(
                    cause instanceof IOException io ? new UnreachableException(server, io) : cause);
              }
              return answer(r.statusCode(), r.body());
            });
  }

  /**
   * A streaming GET ({@code text/event-stream}): the open body, which the caller reads and closes.
   * No request timeout: the stream lasts as long as the caller wants it.
   */
  InputStream openStream(String path) {
    HttpRequest req =
        authorized(HttpRequest.newBuilder(uri(path)))
            .header("Accept", "text/event-stream")
            .GET()
            .build();
    try {
      HttpResponse<InputStream> r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
      if (r.statusCode() != 200) {
        String body;
        try (InputStream in = r.body()) {
          body = new String(in.readNBytes(64 * 1024), StandardCharsets.UTF_8);
        }
        throw ApiException.of(r.statusCode(), body);
      }
      return r.body();
    } catch (IOException e) {
      throw new UnreachableException(server, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException(server, new IOException("interrupted"));
    }
  }

  private HttpRequest request(String method, String path, Duration timeout) {
    return authorized(HttpRequest.newBuilder(uri(path)))
        .timeout(timeout)
        .header("Accept", "application/json")
        .method(method, HttpRequest.BodyPublishers.noBody())
        .build();
  }

  private URI uri(String path) {
    return URI.create(server + path);
  }

  private HttpRequest.Builder authorized(HttpRequest.Builder b) {
    credentials.current().ifPresent(t -> b.header("Authorization", "Bearer " + t));
    return b;
  }

  private static JsonNode answer(int status, String body) {
    if (status < 200 || status > 299) {
      throw ApiException.of(status, body);
    }
    try {
      return Output.JSON.readTree(body == null || body.isBlank() ? "null" : body);
    } catch (IOException e) {
      throw new UncheckedIOException("the server's answer is not JSON: " + e.getMessage(), e);
    }
  }
}
