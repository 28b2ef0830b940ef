package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The HTTP API of API.md as the CLI uses it: JSON answers as trees, every request but the public
 * ones with {@code Authorization: Bearer <token>} when a token was found. A refusal is an {@link
 * ApiException} (the server's problem), no answer at all an {@link UnreachableException}. How the
 * bytes travel is the {@link Transport}'s: TCP ({@code http://}, {@code https://}) or the node's
 * data-plane Unix socket ({@code unix:/path}); everything here is the same for both.
 */
final class ApiClient {
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
  private static final byte[] NO_BODY = new byte[0];

  private final Transport transport;
  private final TokenLookup.Credentials credentials;

  ApiClient(Transport transport, TokenLookup.Credentials credentials) {
    this.transport = transport;
    this.credentials = credentials;
  }

  /** The server as messages name it: its URL, or {@code unix:/path}. */
  String server() {
    return transport.server();
  }

  Transport transport() {
    return transport;
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
      Transport.Answer r = transport.send(call(method, path, "application/json", timeout));
      return answer(r.status(), r.body());
    } catch (IOException e) {
      throw new UnreachableException(server(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException(server(), new IOException("interrupted"));
    }
  }

  /** As {@link #send}, without blocking: fails with the same exceptions. */
  CompletableFuture<JsonNode> sendAsync(String method, String path, Duration timeout) {
    Transport.Call call = call(method, path, "application/json", timeout);
    return transport
        .sendAsync(call)
        .handle(
            (r, failure) -> {
              if (failure != null) {
                Throwable cause =
                    failure instanceof CompletionException && failure.getCause() != null
                        ? failure.getCause()
                        : failure;
                if (cause instanceof InterruptedException) {
                  cause = new IOException("interrupted");
                }
                throw new CompletionException(
                    cause instanceof IOException io
                        ? new UnreachableException(server(), io)
                        : cause);
              }
              return answer(r.status(), r.body());
            });
  }

  /**
   * A streaming GET ({@code text/event-stream}): the open body, which the caller reads and closes.
   * No request timeout: the stream lasts as long as the caller wants it.
   */
  InputStream openStream(String path) {
    try {
      Transport.Opened r = transport.open(call("GET", path, "text/event-stream", null));
      if (r.status() != 200) {
        String body;
        try (InputStream in = r.body()) {
          body = new String(in.readNBytes(64 * 1024), StandardCharsets.UTF_8);
        }
        throw ApiException.of(r.status(), body);
      }
      return r.body();
    } catch (IOException e) {
      throw new UnreachableException(server(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnreachableException(server(), new IOException("interrupted"));
    }
  }

  private Transport.Call call(String method, String path, String accept, Duration timeout) {
    Optional<String> token = credentials.current();
    token.ifPresent(this::checkToken);
    return new Transport.Call(method, path, token, accept, NO_BODY, timeout);
  }

  /** A token is one line: a control character would break the request's head. */
  private void checkToken(String token) {
    for (int i = 0; i < token.length(); i++) {
      char c = token.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        throw new CliException(
            "the token from "
                + credentials.source()
                + " holds a line break or other control character; a bearer token is one line"
                + " of text");
      }
    }
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
