package dev.gpushare.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** {@code http://} and {@code https://}: the JDK's HTTP client, HTTP/1.1. */
final class HttpTransport implements Transport {
  private static final Pattern IPV4 =
      Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");

  private final URI server;
  private final HttpClient http;

  HttpTransport(URI server) {
    String s = server.toString();
    this.server = URI.create(s.endsWith("/") ? s.substring(0, s.length() - 1) : s);
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(ApiClient.CONNECT_TIMEOUT)
            .build();
  }

  @Override
  public String server() {
    return server.toString();
  }

  @Override
  public Optional<String> clearTextHost() {
    return server.getScheme().equalsIgnoreCase("http") && !isLoopback(server.getHost())
        ? Optional.of(server.getHost())
        : Optional.empty();
  }

  @Override
  public Answer send(Call call) throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(request(call), HttpResponse.BodyHandlers.ofString());
    return new Answer(r.statusCode(), r.body());
  }

  @Override
  public CompletableFuture<Answer> sendAsync(Call call) {
    HttpRequest request;
    try {
      request = request(call);
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .thenApply(r -> new Answer(r.statusCode(), r.body()));
  }

  @Override
  public Opened open(Call call) throws IOException, InterruptedException {
    HttpResponse<InputStream> r =
        http.send(request(call), HttpResponse.BodyHandlers.ofInputStream());
    return new Opened(r.statusCode(), r.body());
  }

  private HttpRequest request(Call call) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server + call.path()));
    if (call.timeout() != null) {
      b.timeout(call.timeout());
    }
    call.token().ifPresent(t -> b.header("Authorization", "Bearer " + t));
    b.header("Accept", call.accept());
    if (call.body().length > 0) {
      b.header("Content-Type", "application/json");
    }
    return b.method(
            call.method(),
            call.body().length == 0
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(call.body()))
        .build();
  }

  /**
   * Whether {@code host} (as a URL writes it) is this machine's loopback: {@code localhost},
   * 127.0.0.0/8 or {@code ::1}. Names are not looked up: only these spellings count.
   */
  static boolean isLoopback(String host) {
    String h = host.toLowerCase(Locale.ROOT);
    if (h.startsWith("[") && h.endsWith("]")) {
      h = h.substring(1, h.length() - 1);
    }
    if (h.equals("localhost") || h.equals("localhost.")) {
      return true;
    }
    Matcher m = IPV4.matcher(h);
    if (m.matches()) {
      for (int i = 1; i <= 4; i++) {
        if (Integer.parseInt(m.group(i)) > 255) {
          return false;
        }
      }
      return m.group(1).equals("127");
    }
    if (h.indexOf(':') >= 0 && h.matches("[0-9a-f:.]+")) {
      try {
        return InetAddress.getByName(h).isLoopbackAddress(); // a literal: never looked up
      } catch (UnknownHostException e) {
        return false;
      }
    }
    return false;
  }
}
