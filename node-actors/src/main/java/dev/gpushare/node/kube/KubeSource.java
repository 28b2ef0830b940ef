package dev.gpushare.node.kube;

import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.node.api.GpuShareWriter;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The arbiter's eyes on the API server (ARCHITECTURE.md §4, issue "Kubernetes mode"): informers on
 * the nodes that carry {@code alibabacloud.com/gpu-share-policy} and on the pods bound to them —
 * sharing pods ({@code alibabacloud.com/compute-class: gpu-hpn}) and pods holding {@code
 * nvidia.com/gpu} (the prerequisite of SPEC §2) — turned into the same service calls the embedded
 * API makes.
 *
 * <p>Every informer event goes through one sequential chain, so the arbiter sees a node before its
 * pods and each pod's changes in order. Calls are idempotent ({@link GpuShareWriter#putNode} of an
 * unchanged node and {@link GpuShareWriter#ensurePod} of a known uid change nothing), so a resync
 * or a relist after a watch error neither loses nor duplicates a decision; deletions missed while
 * the watch was down arrive as deletes after the relist. A pod seen before its node is parked and
 * replayed once the node is registered.
 *
 * <p>With {@code nodeName} set (the DaemonSet member of one node) both informers are limited to
 * that node.
 */
public final class KubeSource implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KubeSource.class);

  /** How often informers re-deliver every object, to heal anything missed. */
  static final Duration RESYNC = Duration.ofMinutes(5);

  private final KubernetesClient client;
  private final GpuShareWriter service;
  private final Optional<String> nodeName;
  private final Set<String> managed = ConcurrentHashMap.newKeySet();
  // The manifest last registered per node: kubelet heartbeats change nothing the arbiter reads.
  private final Map<String, NodeManifest> registered = new ConcurrentHashMap<>();
  private final Map<String, Map<String, Pod>> parked = new HashMap<>();
  private final Object chainLock = new Object();
  private CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
  private final List<SharedIndexInformer<?>> informers = new ArrayList<>();

  public KubeSource(KubernetesClient client, GpuShareWriter service, Optional<String> nodeName) {
    this.client = client;
    this.service = service;
    this.nodeName = nodeName;
  }

  /** Starts both informers; completes once both have listed and their events are applied. */
  public CompletionStage<Void> start() {
    SharedIndexInformer<Node> nodes =
        nodeName
            .map(
                n ->
                    client
                        .nodes()
                        .withField("metadata.name", n)
                        .runnableInformer(RESYNC.toMillis()))
            .orElseGet(
                () ->
                    client
                        .nodes()
                        .withLabel(SharePolicy.LABEL)
                        .runnableInformer(RESYNC.toMillis()));
    nodes.addEventHandler(new NodeEvents());
    SharedIndexInformer<Pod> pods =
        nodeName
            .map(
                n ->
                    client
                        .pods()
                        .inAnyNamespace()
                        .withField("spec.nodeName", n)
                        .runnableInformer(RESYNC.toMillis()))
            .orElseGet(() -> client.pods().inAnyNamespace().runnableInformer(RESYNC.toMillis()));
    pods.addEventHandler(new PodEvents());
    informers.add(nodes);
    informers.add(pods);
    return nodes.start().thenCompose(v -> pods.start()).thenCompose(v -> drained());
  }

  /** Completes when every event received so far has been applied. */
  public CompletionStage<Void> drained() {
    synchronized (chainLock) {
      return chain;
    }
  }

  public boolean synced() {
    return !informers.isEmpty() && informers.stream().allMatch(SharedIndexInformer::hasSynced);
  }

  @Override
  public void close() {
    informers.forEach(SharedIndexInformer::stop);
  }

  // ---- events, in order ----

  private void then(String what, java.util.function.Supplier<CompletionStage<?>> step) {
    synchronized (chainLock) {
      chain =
          chain
              .thenCompose(v -> step.get().thenApply(x -> (Void) null))
              .exceptionally(
                  e -> {
                    LOG.warn("{} failed: {}", what, rootMessage(e));
                    return null;
                  });
    }
  }

  private final class NodeEvents implements ResourceEventHandler<Node> {
    @Override
    public void onAdd(Node node) {
      upsert(node);
    }

    @Override
    public void onUpdate(Node before, Node node) {
      upsert(node);
    }

    @Override
    public void onDelete(Node node, boolean finalStateUnknown) {
      String name = node.getMetadata().getName();
      // Out of the label selector: the label was removed (sharing off) — or the node is gone.
      then(
          "node " + name + " left",
          () ->
              CompletableFuture.supplyAsync(() -> client.nodes().withName(name).get())
                  .thenCompose(
                      current -> {
                        if (current == null) {
                          LOG.info("node {} was deleted; its arbiter state is kept", name);
                          return CompletableFuture.completedFuture(null);
                        }
                        return register(current);
                      }));
    }

    private void upsert(Node node) {
      then("node " + node.getMetadata().getName(), () -> register(node));
    }
  }

  private CompletionStage<?> register(Node node) {
    String name = node.getMetadata().getName();
    NodeManifest manifest = KubeManifests.node(node);
    if (manifest.equals(registered.get(name))) {
      return CompletableFuture.completedFuture(null);
    }
    return service
        .putNode(manifest)
        .thenAccept(
            r -> {
              registered.put(name, manifest);
              managed.add(name);
              Map<String, Pod> waiting;
              synchronized (parked) {
                waiting = parked.remove(name);
              }
              if (waiting != null) {
                waiting.values().forEach(this::upsertPod);
              }
            });
  }

  private final class PodEvents implements ResourceEventHandler<Pod> {
    @Override
    public void onAdd(Pod pod) {
      upsertPod(pod);
    }

    @Override
    public void onUpdate(Pod before, Pod pod) {
      upsertPod(pod);
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
      forget(pod);
    }
  }

  private void upsertPod(Pod pod) {
    if (!relevant(pod)) {
      return;
    }
    String node = pod.getSpec().getNodeName();
    if (node == null || node.isEmpty()) {
      return;
    }
    if (finished(pod)) {
      forget(pod);
      return;
    }
    if (!managed.contains(node)) {
      synchronized (parked) {
        parked.computeIfAbsent(node, n -> new LinkedHashMap<>()).put(key(pod), pod);
      }
      return;
    }
    then("pod " + key(pod), () -> service.ensurePod(KubeManifests.pod(pod)));
  }

  private void forget(Pod pod) {
    String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
    if (node != null) {
      synchronized (parked) {
        Map<String, Pod> waiting = parked.get(node);
        if (waiting != null) {
          waiting.remove(key(pod));
        }
      }
    }
    then(
        "pod " + key(pod) + " gone",
        () ->
            service.forgetPod(
                namespace(pod), pod.getMetadata().getName(), pod.getMetadata().getUid()));
  }

  /** Sharing pods, and pods holding whole GPUs (they keep sharing off on their node). */
  static boolean relevant(Pod pod) {
    Map<String, String> labels = pod.getMetadata().getLabels();
    if (labels != null && labels.containsKey(ShareRequestRules.COMPUTE_CLASS_LABEL)) {
      return true;
    }
    if (labels != null && labels.containsKey(SharePolicy.LABEL)) {
      return true;
    }
    if (pod.getSpec() == null || pod.getSpec().getContainers() == null) {
      return false;
    }
    for (Container c : pod.getSpec().getContainers()) {
      if (c.getResources() != null
          && ((c.getResources().getLimits() != null
                  && c.getResources().getLimits().containsKey(ShareRequestRules.EXCLUSIVE_GPU))
              || (c.getResources().getRequests() != null
                  && c.getResources()
                      .getRequests()
                      .containsKey(ShareRequestRules.EXCLUSIVE_GPU)))) {
        return true;
      }
    }
    return false;
  }

  /** A pod that ran to completion holds nothing any more. */
  static boolean finished(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    return "Succeeded".equals(phase) || "Failed".equals(phase);
  }

  private static String key(Pod pod) {
    return namespace(pod) + "/" + pod.getMetadata().getName();
  }

  private static String namespace(Pod pod) {
    String ns = pod.getMetadata().getNamespace();
    return ns == null || ns.isEmpty() ? "default" : ns;
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t != t.getCause()) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.toString() : t.getMessage();
  }

  /** What gpushare writes on an object, to tell when it changed ({@link KubeCache}). */
  static final class Owned {
    private Owned() {}

    static List<Object> node(Node node) {
      List<Object> owned = new ArrayList<>();
      if (node.getStatus() != null) {
        for (Map<String, Quantity> m :
            List.of(
                nullSafe(node.getStatus().getCapacity()),
                nullSafe(node.getStatus().getAllocatable()))) {
          owned.add(m.get(ShareRequestRules.CORE));
          owned.add(m.get(ShareRequestRules.MEMORY));
        }
        if (node.getStatus().getConditions() != null) {
          node.getStatus().getConditions().stream()
              .filter(c -> c.getType() != null && c.getType().startsWith("GPUSharePolicy"))
              .forEach(
                  c -> owned.add(c.getType() + c.getStatus() + c.getReason() + c.getMessage()));
        }
      }
      return owned;
    }

    static List<Object> pod(Pod pod) {
      List<Object> owned = new ArrayList<>();
      Map<String, String> annotations = pod.getMetadata().getAnnotations();
      if (annotations != null) {
        annotations.entrySet().stream()
            .filter(e -> e.getKey().startsWith("gpushare.dev/"))
            .sorted(Map.Entry.comparingByKey())
            .forEach(owned::add);
      }
      if (pod.getStatus() != null && pod.getStatus().getConditions() != null) {
        pod.getStatus().getConditions().stream()
            .filter(c -> c.getType() != null && c.getType().contains("GPUShare"))
            .forEach(c -> owned.add(c.getType() + c.getStatus() + c.getReason() + c.getMessage()));
      }
      return owned;
    }

    private static <K, V> Map<K, V> nullSafe(Map<K, V> m) {
      return m == null ? Map.of() : m;
    }
  }

  /** Kubernetes objects as the arbiter's neutral manifests. */
  static final class KubeManifests {
    private KubeManifests() {}

    /**
     * The node as the arbiter sees it: labels, annotations, and its <em>own</em> capacity and
     * allocatable — the percentage resources we write are not the node's own, and on virtual nodes
     * the allocatable recorded before our first change is the node's own.
     */
    static NodeManifest node(Node node) {
      Map<String, String> capacity =
          own(node.getStatus() == null ? null : node.getStatus().getCapacity());
      Map<String, String> allocatable =
          OwnAllocatable.read(node)
              .orElseGet(
                  () -> own(node.getStatus() == null ? null : node.getStatus().getAllocatable()));
      return new NodeManifest(
          node.getMetadata().getName(),
          sorted(node.getMetadata().getLabels()),
          sorted(node.getMetadata().getAnnotations()),
          capacity,
          allocatable);
    }

    static PodManifest pod(Pod pod) {
      List<PodManifest.ContainerResources> containers = new ArrayList<>();
      if (pod.getSpec() != null && pod.getSpec().getContainers() != null) {
        for (Container c : pod.getSpec().getContainers()) {
          containers.add(
              new PodManifest.ContainerResources(
                  c.getName(),
                  quantities(c.getResources() == null ? null : c.getResources().getRequests()),
                  quantities(c.getResources() == null ? null : c.getResources().getLimits())));
        }
      }
      return new PodManifest(
          namespace(pod),
          pod.getMetadata().getName(),
          pod.getMetadata().getUid(),
          pod.getSpec() == null ? null : pod.getSpec().getNodeName(),
          sorted(pod.getMetadata().getLabels()),
          sorted(pod.getMetadata().getAnnotations()),
          containers);
    }

    private static Map<String, String> quantities(Map<String, Quantity> map) {
      Map<String, String> out = new TreeMap<>();
      if (map != null) {
        map.forEach((k, q) -> out.put(k, q.toString()));
      }
      return out;
    }

    /** Without the percentage resources we write ourselves: they are not the node's own. */
    private static Map<String, String> own(Map<String, Quantity> map) {
      Map<String, String> out = quantities(map);
      out.remove(ShareRequestRules.CORE);
      out.remove(ShareRequestRules.MEMORY);
      return out;
    }

    private static Map<String, String> sorted(Map<String, String> map) {
      return map == null ? Map.of() : new TreeMap<>(map);
    }
  }
}
