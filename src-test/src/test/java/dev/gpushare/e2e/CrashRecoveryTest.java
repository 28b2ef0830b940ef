package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.keys;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Checks.withoutTimes;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * ARCHITECTURE §6 across crashes: SIGKILL the server, restart it on the same data directory, and
 * find every decision as it was.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CrashRecoveryTest {

  private static final String NO_PREEMPTION = Manifests.qos(false, 120);

  private ServerProcess server;

  @BeforeAll
  void start(@TempDir Path dir) {
    server = ServerProcess.start("CrashRecoveryTest", dir.resolve("data"));
  }

  @AfterAll
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  private Api api() {
    return server.api();
  }

  private void crashAndRestart() {
    server.crash();
    server.restart();
  }

  @Test
  void decisionsSurviveSigkill() {
    Api api = api();
    String node = Manifests.unique("crash");
    api.putNode(node, 4, "share-pool", NO_PREEMPTION);
    int[] limits = {0, 100, 50, 30, 100, 100, 100, 20, 50, 40, 100};
    String[] r = new String[limits.length];
    for (int i = 1; i < limits.length; i++) {
      r[i] = node + "-r" + i;
      api.createPod(sharePod(r[i], node, 10, limits[i]));
    }
    assertRunningOn(api.demand(r[1]), 0);
    assertRunningOn(api.demand(r[2]), 1);
    assertRunningOn(api.demand(r[3]), 1);
    assertRunningOn(api.demand(r[4]), 2);
    assertRunningOn(api.demand(r[5]), 3);
    assertReady(api.demand(r[6]), 1);
    assertReady(api.demand(r[7]), 2);
    assertReady(api.demand(r[8]), 3);
    api.release(r[2]); // GPU 1 keeps r3 (30); the head r6 (100) still fits nowhere
    assertReady(api.demand(r[9]), 4);
    api.release(r[7]); // withdraw from the middle of the queue
    api.deletePod(r[1]); // GPU 0 free: r6 → 0, then r8 (50) → 1 beside r3; r9 (40) waits
    assertReady(api.demand(r[2]), 2);
    // r10 is never demanded.

    assertRunningOn(api.pod(r[6]), 0);
    assertRunningOn(api.pod(r[3]), 1);
    assertRunningOn(api.pod(r[8]), 1);
    assertRunningOn(api.pod(r[4]), 2);
    assertRunningOn(api.pod(r[5]), 3);
    assertReady(api.pod(r[9]), 1);
    assertReady(api.pod(r[2]), 2);
    assertHibernation(api.pod(r[7]));
    assertHibernation(api.pod(r[10]));
    assertEquals(keys(r[9], r[2]), queueOrder(api.queue(node)));
    JsonNode nv = api.node(node);
    assertGpu(nv, 0, 100, 100, r[6]);
    assertGpu(nv, 1, 80, 80, r[3], r[8]);
    assertInvariants(api);

    // a static node beside it: four pinned pods and one refused for fragmentation
    String st = Manifests.unique("crash-static");
    api.putNode(st, 2, "static", null);
    int[] reqs = {60, 30, 50, 40};
    for (int i = 0; i < reqs.length; i++) {
      api.createPod(Manifests.staticPod(st + "-s" + i, st, reqs[i], 100));
    }
    String frag = st + "-frag";
    assertEquals(
        "Pending", api.createPod(Manifests.staticPod(frag, st, 20, 20)).path("state").asText());

    ObjectNode before = Checks.snapshot(api);
    Map<String, JsonNode> fullBefore = fullViews(api);
    crashAndRestart();
    api = api();
    assertEquals(before, Checks.snapshot(api), "decisions after SIGKILL and restart");
    assertEquals(fullBefore, fullViews(api), "pod views (conditions, events) after restart");
    Api.problem(api.get(Api.podPath(r[1])), 404);
    assertInvariants(api);

    // The arbiter still works on the recovered state: r6 releases GPU 0, the head r9 (40) gets
    // it, then r2 (50) beside it.
    api.release(r[6]);
    assertRunningOn(api.pod(r[9]), 0);
    assertRunningOn(api.pod(r[2]), 0);
    assertEquals(List.of(), queueOrder(api.queue(node)));
    // and the static node still pins the pending pod once capacity frees
    assertEquals("Pending", api.pod(frag).path("state").asText());
    api.deletePod(st + "-s1");
    assertRunningOn(api.pod(frag), 0);
    assertInvariants(api);
  }

  @Test
  void runningTimeAndPreemptionTimersSurviveSigkill() {
    Api api = api();
    String node = Manifests.unique("crash-timer");
    api.putNode(node, 1, "share-pool", Manifests.qos(true, 60));
    String v = node + "-v";
    String p = node + "-p";
    api.createPod(sharePod(v, node, 10, 100));
    api.createPod(sharePod(p, node, 10, 100));
    assertRunningOn(api.demand(v), 0);
    assertReady(api.demand(p), 1);
    api.advance(30 * 60L);
    crashAndRestart();
    api = api();
    api.advance(30 * 60L); // exactly 60 minutes Running: not yet a candidate
    assertRunningOn(api.pod(v), 0);
    assertReady(api.pod(p), 1);
    api.advance(1); // the timer armed before the crash fires after it
    assertRunningOn(api.pod(p), 0);
    assertReady(api.pod(v), 1);
    assertInvariants(api);
  }

  private static Map<String, JsonNode> fullViews(Api api) {
    Map<String, JsonNode> m = new TreeMap<>();
    api.allPods().forEach(p -> m.put(Checks.key(p), withoutTimes(p)));
    return m;
  }

  @Test
  void everyAcknowledgedDemandSurvivesACrashMidStream() throws Exception {
    Api api = api();
    String node = Manifests.unique("stream");
    api.putNode(node, 4, "share-pool", NO_PREEMPTION);
    int threads = 3;
    int perThread = 12;
    int[] limitCycle = {100, 50, 30, 20};
    List<List<String>> work = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < perThread; i++) {
        String name = node + "-t" + t + "-" + i;
        api.createPod(sharePod(name, node, 5, limitCycle[(t + i) % limitCycle.length]));
        mine.add(name);
      }
      work.add(mine);
    }

    Set<String> demandAcked = ConcurrentHashMap.newKeySet();
    Set<String> releaseAcked = ConcurrentHashMap.newKeySet();
    CountDownLatch enough = new CountDownLatch(15);
    List<Thread> clients = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      List<String> mine = work.get(t);
      Thread th =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < mine.size(); i++) {
                    String p = mine.get(i);
                    api.demand(p);
                    demandAcked.add(p);
                    enough.countDown();
                    if (i % 3 == 2) {
                      api.release(p);
                      releaseAcked.add(p);
                      enough.countDown();
                    }
                  }
                } catch (RuntimeException | AssertionError e) {
                  // the server was killed under us: stop streaming
                }
              },
              "client-" + t);
      th.setDaemon(true);
      clients.add(th);
    }
    clients.forEach(Thread::start);
    assertTrue(enough.await(60, TimeUnit.SECONDS), "clients made progress before the crash");
    server.crash();
    int demandsAtCrash = demandAcked.size();
    int releasesAtCrash = releaseAcked.size();
    for (Thread th : clients) {
      th.join(TimeUnit.SECONDS.toMillis(60));
      assertTrue(!th.isAlive(), "client thread ended after the crash");
    }
    // how far the stream got (a crash after the last request would prove less)
    System.out.printf(
        "stream crash: %d/%d demands and %d/%d releases acknowledged at the kill%n",
        demandsAtCrash, threads * perThread, releasesAtCrash, threads * perThread / 3);
    server.restart();
    Api after = api();
    for (String p : demandAcked) {
      JsonNode v = after.pod(p);
      String state = v.path("state").asText();
      if (releaseAcked.contains(p)) {
        assertEquals("Hibernation", state, () -> "acknowledged release lost: " + v);
      } else {
        assertTrue(
            state.equals("Ready") || state.equals("Running"),
            () -> "acknowledged demand lost: " + v);
      }
    }
    assertInvariants(after);

    // A second restart changes nothing.
    ObjectNode first = Checks.snapshot(after);
    crashAndRestart();
    assertEquals(first, Checks.snapshot(api()), "a second restart changes nothing");
    assertInvariants(api());
  }

  @Test
  void theManualClockNeverGoesBackAcrossRestarts(@TempDir Path dir) {
    ServerProcess fresh = ServerProcess.start("CrashRecoveryTest-clock", dir.resolve("data"));
    try {
      JsonNode c0 = fresh.api().clock();
      assertEquals("2026-01-01T00:00:00Z", c0.path("now").asText(), () -> "start: " + c0);
      assertTrue(c0.path("manual").asBoolean(), () -> "manual: " + c0);
      JsonNode c1 = fresh.api().advance(90);
      assertEquals(
          Instant.parse("2026-01-01T00:01:30Z"),
          Instant.parse(c1.path("now").asText()),
          () -> "advance answers the new time: " + c1);
      fresh.crash();
      fresh.restart();
      JsonNode c2 = fresh.api().clock();
      assertEquals(
          Instant.parse("2026-01-01T00:01:30Z"),
          Instant.parse(c2.path("now").asText()),
          () -> "the clock resumes where it was: " + c2);
      JsonNode c3 = fresh.api().advance(30);
      assertEquals(Instant.parse("2026-01-01T00:02:00Z"), Instant.parse(c3.path("now").asText()));
      fresh.stop();
      fresh.restart();
      JsonNode c4 = fresh.api().clock();
      assertEquals(
          Instant.parse("2026-01-01T00:02:00Z"),
          Instant.parse(c4.path("now").asText()),
          () -> "after a graceful restart too: " + c4);
    } finally {
      fresh.stop();
    }
  }
}
