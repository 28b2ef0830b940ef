package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.http.auth.AdminToken;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Nobody can lock the API out: against the real server on a free loopback port, connections that
 * never send a request neither starve {@code /healthz} and ordinary requests nor stay open past
 * {@code gpushare.http.header-read-timeout}, and watches and long polls are capped per remote
 * address ({@code 429}) and in all ({@code 503}), with {@code Retry-After}, while everything else
 * is served.
 */
class HttpFloodTest {
  private static final String TOKEN = "flood-test-token";
  private static final int FLOOD = 1_100;

  /**
   * A bound for anything that should be prompt, generous for a loaded machine (the server accepts
   * the whole flood first); never a measurement. Without the limits they would last until the
   * server's 6-minute idle timeout.
   */
  private static final Duration PROMPT = Duration.ofSeconds(30);

  private static final FakeGpuShareService SERVICE = new FakeGpuShareService();
  private static ActorTestKit testKit;
  private static HttpClient client;

  private final List<Socket> sockets = new ArrayList<>();
  private ServerBinding binding;

  @BeforeAll
  static void start() {
    testKit = ActorTestKit.create("HttpFloodTest");
    client = HttpClient.newBuilder().connectTimeout(PROMPT).build();
    SERVICE.nodes.put("node-1", FakeGpuShareService.node("node-1", Map.of(), Map.of()));
    SERVICE.pods.put("default/a", FakeGpuShareService.pod("default", "a", "node-1", "Ready"));
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  @AfterEach
  void closeAll() throws Exception {
    for (Socket s : sockets) {
      s.close();
    }
    if (binding != null) {
      binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void silentConnectionsBeyondPekkosDefaultLimitDoNotLockOutHealthzOrOrdinaryRequests()
      throws Exception {
    // a header-read timeout longer than the test: the silent connections stay while it asks
    bind(new HttpLimits(Duration.ofMinutes(2), 4096, 1024, 128));
    for (int i = 0; i < FLOOD; i++) {
      sockets.add(connect("127.0.0.1"));
    }

    assertEquals(200, get("/healthz", false).statusCode());
    HttpResponse<String> nodes = get("/v1/nodes", true);
    assertEquals(200, nodes.statusCode(), nodes.body());
    assertEquals("node-1", json(nodes.body()).get("items").get(0).get("name").asText());
    // ... while the flood still holds its connections
    assertStillOpen(sockets.get(0));
    assertStillOpen(sockets.get(FLOOD - 1));
  }

  @Test
  void connectionsWithoutACompleteRequestAreClosedAfterTheHeaderReadTimeout() throws Exception {
    bind(new HttpLimits(Duration.ofMillis(500), 4096, 1024, 128));
    for (int i = 0; i < FLOOD; i++) {
      sockets.add(connect("127.0.0.1"));
    }
    // a request head that never ends, and a keep-alive connection idle after its answer
    Socket partial = connect("127.0.0.1");
    partial
        .getOutputStream()
        .write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(StandardCharsets.US_ASCII));
    Socket keptAlive = connect("127.0.0.1");
    assertEquals(200, send(keptAlive, "/healthz").status());
    sockets.add(partial);
    sockets.add(keptAlive);

    assertEquals(200, get("/healthz", false).statusCode());
    for (Socket s : sockets) {
      assertClosedByServer(s);
    }
  }

  @Test
  void watchesAndLongPollsAreCappedPerClientAndInAllWhileEverythingElseIsServed() throws Exception {
    bind(new HttpLimits(Duration.ofSeconds(30), 64, 3, 2));
    Socket first = connect("127.0.0.1");
    sockets.add(first);
    assertEquals(200, send(first, "/v1/watch").status());
    Socket second = connect("127.0.0.1");
    sockets.add(second);
    assertEquals(200, send(second, "/v1/watch").status());

    // a third from the same address, a pod's watch or its grant long poll: the client's own cap
    Head tooMany = send(track(connect("127.0.0.1")), "/v1/namespaces/default/pods/a/watch");
    assertRefused(tooMany, 429, "gpushare.http.max-watches-per-client", "2");
    HttpResponse<String> grant = get("/v1/namespaces/default/pods/a/grant?timeoutSeconds=1", true);
    assertEquals(429, grant.statusCode(), grant.body());
    assertEquals("5", grant.headers().firstValue("Retry-After").orElseThrow());

    // another address may still watch, until the server's cap is reached
    Socket other = connect("127.0.0.2");
    sockets.add(other);
    assertEquals(200, send(other, "/v1/watch").status());
    Head full = send(track(connect("127.0.0.2")), "/v1/watch");
    assertRefused(full, 503, "gpushare.http.max-watches", "3");

    // everything else is served meanwhile
    assertEquals(200, get("/healthz", false).statusCode());
    assertEquals(200, get("/readyz", false).statusCode());
    assertEquals(200, get("/v1/nodes", true).statusCode());

    // a watch that ends gives its place back
    first.close();
    long deadline = System.nanoTime() + PROMPT.toNanos();
    int status;
    do {
      Socket again = track(connect("127.0.0.1"));
      status = send(again, "/v1/watch").status();
      if (status != 200) {
        again.close();
        Thread.sleep(20); // polling for the server to notice the close, bounded by the deadline
      }
    } while (status != 200 && System.nanoTime() < deadline);
    assertEquals(200, status, "a new watch is accepted once one was closed");
  }

  // ---- helpers ----

  private void bind(HttpLimits limits) throws Exception {
    binding =
        new HttpApi(SERVICE, new FakeJournalInspector(), now -> {}, AdminToken.of(TOKEN), limits)
            .bind(testKit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
  }

  private Socket track(Socket socket) {
    sockets.add(socket);
    return socket;
  }

  private Socket connect(String from) throws IOException {
    Socket socket = new Socket();
    socket.bind(new InetSocketAddress(from, 0));
    socket.connect(
        new InetSocketAddress("127.0.0.1", binding.localAddress().getPort()),
        (int) PROMPT.toMillis());
    return socket;
  }

  private HttpResponse<String> get(String path, boolean withToken) throws Exception {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path))
            .timeout(PROMPT)
            .GET();
    if (withToken) {
      request.header("Authorization", "Bearer " + TOKEN);
    }
    return client.send(request.build(), BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  /** A response's status and headers (names in lower case), and a strict body when it has one. */
  record Head(int status, Map<String, String> headers, String body) {}

  /** Sends {@code GET path} with the token and reads the head (and a Content-Length body). */
  private static Head send(Socket socket, String path) throws IOException {
    socket.setSoTimeout((int) PROMPT.toMillis());
    socket
        .getOutputStream()
        .write(
            ("GET "
                    + path
                    + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                    + TOKEN
                    + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
    InputStream in = socket.getInputStream();
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        fail("the server closed the connection before answering " + path + ": " + head);
      }
      head.write(b);
    }
    String[] lines = head.toString(StandardCharsets.US_ASCII).split("\r\n");
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    Map<String, String> headers = new TreeMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      headers.put(
          lines[i].substring(0, colon).strip().toLowerCase(Locale.ROOT),
          lines[i].substring(colon + 1).strip());
    }
    String body = "";
    if (headers.containsKey("content-length")) {
      body =
          new String(
              in.readNBytes(Integer.parseInt(headers.get("content-length"))),
              StandardCharsets.UTF_8);
    }
    return new Head(status, headers, body);
  }

  private static void assertRefused(Head head, int status, String key, String limit)
      throws IOException {
    assertEquals(status, head.status(), head.body());
    assertEquals("5", head.headers().get("retry-after"), head.headers().toString());
    assertEquals("application/problem+json", head.headers().get("content-type"));
    JsonNode problem = json(head.body());
    assertEquals(status, problem.get("status").asInt());
    assertEquals(key, problem.get("field").asText(), problem.toString());
    assertEquals(limit, problem.get("errors").get(0).get("value").asText(), problem.toString());
    assertTrue(problem.get("detail").asText().contains(key + " is " + limit), problem.toString());
  }

  private static void assertStillOpen(Socket socket) throws IOException {
    socket.setSoTimeout(100);
    assertThrows(
        SocketTimeoutException.class,
        () -> socket.getInputStream().read(),
        "the connection is still open");
  }

  /** Reads to the end: the server closed it (an orderly close or a reset) within the bound. */
  private static void assertClosedByServer(Socket socket) throws IOException {
    socket.setSoTimeout((int) PROMPT.toMillis());
    InputStream in = socket.getInputStream();
    try {
      while (in.read() >= 0) {
        // the rest of an answer sent before the close
      }
    } catch (SocketTimeoutException e) {
      fail("the server did not close an idle connection within " + PROMPT);
    } catch (SocketException e) {
      // reset by the server: closed as well
    }
  }

  private static JsonNode json(String body) throws IOException {
    return Json.mapper().readTree(body);
  }
}
