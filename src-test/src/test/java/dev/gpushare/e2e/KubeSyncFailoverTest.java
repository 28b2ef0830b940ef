package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.KubernetesModeTest.POLICY;
import static dev.gpushare.e2e.KubernetesModeTest.RECLAIM;
import static dev.gpushare.e2e.KubernetesModeTest.VALID;
import static dev.gpushare.e2e.KubernetesModeTest.assertDevice;
import static dev.gpushare.e2e.KubernetesModeTest.assertNodeCondition;
import static dev.gpushare.e2e.KubernetesModeTest.assertPercentageText;
import static dev.gpushare.e2e.KubernetesModeTest.assertPodCondition;
import static dev.gpushare.e2e.KubernetesModeTest.assertQos;
import static dev.gpushare.e2e.KubernetesModeTest.eventSummary;
import static dev.gpushare.e2e.KubernetesModeTest.sharePodYaml;
import static dev.gpushare.e2e.KubernetesModeTest.smallNode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 4, cluster mode on Kubernetes: singleton fail-over of the {@code KubeSync} writer. Three
 * members ({@code --kubernetes}, manual clocks, one PostgreSQL journal) write to one fabric8 mock
 * API server; node {@code n2} (served by member m2, role {@code node:n2}) preempts once, and the
 * member that hosts {@code KubeSync} (m1, the oldest) writes the node status, the pod conditions,
 * the device annotations and the Events. Then m1 is killed (SIGKILL); while the split-brain
 * resolver downs it, {@code n2} preempts again (through m2's clock). Afterwards the new {@code
 * KubeSync} on a surviving member has written the second preemption (Events, conditions,
 * annotations), every Event written before the kill is there exactly once and unchanged, no Event
 * is written twice (by name, nor by content), and the node status is still correct.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KubeSyncFailoverTest {

  private static final List<String> NODES = List.of("n1", "n2", "n3");
  private static final String NODE = "n2";
  private static final int HOST = 1; // the member with role node:n2
  private static final String OLD = "old";
  private static final String NEU = "new";
  private static final long DEADLINE_SECONDS = 60;

  /** As ClusterFailoverTest: suspected after ~6 s, downed by keep-majority after 5 s stable. */
  private static final String TIMINGS =
      """
        cluster {
          failure-detector.acceptable-heartbeat-pause = 5s
          split-brain-resolver {
            active-strategy = keep-majority
            stable-after = 5s
          }
        }
      """;

  private ClusterHarness cluster;
  private KubeApiServer kube;
  private final List<ServerProcess> members = new ArrayList<>();
  private Path dir;
  private long startedAt;

  @BeforeAll
  void start(@TempDir Path tmp) {
    startedAt = System.nanoTime();
    dir = tmp;
    kube = new KubeApiServer();
    cluster = ClusterHarness.create(dir, "KubeSyncFailoverTest", NODES, TIMINGS);
    cluster.initSchema();
    for (int i = 0; i < NODES.size(); i++) {
      members.add(null);
    }
    startMember(0); // the first seed: forms the cluster, the oldest member
    List<CompletableFuture<Void>> rest = new ArrayList<>();
    for (int i = 1; i < NODES.size(); i++) {
      int idx = i;
      rest.add(CompletableFuture.runAsync(() -> startMember(idx)));
    }
    // Wait for every one before failing, so that none is left starting after stop().
    RuntimeException failure = null;
    for (CompletableFuture<Void> f : rest) {
      try {
        f.get(ClusterHarness.START_DEADLINE_SECONDS, TimeUnit.SECONDS);
      } catch (Exception e) {
        if (failure == null) {
          failure = new IllegalStateException("a member did not start: " + e, e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
    log("members up after %.1f s", seconds(startedAt));
  }

  /** Member {@code i} of the harness, in Kubernetes mode with a manual clock. */
  private void startMember(int i) {
    Path conf = dir.resolve("kube-member-" + (i + 1) + ".conf");
    try {
      String base = Files.readString(cluster.configFile(i), StandardCharsets.UTF_8);
      Files.writeString(
          conf,
          base
              + """
              gpushare.kubernetes {
                node-status-mode = kubelet
                qps = 200
                burst = 400
                max-backoff = 2s
              }
              """,
          StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> jvm = new ArrayList<>();
    jvm.add("-Xmx256m");
    jvm.add("-Dlogback.configurationFile=" + dir.resolve("logback-cluster.xml"));
    jvm.addAll(kube.clientProperties());
    Map<String, String> env = KubeApiServer.outsideACluster();
    env.put("POD_IP", null);
    env.put("POD_NAME", instance(i));
    ServerProcess m =
        ServerProcess.startWithClock(
            cluster.memberLabel(i),
            cluster.dataDir(i),
            "manual",
            jvm,
            env,
            "--kubernetes",
            "--config",
            conf.toString());
    synchronized (members) {
      members.set(i, m);
    }
  }

  private static String instance(int i) {
    return "gpushare-m" + (i + 1);
  }

  private ServerProcess member(int i) {
    synchronized (members) {
      return members.get(i);
    }
  }

  @AfterAll
  void stop() {
    try {
      for (int i = 0; i < members.size(); i++) {
        ServerProcess m = member(i);
        if (m != null) {
          log("m%d log: %s", i + 1, m.logFile());
          m.crash();
        }
      }
    } finally {
      try {
        if (kube != null) {
          kube.close();
        }
      } finally {
        if (cluster != null) {
          cluster.close();
        }
      }
    }
    log("KubeSyncFailoverTest total %.1f s", seconds(startedAt));
  }

  @Test
  void newKubeSyncResumesWritingWithoutDuplicateEvents() {
    ServerProcess m1 = member(0);
    Api api = member(HOST).api();

    // The cluster has formed and the oldest member (m1) runs the writer.
    await(
        "m2 and m3 joined m1",
        DEADLINE_SECONDS,
        () -> {
          for (int i = 1; i < NODES.size(); i++) {
            assertNotNull(
                ClusterHarness.firstLogTime(member(i), "Welcome from"),
                "m" + (i + 1) + " joined: " + member(i).logFile());
          }
          return null;
        });
    await(
        "KubeSync started on m1",
        DEADLINE_SECONDS,
        () -> {
          assertNotNull(ClusterHarness.firstLogTime(m1, "KubeSync started"), "m1 log");
          return null;
        });

    // A one-GPU share-pool node with preemption after 60 minutes, two pods bound to it.
    kube.createNode(
        smallNode(
            NODE, 1, "share-pool", "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}"));
    await(
        "the arbiter applies the QoS",
        DEADLINE_SECONDS,
        () -> {
          assertQos(api.node(NODE), true, 60, "0");
          return null;
        });
    await(
        "shard " + NODE + " lives on m2 (role node:" + NODE + ")",
        DEADLINE_SECONDS,
        () -> {
          assertFalse(ClusterHarness.typesStarted(member(HOST), NODE).isEmpty(), "on m2");
          for (int i : List.of(0, 2)) {
            assertTrue(
                ClusterHarness.typesStarted(member(i), NODE).isEmpty(), "not on m" + (i + 1));
          }
          return null;
        });
    for (String p : List.of(OLD, NEU)) {
      kube.create(sharePodYaml(p, NODE, 10, 100));
      kube.kubeletRuns(p);
      await(
          "the arbiter knows pod " + p,
          DEADLINE_SECONDS,
          () -> {
            Api.Resp r = api.get(Api.podPath(p));
            assertEquals(200, r.status(), () -> "GET pod: " + r);
            return null;
          });
    }
    assertRunningOn(api.demand(OLD), 0);
    assertReady(api.demand(NEU), 1);
    api.advance(3601);
    assertRunningOn(api.pod(NEU), 0);
    assertReady(api.pod(OLD), 1);
    String firstUuid = api.pod(NEU).path("gpu").path("uuid").asText();
    String nodeUid = kube.node(NODE).getMetadata().getUid();
    String oldUid = kube.pod(OLD).getMetadata().getUid();
    String newUid = kube.pod(NEU).getMetadata().getUid();

    await(
        "m1's KubeSync wrote the first preemption and the node status",
        DEADLINE_SECONDS,
        () -> {
          List<Event> all = kube.events();
          assertOne(
              all,
              "Node",
              NODE,
              nodeUid,
              "GPUSharePolicyChanged",
              "gpu share policy is share-pool.");
          assertOne(all, "Pod", OLD, oldUid, "GPUSharePreempted", "GPU is preempted by new.");
          assertOne(all, "Pod", NEU, newUid, "GPUSharePreempt", "GPU is preempted from old.");
          Pod o = kube.pod(OLD);
          Pod w = kube.pod(NEU);
          assertPodCondition(o, RECLAIM, "True", "GPUSharePreempted", "GPU is preempted by new.");
          assertPodCondition(w, RECLAIM, "True", "GPUSharePreempt", "GPU is preempted from old.");
          assertDevice(w, "0", firstUuid);
          assertDevice(o, null, null);
          assertNodeStatus();
          return null;
        });
    for (Event e : kube.events()) {
      assertEquals(instance(0), e.getReportingInstance(), () -> "written by m1's KubeSync: " + e);
    }
    Map<String, String> before = eventSummary(kube.events());
    assertNoDuplicates(kube.events());
    log("before the kill (%.1f s): %d Events %s", seconds(startedAt), before.size(), before);

    // SIGKILL the writer's member; once the cluster has downed it and the singletons have moved
    // (the KubeSync writer, and the NodeDirectory, which the clock's advance asks), n2's arbiter
    // (on m2) decides again.
    long killedAt = System.nanoTime();
    m1.crash();
    log("m1 killed");
    int[] writer = new int[1];
    await(
        "a new KubeSync starts on m2 or m3",
        DEADLINE_SECONDS,
        () -> {
          for (int i : List.of(1, 2)) {
            if (ClusterHarness.firstLogTime(member(i), "KubeSync started") != null) {
              writer[0] = i;
              return null;
            }
          }
          fail("no 'KubeSync started' in m2's or m3's log");
          return null;
        });
    await(
        "the node directory answers through m2 again",
        DEADLINE_SECONDS,
        () -> {
          Api.Resp r = api.get("/v1/nodes");
          assertEquals(200, r.status(), () -> "GET /v1/nodes: " + r);
          return null;
        });
    var clockBefore = api.clock();
    await(
        "m2's clock advances by 3601 s",
        DEADLINE_SECONDS,
        () -> {
          // the outcome of a timed-out advance is unknown: advance again only if it did not
          var now = api.clock();
          if (now.equals(clockBefore)) {
            Api.Resp r =
                api.postJson("/v1/clock/advance", Api.JSON.createObjectNode().put("seconds", 3601));
            assertEquals(200, r.status(), () -> "advance: " + r);
          }
          return null;
        });
    assertRunningOn(api.pod(OLD), 0);
    assertReady(api.pod(NEU), 1);
    String secondUuid = api.pod(OLD).path("gpu").path("uuid").asText();

    log("KubeSync moved to m%d after %.1f s", writer[0] + 1, seconds(killedAt));
    String next = instance(writer[0]);

    await(
        "the new KubeSync wrote the second preemption",
        DEADLINE_SECONDS,
        () -> {
          List<Event> all = kube.events();
          Event a =
              assertOne(all, "Pod", NEU, newUid, "GPUSharePreempted", "GPU is preempted by old.");
          Event b =
              assertOne(all, "Pod", OLD, oldUid, "GPUSharePreempt", "GPU is preempted from new.");
          assertEquals(next, a.getReportingInstance(), () -> "written by the new writer: " + a);
          assertEquals(next, b.getReportingInstance(), () -> "written by the new writer: " + b);
          Pod o = kube.pod(OLD);
          Pod w = kube.pod(NEU);
          assertPodCondition(o, RECLAIM, "True", "GPUSharePreempt", "GPU is preempted from new.");
          assertPodCondition(w, RECLAIM, "True", "GPUSharePreempted", "GPU is preempted by old.");
          assertDevice(o, "0", secondUuid);
          assertDevice(w, null, null);
          assertNodeStatus();
          return null;
        });
    log("second preemption written %.1f s after the kill", seconds(killedAt));

    // Let any resync of the new writer run, then: everything before the kill is there exactly
    // once and unchanged, and nothing is there twice.
    sleep(5000);
    List<Event> after = kube.events();
    assertNoDuplicates(after);
    Map<String, String> afterSummary = eventSummary(after);
    before.forEach(
        (name, summary) ->
            assertEquals(
                summary,
                afterSummary.get(name),
                () -> "Event " + name + " written before the kill, now: " + afterSummary));
    assertEquals(
        before.size() + 2,
        after.size(),
        () -> "exactly the two new Events; before " + before + "; after " + afterSummary);
    assertNodeStatus();
    log("after: %d Events %s", after.size(), afterSummary);
  }

  private void assertNodeStatus() {
    var n = kube.node(NODE);
    assertPercentageText(n, "100");
    assertNodeCondition(n, VALID, "True", "Valid", "gpu share policy config is valid.");
    assertNodeCondition(n, POLICY, "True", "share-pool", "gpu share policy is share-pool.");
  }

  /** Exactly one Event about {@code kind/name} with this reason and note. */
  private static Event assertOne(
      List<Event> all, String kind, String name, String uid, String reason, String note) {
    List<Event> m = new ArrayList<>();
    for (Event e : all) {
      if (e.getRegarding() != null
          && kind.equals(e.getRegarding().getKind())
          && name.equals(e.getRegarding().getName())
          && reason.equals(e.getReason())
          && note.equals(e.getNote())) {
        m.add(e);
      }
    }
    assertEquals(
        1,
        m.size(),
        () ->
            "one Event "
                + kind
                + "/"
                + name
                + " "
                + reason
                + " \""
                + note
                + "\"; all: "
                + eventSummary(all).values());
    Event e = m.get(0);
    assertEquals(uid, e.getRegarding().getUid(), () -> "regarding.uid of " + e);
    assertEquals("gpushare", e.getReportingController(), () -> "reportingController of " + e);
    return e;
  }

  /** No Event name twice, and no two Events for the same recorded occurrence. */
  private static void assertNoDuplicates(List<Event> all) {
    Map<String, Integer> names = new TreeMap<>();
    Map<String, List<String>> content = new TreeMap<>();
    for (Event e : all) {
      names.merge(e.getMetadata().getName(), 1, Integer::sum);
      String key =
          e.getRegarding().getKind()
              + "/"
              + e.getRegarding().getName()
              + " "
              + e.getReason()
              + ": "
              + e.getNote()
              + " @"
              + e.getEventTime();
      content.computeIfAbsent(key, k -> new ArrayList<>()).add(e.getMetadata().getName());
    }
    names.forEach((n, c) -> assertEquals(1, c, () -> "Event name " + n + " " + c + " times"));
    content.forEach(
        (k, ns) -> assertEquals(1, ns.size(), () -> "Event " + k + " written as " + ns));
  }

  private <T> T await(String what, long seconds, Callable<T> check) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (true) {
      try {
        return check.call();
      } catch (AssertionError | KubernetesClientException | NullPointerException e) {
        if (System.nanoTime() > deadline) {
          List<String> recent = kube.recentExchanges();
          throw new AssertionError(
              what
                  + ": not within "
                  + seconds
                  + " s; last check: "
                  + e
                  + "\nmembers: "
                  + logs()
                  + "\nlast API-server requests:\n  "
                  + String.join(
                      "\n  ", recent.subList(Math.max(0, recent.size() - 30), recent.size())),
              e);
        }
      } catch (Exception e) {
        throw new AssertionError(what + ": " + e + "\nmembers: " + logs(), e);
      }
      sleep(200);
    }
  }

  private String logs() {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < members.size(); i++) {
      ServerProcess m = member(i);
      out.add(
          "m"
              + (i + 1)
              + (m == null || !m.isAlive() ? " (down)" : "")
              + " "
              + (m == null ? "-" : m.logFile()));
    }
    return String.join(", ", out);
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static double seconds(long since) {
    return (System.nanoTime() - since) / 1e9;
  }

  private static void log(String format, Object... args) {
    System.out.printf("[KubeSyncFailoverTest] " + format + "%n", args);
    System.out.flush();
  }
}
