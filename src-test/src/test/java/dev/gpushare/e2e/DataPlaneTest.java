package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** API.md "Data plane": the grant long poll and the SSE watch. */
class DataPlaneTest extends ServerPerClass {

  private static final long DEADLINE_SECONDS = 30;

  private String node() {
    String node = Manifests.unique("dp");
    api.putNode(node, 1, "share-pool", Manifests.qos(false, 120));
    return node;
  }

  @Test
  void grantReturnsAsSoonAsThePodRuns() throws Exception {
    String node = node();
    String holder = node + "-holder";
    String waiter = node + "-waiter";
    api.createPod(sharePod(holder, node, 10, 100));
    api.createPod(sharePod(waiter, node, 10, 100));
    assertRunningOn(api.demand(holder), 0);
    assertReady(api.demand(waiter), 1);

    // The poll's own timeout (120 s) is far beyond the deadline below: only the grant can end it.
    CompletableFuture<Api.Resp> poll =
        api.sendAsync("GET", Api.podPath(waiter) + "/grant?timeoutSeconds=120");
    api.release(holder);
    Api.Resp r = poll.get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertRunningOn(Api.ok(r), 0);
  }

  @Test
  void grantOfARunningPodAnswersAtOnce() throws Exception {
    String node = node();
    String p = node + "-p";
    api.createPod(sharePod(p, node, 10, 100));
    api.demand(p);
    Api.Resp r =
        api.sendAsync("GET", Api.podPath(p) + "/grant?timeoutSeconds=120")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertRunningOn(Api.ok(r), 0);
  }

  @Test
  void grantAnswersTheViewAtTheTimeoutOtherwise() throws Exception {
    String node = node();
    String holder = node + "-holder";
    String waiter = node + "-waiter";
    api.createPod(sharePod(holder, node, 10, 100));
    api.createPod(sharePod(waiter, node, 10, 100));
    api.demand(holder);
    api.demand(waiter);
    Api.Resp r =
        api.sendAsync("GET", Api.podPath(waiter) + "/grant?timeoutSeconds=1")
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertReady(Api.ok(r), 1);
  }

  @Test
  void watchEmitsThePodViewOnEveryChange() throws Exception {
    String node = node();
    String holder = node + "-holder";
    String w = node + "-w";
    api.createPod(sharePod(holder, node, 10, 100));
    api.createPod(sharePod(w, node, 10, 100));
    api.demand(holder);

    HttpResponse<InputStream> resp = api.openStream(Api.podPath(w) + "/watch");
    assertEquals(200, resp.statusCode(), "watch status");
    String ct = resp.headers().firstValue("Content-Type").orElse("");
    assertTrue(ct.startsWith("text/event-stream"), () -> "content type: " + ct);
    BlockingQueue<JsonNode> views = new LinkedBlockingQueue<>();
    InputStream body = resp.body();
    Thread reader = new Thread(() -> readSse(body, views), "sse-" + w);
    reader.setDaemon(true);
    reader.start();
    List<String> seen = new ArrayList<>();
    try {
      // the view now
      JsonNode first = next(views, seen);
      assertEquals(w, first.path("name").asText(), () -> "watched pod: " + first);
      assertEquals("Hibernation", first.path("state").asText(), () -> "first view: " + first);

      api.demand(w); // Hibernation → Ready
      JsonNode ready = awaitState(views, seen, "Ready");
      assertEquals(1, ready.path("queuePosition").asInt(), () -> "Ready view: " + ready);

      api.release(holder); // Ready → Running
      JsonNode running = awaitState(views, seen, "Running");
      assertEquals(0, running.path("gpu").path("index").asInt(-1), () -> "Running: " + running);

      api.release(w); // Running → Hibernation
      awaitState(views, seen, "Hibernation");
      assertEquals(
          List.of("Hibernation", "Ready", "Running", "Hibernation"),
          dedupe(seen),
          "states seen on the watch, in order");
    } finally {
      body.close();
    }
  }

  @Test
  void concurrentDemandsAndReleasesKeepTheInvariants() throws Exception {
    String node = Manifests.unique("conc");
    api.putNode(node, 2, "share-pool", Manifests.qos(false, 120));
    int threads = 4;
    int podsPerThread = 2;
    int[] limits = {100, 50, 30, 20};
    List<List<String>> owned = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < podsPerThread; i++) {
        String p = node + "-t" + t + "-" + i;
        api.createPod(sharePod(p, node, 5, limits[(t + i) % limits.length]));
        mine.add(p);
      }
      owned.add(mine);
    }
    java.util.Map<String, String> lastAcked = new java.util.concurrent.ConcurrentHashMap<>();
    List<CompletableFuture<Void>> runs = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      List<String> mine = owned.get(t);
      java.util.Random rnd = new java.util.Random(42 + t);
      runs.add(
          CompletableFuture.runAsync(
              () -> {
                for (int op = 0; op < 20; op++) {
                  String p = mine.get(rnd.nextInt(mine.size()));
                  if (rnd.nextBoolean()) {
                    api.demand(p);
                    lastAcked.put(p, "demand");
                  } else {
                    api.release(p);
                    lastAcked.put(p, "release");
                  }
                }
              }));
    }
    CompletableFuture.allOf(runs.toArray(CompletableFuture[]::new))
        .get(DEADLINE_SECONDS * 4, TimeUnit.SECONDS);
    Checks.assertInvariants(api);
    lastAcked.forEach(
        (p, op) -> {
          String state = api.pod(p).path("state").asText();
          if (op.equals("demand")) {
            assertTrue(state.equals("Ready") || state.equals("Running"), () -> p + ": " + state);
          } else {
            assertEquals("Hibernation", state, () -> p + " after its release");
          }
        });
    // everyone releases: nothing is left behind on any GPU nor in the queue
    owned.forEach(mine -> mine.forEach(api::release));
    JsonNode v = api.node(node);
    Checks.assertGpu(v, 0, 0, 0);
    Checks.assertGpu(v, 1, 0, 0);
    assertEquals(0, api.queue(node).size(), "queue empty");
    Checks.assertInvariants(api);
  }

  private static List<String> dedupe(List<String> states) {
    List<String> l = new ArrayList<>();
    for (String s : states) {
      if (l.isEmpty() || !l.get(l.size() - 1).equals(s)) {
        l.add(s);
      }
    }
    return l;
  }

  private static JsonNode next(BlockingQueue<JsonNode> views, List<String> seen)
      throws InterruptedException {
    JsonNode v = views.poll(DEADLINE_SECONDS, TimeUnit.SECONDS);
    assertNotNull(v, () -> "no SSE event within " + DEADLINE_SECONDS + " s; seen " + seen);
    seen.add(v.path("state").asText());
    return v;
  }

  private static JsonNode awaitState(BlockingQueue<JsonNode> views, List<String> seen, String s)
      throws InterruptedException {
    while (true) {
      JsonNode v = next(views, seen);
      if (s.equals(v.path("state").asText())) {
        return v;
      }
    }
  }

  /** Server-Sent Events: "data:" lines up to a blank line make one event; ":" is a comment. */
  private static void readSse(InputStream in, BlockingQueue<JsonNode> out) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      StringBuilder data = new StringBuilder();
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isEmpty()) {
          if (data.length() > 0) {
            out.add(Api.JSON.readTree(data.toString()));
            data.setLength(0);
          }
        } else if (line.startsWith("data:")) {
          if (data.length() > 0) {
            data.append('\n');
          }
          String d = line.substring(5);
          data.append(d.startsWith(" ") ? d.substring(1) : d);
        }
      }
    } catch (IOException e) {
      // stream closed by the test
    }
  }
}
