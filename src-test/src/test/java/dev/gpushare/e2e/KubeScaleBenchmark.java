package dev.gpushare.e2e;

import static dev.gpushare.e2e.KubernetesModeTest.GPU_INDEX;
import static dev.gpushare.e2e.KubernetesModeTest.RECLAIM;
import static dev.gpushare.e2e.KubernetesModeTest.VALID;
import static dev.gpushare.e2e.Manifests.POLICY_LABEL;
import static dev.gpushare.e2e.Manifests.QOS_ANNOTATION;

import dev.gpushare.gpu.ChildProcess;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scale, measured (issue 33 item 7; src-test/BENCHMARKS.md, "A real API server at scale"): a real
 * control plane ({@link RealKubeApiServer}: etcd and kube-apiserver v1.37.2, the member on the
 * shipped ServiceAccount's RBAC only), kwok v0.8.0 playing the kubelets of {@code nodes} GPU-HPN
 * nodes (share-pool, 8 GPUs each; Leases renewed every 10 s) and keeping {@code pods} share-pool
 * pods bound to them Running, and one member (a child JVM in Kubernetes mode, {@code NODE_NAME}
 * unset) hosting every node's arbiter. Grants are driven through the member's HTTP API; what the
 * member writes is seen through watches on the API server; the API server's own {@code
 * apiserver_request_total} counts every request by verb and resource.
 *
 * <p>A benchmark, not a test: its name matches none of Surefire's patterns, so {@code mvn verify}
 * never runs it, and it asserts no figure. Run it with {@code -Dtest=KubeScaleBenchmark}; the sizes
 * and settings are system properties ({@code gpushare.bench.*}, {@link Params}); it prints its
 * tables and writes them to {@code src-test/target/kube-scale/}.
 *
 * <p>Phases: the objects are created (admin client) and kwok brings them up; the watches start; the
 * member starts and its writer makes its first full pass (every node's status written, every pod
 * read); then one measured window in which {@code concurrency} closed loops demand → hold → release
 * random pods, a sample of nodes has its QoS annotation broken and then removed (node status
 * writes), and on {@code preempt-nodes} nodes with {@code podMaxDurationMinutes: 1} nine full-GPU
 * pods contend for eight GPUs (preemptions: pod conditions and Events); then the writer is awaited
 * until the API server shows the arbiter's latest state, the member's heap is read (jcmd), the
 * member stops, and the floors run in the same JVM against the same API server (kwok still
 * running): one thread reading and patching pods as the writer does, limited by the member's QPS
 * and burst; the same unlimited; and 16 threads patching unlimited (the API server's raw write
 * rate).
 */
class KubeScaleBenchmark {

  static final String NS = Api.NS;
  static final String KWOK_ANNOTATION = "kwok.x-k8s.io/node";
  static final String FLOOR_ANNOTATION = "bench.gpushare.dev/floor";
  static final int GPUS = 8;

  /** The sizes and settings, from system properties {@code gpushare.bench.<name>}. */
  record Params(
      int nodes,
      int pods,
      double qps,
      int burst,
      int concurrency,
      long holdMillis,
      long holdMaxMillis,
      int probes,
      int windowSeconds,
      int nodeChanges,
      int preemptNodes,
      int settleSeconds,
      int flushSeconds,
      int floorSeconds,
      String memberXmx) {

    static Params fromSystemProperties() {
      return new Params(
          intProp("nodes", 1000),
          intProp("pods", 10000),
          Double.parseDouble(prop("qps", "20")),
          intProp("burst", 40),
          intProp("concurrency", 16),
          intProp("hold-ms", 200),
          intProp("hold-max-ms", intProp("hold-ms", 200)),
          intProp("probes", 4),
          intProp("window-seconds", 90),
          intProp("node-changes", 100),
          intProp("preempt-nodes", 10),
          intProp("settle-seconds", 180),
          intProp("flush-seconds", 180),
          intProp("floor-seconds", 15),
          prop("member-xmx", "1g"));
    }

    private static String prop(String name, String fallback) {
      return System.getProperty("gpushare.bench." + name, fallback);
    }

    private static int intProp(String name, int fallback) {
      return Integer.parseInt(prop(name, Integer.toString(fallback)));
    }
  }

  private final List<String> out = new ArrayList<>();

  private void say(String format, Object... args) {
    String line = String.format(Locale.ROOT, format, args);
    System.out.println(line);
    synchronized (out) {
      out.add(line);
    }
  }

  private void log(String format, Object... args) {
    System.out.printf(
        Locale.ROOT,
        "[%s] %s%n",
        LocalDateTime.now().format(DateTimeFormatter.ofPattern("HH:mm:ss")),
        String.format(Locale.ROOT, format, args));
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.MINUTES)
  void scale() throws Exception {
    Params p = Params.fromSystemProperties();
    int perNode = Math.max(1, p.pods() / p.nodes());
    log("KubeScaleBenchmark %s; %d cores", p, Runtime.getRuntime().availableProcessors());
    RealKubeApiServer kube = RealKubeApiServer.start();
    Path work = Files.createTempDirectory("kube-scale");
    Process kwok = null;
    ServerProcess member = null;
    List<Watch> watches = new ArrayList<>();
    KubernetesClient watchClient = null;
    ExecutorService pool = Executors.newFixedThreadPool(p.concurrency() + p.probes() + 20);
    // creates go 32 at a time whatever the loops' concurrency: more only queue in the API server
    ExecutorService setup = Executors.newFixedThreadPool(32);
    String load0 = loadAverage();
    try {
      KubeControlPlane plane = kube.plane();
      KubernetesClient admin = plane.admin();

      // ---------------------------------------------------------------- kwok and the objects
      Path stages = KubeControlPlane.repositoryRoot().resolve("src-test/kube/kwok-stages.yaml");
      kwok =
          new ProcessBuilder(
                  KubeControlPlane.kwok().toString(),
                  "--kubeconfig=" + plane.adminKubeconfig(),
                  "--config=" + stages,
                  "--manage-all-nodes=false",
                  "--manage-nodes-with-annotation-selector=" + KWOK_ANNOTATION + "=fake",
                  "--node-lease-duration-seconds=40",
                  "--cidr=10.64.0.0/12",
                  "--node-ip=10.0.0.7")
              .redirectErrorStream(true)
              .redirectOutput(work.resolve("kwok.log").toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();

      List<String> nodeNames = new ArrayList<>();
      List<String> preNodes = new ArrayList<>();
      for (int n = 0; n < p.nodes(); n++) {
        nodeNames.add(String.format(Locale.ROOT, "hpn-%04d", n));
      }
      for (int n = 0; n < p.preemptNodes(); n++) {
        preNodes.add(String.format(Locale.ROOT, "hpn-preempt-%03d", n));
      }
      List<String> podNames = new ArrayList<>();
      Map<String, String> podNode = new HashMap<>();
      for (int i = 0; i < p.nodes() * perNode; i++) {
        String node = nodeNames.get(i % p.nodes());
        String pod = String.format(Locale.ROOT, "share-%05d", i);
        podNames.add(pod);
        podNode.put(pod, node);
      }
      List<String> prePods = new ArrayList<>();
      for (String node : preNodes) {
        for (int i = 0; i <= GPUS; i++) {
          String pod = node + "-p" + i;
          prePods.add(pod);
          podNode.put(pod, node);
        }
      }

      long t0 = System.nanoTime();
      List<Future<?>> creates = new ArrayList<>();
      for (String n : nodeNames) {
        creates.add(setup.submit(() -> admin.nodes().resource(kwokNode(n, null)).create()));
      }
      for (String n : preNodes) {
        creates.add(
            setup.submit(
                () ->
                    admin
                        .nodes()
                        .resource(
                            kwokNode(n, "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 1}"))
                        .create()));
      }
      awaitAll(creates);
      creates.clear();
      for (String pod : podNames) {
        String yaml = KubernetesModeTest.sharePodYaml(pod, podNode.get(pod), 10, 50);
        creates.add(setup.submit(() -> admin.resource(yaml).inNamespace(NS).create()));
      }
      for (String pod : prePods) {
        String yaml = KubernetesModeTest.sharePodYaml(pod, podNode.get(pod), 50, 100);
        creates.add(setup.submit(() -> admin.resource(yaml).inNamespace(NS).create()));
      }
      awaitAll(creates);
      double createSeconds = (System.nanoTime() - t0) / 1e9;
      int allNodes = nodeNames.size() + preNodes.size();
      int allPods = podNames.size() + prePods.size();
      log("created %d nodes and %d pods in %.1f s", allNodes, allPods, createSeconds);
      awaitKwok(admin, allNodes, kwok, work, Duration.ofMinutes(20));
      double kwokSeconds = (System.nanoTime() - t0) / 1e9;
      log("kwok: every node Ready and every pod Running after %.1f s", kwokSeconds);

      // ---------------------------------------------------------------- the watches
      watchClient =
          new KubernetesClientBuilder()
              .withConfig(Config.fromKubeconfig(Files.readString(plane.adminKubeconfig())))
              .build();
      Tracks tracks = new Tracks();
      for (String pod : podNames) {
        tracks.pods.put(pod, new PodTrack());
      }
      java.util.Set<String> preSet = new java.util.HashSet<>(prePods);
      watches.add(watchClient.nodes().watch(tracks.nodeWatcher()));
      watches.add(watchClient.pods().inNamespace(NS).watch(tracks.podWatcher(preSet)));
      watches.add(
          watchClient.events().v1().events().inNamespace(NS).watch(tracks.eventWatcher(preSet)));
      Thread.sleep(1000);

      // ---------------------------------------------------------------- the member
      Map<String, Long> beforeMember = apiCounts(admin);
      Path conf = work.resolve("gpushare.conf");
      Files.writeString(
          conf,
          """
          gpushare {
            nodes = []
            kubernetes {
              node-status-mode = kubelet
              qps = %s
              burst = %d
            }
          }
          """
              .formatted(Double.toString(p.qps()), p.burst()));
      List<String> jvm = new ArrayList<>(kube.clientProperties());
      jvm.add("-Xmx" + p.memberXmx());
      Map<String, String> env = kube.memberEnvironment();
      env.put("POD_NAME", "gpushare-scale-0");
      long tStart = System.nanoTime();
      member =
          ServerProcess.startWithClock(
              "KubeScaleBenchmark",
              work.resolve("data"),
              "system",
              jvm,
              env,
              "--kubernetes",
              "--config",
              conf.toString());
      Api api = member.api();
      awaitReady(api, Duration.ofMinutes(15));
      long tReady = System.nanoTime();
      double readySeconds = (tReady - tStart) / 1e9;
      log("member ready %.1f s after its start", readySeconds);

      // its first full pass: every node's status, every pod read
      Settle settle = settle(admin, tracks, nodeNames.size() + preNodes.size(), p.settleSeconds());
      Map<String, Long> afterFirstPass = apiCounts(admin);
      double firstPassSeconds = (System.nanoTime() - tReady) / 1e9;
      log(
          "first pass: %s after %.1f s (nodes with status: %d)",
          settle.settled ? "settled" : "NOT settled", firstPassSeconds, tracks.nodesWithStatus());
      long[] nodeFirst = tracks.firstStatusAfter(tStart);

      // ---------------------------------------------------------------- the measured window
      Map<String, Long> windowStart = apiCounts(admin);
      String loadStart = loadAverage();
      long tw0 = System.nanoTime();
      long tw1 = tw0 + TimeUnit.SECONDS.toNanos(p.windowSeconds());
      LinkedBlockingQueue<String> idle = new LinkedBlockingQueue<>();
      List<String> shuffled = new ArrayList<>(podNames);
      Collections.shuffle(shuffled, new Random(33));
      idle.addAll(shuffled);
      AtomicLong grants = new AtomicLong();
      AtomicLong queued = new AtomicLong();
      AtomicLong errors = new AtomicLong();
      ConcurrentLinkedQueue<Long> demandNanos = new ConcurrentLinkedQueue<>();
      List<Future<?>> loops = new ArrayList<>();
      for (int c = 0; c < p.concurrency(); c++) {
        loops.add(
            pool.submit(
                () -> {
                  while (System.nanoTime() < tw1) {
                    String pod = idle.poll();
                    if (pod == null) {
                      sleep(10);
                      continue;
                    }
                    PodTrack t = tracks.pods.get(pod);
                    try {
                      long a = System.nanoTime();
                      Api.Resp r = api.post(Api.podPath(pod) + "/demand", null, null);
                      long b = System.nanoTime();
                      if (r.status() != 200) {
                        errors.incrementAndGet();
                        continue;
                      }
                      demandNanos.add(b - a);
                      boolean running = "Running".equals(r.json().path("state").asText());
                      if (running) {
                        grants.incrementAndGet();
                        t.want(true, b, tracks);
                      } else {
                        queued.incrementAndGet();
                      }
                      // held for hold-ms, or uniformly between hold-ms and hold-max-ms
                      sleep(
                          p.holdMillis()
                              + java.util.concurrent.ThreadLocalRandom.current()
                                  .nextLong(p.holdMaxMillis() - p.holdMillis() + 1));
                      Api.Resp d = api.delete(Api.podPath(pod) + "/demand");
                      long e = System.nanoTime();
                      if (d.status() != 200) {
                        errors.incrementAndGet();
                      }
                      if (running) {
                        t.want(false, e, tracks);
                      }
                    } catch (RuntimeException ex) {
                      errors.incrementAndGet();
                    } finally {
                      idle.add(pod);
                    }
                  }
                  return null;
                }));
      }
      // probes: grants held until the API server shows them, released, and awaited again — the
      // staleness of a grant that lives long enough to be written, under the loops' load
      ConcurrentLinkedQueue<Long> probeGrant = new ConcurrentLinkedQueue<>();
      ConcurrentLinkedQueue<Long> probeRelease = new ConcurrentLinkedQueue<>();
      AtomicLong probeTimeouts = new AtomicLong();
      for (int c = 0; c < p.probes(); c++) {
        loops.add(
            pool.submit(
                () -> {
                  while (System.nanoTime() < tw1) {
                    String pod = idle.poll();
                    if (pod == null) {
                      sleep(10);
                      continue;
                    }
                    PodTrack t = tracks.pods.get(pod);
                    try {
                      Api.Resp r = api.post(Api.podPath(pod) + "/demand", null, null);
                      long b = System.nanoTime();
                      if (r.status() != 200) {
                        errors.incrementAndGet();
                        continue;
                      }
                      if (!"Running".equals(r.json().path("state").asText())) {
                        queued.incrementAndGet();
                        api.delete(Api.podPath(pod) + "/demand");
                        continue;
                      }
                      grants.incrementAndGet();
                      t.want(true, b, tracks);
                      Long seen = t.awaitSeen(true, b, 120_000);
                      if (seen == null) {
                        probeTimeouts.incrementAndGet();
                        api.delete(Api.podPath(pod) + "/demand");
                        t.want(false, System.nanoTime(), tracks);
                        continue; // a release of a grant never shown: no sample
                      } else {
                        probeGrant.add(seen - b);
                      }
                      Api.Resp d = api.delete(Api.podPath(pod) + "/demand");
                      long e = System.nanoTime();
                      if (d.status() != 200) {
                        errors.incrementAndGet();
                      }
                      t.want(false, e, tracks);
                      Long gone = t.awaitSeen(false, e, 120_000);
                      if (gone == null) {
                        probeTimeouts.incrementAndGet();
                      } else {
                        probeRelease.add(gone - e);
                      }
                    } catch (RuntimeException ex) {
                      errors.incrementAndGet();
                    } finally {
                      idle.add(pod);
                    }
                  }
                  return null;
                }));
      }
      // node status: a sample of nodes has its QoS annotation broken in the first half of the
      // window and removed again in the second
      List<String> changed = new ArrayList<>(nodeNames);
      Collections.shuffle(changed, new Random(7));
      changed = changed.subList(0, Math.min(p.nodeChanges(), changed.size()));
      List<String> toChange = changed;
      loops.add(
          pool.submit(
              () -> {
                long half = (tw1 - tw0) / 2;
                for (int round = 0; round < 2; round++) {
                  boolean breakIt = round == 0;
                  for (int i = 0; i < toChange.size(); i++) {
                    long at =
                        tw0 + round * half + (long) ((double) half * 0.8 * i / toChange.size());
                    long wait = at - System.nanoTime();
                    if (wait > 0) {
                      sleep(TimeUnit.NANOSECONDS.toMillis(wait));
                    }
                    String n = toChange.get(i);
                    NodeTrack nt = tracks.node(n);
                    String patch =
                        breakIt
                            ? "{\"metadata\":{\"annotations\":{\""
                                + QOS_ANNOTATION
                                + "\":\"{\\\"preemptEnabled\\\": tru\"}}}"
                            : "{\"metadata\":{\"annotations\":{\"" + QOS_ANNOTATION + "\":null}}}";
                    try {
                      admin.nodes().withName(n).patch(PatchContext.of(PatchType.JSON_MERGE), patch);
                      nt.want(!breakIt, System.nanoTime(), tracks);
                    } catch (RuntimeException e) {
                      errors.incrementAndGet();
                    }
                  }
                }
                return null;
              }));
      // preemption: nine full-GPU pods on each node of eight GPUs, preemption after a minute
      long preemptDemanded = System.currentTimeMillis();
      for (String pod : prePods) {
        loops.add(
            pool.submit(
                () -> {
                  api.post(Api.podPath(pod) + "/demand", null, null);
                  return null;
                }));
      }
      awaitAll(loops);
      long tw1Actual = System.nanoTime();
      double windowSeconds = (tw1Actual - tw0) / 1e9;
      Map<String, Long> windowEnd = apiCounts(admin);
      String loadEnd = loadAverage();
      log("window over: %d grants in %.1f s; %d errors", grants.get(), windowSeconds, errors.get());
      Heap heapAtEnd = heap(member);
      for (String pod : prePods) {
        try {
          api.delete(Api.podPath(pod) + "/demand");
        } catch (RuntimeException e) {
          errors.incrementAndGet();
        }
      }
      // until the API server shows the arbiter's latest state of every pod driven
      long flushDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(p.flushSeconds());
      while (tracks.pendingPods() > 0 && System.nanoTime() < flushDeadline) {
        Thread.sleep(200);
      }
      long tFlushed = System.nanoTime();
      int pendingAtEnd = tracks.pendingPods();
      double flushSeconds = (tFlushed - tw1Actual) / 1e9;
      Map<String, Long> flushed = apiCounts(admin);
      log("flushed after %.1f s (%d pods still pending)", flushSeconds, pendingAtEnd);
      // the preemptions' conditions and Events: until none has come for 5 s (at most 60 s more)
      long quietDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      int seen = -1;
      int quiet = 0;
      while (quiet < 5 && System.nanoTime() < quietDeadline) {
        int now = tracks.conditions.size() + tracks.events.size();
        quiet = now == seen ? quiet + 1 : 0;
        seen = now;
        Thread.sleep(1000);
      }
      Heap heapAfterGc = heapAfterGc(member);

      member.stop();
      int denials = denials(member.logFile());
      ServerProcess stopped = member;
      member = null;

      // ---------------------------------------------------------------- the floors
      Config memberConfig =
          new ConfigBuilder(Config.fromKubeconfig(Files.readString(kube.memberKubeconfig())))
              .withRequestRetryBackoffLimit(0)
              .build();
      List<Floor> floors = new ArrayList<>();
      try (KubernetesClient floorClient =
          new KubernetesClientBuilder().withConfig(memberConfig).build()) {
        floors.add(
            floor(
                "1 thread, read + patch, the member's limit (" + fmtQps(p) + ")",
                floorClient,
                admin,
                podNames,
                1,
                true,
                new Bucket(p.qps(), p.burst()),
                p.floorSeconds(),
                pool));
        floors.add(
            floor(
                "1 thread, read + patch, no limit",
                floorClient,
                admin,
                podNames,
                1,
                true,
                null,
                p.floorSeconds(),
                pool));
        floors.add(
            floor(
                "16 threads, patch only, no limit",
                floorClient,
                admin,
                podNames,
                16,
                false,
                null,
                p.floorSeconds(),
                pool));
      }
      String loadFloor = loadAverage();

      // ---------------------------------------------------------------- report
      report(
          p,
          new Report(
              allNodes,
              allPods,
              createSeconds,
              kwokSeconds,
              readySeconds,
              settle,
              firstPassSeconds,
              nodeFirst,
              diff(afterFirstPass, beforeMember),
              grants.get(),
              queued.get(),
              errors.get(),
              windowSeconds,
              toArray(demandNanos),
              diff(windowEnd, windowStart),
              diff(flushed, windowStart),
              flushSeconds,
              pendingAtEnd,
              heapAtEnd,
              heapAfterGc,
              floors,
              denials,
              load0,
              loadStart,
              loadEnd,
              loadFloor,
              toChange.size(),
              prePods.size(),
              preemptDemanded,
              toArray(probeGrant),
              toArray(probeRelease),
              probeTimeouts.get()),
          tracks,
          stopped);
    } finally {
      for (Watch w : watches) {
        try {
          w.close();
        } catch (RuntimeException e) {
          // closing anyway
        }
      }
      if (watchClient != null) {
        watchClient.close();
      }
      if (member != null) {
        member.stop();
      }
      if (kwok != null) {
        ChildProcess.killTree(kwok.toHandle());
      }
      pool.shutdownNow();
      setup.shutdownNow();
      kube.close();
      KubeControlPlane.deleteTree(work);
    }
  }

  // ================================================================ objects

  /** A GPU-HPN node for kwok: share-pool, 8 GPUs, as its kubelet registers it (kwok's to run). */
  static Node kwokNode(String name, String qos) {
    Map<String, String> own =
        Map.of(
            "cpu",
            "176",
            "memory",
            "1800Gi",
            "ephemeral-storage",
            "6Ti",
            "pods",
            "110",
            KubernetesModeTest.EXCLUSIVE_GPU,
            Integer.toString(GPUS));
    Node n = KubernetesModeTest.kubeletNode(name, "share-pool", qos, own, own);
    // kwok initialises it (Ready, phase Running) and keeps its Lease; no condition of our own
    return new NodeBuilder(n)
        .editMetadata()
        .addToAnnotations(KWOK_ANNOTATION, "fake")
        .endMetadata()
        .editStatus()
        .withConditions(List.of())
        .endStatus()
        .build();
  }

  private void awaitKwok(
      KubernetesClient admin, int nodes, Process kwok, Path work, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (!kwok.isAlive()) {
        throw new AssertionError(
            "kwok exited (status " + kwok.exitValue() + "):\n" + tail(work.resolve("kwok.log")));
      }
      int ready = 0;
      for (Node n : admin.nodes().withLabel(POLICY_LABEL, "share-pool").list().getItems()) {
        NodeCondition c = KubernetesModeTest.condition(n, "Ready");
        if (c != null && "True".equals(c.getStatus())) {
          ready++;
        }
      }
      List<Pod> pending =
          admin
              .pods()
              .inNamespace(NS)
              .withField("status.phase", "Pending")
              .list(new ListOptionsBuilder().withLimit(1L).build())
              .getItems();
      if (ready >= nodes && pending.isEmpty()) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "kwok did not bring everything up: "
                + ready
                + " of "
                + nodes
                + " nodes Ready; pods pending: "
                + !pending.isEmpty()
                + "\n"
                + tail(work.resolve("kwok.log")));
      }
      Thread.sleep(3000);
    }
  }

  private static void awaitReady(Api api, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      try {
        if (api.get("/readyz").status() == 200) {
          return;
        }
      } catch (RuntimeException e) {
        // not yet
      }
      Thread.sleep(500);
    }
    throw new AssertionError("the member was not ready within " + timeout);
  }

  record Settle(boolean settled, long memberGets) {}

  /**
   * Waits for the writer's first full pass: every node's status written, and the member's reads of
   * single pods and nodes and its writes at rest for 4 s; at most {@code seconds}.
   */
  private Settle settle(KubernetesClient admin, Tracks tracks, int nodes, int seconds)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    long last = -1;
    int still = 0;
    while (System.nanoTime() < deadline) {
      Map<String, Long> c = apiCounts(admin);
      long gets = c.getOrDefault("GET pods", 0L) + c.getOrDefault("GET nodes", 0L);
      for (String w : MEMBER_WRITES) {
        gets += c.getOrDefault(w, 0L);
      }
      if (gets == last && tracks.nodesWithStatus() >= nodes) {
        if (++still >= 2) {
          return new Settle(true, gets);
        }
      } else {
        still = 0;
      }
      last = gets;
      Thread.sleep(2000);
    }
    return new Settle(false, last);
  }

  // ================================================================ what the watches see

  /** What one driven pod should show, and what the API server showed last. */
  static final class PodTrack {
    boolean wantGranted;
    long since; // nanoTime of the decision not yet seen; 0 = none pending
    boolean visible;
    long visibleAt;
    boolean grantSeen;

    /** The arbiter decided (the member answered at {@code at}): the pod should show it. */
    synchronized void want(boolean granted, long at, Tracks tracks) {
      if (since != 0) {
        tracks.superseded.incrementAndGet(); // the writer never showed the previous decision
      }
      if (!granted && !grantSeen && since != 0) {
        // granted and released before the grant was written: nothing to see for either
        wantGranted = false;
        since = visible ? at : 0;
        grantSeen = false;
        return;
      }
      wantGranted = granted;
      grantSeen = false;
      if (visible == granted) {
        // shown already: an earlier decision's write still stands (or this one beat the answer);
        // no sample
        since = 0;
        grantSeen = granted;
      } else {
        since = at;
      }
    }

    synchronized void seen(boolean has, long now, Tracks tracks) {
      if (has != visible) {
        visible = has;
        visibleAt = now;
      }
      if (since != 0 && has == wantGranted) {
        (has ? tracks.grantStale : tracks.releaseStale).add(now - since);
        since = 0;
        grantSeen = has;
      }
    }

    synchronized boolean pending() {
      return since != 0;
    }

    /** Waits until the pod shows {@code granted} (seen at or after {@code after}); its time. */
    Long awaitSeen(boolean granted, long after, long timeoutMillis) {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
      while (System.nanoTime() < deadline) {
        synchronized (this) {
          if (visible == granted && since == 0) {
            return Math.max(after, visibleAt);
          }
        }
        sleep(5);
      }
      return null;
    }
  }

  static final class NodeTrack {
    Long firstStatus; // nanoTime the GPUSharePolicy condition was first seen True
    boolean wantValid;
    long since;
    Boolean shownValid; // the GPUSharePolicyValid status the API server showed last

    synchronized void want(boolean valid, long at, Tracks tracks) {
      wantValid = valid;
      // a revert of a change never written: the status shows it already; no sample
      since = shownValid != null && shownValid == valid ? 0 : at;
    }

    synchronized void seen(Node n, long now, Tracks tracks) {
      NodeCondition policy = KubernetesModeTest.condition(n, "GPUSharePolicy");
      if (firstStatus == null && policy != null && "True".equals(policy.getStatus())) {
        firstStatus = now;
      }
      NodeCondition valid = KubernetesModeTest.condition(n, VALID);
      if (valid != null) {
        shownValid = "True".equals(valid.getStatus());
      }
      if (since != 0 && valid != null && "True".equals(valid.getStatus()) == wantValid) {
        tracks.nodeStale.add(now - since);
        since = 0;
      }
    }
  }

  record ConditionSeen(String pod, String reason, Instant transition, long seenMillis) {}

  record EventSeen(String pod, String reason, Instant time) {}

  static final class Tracks {
    final Map<String, PodTrack> pods = new ConcurrentHashMap<>();
    final Map<String, NodeTrack> nodes = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<Long> grantStale = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Long> releaseStale = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Long> nodeStale = new ConcurrentLinkedQueue<>();
    final AtomicLong superseded = new AtomicLong();
    final Map<String, ConditionSeen> conditions = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<EventSeen> events = new ConcurrentLinkedQueue<>();
    final AtomicLong watchErrors = new AtomicLong();

    NodeTrack node(String name) {
      return nodes.computeIfAbsent(name, n -> new NodeTrack());
    }

    int nodesWithStatus() {
      int n = 0;
      for (NodeTrack t : nodes.values()) {
        synchronized (t) {
          if (t.firstStatus != null) {
            n++;
          }
        }
      }
      return n;
    }

    long[] firstStatusAfter(long ready) {
      List<Long> out = new ArrayList<>();
      for (NodeTrack t : nodes.values()) {
        synchronized (t) {
          if (t.firstStatus != null) {
            out.add(Math.max(0, t.firstStatus - ready));
          }
        }
      }
      return toArray(out);
    }

    int pendingPods() {
      int n = 0;
      for (PodTrack t : pods.values()) {
        if (t.pending()) {
          n++;
        }
      }
      return n;
    }

    Watcher<Node> nodeWatcher() {
      return new Watcher<>() {
        @Override
        public void eventReceived(Action action, Node n) {
          long now = System.nanoTime();
          if (action == Action.ADDED || action == Action.MODIFIED) {
            node(n.getMetadata().getName()).seen(n, now, Tracks.this);
          }
        }

        @Override
        public void onClose(WatcherException cause) {
          watchErrors.incrementAndGet();
        }
      };
    }

    Watcher<Pod> podWatcher(java.util.Set<String> preemptPods) {
      return new Watcher<>() {
        @Override
        public void eventReceived(Action action, Pod pod) {
          long now = System.nanoTime();
          long wall = System.currentTimeMillis();
          if (action != Action.ADDED && action != Action.MODIFIED) {
            return;
          }
          String name = pod.getMetadata().getName();
          PodTrack t = pods.get(name);
          if (t != null) {
            Map<String, String> a = pod.getMetadata().getAnnotations();
            t.seen(a != null && a.containsKey(GPU_INDEX), now, Tracks.this);
          }
          if (preemptPods.contains(name)) {
            PodCondition c = KubernetesModeTest.condition(pod, RECLAIM);
            if (c != null && c.getLastTransitionTime() != null) {
              String key = name + "|" + c.getReason() + "|" + c.getLastTransitionTime();
              conditions.putIfAbsent(
                  key,
                  new ConditionSeen(
                      name, c.getReason(), Instant.parse(c.getLastTransitionTime()), wall));
            }
          }
        }

        @Override
        public void onClose(WatcherException cause) {
          watchErrors.incrementAndGet();
        }
      };
    }

    Watcher<Event> eventWatcher(java.util.Set<String> preemptPods) {
      return new Watcher<>() {
        @Override
        public void eventReceived(Action action, Event e) {
          if (action != Action.ADDED || e.getRegarding() == null || e.getEventTime() == null) {
            return;
          }
          String pod = e.getRegarding().getName();
          if (preemptPods.contains(pod)) {
            events.add(
                new EventSeen(pod, e.getReason(), Instant.parse(e.getEventTime().getTime())));
          }
        }

        @Override
        public void onClose(WatcherException cause) {
          watchErrors.incrementAndGet();
        }
      };
    }

    /**
     * Pod condition staleness: each condition seen, against the arbiter's decision time — the
     * eventTime (microseconds) of the Event of the same decision (same pod and reason, same
     * second), which the writer writes after the condition.
     */
    long[] conditionStaleMillis() {
      List<Long> out = new ArrayList<>();
      for (ConditionSeen c : conditions.values()) {
        EventSeen match = null;
        for (EventSeen e : events) {
          if (e.pod().equals(c.pod())
              && e.reason().equals(c.reason())
              && e.time().getEpochSecond() == c.transition().getEpochSecond()) {
            match = e;
          }
        }
        if (match != null) {
          out.add(Math.max(0, c.seenMillis() - match.time().toEpochMilli()));
        }
      }
      return toArray(out);
    }
  }

  // ================================================================ the API server's counts

  private static final Pattern LABEL = Pattern.compile("(\\w+)=\"([^\"]*)\"");

  /** apiserver_request_total by "VERB resource[/subresource]" (group-qualified off core). */
  static Map<String, Long> apiCounts(KubernetesClient admin) {
    String text = admin.raw(admin.getMasterUrl().toString().replaceAll("/$", "") + "/metrics");
    Map<String, Long> out = new TreeMap<>();
    if (text == null) {
      return out;
    }
    for (String line : text.split("\n")) {
      if (!line.startsWith("apiserver_request_total{")) {
        continue;
      }
      int close = line.lastIndexOf('}');
      Map<String, String> labels = new HashMap<>();
      Matcher m = LABEL.matcher(line.substring(0, close));
      while (m.find()) {
        labels.put(m.group(1), m.group(2));
      }
      String group = labels.getOrDefault("group", "");
      String resource = labels.getOrDefault("resource", "");
      String sub = labels.getOrDefault("subresource", "");
      String key =
          labels.getOrDefault("verb", "?")
              + " "
              + (group.isEmpty() ? "" : group + "/")
              + resource
              + (sub.isEmpty() ? "" : "/" + sub);
      long value = (long) Double.parseDouble(line.substring(close + 1).trim());
      out.merge(key, value, Long::sum);
    }
    return out;
  }

  static Map<String, Long> diff(Map<String, Long> after, Map<String, Long> before) {
    Map<String, Long> out = new TreeMap<>();
    for (var e : after.entrySet()) {
      long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
      if (d != 0) {
        out.put(e.getKey(), d);
      }
    }
    return out;
  }

  static boolean isWrite(String key) {
    String verb = key.substring(0, key.indexOf(' '));
    return List.of("POST", "PUT", "PATCH", "DELETE", "APPLY").contains(verb);
  }

  /**
   * What the member writes: pod annotations and conditions, node status (and on virtual nodes the
   * own-allocatable annotation), Events and their series.
   */
  static final List<String> MEMBER_WRITES =
      List.of(
          "PATCH pods",
          "PATCH pods/status",
          "PATCH nodes/status",
          "PATCH nodes",
          "POST events.k8s.io/events",
          "PATCH events.k8s.io/events");

  static final List<String> MEMBER_READS = List.of("GET pods", "GET nodes");

  // ================================================================ heap

  record Heap(long usedKb, long committedKb) {}

  private static final Pattern GEN =
      Pattern.compile(
          "(?m)^\\s*(?:def new generation|tenured generation)\\s+total (\\d+)K, used (\\d+)K");

  static Heap heap(ServerProcess member) {
    return heapInfo(member, false);
  }

  static Heap heapAfterGc(ServerProcess member) {
    return heapInfo(member, true);
  }

  private static Heap heapInfo(ServerProcess member, boolean gc) {
    Optional<ProcessHandle> child =
        ProcessHandle.current()
            .descendants()
            .filter(
                h -> {
                  String c = cmdline(h.pid());
                  return c.contains("dev.gpushare.http.Main")
                      && c.contains(member.dataDir().toString());
                })
            .findFirst();
    if (child.isEmpty()) {
      return new Heap(-1, -1);
    }
    String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
    String pid = Long.toString(child.get().pid());
    try {
      if (gc) {
        run(List.of(jcmd, pid, "GC.run"));
      }
      String info = run(List.of(jcmd, pid, "GC.heap_info"));
      Matcher m = GEN.matcher(info);
      long total = 0;
      long used = 0;
      while (m.find()) {
        total += Long.parseLong(m.group(1));
        used += Long.parseLong(m.group(2));
      }
      return new Heap(used, total);
    } catch (IOException | InterruptedException e) {
      return new Heap(-1, -1);
    }
  }

  /** /proc/PID/cmdline (ProcessHandle.Info has no command line for a class path this long). */
  private static String cmdline(long pid) {
    try {
      return new String(
              Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline")),
              StandardCharsets.UTF_8)
          .replace('\0', ' ');
    } catch (IOException e) {
      return "";
    }
  }

  private static String run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    p.waitFor(60, TimeUnit.SECONDS);
    return text;
  }

  private static int denials(Path log) {
    try {
      int n = 0;
      for (String line : Files.readAllLines(log)) {
        if (RealKubeApiServer.DENIAL.matcher(line).find()) {
          n++;
        }
      }
      return n;
    } catch (IOException e) {
      return -1;
    }
  }

  // ================================================================ the floors

  /** A token bucket as the member's writer has: {@code qps} a second, {@code burst} saved. */
  static final class Bucket {
    private final double qps;
    private final int burst;
    private double tokens;
    private long last = System.nanoTime();

    Bucket(double qps, int burst) {
      this.qps = qps;
      this.burst = burst;
      this.tokens = burst;
    }

    void take() {
      while (true) {
        long wait;
        synchronized (this) {
          long now = System.nanoTime();
          tokens = Math.min(burst, tokens + (now - last) / 1e9 * qps);
          last = now;
          if (tokens >= 1) {
            tokens -= 1;
            return;
          }
          wait = (long) ((1 - tokens) / qps * 1e9);
        }
        sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait)));
      }
    }
  }

  record Floor(String what, long writes, long requests, double seconds, long[] passNanos) {}

  private Floor floor(
      String what,
      KubernetesClient client,
      KubernetesClient admin,
      List<String> pods,
      int threads,
      boolean readFirst,
      Bucket bucket,
      int seconds,
      ExecutorService pool)
      throws Exception {
    AtomicLong writes = new AtomicLong();
    AtomicLong requests = new AtomicLong();
    ConcurrentLinkedQueue<Long> passes = new ConcurrentLinkedQueue<>();
    long start = System.nanoTime();
    long end = start + TimeUnit.SECONDS.toNanos(seconds);
    List<Future<?>> all = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int first = t;
      all.add(
          pool.submit(
              () -> {
                long i = 0;
                for (int k = first; System.nanoTime() < end; k = (k + threads) % pods.size()) {
                  String pod = pods.get(k);
                  long a = System.nanoTime();
                  if (readFirst) {
                    if (bucket != null) {
                      bucket.take();
                    }
                    client.pods().inNamespace(NS).withName(pod).get();
                    requests.incrementAndGet();
                  }
                  if (bucket != null) {
                    bucket.take();
                  }
                  client
                      .pods()
                      .inNamespace(NS)
                      .withName(pod)
                      .patch(
                          PatchContext.of(PatchType.JSON_MERGE),
                          "{\"metadata\":{\"annotations\":{\""
                              + FLOOR_ANNOTATION
                              + "\":\""
                              + (i++)
                              + "\"}}}");
                  requests.incrementAndGet();
                  writes.incrementAndGet();
                  passes.add(System.nanoTime() - a);
                }
                return null;
              }));
    }
    awaitAll(all);
    double s = (System.nanoTime() - start) / 1e9;
    Floor f = new Floor(what, writes.get(), requests.get(), s, toArray(passes));
    log("floor %s: %.0f writes/s", what, f.writes() / f.seconds());
    return f;
  }

  // ================================================================ the report

  record Report(
      int nodes,
      int pods,
      double createSeconds,
      double kwokSeconds,
      double readySeconds,
      Settle settle,
      double firstPassSeconds,
      long[] nodeFirstNanos,
      Map<String, Long> firstPassRequests,
      long grants,
      long queued,
      long errors,
      double windowSeconds,
      long[] demandNanos,
      Map<String, Long> window,
      Map<String, Long> untilFlushed,
      double flushSeconds,
      int pendingAtEnd,
      Heap heapAtEnd,
      Heap heapAfterGc,
      List<Floor> floors,
      int denials,
      String load0,
      String loadStart,
      String loadEnd,
      String loadFloor,
      int nodeChanges,
      int preemptPods,
      long preemptDemandedMillis,
      long[] probeGrantNanos,
      long[] probeReleaseNanos,
      long probeTimeouts) {}

  private void report(Params p, Report r, Tracks tracks, ServerProcess member) throws IOException {
    say("");
    say(
        "## KubeScaleBenchmark: %,d nodes (%,d with preemption), %,d pods; member qps %s, burst %d;"
            + " %d loops, hold %d..%d ms, %d probes, window %d s",
        r.nodes(),
        p.preemptNodes(),
        r.pods(),
        Double.toString(p.qps()),
        p.burst(),
        p.concurrency(),
        p.holdMillis(),
        p.holdMaxMillis(),
        p.probes(),
        p.windowSeconds());
    say(
        "load average (1/5/15 min): at start %s; window start %s, end %s; after the floors %s",
        r.load0(), r.loadStart(), r.loadEnd(), r.loadFloor());
    say("");
    say("| phase | figure |");
    say("|---|---|");
    say(
        "| set-up | %,d nodes + %,d pods created in %.1f s; kwok had them Ready/Running after %.1f s"
            + " |",
        r.nodes(), r.pods(), r.createSeconds(), r.kwokSeconds());
    say(
        "| member start → ready (informers listed, arbiters registered) | %.1f s |",
        r.readySeconds());
    long[] nf = sorted(r.nodeFirstNanos());
    say(
        "| first pass: node status visible after the member's start | p50 %s, p99 %s, last %s"
            + " (%,d nodes) |",
        secs(pct(nf, 0.5)),
        secs(pct(nf, 0.99)),
        secs(nf.length == 0 ? Double.NaN : nf[nf.length - 1]),
        nf.length);
    say(
        "| first pass: writer at rest | %s after %.1f s; requests %s |",
        r.settle().settled() ? "yes" : "**no**",
        r.firstPassSeconds(),
        brief(r.firstPassRequests()));
    say("");

    long memberWrites = sum(r.untilFlushed(), MEMBER_WRITES);
    long memberReads = sum(r.untilFlushed(), MEMBER_READS);
    long allWindow = sum(r.window(), null);
    long writesWindow = 0;
    for (var e : r.window().entrySet()) {
      if (isWrite(e.getKey())) {
        writesWindow += e.getValue();
      }
    }
    long[] demand = sorted(r.demandNanos());
    long[] gs = sorted(toArray(tracks.grantStale));
    long[] rs = sorted(toArray(tracks.releaseStale));
    long[] ns = sorted(toArray(tracks.nodeStale));
    long[] cs = sorted(tracks.conditionStaleMillis());
    for (int i = 0; i < cs.length; i++) {
      cs[i] = cs[i] * 1_000_000L;
    }
    Floor limited = r.floors().get(0);
    Floor unlimited1 = r.floors().get(1);
    Floor raw = r.floors().get(2);
    say(
        "| measured window (%.1f s, the probes' last waits included) | figure | same run's floor"
            + " |",
        r.windowSeconds());
    say("|---|---|---|");
    say(
        "| grants/s (over the %d s the loops ran) | **%.1f** (%,d grants, %,d queued, %,d errors; demand p50 %s, p99 %s) | -"
            + " |",
        p.windowSeconds(),
        (double) r.grants() / p.windowSeconds(),
        r.grants(),
        r.queued(),
        r.errors(),
        ms(pct(demand, 0.5)),
        ms(pct(demand, 0.99)));
    say(
        "| member's API writes per grant (window + flush) | **%.3f** (%,d writes: %s) | - |",
        (double) memberWrites / Math.max(1, r.grants()),
        memberWrites,
        pick(r.untilFlushed(), MEMBER_WRITES));
    say(
        "| member's API requests per grant (reads included) | %.3f (%,d reads) | - |",
        (double) (memberWrites + memberReads) / Math.max(1, r.grants()), memberReads);
    say(
        "| member's write rate | %.1f writes/s (window + flush, %.1f s) | %.1f/s at its limit,"
            + " %.1f/s unlimited (1 thread read + patch); raw %.1f/s (16 threads) |",
        memberWrites / (r.windowSeconds() + r.flushSeconds()),
        r.windowSeconds() + r.flushSeconds(),
        rate(limited),
        rate(unlimited1),
        rate(raw));
    say(
        "| API server request rate, all clients | %.1f requests/s, %.1f writes/s | raw write"
            + " rate %.1f/s |",
        allWindow / r.windowSeconds(), writesWindow / r.windowSeconds(), rate(raw));
    say(
        "| staleness, all loops: grant → pod annotation visible | p50 %s, p99 %s, max %s (%,d seen) | one"
            + " read + patch: p50 %s, p99 %s at the limit; %s / %s unlimited |",
        secs(pct(gs, 0.5)),
        secs(pct(gs, 0.99)),
        secs(gs.length == 0 ? Double.NaN : gs[gs.length - 1]),
        gs.length,
        ms(pct(sorted(limited.passNanos()), 0.5)),
        ms(pct(sorted(limited.passNanos()), 0.99)),
        ms(pct(sorted(unlimited1.passNanos()), 0.5)),
        ms(pct(sorted(unlimited1.passNanos()), 0.99)));
    long[] pg = sorted(r.probeGrantNanos());
    long[] pr = sorted(r.probeReleaseNanos());
    say(
        "| staleness, probes (grant held until visible): grant → annotation visible | p50 %s, p99"
            + " %s (%,d) | one read + patch: p50 %s, p99 %s at the limit |",
        secs(pct(pg, 0.5)),
        secs(pct(pg, 0.99)),
        pg.length,
        ms(pct(sorted(limited.passNanos()), 0.5)),
        ms(pct(sorted(limited.passNanos()), 0.99)));
    say(
        "| staleness, probes: release → annotation gone | p50 %s, p99 %s (%,d; %,d timeouts of"
            + " 120 s) | as above |",
        secs(pct(pr, 0.5)), secs(pct(pr, 0.99)), pr.length, r.probeTimeouts());
    say(
        "| staleness: release → annotation gone | p50 %s, p99 %s, max %s (%,d seen; %,d decisions"
            + " overtaken before written) | as above |",
        secs(pct(rs, 0.5)),
        secs(pct(rs, 0.99)),
        secs(rs.length == 0 ? Double.NaN : rs[rs.length - 1]),
        rs.length,
        tracks.superseded.get());
    say(
        "| staleness: node QoS annotation changed → node status condition visible | p50 %s, p99"
            + " %s (%,d of %,d changes seen) | as above |",
        secs(pct(ns, 0.5)), secs(pct(ns, 0.99)), ns.length, 2 * r.nodeChanges());
    say(
        "| staleness: preemption → pod condition %s visible | p50 %s, p99 %s (%,d conditions"
            + " matched to their Event's time) | as above |",
        RECLAIM, secs(pct(cs, 0.5)), secs(pct(cs, 0.99)), cs.length);
    say(
        "| writer flushed after the window | %.1f s (%,d pods still pending) | - |",
        r.flushSeconds(), r.pendingAtEnd());
    say(
        "| member heap (-Xmx%s) | %,d MiB used at the window's end; %,d MiB live after a full GC"
            + " | - |",
        p.memberXmx(), r.heapAtEnd().usedKb() / 1024, r.heapAfterGc().usedKb() / 1024);
    say("");
    say("API server requests from the window's start until flushed, by verb and resource:");
    say("");
    say("| request | count | per grant |");
    say("|---|---|---|");
    for (var e : r.untilFlushed().entrySet()) {
      if (e.getKey().startsWith("WATCH")) {
        continue;
      }
      say(
          "| %s | %,d | %.3f |",
          e.getKey(), e.getValue(), (double) e.getValue() / Math.max(1, r.grants()));
    }
    say("");
    say("Floors (the member stopped; kwok still running; the member's ServiceAccount token):");
    say("");
    say("| floor | writes/s | requests/s | pass p50 | pass p99 |");
    say("|---|---|---|---|---|");
    for (Floor f : r.floors()) {
      long[] s = sorted(f.passNanos());
      say(
          "| %s | %.1f | %.1f | %s | %s |",
          f.what(), rate(f), f.requests() / f.seconds(), ms(pct(s, 0.5)), ms(pct(s, 0.99)));
    }
    say("");
    say(
        "RBAC denials in the member's log: %d; watch closes: %d; member log %s",
        r.denials(), tracks.watchErrors.get(), member.logFile());
    Path dir = Path.of(System.getProperty("basedir", "."), "target", "kube-scale");
    Files.createDirectories(dir);
    Path file =
        dir.resolve(
            "results-"
                + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"))
                + ".md");
    synchronized (out) {
      Files.write(file, out);
    }
    System.out.println("written to " + file.toAbsolutePath());
  }

  // ================================================================ helpers

  private static double rate(Floor f) {
    return f.writes() / f.seconds();
  }

  private static String fmtQps(Params p) {
    return Double.toString(p.qps()).replaceAll("\\.0$", "") + " QPS, burst " + p.burst();
  }

  private static long sum(Map<String, Long> counts, List<String> keys) {
    long s = 0;
    for (var e : counts.entrySet()) {
      if (keys == null ? !e.getKey().startsWith("WATCH") : keys.contains(e.getKey())) {
        s += e.getValue();
      }
    }
    return s;
  }

  private static String pick(Map<String, Long> counts, List<String> keys) {
    List<String> parts = new ArrayList<>();
    for (String k : keys) {
      long v = counts.getOrDefault(k, 0L);
      if (v > 0) {
        parts.add(k + " " + String.format(Locale.ROOT, "%,d", v));
      }
    }
    return parts.isEmpty() ? "none" : String.join(", ", parts);
  }

  private static String brief(Map<String, Long> counts) {
    List<String> parts = new ArrayList<>();
    for (var e : counts.entrySet()) {
      if (!e.getKey().startsWith("WATCH") && e.getValue() >= 10) {
        parts.add(e.getKey() + " " + String.format(Locale.ROOT, "%,d", e.getValue()));
      }
    }
    return String.join(", ", parts);
  }

  static long[] toArray(java.util.Collection<Long> values) {
    long[] a = new long[values.size()];
    int i = 0;
    for (Long v : values) {
      if (i < a.length) {
        a[i++] = v;
      }
    }
    return i == a.length ? a : java.util.Arrays.copyOf(a, i);
  }

  static long[] sorted(long[] a) {
    long[] c = a.clone();
    java.util.Arrays.sort(c);
    return c;
  }

  static double pct(long[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(q * sorted.length))];
  }

  static String ms(double nanos) {
    return Double.isNaN(nanos) ? "-" : String.format(Locale.ROOT, "%.1f ms", nanos / 1e6);
  }

  static String secs(double nanos) {
    if (Double.isNaN(nanos)) {
      return "-";
    }
    return nanos < 1e9
        ? String.format(Locale.ROOT, "%.0f ms", nanos / 1e6)
        : String.format(Locale.ROOT, "%.1f s", nanos / 1e9);
  }

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " / " + f[1] + " / " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }

  private static String tail(Path file) {
    try {
      List<String> lines = Files.readAllLines(file);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  static void awaitAll(List<Future<?>> futures) throws Exception {
    for (Future<?> f : futures) {
      f.get(60, TimeUnit.MINUTES);
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
