package dev.gpushare.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.bench.LoadBenchmark.Driver;
import dev.gpushare.bench.LoadBenchmark.NodeSlots;
import dev.gpushare.bench.LoadBenchmark.PodSlot;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.kube.KubeSyncSettings;
import dev.gpushare.node.kube.KubeWriter;
import dev.gpushare.node.kube.NodeStatusMode;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Kubernetes writes per decision (src-test/BENCHMARKS.md, "Kubernetes writes"): the real runtime
 * (in-memory journal: the journal plays no part in what is written) and the real KubeSync writer
 * ({@link KubeWriter}, what {@code KubernetesMode}'s singleton hosts) against the fabric8 mock API
 * server in CRUD mode, which counts every request it receives by method and object kind.
 *
 * <p>{@code --nodes} nodes of 8 GPUs exist in both the API server (as a kubelet registers them) and
 * the arbiter, with {@code --pods-per-node} share-pool pods each (the same uid on both sides). A
 * stream of decisions is driven through the service at each rate of {@code --rates} for {@code
 * --seconds}: demand → Running → hold → release, the hold {@code 100 / rate} s (at most 2 s), so
 * that about 100 pods hold a share at any time. A new writer is started per run; the count runs
 * from the start of the stream until the writer is flushed after it, and is divided by the grants
 * (each grant also has its release). Each rate is run with the default rate limit (20 QPS, burst
 * 40) and, as the baseline in the same run, without one (1,000,000 QPS).
 *
 * <p>Arguments: {@code [--nodes 16] [--pods-per-node 16] [--rates 10,100,500] [--seconds 20]}.
 */
public final class KubeWritesBenchmark {
  static final int GPUS = 8;

  private KubeWritesBenchmark() {}

  /** The mock web server logs every request (java.util.logging); kept quiet, held strongly. */
  private static final java.util.logging.Logger MOCK_LOG =
      java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

  /** The CRUD mock's dispatcher, counting requests by "METHOD kind". */
  static final class Counting extends KubernetesCrudDispatcher {
    private final Map<String, Long> counts = new TreeMap<>();

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      boolean watch = path.contains("watch=true");
      synchronized (this) {
        counts.merge(
            request.getMethod() + " " + kind(bare) + (watch ? " (watch)" : ""), 1L, Long::sum);
      }
      return super.dispatch(request);
    }

    synchronized Map<String, Long> take() {
      Map<String, Long> copy = new TreeMap<>(counts);
      counts.clear();
      return copy;
    }

    static String kind(String path) {
      String[] p = path.split("/");
      // /api/v1/nodes/N[/status], /api/v1/namespaces/NS/pods/N[/status],
      // /apis/events.k8s.io/v1/namespaces/NS/events[/N]
      String status = path.endsWith("/status") ? " status" : "";
      if (path.contains("/events")) {
        return "event";
      }
      if (path.contains("/pods")) {
        return "pod" + status;
      }
      if (path.contains("/nodes")) {
        return "node" + status;
      }
      return p.length > 0 ? path : "?";
    }
  }

  record Row(
      int rate,
      String limit,
      long grants,
      double achieved,
      Map<String, Long> requests,
      double flushSeconds) {}

  public static void main(String[] args) throws Exception {
    int nodes = Integer.parseInt(BenchSupport.option(args, "--nodes", "16"));
    int podsPerNode = Integer.parseInt(BenchSupport.option(args, "--pods-per-node", "16"));
    int[] rates = BenchSupport.ints(BenchSupport.option(args, "--rates", "10,100,500"));
    int seconds = Integer.parseInt(BenchSupport.option(args, "--seconds", "20"));
    System.out.printf(
        Locale.ROOT,
        "gpushare Kubernetes writes per decision: %d nodes × %d GPUs, %d pods per node, rates %s,"
            + " %d s each; %d cores, Java %s%n",
        nodes,
        GPUS,
        podsPerNode,
        java.util.Arrays.toString(rates),
        seconds,
        java.lang.Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"));
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    Path snapshots = Files.createTempDirectory("gpushare-kube-bench");
    Counting dispatcher = new Counting();
    KubernetesMockServer server =
        new KubernetesMockServer(
            new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
    server.init(InetAddress.getByName("127.0.0.1"), 0);
    KubernetesClient writerClient =
        server.createClient(b -> b.editOrNewConfig().withRequestRetryBackoffLimit(0).endConfig());
    KubernetesClient kubelet = server.createClient();
    ActorSystem<Void> system =
        ActorSystem.create(Behaviors.empty(), "kube-bench", inMemory(snapshots));
    List<Row> rows = new ArrayList<>();
    try {
      GpuShareService service =
          BenchSupport.await(
              GpuShareRuntime.start(
                  system,
                  new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(30)),
                  ArbiterClock.system()),
              Duration.ofMinutes(2));
      List<NodeSlots> slots = setUp(service, kubelet, nodes, podsPerNode);
      for (int rate : rates) {
        for (boolean limited : new boolean[] {true, false}) {
          KubeSyncSettings settings =
              limited
                  ? KubeSyncSettings.defaults("gpushare-bench")
                  : new KubeSyncSettings(
                      NodeStatusMode.KUBELET,
                      1_000_000,
                      1_000_000,
                      KubeSyncSettings.DEFAULT_MAX_BACKOFF,
                      "gpushare-bench");
          rows.add(run(service, writerClient, dispatcher, slots, rate, seconds, settings, limited));
        }
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(2, TimeUnit.MINUTES);
      writerClient.close();
      kubelet.close();
      server.destroy();
      BenchSupport.deleteTree(snapshots);
    }
    List<String> kinds = new ArrayList<>();
    for (Row r : rows) {
      for (String k : r.requests().keySet()) {
        if (!kinds.contains(k)) {
          kinds.add(k);
        }
      }
    }
    kinds.sort(null);
    System.out.println();
    StringBuilder head = new StringBuilder("| rate | writer limit | grants | grants/s |");
    StringBuilder rule = new StringBuilder("|---|---|---|---|");
    for (String k : kinds) {
      head.append(' ').append(k).append(" |");
      rule.append("---|");
    }
    head.append(" writes per grant | requests per grant | flushed after |");
    rule.append("---|---|---|");
    System.out.println(head);
    System.out.println(rule);
    for (Row r : rows) {
      StringBuilder line =
          new StringBuilder(
              String.format(
                  Locale.ROOT,
                  "| %,d/s | %s | %,d | %,.0f |",
                  r.rate(),
                  r.limit(),
                  r.grants(),
                  r.achieved()));
      long writes = 0;
      long all = 0;
      for (String k : kinds) {
        long c = r.requests().getOrDefault(k, 0L);
        all += c;
        if (!k.startsWith("GET")) {
          writes += c;
        }
        line.append(String.format(Locale.ROOT, " %.3f |", (double) c / r.grants()));
      }
      line.append(
          String.format(
              Locale.ROOT,
              " **%.3f** | %.3f | %.1f s |",
              (double) writes / r.grants(),
              (double) all / r.grants(),
              r.flushSeconds()));
      System.out.println(line);
    }
    System.out.println();
    System.out.println("(columns per kind: requests of that kind per grant)");
    System.exit(0);
  }

  private static Row run(
      GpuShareService service,
      KubernetesClient client,
      Counting dispatcher,
      List<NodeSlots> slots,
      int rate,
      int seconds,
      KubeSyncSettings settings,
      boolean limited) {
    KubeWriter writer = new KubeWriter(client, service, settings).start();
    try {
      // The full reconcile of a new writer first; then count from a clean slate.
      BenchSupport.await(writer.flushed(), Duration.ofMinutes(5));
      dispatcher.take();
      double hold = Math.min(2.0, 100.0 / rate);
      Driver driver = new Driver(service, slots, Duration.ofNanos((long) (hold * 1e9)));
      driver.startMeasuring();
      driver.openLoop(rate, seconds);
      driver.drain();
      driver.stopMeasuring();
      long end = System.nanoTime();
      BenchSupport.await(writer.flushed(), Duration.ofMinutes(10));
      double flush = (System.nanoTime() - end) / 1e9;
      Map<String, Long> requests = dispatcher.take();
      long grants = driver.grantsInWindow.get();
      Row row =
          new Row(
              rate,
              limited ? "20 QPS, burst 40 (default)" : "none (1,000,000 QPS)",
              grants,
              grants / driver.windowSeconds(),
              requests,
              flush);
      System.out.println(row + (driver.errors.get() > 0 ? " errors " + driver.errors.get() : ""));
      return row;
    } finally {
      writer.close();
    }
  }

  /** Nodes and pods in the API server (as the kubelet shows them) and in the arbiter. */
  private static List<NodeSlots> setUp(
      GpuShareService service, KubernetesClient kubelet, int nodes, int podsPerNode) {
    List<NodeSlots> slots = new ArrayList<>();
    Random random = new Random(5);
    for (int n = 0; n < nodes; n++) {
      String name = "node-" + n;
      kubelet
          .nodes()
          .resource(
              new NodeBuilder()
                  .withNewMetadata()
                  .withName(name)
                  .addToLabels(SharePolicy.LABEL, "share-pool")
                  .endMetadata()
                  .withNewStatus()
                  .addToCapacity("cpu", new Quantity("176"))
                  .addToCapacity("memory", new Quantity("1800Gi"))
                  .addToCapacity("nvidia.com/gpu", new Quantity(Integer.toString(GPUS)))
                  .addToAllocatable("cpu", new Quantity("176"))
                  .addToAllocatable("memory", new Quantity("1800Gi"))
                  .addToAllocatable("nvidia.com/gpu", new Quantity(Integer.toString(GPUS)))
                  .addNewCondition()
                  .withType("Ready")
                  .withStatus("True")
                  .withReason("KubeletReady")
                  .endCondition()
                  .endStatus()
                  .build())
          .create();
      BenchSupport.await(service.putNode(BenchSupport.node(name, GPUS)), Duration.ofMinutes(1));
      NodeSlots node = new NodeSlots(name, 600);
      slots.add(node);
      for (int p = 0; p < podsPerNode; p++) {
        String pod = name + "-pod-" + p;
        int limit = BenchSupport.limit(random);
        Pod created =
            kubelet
                .pods()
                .inNamespace(BenchSupport.NS)
                .resource(
                    new PodBuilder()
                        .withNewMetadata()
                        .withNamespace(BenchSupport.NS)
                        .withName(pod)
                        .addToLabels(SharePolicy.LABEL, "share-pool")
                        .addToLabels("alibabacloud.com/compute-class", "gpu-hpn")
                        .endMetadata()
                        .withNewSpec()
                        .withNodeName(name)
                        .addNewContainer()
                        .withName("main")
                        .withImage("busybox")
                        .endContainer()
                        .endSpec()
                        .withNewStatus()
                        .withPhase("Running")
                        .addNewCondition()
                        .withType("Ready")
                        .withStatus("True")
                        .endCondition()
                        .endStatus()
                        .build())
                .create();
        PodManifest m = BenchSupport.pod(name, pod, 10, limit);
        PodManifest withUid =
            new PodManifest(
                m.namespace(),
                m.name(),
                created.getMetadata().getUid(),
                m.nodeName(),
                m.labels(),
                m.annotations(),
                m.containers());
        BenchSupport.await(service.createPod(withUid), Duration.ofMinutes(1));
        node.idle.add(new PodSlot(pod, limit, node));
      }
    }
    return slots;
  }

  /** The runtime's cluster settings over the in-memory journal (as node-actors' tests run it). */
  static Config inMemory(Path snapshots) {
    return ConfigFactory.parseString(
            "pekko.loglevel = WARNING\n"
                + "pekko.persistence.journal.plugin = \"pekko.persistence.journal.inmem\"\n"
                + "pekko.persistence.snapshot-store.plugin ="
                + " \"pekko.persistence.snapshot-store.local\"\n"
                + "pekko.persistence.snapshot-store.local.dir = \""
                + snapshots.toString().replace("\\", "/")
                + "\"\n"
                + "pekko.actor.serialization-bindings {\n"
                + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                + "}\n")
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load());
  }
}
