package dev.gpushare.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The gpushare API as canned answers: the JDK's HTTP server on 127.0.0.1, a port of its own, one
 * handler per method and path, every request recorded (method, path with query, Authorization).
 */
final class StubServer implements AutoCloseable {

  /** A request as the stub saw it. */
  record Request(String method, String path, String query, String authorization) {
    String target() {
      return query == null ? path : path + "?" + query;
    }
  }

  /** An answer: status, content type, body. */
  record Answer(int status, String contentType, String body) {
    static Answer json(String body) {
      return new Answer(200, "application/json", body);
    }

    static Answer problem(int status, String body) {
      return new Answer(status, "application/problem+json", body);
    }
  }

  /** Answers one request; may block (a long poll) or stream ({@link #stream}). */
  interface Handler {
    void handle(Request request, HttpExchange exchange) throws IOException;
  }

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final Map<String, Handler> handlers = new ConcurrentHashMap<>();
  final List<Request> requests = new CopyOnWriteArrayList<>();

  StubServer() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(executor);
    server.createContext(
        "/",
        exchange -> {
          URI uri = exchange.getRequestURI();
          Request r =
              new Request(
                  exchange.getRequestMethod(),
                  uri.getPath(),
                  uri.getRawQuery(),
                  exchange.getRequestHeaders().getFirst("Authorization"));
          requests.add(r);
          Handler h = handlers.get(r.method() + " " + r.path());
          try {
            if (h == null) {
              send(
                  exchange,
                  Answer.problem(
                      404,
                      "{\"type\":\"about:blank\",\"title\":\"Not Found\",\"status\":404,"
                          + "\"detail\":\"no route "
                          + r.method()
                          + " "
                          + r.path()
                          + "\"}"));
            } else {
              h.handle(r, exchange);
            }
          } finally {
            exchange.close();
          }
        });
    server.start();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
  }

  StubServer on(String method, String path, Answer answer) {
    return on(method, path, (r, x) -> send(x, answer));
  }

  StubServer on(String method, String path, Handler handler) {
    handlers.put(method + " " + path, handler);
    return this;
  }

  List<Request> requests(String method, String path) {
    return requests.stream()
        .filter(r -> r.method().equals(method) && r.path().equals(path))
        .toList();
  }

  static void send(HttpExchange x, Answer a) throws IOException {
    byte[] body = a.body().getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", a.contentType());
    x.sendResponseHeaders(a.status(), body.length == 0 ? -1 : body.length);
    if (body.length > 0) {
      try (OutputStream out = x.getResponseBody()) {
        out.write(body);
      }
    }
  }

  /** Starts a {@code text/event-stream} answer; write events with {@link #event}. */
  static OutputStream stream(HttpExchange x) throws IOException {
    x.getResponseHeaders().set("Content-Type", "text/event-stream");
    x.sendResponseHeaders(200, 0);
    return x.getResponseBody();
  }

  static void event(OutputStream out, String json) throws IOException {
    out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
