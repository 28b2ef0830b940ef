package dev.gpushare.e2e;

import static dev.gpushare.e2e.AckedRequests.effect;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.e2e.AckedRequests.Kind;
import dev.gpushare.e2e.AckedRequests.Op;
import dev.gpushare.e2e.AckedRequests.Track;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.cluster.ClusterFormation;
import dev.gpushare.node.cluster.NodeShardAllocation;
import dev.gpushare.persistence.JdbcJournalInspector;
import dev.gpushare.persistence.PersistenceProfiles;
import dev.gpushare.persistence.PostgresServer;
import dev.gpushare.persistence.SchemaSetup;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.remote.RARP;
import org.apache.pekko.remote.artery.ArteryTransport;
import org.apache.pekko.remote.transport.ThrottlerTransportAdapter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.FutureConverters;

/**
 * A network partition (ISSUE 4, ARCHITECTURE.md invariant 4): three members on loopback, each the
 * member of one node, sharing a real PostgreSQL journal; the member of node {@code n1} is cut off
 * from the other two in both directions while clients stream demands and releases through all
 * three. The split-brain resolver (keep-majority) makes the cut-off member down itself and the
 * other two down it; n1's shard then starts on a majority member, recovers from PostgreSQL, and
 * when n1's member comes back as a new incarnation the shard returns to it.
 *
 * <p>The members are three actor systems in this JVM (the production runtime, persistence and
 * routes, each with its own remoting port and HTTP port), because a partition is made with Artery's
 * test mode ({@code pekko.remote.artery.advanced.test-mode}), which drops every message between two
 * addresses, heartbeats included — exactly what a broken network does, and nothing else.
 *
 * <p>The witness of "never two arbiters for one node": every {@code NodeArbiter} logs when it
 * becomes active (recovery completed; from then on it decides) and when it stops. An appender
 * records these lines with {@link System#nanoTime()} as they are written (typed actors log
 * synchronously), across the three members of the one JVM; the test asserts that for each node the
 * spans of different members never overlap.
 *
 * <p>All along, a monitor reads n1's node view and pod list through every member still up, the
 * cut-off one included while it decides: each view is one snapshot of an arbiter's book, so none
 * may ever break invariants 1–3 ({@link TornViews}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterPartitionTest {

  private static final String NO_PREEMPTION = Manifests.qos(false, 120);

  /**
   * Failure detection, the resolver's stable-after and (through it) the removal margin, scaled down
   * from gpushare-runtime.conf's production values so that the test takes seconds, with the same
   * rule: the cut-off side downs itself when the majority side downs it, and shards move only a
   * removal margin later.
   */
  private static final String TIMINGS =
      """
      pekko.remote.artery.advanced.test-mode = on
      pekko.cluster.failure-detector.acceptable-heartbeat-pause = 3s
      pekko.cluster.split-brain-resolver.active-strategy = keep-majority
      pekko.cluster.split-brain-resolver.stable-after = 4s
      """;

  private static final int CLIENTS = 3;
  private static final int PODS_PER_CLIENT = 6;
  private static final int[] LIMITS = {100, 50, 70, 40, 60, 30};
  private static final int ACKS_BEFORE_PARTITION = 40;
  private static final int ACKS_AFTER_TAKEOVER = 20;
  private static final long DEADLINE_SECONDS = 90;

  private static final Pattern ACTIVE =
      Pattern.compile("node (\\S+): arbiter active on (\\S+) after recovering (\\d+) event");
  private static final Pattern STOPPED = Pattern.compile("node (\\S+): arbiter stopped on (\\S+)");

  private PostgresServer postgres;
  private String databaseUrl;
  private final Map<String, Member> members = new LinkedHashMap<>();
  private final Witness witness = new Witness();
  private Logger arbiterLog;
  private long startedAt;

  /** One member: its actor system, the node it runs on and the API bound on a random port. */
  private record Member(String node, int port, ActorSystem<Void> system, Api api) {
    String address() {
      return system.address().toString();
    }
  }

  /** A NodeArbiter becoming active or stopping, as logged, when it was logged. */
  private record Mark(long nanos, boolean active, String node, String member, String line) {}

  /** Records the arbiters' lifecycle lines of every member in this JVM. */
  private static final class Witness extends AppenderBase<ILoggingEvent> {
    final ConcurrentLinkedQueue<Mark> marks = new ConcurrentLinkedQueue<>();

    @Override
    protected void append(ILoggingEvent event) {
      long now = System.nanoTime();
      String line = event.getFormattedMessage();
      Matcher active = ACTIVE.matcher(line);
      Matcher stopped = STOPPED.matcher(line);
      if (active.find()) {
        marks.add(new Mark(now, true, active.group(1), active.group(2), line));
      } else if (stopped.find()) {
        marks.add(new Mark(now, false, stopped.group(1), stopped.group(2), line));
      }
    }

    List<Mark> of(String node) {
      return marks.stream().filter(m -> m.node().equals(node)).toList();
    }

    /** The members on which {@code node}'s arbiter was ever active, in order of activation. */
    List<String> activations(String node) {
      return of(node).stream().filter(Mark::active).map(Mark::member).toList();
    }

    /**
     * Where two members' arbiters for one node were active at the same time. A member's arbiter may
     * become active again without a stop in between (a restart after a journal failure): that is
     * still one member.
     */
    List<String> overlaps() {
      List<String> found = new ArrayList<>();
      Map<String, List<Mark>> byNode =
          marks.stream()
              .sorted((a, b) -> Long.compare(a.nanos(), b.nanos()))
              .collect(Collectors.groupingBy(Mark::node, LinkedHashMap::new, Collectors.toList()));
      byNode.forEach(
          (node, list) -> {
            Map<String, Mark> active = new LinkedHashMap<>();
            for (Mark m : list) {
              if (m.active()) {
                for (Mark other : active.values()) {
                  if (!other.member().equals(m.member())) {
                    found.add("node " + node + ": " + m.line() + " while " + other.line());
                  }
                }
                active.put(m.member(), m);
              } else {
                active.remove(m.member());
              }
            }
          });
      return found;
    }
  }

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    startedAt = System.nanoTime();
    arbiterLog = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
    witness.setContext(arbiterLog.getLoggerContext());
    witness.start();
    arbiterLog.addAppender(witness);

    postgres = PostgresServer.start(dir.resolve("postgres"));
    databaseUrl = postgres.createDatabase("partition");
    int p1 = ClusterHarness.freePort();
    int p2 = ClusterHarness.freePort();
    int p3 = ClusterHarness.freePort();
    List<Integer> seeds = List.of(p1);
    Member m1 = startMember("n1", p1, seeds, true);
    members.put("n1", m1);
    members.put("n2", startMember("n2", p2, seeds, false));
    members.put("n3", startMember("n3", p3, seeds, false));
    await(
        "three members Up on every member",
        () -> members.values().stream().allMatch(m -> up(m) == 3));
    log("cluster up after %.1f s", seconds(startedAt));
  }

  @AfterAll
  void stop() {
    for (Member m : members.values()) {
      m.system().terminate();
    }
    for (Member m : members.values()) {
      try {
        m.system().getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
      } catch (Exception e) {
        log("%s did not terminate: %s", m.address(), e);
      }
    }
    if (arbiterLog != null) {
      arbiterLog.detachAppender(witness);
    }
    if (postgres != null) {
      postgres.close();
    }
    log("ClusterPartitionTest total %.1f s", seconds(startedAt));
  }

  private Member startMember(String node, int port, List<Integer> seedPorts, boolean createSchema)
      throws Exception {
    String seeds =
        seedPorts.stream()
            .map(p -> "\"pekko://gpushare@127.0.0.1:" + p + "\"")
            .collect(Collectors.joining(", "));
    Config config =
        ConfigFactory.parseString(
                TIMINGS
                    + "pekko.remote.artery.canonical.port = "
                    + port
                    + "\npekko.cluster.seed-nodes = ["
                    + seeds
                    + "]\n")
            .withFallback(NodeShardAllocation.rolesConfig(Optional.of(node)))
            .withFallback(
                PersistenceProfiles.postgres(
                    databaseUrl, PostgresServer.USER, PostgresServer.PASSWORD))
            .withFallback(GpuShareRuntime.config());
    ActorSystem<Void> system =
        ActorSystem.create(Behaviors.empty(), "gpushare", ConfigFactory.load(config));
    if (createSchema) {
      SchemaSetup.create(system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
    RuntimeSettings settings =
        new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(5));
    // As the launcher does: join (the seed nodes), then start the runtime once this member is Up.
    GpuShareService service =
        ClusterFormation.embedded()
            .start(system)
            .thenCompose(up -> GpuShareRuntime.start(system, settings, ArbiterClock.system()))
            .toCompletableFuture()
            .get(120, TimeUnit.SECONDS);
    int httpPort =
        new HttpApi(service, JdbcJournalInspector.create(system), instant -> {})
            .bind(system, "127.0.0.1", 0)
            .toCompletableFuture()
            .get(30, TimeUnit.SECONDS)
            .localAddress()
            .getPort();
    Api api = new Api(URI.create("http://127.0.0.1:" + httpPort));
    log("member of %s: remoting %d, API %s", node, port, api.base());
    return new Member(node, port, system, api);
  }

  private static long up(Member m) {
    if (m.system().whenTerminated().isCompleted()) {
      return -1;
    }
    List<org.apache.pekko.cluster.Member> all = new ArrayList<>();
    Cluster.get(m.system()).state().getMembers().forEach(all::add);
    return all.stream().filter(x -> x.status() == MemberStatus.up()).count();
  }

  // ------------------------------------------------------------------ the scenario

  @Test
  void aCutOffMemberDownsItselfBeforeItsNodeIsArbitratedElsewhereAndNothingAcknowledgedIsLost()
      throws Exception {
    Member m1 = members.get("n1");
    Member m2 = members.get("n2");
    Member m3 = members.get("n3");
    m1.api().putNode("n1", 2, "share-pool", NO_PREEMPTION);
    m2.api().putNode("n2", 2, "share-pool", NO_PREEMPTION);
    m3.api().putNode("n3", 2, "share-pool", NO_PREEMPTION);
    List<List<String>> work = new ArrayList<>();
    for (int c = 0; c < CLIENTS; c++) {
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < PODS_PER_CLIENT; i++) {
        String name = "n1-c" + c + "-" + i;
        m2.api().createPod(sharePod(name, "n1", 5, LIMITS[(c + i) % LIMITS.length]));
        mine.add(name);
      }
      work.add(mine);
    }
    m3.api().createPod(sharePod("n2-bystander", "n2", 5, 50));
    m3.api().demand("n2-bystander");
    m2.api().createPod(sharePod("n3-bystander", "n3", 5, 50));
    m2.api().demand("n3-bystander");
    assertEquals(List.of(m1.address()), witness.activations("n1"), "n1 starts on its own member");
    assertEquals(List.of(m2.address()), witness.activations("n2"), "n2 starts on its own member");
    assertEquals(List.of(m3.address()), witness.activations("n3"), "n3 starts on its own member");

    Stream stream = new Stream(List.of(m1.api(), m2.api(), m3.api()), work);
    stream.start();
    await(
        "acknowledged requests before the partition",
        () -> stream.acks.get() >= ACKS_BEFORE_PARTITION || stream.failed());
    int acksBefore = stream.acks.get();

    long cutAt = System.nanoTime();
    partition(m1, List.of(m2, m3));
    log("partition: %s cut off from %s and %s", m1.address(), m2.address(), m3.address());

    // The cut-off member is the minority: it downs itself and its actor system ends.
    await(
        "the cut-off member of n1 downs itself and terminates",
        () -> m1.system().whenTerminated().isCompleted());
    long selfDownedAt = System.nanoTime();
    // The majority downs it, removes it, and n1's shard starts on one of the two.
    await("the majority removes n1's member", () -> up(m2) == 2 && up(m3) == 2);
    await(
        "n1 arbitrated again on the majority side",
        () -> witness.activations("n1").size() >= 2 || stream.failed());
    long takeoverAt =
        witness.of("n1").stream().filter(Mark::active).skip(1).findFirst().orElseThrow().nanos();
    await(
        "requests acknowledged on n1 after the take-over",
        () -> stream.acksSince(takeoverAt) >= ACKS_AFTER_TAKEOVER || stream.ended());
    stream.stop();
    log(
        "cut at 0 s; n1's member terminated at %.1f s; n1 active again on %s at %.1f s;"
            + " %d acks before the cut, %d in all, %d unanswered",
        (selfDownedAt - cutAt) / 1e9,
        witness.activations("n1").get(1),
        (takeoverAt - cutAt) / 1e9,
        acksBefore,
        stream.acks.get(),
        stream.failures().size());

    // 1. Never two arbiters for one node, and only n1 moved.
    assertEquals(List.of(), witness.overlaps(), "arbiters active on two members at once");
    assertEquals(m1.address(), witness.activations("n1").get(0));
    assertTrue(
        List.of(m2.address(), m3.address()).contains(witness.activations("n1").get(1)),
        () -> "n1 moves to a majority member: " + witness.of("n1"));
    Mark m1Stop =
        witness.of("n1").stream()
            .filter(m -> !m.active() && m.member().equals(m1.address()))
            .findFirst()
            .orElseThrow(
                () -> new AssertionError("n1's arbiter on the cut-off member never stopped"));
    assertTrue(
        m1Stop.nanos() < takeoverAt,
        () -> "the cut-off arbiter stops before the new one starts: " + witness.of("n1"));
    assertEquals(List.of(m2.address()), witness.activations("n2"), "n2 never moves");
    assertEquals(List.of(m3.address()), witness.activations("n3"), "n3 never moves");

    // 2. Answers and the invariants while it happened and after.
    assertEquals(List.of(), List.copyOf(stream.wrongAnswers), "answers contradicting the request");
    // Every view read through any member, all along, was one consistent snapshot.
    assertEquals(List.of(), List.copyOf(stream.torn), "views that broke invariants 1-3");
    assertTrue(stream.samples.get() > 0, "the monitor read n1's views");
    List<Op> refused =
        stream.failures().stream().filter(o -> o.status >= 400 && o.status < 500).toList();
    assertEquals(List.of(), refused, "4xx answers for valid requests during the partition");
    ObjectNode settled = awaitSettled(m2.api());
    assertEquals(settled, Checks.snapshot(m3.api()), "the two members agree after the partition");
    assertInvariants(m2.api());

    // 3. Every acknowledged request, including those the cut-off member acknowledged, is in force.
    assertEquals(
        List.of(),
        AckedRequests.lost(stream.tracks.values(), pod -> m3.api().pod(pod).path("state").asText()),
        "acknowledged requests lost in the partition");
    log(
        "the cut-off member acknowledged %d request(s) after the cut (in force after the move)",
        stream.ops.stream()
            .filter(o -> o.ackNanos > cutAt && o.via.equals(m1.api().base().toString()))
            .count());

    // 4. n1's member comes back as a new incarnation on the same address: n1's shard returns to
    //    it, again without overlap, and nothing changes on the way.
    heal(m1, List.of(m2, m3));
    Member back = startMember("n1", m1.port(), List.of(m2.port(), m3.port()), false);
    members.put("n1", back);
    await("n1's member Up again", () -> up(back) == 3 && up(m2) == 3);
    await("n1 arbitrated on its own member again", () -> witness.activations("n1").size() >= 3);
    assertEquals(back.address(), witness.activations("n1").get(2), "n1 returns home");
    assertEquals(List.of(), witness.overlaps(), "arbiters active on two members at once");
    ObjectNode home = awaitSettled(back.api());
    assertEquals(
        Checks.withoutTimes(settled), Checks.withoutTimes(home), "state unchanged by the return");
    assertInvariants(back.api());
    for (Track track : stream.tracks.values()) {
      if (track.uncertain == null) {
        String state = back.api().pod(track.pod).path("state").asText();
        assertTrue(
            effect(track.lastAcked).contains(state),
            () -> track.pod + " is " + state + " after " + track.lastAckedOp);
      }
    }
    log("scenario done in %.1f s", seconds(startedAt));
  }

  /**
   * Drops every message between {@code cut} and each of {@code others}, both ways, on both ends.
   */
  private static void partition(Member cut, List<Member> others) throws Exception {
    for (Member other : others) {
      blackhole(cut.system(), other.system().address());
      blackhole(other.system(), cut.system().address());
    }
  }

  /** Ends the partition: messages flow again between the majority and the cut-off address. */
  private static void heal(Member cut, List<Member> others) throws Exception {
    for (Member other : others) {
      throttle(other.system(), cut.system().address(), false);
    }
  }

  private static void blackhole(ActorSystem<?> at, Address remote) throws Exception {
    throttle(at, remote, true);
  }

  @SuppressWarnings("deprecation") // Artery's test mode still takes the classic throttle commands
  private static void throttle(ActorSystem<?> at, Address remote, boolean blackhole)
      throws Exception {
    ArteryTransport transport =
        (ArteryTransport) ((RARP) RARP.get(Adapter.toClassic(at))).provider().transport();
    Object done =
        FutureConverters.asJava(
                transport.managementCommand(
                    new ThrottlerTransportAdapter.SetThrottle(
                        remote,
                        ThrottlerTransportAdapter.bothDirection(),
                        blackhole
                            ? ThrottlerTransportAdapter.blackholeThrottleMode()
                            : ThrottlerTransportAdapter.unthrottledThrottleMode())))
            .toCompletableFuture()
            .get(10, TimeUnit.SECONDS);
    assertEquals(Boolean.TRUE, done, "Artery test mode took the throttle command for " + remote);
  }

  // ------------------------------------------------------------------ the stream of requests

  /**
   * Client threads alternating demand and release on their own pods of n1, each request through the
   * next member in turn. A request without a 2xx answer leaves its pod's state unknown, so the pod
   * is not used again; after the cut-off member has terminated the clients stop using it.
   */
  private static final class Stream {
    final List<Api> via;
    final List<List<String>> work;
    final Map<String, Track> tracks = new LinkedHashMap<>();
    final ConcurrentLinkedQueue<Op> ops = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> wrongAnswers = new ConcurrentLinkedQueue<>();
    final AtomicInteger acks = new AtomicInteger();
    final List<Thread> threads = new ArrayList<>();
    final ConcurrentLinkedQueue<Throwable> crashes = new ConcurrentLinkedQueue<>();
    final Set<String> gone = ConcurrentHashMap.newKeySet();

    /** What the monitor saw that no view may show (TornViews), and how many views it read. */
    final ConcurrentLinkedQueue<String> torn = new ConcurrentLinkedQueue<>();

    final AtomicInteger samples = new AtomicInteger();
    Thread monitor;
    volatile boolean stopping;

    Stream(List<Api> via, List<List<String>> work) {
      this.via = via;
      this.work = work;
      work.forEach(pods -> pods.forEach(p -> tracks.put(p, new Track(p))));
    }

    void start() {
      for (int c = 0; c < work.size(); c++) {
        int id = c;
        Thread th =
            new Thread(
                () -> {
                  try {
                    client(id);
                  } catch (Throwable e) {
                    crashes.add(e);
                  }
                },
                "ClusterPartitionTest-client-" + c);
        th.setDaemon(true);
        threads.add(th);
      }
      threads.forEach(Thread::start);
      monitor = new Thread(this::monitor, "ClusterPartitionTest-monitor");
      monitor.setDaemon(true);
      monitor.start();
    }

    /** Reads n1's node view and pod list through every member still up, all along. */
    private void monitor() {
      while (!stopping) {
        for (Api api : via) {
          if (gone.contains(api.base().toString())) {
            continue;
          }
          sample(api, "/v1/nodes/n1", TornViews::ofNode);
          sample(api, "/v1/pods?node=n1", TornViews::ofPodList);
        }
        sleep(250);
      }
    }

    private void sample(
        Api api, String path, java.util.function.Function<JsonNode, List<String>> check) {
      try {
        Api.Resp r = api.get(path);
        if (r.status() == 200) {
          samples.incrementAndGet();
          check.apply(r.json()).forEach(v -> torn.add(api.base() + path + ": " + v));
        }
      } catch (RuntimeException e) {
        // a member being cut off or stopping: nothing to check
      }
    }

    boolean failed() {
      return !crashes.isEmpty();
    }

    /** Whether every client has stopped (crashed, or no pod of known state left). */
    boolean ended() {
      return threads.stream().noneMatch(Thread::isAlive);
    }

    long acksSince(long nanos) {
      return ops.stream().filter(o -> o.ackNanos > nanos).count();
    }

    List<Op> failures() {
      return ops.stream().filter(o -> o.ackNanos < 0 && o.answer != null).toList();
    }

    void stop() throws InterruptedException {
      stopping = true;
      monitor.join(TimeUnit.SECONDS.toMillis(90));
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

    private void client(int id) {
      List<String> mine = work.get(id);
      Random random = new Random(1907L + id);
      int sent = 0;
      while (!stopping) {
        List<Track> usable = new ArrayList<>();
        for (String pod : mine) {
          if (tracks.get(pod).uncertain == null) {
            usable.add(tracks.get(pod));
          }
        }
        if (usable.isEmpty()) {
          return; // every pod of this client is in an unknown state
        }
        Track track = usable.get(random.nextInt(usable.size()));
        // A member that refuses connections is gone (terminated): the others are asked.
        List<Api> live = via.stream().filter(a -> !gone.contains(a.base().toString())).toList();
        Api api = live.get((id + sent++) % live.size());
        Kind kind = track.lastAcked == Kind.DEMAND ? Kind.RELEASE : Kind.DEMAND;
        Op op = new Op(track.pod, kind, api.base().toString());
        ops.add(op);
        Api.Resp r;
        try {
          r =
              kind == Kind.DEMAND
                  ? api.post(Api.podPath(track.pod) + "/demand", null, null)
                  : api.delete(Api.podPath(track.pod) + "/demand");
        } catch (RuntimeException e) {
          op.answer = e.toString();
          if (refused(e)) {
            // Never received, so certainly not applied: the pod's state is still known.
            gone.add(op.via);
          } else {
            track.uncertain = op;
            sleep(200);
          }
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
          sleep(200);
        }
      }
    }
  }

  // ------------------------------------------------------------------ helpers

  /** Whether the request failed because no server listened: it never reached a member. */
  private static boolean refused(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.net.ConnectException) {
        return true;
      }
    }
    return false;
  }

  /** The cluster's snapshot once two reads a moment apart agree (no decision in flight). */
  private static ObjectNode awaitSettled(Api api) {
    ObjectNode[] last = {null};
    await(
        "the cluster settles",
        () -> {
          ObjectNode now = Checks.snapshot(api);
          boolean same =
              last[0] != null && Checks.withoutTimes(now).equals(Checks.withoutTimes(last[0]));
          last[0] = now;
          if (!same) {
            sleep(300);
          }
          return same;
        });
    return last[0];
  }

  private static void await(String what, BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("not within " + DEADLINE_SECONDS + " s: " + what);
      }
      sleep(100);
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

  private static void log(String format, Object... args) {
    System.out.printf("[ClusterPartitionTest] " + format + "%n", args);
  }
}
