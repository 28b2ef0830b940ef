package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.api.GpuShareReader.ChangeListener;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code GET /v1/watch} (Server-Sent Events of node and pod changes) and the dashboard's static
 * files, against a real server and the in-memory service, whose change subscriptions are recorded
 * here so that the test can fire changes.
 */
class DashboardRoutesTest {
  private static final FakeGpuShareService FAKE = new FakeGpuShareService();
  private static final List<ChangeListener> LISTENERS = new CopyOnWriteArrayList<>();
  private static final GpuShareService SERVICE = recordingSubscriptions(FAKE);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private static ActorTestKit testKit;
  private static ServerBinding api;
  private static ServerBinding fastHeartbeat;
  private static HttpClient client;

  /** The fake service, but {@code subscribe} keeps the listener until its handle is closed. */
  private static GpuShareService recordingSubscriptions(GpuShareService delegate) {
    return (GpuShareService)
        Proxy.newProxyInstance(
            GpuShareService.class.getClassLoader(),
            new Class<?>[] {GpuShareService.class},
            (proxy, method, args) -> {
              if (method.getName().equals("subscribe")) {
                ChangeListener listener = (ChangeListener) args[0];
                LISTENERS.add(listener);
                return (AutoCloseable) () -> LISTENERS.remove(listener);
              }
              try {
                return method.invoke(delegate, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @BeforeAll
  static void start() throws Exception {
    testKit = ActorTestKit.create("DashboardRoutesTest");
    api =
        new HttpApi(SERVICE, new FakeJournalInspector(), instant -> {})
            .bind(testKit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get(30, TimeUnit.SECONDS);
    fastHeartbeat =
        Http.get(testKit.system())
            .newServerAt("127.0.0.1", 0)
            .bind(new DashboardRoutes(SERVICE, Duration.ofMillis(200)).route())
            .toCompletableFuture()
            .get(30, TimeUnit.SECONDS);
    client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    api.unbind().toCompletableFuture().get(30, TimeUnit.SECONDS);
    fastHeartbeat.unbind().toCompletableFuture().get(30, TimeUnit.SECONDS);
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void clear() {
    FAKE.reset();
  }

  // ---- the page and its files ----

  @ParameterizedTest
  @CsvSource({"/dashboard", "/dashboard/", "/dashboard/index.html"})
  void thePageIsServedWithoutABuildStepOrOutsideResources(String path) throws Exception {
    HttpResponse<String> r = get(api, path);
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(contentType(r).startsWith("text/html"), contentType(r));
    assertTrue(r.body().contains("<script src=\"/dashboard/app.js\""), r.body());
    assertTrue(r.body().contains("href=\"/dashboard/style.css\""), r.body());
    assertFalse(r.body().contains("http://") || r.body().contains("https://"), "no CDN");
    String csp = r.headers().firstValue("Content-Security-Policy").orElseThrow();
    assertTrue(csp.contains("default-src 'self'"), csp);
    assertTrue(csp.contains("connect-src 'self'"), csp);
    assertEquals("no-cache", r.headers().firstValue("Cache-Control").orElseThrow());
  }

  @ParameterizedTest
  @CsvSource({
    "/dashboard/app.js, javascript, /v1/watch",
    "/dashboard/style.css, text/css, .seg",
    "/dashboard/favicon.svg, image/svg+xml, <svg"
  })
  void theAssetsAreServedWithTheirContentTypes(String path, String type, String part)
      throws Exception {
    HttpResponse<String> r = get(api, path);
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(contentType(r).contains(type), contentType(r));
    assertTrue(r.body().contains(part), path);
  }

  @Test
  void theScriptSendsTheTokenOnEveryRequestAndReadsTheStreamWithFetch() throws Exception {
    String js = get(api, "/dashboard/app.js").body();
    assertTrue(js.contains("h.Authorization = 'Bearer ' + token"), "bearer header");
    assertTrue(js.contains("fetch('/v1/watch'"), "the stream is read with fetch");
    assertFalse(js.contains("EventSource"), "EventSource cannot send the header");
    assertTrue(js.contains("sessionStorage"), "the token is kept in the tab");
  }

  @ParameterizedTest
  @CsvSource({
    "/dashboard/nothing.js",
    "/dashboard/%2e%2e/logback.xml",
    "/dashboard/..%2flogback.xml",
    "/dashboardx"
  })
  void anythingElseUnderDashboardIsA404Problem(String path) throws Exception {
    HttpResponse<String> r = get(api, path);
    assertEquals(404, r.statusCode(), r.body());
    assertEquals("application/problem+json", contentType(r));
    assertFalse(r.body().contains("<configuration"), "no class path file outside dashboard/");
  }

  @Test
  void thePageIsReadOnly() throws Exception {
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(uri(api, "/dashboard"))
                .timeout(WAIT)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build(),
            BodyHandlers.ofString());
    assertEquals(405, r.statusCode(), r.body());
    assertEquals("GET", r.headers().firstValue("Allow").orElseThrow());
  }

  // ---- GET /v1/watch ----

  @Test
  void watchStreamsOneChangeEventPerNodeOrPodChange() throws Exception {
    try (Stream stream = open(api)) {
      assertTrue(
          stream
              .response
              .headers()
              .firstValue("Content-Type")
              .orElseThrow()
              .startsWith("text/event-stream"));
      assertEquals("no-cache", stream.response.headers().firstValue("Cache-Control").orElseThrow());
      ChangeListener listener = stream.subscription();
      listener.nodeChanged("node-1");
      listener.podChanged("default", "a", false);
      listener.podChanged("team", "b", true);

      List<JsonNode> changes = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        changes.add(stream.nextEvent());
      }
      assertEquals("{\"kind\":\"node\",\"node\":\"node-1\"}", changes.get(0).toString());
      assertEquals(
          "{\"kind\":\"pod\",\"namespace\":\"default\",\"name\":\"a\",\"deleted\":false}",
          changes.get(1).toString());
      assertEquals(
          "{\"kind\":\"pod\",\"namespace\":\"team\",\"name\":\"b\",\"deleted\":true}",
          changes.get(2).toString());
    }
  }

  @Test
  void eachClientHasItsOwnSubscriptionUntilItGoesAway() throws Exception {
    ChangeListener first;
    ChangeListener second;
    try (Stream one = open(fastHeartbeat)) {
      first = one.subscription();
      try (Stream two = open(fastHeartbeat)) {
        second = two.subscription();
        first.nodeChanged("n1");
        second.nodeChanged("n2");
        assertEquals("n1", one.nextEvent().get("node").asText());
        assertEquals("n2", two.nextEvent().get("node").asText());
      }
    }
    // the server notices a gone client at its next write (at the latest the next heartbeat)
    awaitTrue(
        () -> !LISTENERS.contains(first) && !LISTENERS.contains(second),
        "a closed stream unsubscribes");
  }

  @Test
  void aBurstOfChangesLosesNothing() throws Exception {
    try (Stream stream = open(fastHeartbeat)) {
      ChangeListener listener = stream.subscription();
      for (int i = 0; i < 5000; i++) {
        listener.podChanged("default", "p" + (i % 50), false);
        listener.nodeChanged("node-" + (i % 7));
      }
      listener.podChanged("default", "last", true);
      Set<String> seen = new HashSet<>();
      int events = 0;
      JsonNode change;
      do {
        change = stream.nextEvent();
        events++;
        seen.add(change.path("node").asText(change.path("name").asText()));
      } while (!change.path("name").asText().equals("last"));
      assertEquals(50 + 7 + 1, seen.size(), seen.toString());
      assertTrue(events <= 10001, "events: " + events);
    }
  }

  @Test
  void aChangeThatIsPendingAlreadyIsNotAddedAgain() {
    DashboardRoutes.PendingChanges pending = new DashboardRoutes.PendingChanges();
    pending.add(DashboardRoutes.Change.pod("default", "a", false));
    pending.add(DashboardRoutes.Change.node("node-1"));
    pending.add(DashboardRoutes.Change.pod("default", "a", false));
    pending.add(DashboardRoutes.Change.pod("default", "a", true));
    assertEquals(
        List.of(
            DashboardRoutes.Change.pod("default", "a", false),
            DashboardRoutes.Change.node("node-1"),
            DashboardRoutes.Change.pod("default", "a", true)),
        pending.drain());
    assertEquals(List.of(), pending.drain());
  }

  @Test
  void anIdleStreamCarriesAHeartbeatComment() throws Exception {
    try (Stream stream = open(fastHeartbeat)) {
      // the first line is the opening comment, then heartbeats (":") while nothing changes
      assertTrue(stream.nextLine().startsWith(":"));
      String line;
      do {
        line = stream.nextLine();
      } while (line.isEmpty());
      assertEquals(":", line);
    }
  }

  // ---- helpers ----

  private static URI uri(ServerBinding binding, String path) {
    return URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + path);
  }

  private static HttpResponse<String> get(ServerBinding binding, String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(uri(binding, path)).timeout(WAIT).GET().build(),
        BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  private static String contentType(HttpResponse<?> r) {
    return r.headers().firstValue("Content-Type").orElse("");
  }

  private static void awaitTrue(BooleanSupplier condition, String what) throws Exception {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + WAIT + ": " + what);
      }
      Thread.sleep(20);
    }
  }

  private static Stream open(ServerBinding binding) throws Exception {
    List<ChangeListener> before = List.copyOf(LISTENERS);
    HttpResponse<InputStream> r =
        client.send(
            HttpRequest.newBuilder(uri(binding, "/v1/watch"))
                .header("Accept", "text/event-stream")
                .GET()
                .build(),
            BodyHandlers.ofInputStream());
    assertEquals(200, r.statusCode());
    return new Stream(r, before);
  }

  /** An open SSE response, its lines read by a daemon thread, each read bounded in time. */
  private static final class Stream implements AutoCloseable {
    final HttpResponse<InputStream> response;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private final List<ChangeListener> before;

    Stream(HttpResponse<InputStream> response, List<ChangeListener> before) {
      this.response = response;
      this.before = before;
      Thread reader =
          new Thread(
              () -> {
                try (BufferedReader r =
                    new BufferedReader(
                        new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
                  String line;
                  while ((line = r.readLine()) != null) {
                    lines.add(line);
                  }
                } catch (IOException e) {
                  // closed
                }
              },
              "sse-reader");
      reader.setDaemon(true);
      reader.start();
    }

    /** The service subscription this stream made (the first one made since it was opened). */
    ChangeListener subscription() throws Exception {
      long deadline = System.nanoTime() + WAIT.toNanos();
      for (; ; ) {
        for (ChangeListener l : LISTENERS) {
          if (!before.contains(l)) {
            return l;
          }
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError("the stream did not subscribe within " + WAIT);
        }
        Thread.sleep(20);
      }
    }

    String nextLine() throws InterruptedException {
      String line = lines.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertNotNull(line, "no line within " + WAIT);
      return line;
    }

    /** The next {@code change} event's data, skipping comments; its type must be change. */
    JsonNode nextEvent() throws Exception {
      String type = null;
      String data = null;
      for (; ; ) {
        String line = nextLine();
        if (line.isEmpty()) {
          if (data != null) {
            assertEquals("change", type, "event type");
            return Json.mapper().readTree(data);
          }
        } else if (line.startsWith("event: ")) {
          type = line.substring("event: ".length());
        } else if (line.startsWith("data: ")) {
          data = line.substring("data: ".length());
        } else {
          assertTrue(line.startsWith(":"), "a comment, an event or data: " + line);
        }
      }
    }

    @Override
    public void close() throws IOException {
      response.body().close();
    }
  }
}
