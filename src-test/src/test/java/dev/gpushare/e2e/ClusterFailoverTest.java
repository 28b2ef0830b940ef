package dev.gpushare.e2e;

import static dev.gpushare.e2e.AckedRequests.effect;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Checks.withoutTimes;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.e2e.AckedRequests.Kind;
import dev.gpushare.e2e.AckedRequests.Op;
import dev.gpushare.e2e.AckedRequests.Track;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 4, cluster mode: a three-member cluster on loopback (separate JVMs, one PostgreSQL
 * journal). While demands and releases for node {@code n1}'s pods stream in through the other two
 * members, the member that hosts {@code n1}'s shard is killed without leaving (SIGKILL). The
 * split-brain resolver downs it, the shard recovers on a surviving member from PostgreSQL, and
 * afterwards
 *
 * <ul>
 *   <li>every acknowledged demand and release is in force (no acknowledged request is lost);
 *   <li>ARCHITECTURE.md §6 invariants 1–3 hold: per GPU Σ limits ≤ 100, no pod both queued and on a
 *       GPU, every Running pod on exactly one GPU (also sampled all along, through every member),
 *       each pod on at most one GPU and the node's holders equal to the Running pods, the queue
 *       contiguous and in FIFO order consistent with the acknowledgements (across the fail-over);
 *   <li>invariant 4 as the API shows it: both surviving members give the same answers (one arbiter
 *       decides), and all of a node's entity types live on one member;
 *   <li>the other nodes' pods are untouched.
 * </ul>
 *
 * Then the killed member restarts: {@code n1}'s shard goes home to it (role {@code node:n1}) with
 * the state intact, and it arbitrates again.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterFailoverTest {

  private static final List<String> NODES = List.of("n1", "n2", "n3");
  private static final String NO_PREEMPTION = Manifests.qos(false, 120);

  /**
   * Fail-over timings (pekko section of every member): a dead member is suspected after about 6 s
   * (heartbeat pause 5 s), the split-brain resolver (keep-majority) downs it once membership has
   * been stable for 5 s, and shards move after the removal margin (= stable-after by default).
   */
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

  private static final int THREADS = 3;
  private static final int PODS_PER_THREAD = 8;
  private static final int[] LIMITS = {100, 50, 100, 70, 50, 100, 40, 60};
  private static final int FROZEN = 2;
  private static final int ACKS_BEFORE_KILL = 60;
  private static final int ACKS_AFTER_RECOVERY = 30;
  private static final long RECOVERY_DEADLINE_SECONDS = 120;

  private ClusterHarness cluster;
  private long startedAt;
  private String initSchemaOutput;

  @BeforeAll
  void start(@TempDir Path dir) {
    startedAt = System.nanoTime();
    cluster = ClusterHarness.create(dir, "ClusterFailoverTest", NODES, TIMINGS);
    initSchemaOutput = cluster.initSchema();
    cluster.startAll();
    log("cluster up after %.1f s: %s", seconds(startedAt), cluster.describe());
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      log("cluster at the end: %s", cluster.describe());
      cluster.close();
    }
    log("ClusterFailoverTest total %.1f s", seconds(startedAt));
  }

  // ------------------------------------------------------------------ the scenario

  @Test
  void killedShardHostRecoversElsewhereFromPostgresWithEveryAcknowledgedRequest() throws Exception {
    log("init-schema said:%n%s", initSchemaOutput);
    Api a1 = cluster.api(0);
    Api a2 = cluster.api(1);
    Api a3 = cluster.api(2);

    // Nodes registered through different members; every member sees all of them.
    a1.putNode("n1", 2, "share-pool", NO_PREEMPTION);
    a2.putNode("n2", 2, "share-pool", NO_PREEMPTION);
    a3.putNode("n3", 2, "share-pool", NO_PREEMPTION);
    for (Api a : List.of(a1, a2, a3)) {
      Set<String> names = new TreeSet<>();
      a.nodes().forEach(n -> names.add(n.path("name").asText()));
      assertEquals(new TreeSet<>(NODES), names, () -> "nodes seen through " + a.base());
    }

    // n1's pods (created through m2), and two bystanders each on n2 and n3, Running.
    List<List<String>> work = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < PODS_PER_THREAD; i++) {
        String name = "n1-t" + t + "-" + i;
        a2.createPod(sharePod(name, "n1", 5, LIMITS[(t * 3 + i) % LIMITS.length]));
        mine.add(name);
      }
      work.add(mine);
    }
    Map<String, JsonNode> bystanders = new TreeMap<>();
    for (String node : List.of("n2", "n3")) {
      for (int i = 0; i < 2; i++) {
        String name = node + "-b" + i;
        a3.createPod(sharePod(name, node, 10, 60));
        JsonNode v = a3.demand(name);
        assertEquals("Running", v.path("state").asText(), () -> "bystander: " + v);
      }
    }
    for (String node : List.of("n2", "n3")) {
      for (int i = 0; i < 2; i++) {
        String name = node + "-b" + i;
        bystanders.put(name, a1.pod(name).get("gpu"));
      }
    }
    assertInvariants(a1);

    // Each node's shard is on its own member (role node:<name>), for every entity type.
    Map<String, Map<String, List<String>>> placement =
        awaitPlacement("before the kill", List.of(0, 1, 2));
    log("shard placement before the kill: %s", placement);
    for (int i = 0; i < NODES.size(); i++) {
      String node = NODES.get(i);
      Map<String, List<String>> byMember = placement.get(node);
      String home = cluster.memberLabel(i);
      assertFalse(
          byMember.getOrDefault(home, List.of()).isEmpty(),
          () ->
              "shard "
                  + node
                  + " must start on "
                  + home
                  + " (role node:"
                  + node
                  + "): "
                  + byMember);
      assertEquals(
          Set.of(home),
          byMember.keySet(),
          () -> "shard " + node + " must live only on " + home + ": " + byMember);
    }

    // Stream demands and releases for n1's pods through m2 and m3.
    Stream stream = new Stream(List.of(a2, a3), work);
    stream.start();
    await(
        "clients made progress before the kill",
        60,
        () -> stream.acks.get() >= ACKS_BEFORE_KILL || stream.failed());
    assertFalse(stream.failed(), () -> "a client thread failed: " + stream.crashes);
    assertEquals(
        List.of(), stream.failures(), "no request may fail before the kill: " + stream.failures());

    long killAt = System.nanoTime();
    stream.killed = true;
    cluster.member(0).crash();
    long killedAt = System.nanoTime();
    int acksAtKill = stream.acks.get();
    log("m1 killed (SIGKILL) after %d acknowledgements", acksAtKill);

    // Requests for n1 succeed again once the shard has recovered on m2 or m3.
    await(
        "a request for n1 sent after the kill is acknowledged (shard recovered)",
        RECOVERY_DEADLINE_SECONDS,
        () -> stream.firstAckSentAfter(killedAt) != null);
    Op first = stream.firstAckSentAfter(killedAt);
    double recovery = (first.ackNanos - killAt) / 1e9;
    log("first acknowledgement after the kill: %s, %.1f s after the kill", first, recovery);
    int acksAtRecovery = stream.acks.get();
    await(
        ACKS_AFTER_RECOVERY + " more acknowledgements after recovery",
        60,
        () -> stream.acks.get() >= acksAtRecovery + ACKS_AFTER_RECOVERY);
    stream.stop();

    log(
        "stream: %d ops, %d acknowledged (%d before the kill), %d without answer or with an"
            + " error: %s",
        stream.ops.size(),
        stream.acks.get(),
        acksAtKill,
        stream.failures().size(),
        stream.failures());
    log("monitor: %d samples of n1, %d violations", stream.samples.get(), stream.violations.size());
    int[] n2Reads = stream.bystanderReadsBetween(killedAt, first.ackNanos);
    log(
        "GET /v1/nodes/n2 while n1 was failing over: %d answered, %d failed",
        n2Reads[0], n2Reads[1]);

    // Quiet now: wait until the decision state no longer changes, then compare the members.
    ObjectNode settled = awaitSettled(a2);
    assertEquals(settled, Checks.snapshot(a3), "m2 and m3 answer the same decision state");
    for (String node : NODES) {
      assertEquals(
          withoutTimes(a2.node(node)),
          withoutTimes(a3.node(node)),
          "NodeView of " + node + " through m2 and m3");
    }
    assertInvariants(a2);
    assertInvariants(a3);

    // 1. Every answer was consistent with the request; nothing was refused as bad input.
    assertEquals(
        List.of(), new ArrayList<>(stream.wrongAnswers), "acknowledged answers in the wrong state");
    List<Op> refused =
        stream.failures().stream().filter(o -> o.status >= 400 && o.status < 500).toList();
    assertEquals(List.of(), refused, "4xx answers for valid requests during the fail-over");

    // 2. No acknowledged request is lost.
    List<String> lost =
        AckedRequests.lost(stream.tracks.values(), pod -> a2.pod(pod).path("state").asText());
    assertEquals(List.of(), lost, "acknowledged requests lost in the fail-over");
    // In particular the pods left alone since the kill: acknowledged before it, found after it.
    List<String> frozen = new ArrayList<>();
    for (List<String> pods : work) {
      for (String pod : pods.subList(pods.size() - FROZEN, pods.size())) {
        Track track = stream.tracks.get(pod);
        if (track.lastAckedOp != null && track.uncertain == null) {
          frozen.add(pod + " " + track.lastAcked + " → " + a3.pod(pod).path("state").asText());
        }
      }
    }
    log("acknowledged before the kill, untouched since, in force after it: %s", frozen);
    assertFalse(frozen.isEmpty(), "some pod's last acknowledged request preceded the kill");

    // 3. Queue order: FIFO by entering Ready, consistent with the acknowledgements.
    List<String> order = queueOrder(a2.queue("n1"));
    List<String> fifo = new ArrayList<>();
    for (int i = 0; i < order.size(); i++) {
      for (int j = i + 1; j < order.size(); j++) {
        Op ahead = stream.tracks.get(name(order.get(i))).lastDemand;
        Op behind = stream.tracks.get(name(order.get(j))).lastDemand;
        if (ahead == null || behind == null) {
          fifo.add("queued without a demand: " + order.get(i) + " / " + order.get(j));
        } else if (behind.ackNanos > 0 && behind.ackNanos < ahead.sendNanos) {
          fifo.add(
              behind + " was acknowledged before " + ahead + " was sent, yet queues behind it");
        }
      }
    }
    assertEquals(List.of(), fifo, "queue order " + order);
    log("final n1 queue (%d): %s", order.size(), order);

    // 4. Invariant 1 held in every sample taken during the stream and the fail-over.
    assertEquals(List.of(), new ArrayList<>(stream.violations), "n1 samples broke invariants");
    assertTrue(stream.samples.get() > 0, "the monitor read n1 at least once");

    // 5. The other nodes did not notice.
    for (Map.Entry<String, JsonNode> b : bystanders.entrySet()) {
      JsonNode v = a2.pod(b.getKey());
      assertEquals("Running", v.path("state").asText(), () -> "bystander after fail-over: " + v);
      assertEquals(b.getValue(), v.get("gpu"), () -> "bystander's GPU after fail-over: " + v);
    }

    // 6. n1's shard now lives on exactly one surviving member, every entity type alike.
    Map<String, Map<String, List<String>>> after = awaitPlacement("after the kill", List.of(1, 2));
    Map<String, List<String>> n1Hosts = after.getOrDefault("n1", Map.of());
    log("shard n1 after the kill: %s", n1Hosts);
    assertEquals(
        1, n1Hosts.size(), () -> "n1's entity types must move together to one member: " + n1Hosts);
    for (int i = 1; i < 3; i++) {
      List<String> problems = ClusterHarness.problems(cluster.member(i), false);
      log("%s ERROR lines: %d%s", cluster.memberLabel(i), problems.size(), head(problems));
    }

    // ---------------------------------------------------------------- m1 comes back
    // The entity types that reads reach (node and pod views, queue), among those n1 had on m1.
    Set<String> homeTypes = new TreeSet<>(placement.get("n1").get(cluster.memberLabel(0)));
    homeTypes.retainAll(Set.of("Node", "NodeArbiter", "Pod"));
    long restartAt = System.nanoTime();
    ServerProcess m1 = cluster.startMember(0);
    Api b1 = m1.api();
    log("m1 restarted in %.1f s: %s", seconds(restartAt), m1.baseUri());
    // The shard goes home (rebalance) and starts on m1 at its next message.
    await(
        "shard n1 of " + homeTypes + " starts on the restarted m1 (role node:n1)",
        90,
        () -> {
          poke(b1, "n1");
          return ClusterHarness.typesStarted(m1, "n1").containsAll(homeTypes);
        });
    log(
        "n1 home again %.1f s after the restart; m1 started %s",
        seconds(restartAt), ClusterHarness.shardStarts(m1));
    // One arbiter at a time: every type's shard n1 finished its hand-off on its fail-over host
    // before it started on m1 (same machine, same clock; the log times have milliseconds).
    String hostLabel = n1Hosts.keySet().iterator().next();
    ServerProcess host = null;
    for (int i = 1; i < cluster.size(); i++) {
      if (cluster.memberLabel(i).equals(hostLabel)) {
        host = cluster.member(i);
      }
    }
    for (String type : homeTypes) {
      java.time.LocalTime handedOff =
          ClusterHarness.firstLogTime(host, type + ": Shard [n1] handoff complete");
      java.time.LocalTime started =
          ClusterHarness.firstLogTime(m1, type + ": Starting shard [n1] in region");
      assertTrue(
          handedOff != null && started != null,
          "hand-off of " + type + " n1 on " + hostLabel + " and its start on m1 are logged");
      long gapMillis = java.time.Duration.between(handedOff, started).toMillis();
      if (gapMillis < -12 * 3600_000L) {
        gapMillis += 24 * 3600_000L; // across midnight
      }
      log(
          "%s n1: handed off by %s at %s, started on m1 at %s",
          type, hostLabel, handedOff, started);
      assertTrue(
          gapMillis >= 0,
          type
              + " n1 started on m1 at "
              + started
              + " before "
              + hostLabel
              + " handed it off at "
              + handedOff);
    }
    assertEquals(settled, awaitSettled(b1), "n1's state after moving back to m1");
    assertEquals(settled, Checks.snapshot(a2), "m2 after n1 moved back");
    assertEquals(settled, Checks.snapshot(a3), "m3 after n1 moved back");
    assertEquals(withoutTimes(a2.node("n1")), withoutTimes(b1.node("n1")), "n1 via m1 and m2");
    assertInvariants(b1);

    // It arbitrates again: release the Running pod with the largest limit through m1; the queue
    // head moves in through the same arbiter, seen alike from m3.
    String running = null;
    for (JsonNode p : b1.pods("n1")) {
      if ("Running".equals(p.path("state").asText())) {
        running = p.path("name").asText();
        break;
      }
    }
    if (running != null) {
      assertEquals("Hibernation", b1.release(running).path("state").asText());
      assertEquals("Hibernation", a3.pod(running).path("state").asText());
      JsonNode again = b1.demand(running);
      assertTrue(
          Set.of("Ready", "Running").contains(again.path("state").asText()),
          () -> "demand through m1 after the move: " + again);
    }
    ObjectNode end = awaitSettled(a3);
    assertEquals(end, Checks.snapshot(b1), "m1 and m3 agree at the end");
    assertInvariants(b1);
    log("scenario done in %.1f s (recovery %.1f s after the kill)", seconds(startedAt), recovery);
  }

  // ------------------------------------------------------------------ the stream of requests

  /**
   * Client threads, each with its own pods, alternating demand and release on them through the
   * given members; a monitor thread samples n1's NodeView for invariant 1. A request without a 2xx
   * answer leaves its pod's state unknown, so that pod is not used again (its request may still be
   * applied later); after such a failure the thread probes (GET of its next pod) until the members
   * answer again.
   */
  private final class Stream {
    final List<Api> via;
    final List<List<String>> work;
    final Map<String, Track> tracks = new LinkedHashMap<>();
    final ConcurrentLinkedQueue<Op> ops = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> wrongAnswers = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    final AtomicInteger acks = new AtomicInteger();
    final AtomicInteger samples = new AtomicInteger();

    /** Reads of n2 (a node whose member lives): send time, and whether it was answered 200. */
    final ConcurrentLinkedQueue<long[]> bystanderReads = new ConcurrentLinkedQueue<>();

    final List<Thread> threads = new ArrayList<>();
    final ConcurrentLinkedQueue<Throwable> crashes = new ConcurrentLinkedQueue<>();
    volatile boolean stopping;
    volatile boolean killed;

    Stream(List<Api> via, List<List<String>> work) {
      this.via = via;
      this.work = work;
      work.forEach(pods -> pods.forEach(p -> tracks.put(p, new Track(p))));
    }

    void start() {
      for (int t = 0; t < work.size(); t++) {
        int id = t;
        threads.add(thread("client-" + t, () -> client(id)));
      }
      threads.add(thread("monitor", this::monitor));
      threads.add(thread("bystander", this::bystander));
      threads.forEach(Thread::start);
    }

    private Thread thread(String name, Runnable body) {
      Thread th =
          new Thread(
              () -> {
                try {
                  body.run();
                } catch (Throwable e) {
                  crashes.add(e);
                }
              },
              "ClusterFailoverTest-" + name);
      th.setDaemon(true);
      return th;
    }

    boolean failed() {
      return !crashes.isEmpty();
    }

    void stop() throws InterruptedException {
      stopping = true;
      for (Thread th : threads) {
        th.join(TimeUnit.SECONDS.toMillis(90));
        assertFalse(th.isAlive(), () -> th.getName() + " did not stop");
      }
      if (!crashes.isEmpty()) {
        AssertionError e = new AssertionError("a client thread failed: " + crashes.peek());
        crashes.forEach(e::addSuppressed);
        throw e;
      }
    }

    List<Op> failures() {
      return ops.stream().filter(o -> o.ackNanos < 0 && o.answer != null).toList();
    }

    Op firstAckSentAfter(long nanos) {
      Op best = null;
      for (Op o : ops) {
        if (o.ackNanos > 0 && o.sendNanos > nanos && (best == null || o.ackNanos < best.ackNanos)) {
          best = o;
        }
      }
      return best;
    }

    private void client(int id) {
      List<String> mine = work.get(id);
      java.util.Random random = new java.util.Random(4711L + id);
      int sent = 0;
      boolean probe = false;
      while (!stopping) {
        // After the kill the last FROZEN pods of each client are left alone: what was
        // acknowledged for them before the kill must be found again after the fail-over.
        int eligible = killed ? mine.size() - FROZEN : mine.size();
        List<Track> usable = new ArrayList<>();
        for (int k = 0; k < eligible; k++) {
          Track candidate = tracks.get(mine.get(k));
          if (candidate.uncertain == null) {
            usable.add(candidate);
          }
        }
        if (usable.isEmpty()) {
          return; // every pod of this client is in an unknown state
        }
        Track track = usable.get(random.nextInt(usable.size()));
        Api api = via.get((id + sent++) % via.size());
        if (probe) {
          Api.Resp r;
          try {
            r = api.get(Api.podPath(track.pod));
          } catch (RuntimeException e) {
            r = null;
          }
          if (r == null || r.status() != 200) {
            sleep(1000);
            continue;
          }
          probe = false;
        }
        Kind kind = track.lastAcked == Kind.DEMAND ? Kind.RELEASE : Kind.DEMAND;
        Op op = new Op(track.pod, kind, label(api));
        ops.add(op);
        if (kind == Kind.DEMAND) {
          track.lastDemand = op;
        }
        Api.Resp r;
        try {
          r =
              kind == Kind.DEMAND
                  ? api.post(Api.podPath(track.pod) + "/demand", null, null)
                  : api.delete(Api.podPath(track.pod) + "/demand");
        } catch (RuntimeException e) {
          op.answer = e.toString();
          track.uncertain = op;
          probe = true;
          continue;
        }
        op.status = r.status();
        if (r.status() >= 200 && r.status() < 300) {
          op.ackNanos = System.nanoTime();
          String state = r.json().path("state").asText();
          if (!effect(kind).contains(state)) {
            wrongAnswers.add(op + " answered state " + state + ": " + r.body());
          }
          track.lastAcked = kind;
          track.lastAckedOp = op;
          acks.incrementAndGet();
          sleep(20);
        } else {
          op.answer = r.body();
          track.uncertain = op;
          probe = true;
        }
      }
    }

    /**
     * Samples n1 through every member in turn, each view one snapshot of its arbiter: the NodeView
     * (per GPU inUse ≤ 100, no pod on two GPUs, none both queued and on a GPU, positions 1..n) and
     * the pod list (every Running pod on exactly one GPU and not queued, every Ready pod queued and
     * on none, per GPU Σ limits ≤ 100, positions 1..n).
     */
    private void monitor() {
      while (!stopping) {
        for (Api api : via) {
          checkNode(get(api, "/v1/nodes/n1"));
          checkPods(get(api, "/v1/pods?node=n1"));
        }
        sleep(250);
      }
    }

    private JsonNode get(Api api, String path) {
      try {
        Api.Resp r = api.get(path);
        return r.status() == 200 ? r.json() : null;
      } catch (RuntimeException e) {
        return null;
      }
    }

    private void checkNode(JsonNode n) {
      if (n != null) {
        samples.incrementAndGet();
        violations.addAll(TornViews.ofNode(n));
      }
    }

    private void checkPods(JsonNode list) {
      if (list != null) {
        samples.incrementAndGet();
        violations.addAll(TornViews.ofPodList(list));
      }
    }

    /** Reads n2 (whose member lives) all along: does n1's fail-over stall other nodes? */
    private void bystander() {
      int i = 0;
      while (!stopping) {
        Api api = via.get(i++ % via.size());
        long sent = System.nanoTime();
        boolean ok;
        try {
          ok = api.get("/v1/nodes/n2").status() == 200;
        } catch (RuntimeException e) {
          ok = false;
        }
        bystanderReads.add(new long[] {sent, ok ? 1 : 0});
        sleep(500);
      }
    }

    /** [answered, failed] reads of n2 sent between the two instants. */
    int[] bystanderReadsBetween(long from, long to) {
      int[] c = new int[2];
      for (long[] r : bystanderReads) {
        if (r[0] >= from && r[0] <= to) {
          c[r[1] == 1 ? 0 : 1]++;
        }
      }
      return c;
    }
  }

  // ------------------------------------------------------------------ helpers

  /**
   * Where each node's shards were started, from the logs of the given members (by index): node →
   * member label → entity types. Waits a little for log lines still in the pipe to arrive.
   */
  private Map<String, Map<String, List<String>>> awaitPlacement(String when, List<Integer> idx) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    Map<String, Map<String, List<String>>> out;
    do {
      out = new TreeMap<>();
      for (int i : idx) {
        String label = cluster.memberLabel(i);
        Map<String, List<String>> started = ClusterHarness.shardStarts(cluster.member(i));
        for (Map.Entry<String, List<String>> e : started.entrySet()) {
          for (String shard : e.getValue()) {
            if (NODES.contains(shard)) {
              out.computeIfAbsent(shard, s -> new TreeMap<>())
                  .computeIfAbsent(label, l -> new ArrayList<>())
                  .add(e.getKey());
            }
          }
        }
      }
      if (out.keySet().containsAll(when.startsWith("before") ? NODES : List.of("n1"))) {
        return out;
      }
      sleep(250);
    } while (System.nanoTime() < deadline);
    fail(
        "no 'Starting shard' log lines for every node "
            + when
            + " (is DEBUG logging of ShardRegion on?): "
            + out
            + "; members "
            + cluster.describe());
    return out;
  }

  /** A snapshot that stays the same over two reads one second apart (bounded). */
  private static ObjectNode awaitSettled(Api api) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    ObjectNode last = null;
    while (System.nanoTime() < deadline) {
      ObjectNode now;
      try {
        now = Checks.snapshot(api);
      } catch (RuntimeException | AssertionError e) {
        sleep(1000);
        continue;
      }
      if (now.equals(last)) {
        return now;
      }
      last = now;
      sleep(1000);
    }
    throw new AssertionError("the decision state did not settle within 60 s via " + api.base());
  }

  /** A message for n1's shard (ignoring failures while the shard moves). */
  private static void poke(Api api, String node) {
    try {
      api.get("/v1/nodes/" + node);
      api.get("/v1/nodes/" + node + "/queue");
      api.get("/v1/pods?node=" + node);
    } catch (RuntimeException e) {
      // moving; try again
    }
  }

  private String label(Api api) {
    for (int i = 0; i < cluster.size(); i++) {
      ServerProcess m = cluster.member(i);
      if (m != null && m.api() == api) {
        return cluster.memberLabel(i).replaceAll(".*-", "");
      }
    }
    return api.base().toString();
  }

  private static String name(String nsName) {
    return nsName.substring(nsName.indexOf('/') + 1);
  }

  private static void await(String what, long seconds, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("not within " + seconds + " s: " + what);
      }
      sleep(200);
    }
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

  private static String head(List<String> lines) {
    return lines.isEmpty()
        ? ""
        : "\n  " + String.join("\n  ", lines.subList(0, Math.min(8, lines.size())));
  }

  private static void log(String format, Object... args) {
    System.out.printf("[ClusterFailoverTest] " + format + "%n", args);
    System.out.flush();
  }
}
