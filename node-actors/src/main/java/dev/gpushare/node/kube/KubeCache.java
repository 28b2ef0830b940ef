package dev.gpushare.node.kube;

import dev.gpushare.arbiter.SharePolicy;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * What {@link KubeWriter} knows of the API server without asking: its own informers on the nodes
 * (all of them, not only those with {@link SharePolicy#LABEL}: a node whose label was just removed
 * still needs gpushare's parts taken off) and on the pods gpushare manages ({@link
 * KubeSource#relevant}), each object kept <em>trimmed</em> to what the writer reads — name,
 * namespace, uid, resource version, the {@code gpushare.dev/} annotations, gpushare's own
 * conditions, and on nodes the percentage resources and the recorded allocatable — so that an
 * object costs a few hundred bytes of heap, not the tens of KiB of a full pod (issue 38 asks for at
 * most 4 KiB). Other pods are not kept at all.
 *
 * <p>What the writer itself just wrote is kept beside the informer's copy until the watch brings
 * that version or a newer one ({@link #wrote}), so that a second pass before the watch event does
 * not write again. After a 409 the writer reads the object afresh and hands it to {@link #wrote}.
 */
final class KubeCache implements AutoCloseable {
  /** Told when an object gpushare writes changed in the API server, or appeared, or went away. */
  interface Changes {
    void node(String name, Change change);

    void pod(String namespace, String name, Change change);
  }

  enum Change {
    ADDED,
    /** Someone changed what gpushare writes (or the writer's own write came back). */
    OWNED,
    DELETED
  }

  private final KubernetesClient client;
  private final Changes changes;
  private final TrimmedStore<Node> nodes = new TrimmedStore<>(KubeCache::trim, n -> true);
  private final TrimmedStore<Pod> pods = new TrimmedStore<>(KubeCache::trim, KubeSource::relevant);
  private SharedIndexInformer<Node> nodeInformer;
  private SharedIndexInformer<Pod> podInformer;

  KubeCache(KubernetesClient client, Changes changes) {
    this.client = client;
    this.changes = changes;
  }

  /** Lists and watches; completes once both informers have listed. */
  CompletionStage<Void> start() {
    // every node, not only those labelled for sharing: when the label goes, the writer still has
    // to take its percentages and conditions off the node
    nodeInformer =
        client
            .nodes()
            .runnableInformer(0)
            .itemStore(nodes)
            .addEventHandler(
                new Handler<Node>(nodes, KubeSource.Owned::node) {
                  @Override
                  void changed(Node n, Change c) {
                    changes.node(n.getMetadata().getName(), c);
                  }
                });
    podInformer =
        client
            .pods()
            .inAnyNamespace()
            .runnableInformer(0)
            .itemStore(pods)
            .addEventHandler(
                new Handler<Pod>(pods, KubeSource.Owned::pod) {
                  @Override
                  void changed(Pod p, Change c) {
                    if (KubeSource.relevant(p) || c == Change.DELETED) {
                      changes.pod(p.getMetadata().getNamespace(), p.getMetadata().getName(), c);
                    }
                  }
                });
    return nodeInformer.start().thenCompose(v -> podInformer.start());
  }

  boolean synced() {
    return nodeInformer != null
        && podInformer != null
        && nodeInformer.hasSynced()
        && podInformer.hasSynced();
  }

  Optional<Node> node(String name) {
    return Optional.ofNullable(nodes.current(name));
  }

  Optional<Pod> pod(String namespace, String name) {
    return Optional.ofNullable(pods.current(namespace + "/" + name));
  }

  /** The writer wrote {@code object}; the answer is the object's newest state. */
  void wrote(HasMetadata object) {
    if (object instanceof Node n) {
      nodes.wrote(n);
    } else if (object instanceof Pod p) {
      pods.wrote(p);
    }
  }

  /** Objects held: for the heap figures. */
  int size() {
    return nodes.size() + pods.size();
  }

  @Override
  public void close() {
    if (nodeInformer != null) {
      nodeInformer.stop();
    }
    if (podInformer != null) {
      podInformer.stop();
    }
  }

  // ---- trimming ----

  static Pod trim(Pod pod) {
    var meta = pod.getMetadata();
    PodBuilder b =
        new PodBuilder()
            .withNewMetadata()
            .withName(meta.getName())
            .withNamespace(meta.getNamespace())
            .withUid(meta.getUid())
            .withResourceVersion(meta.getResourceVersion())
            .withAnnotations(ours(meta.getAnnotations(), k -> k.startsWith("gpushare.dev/")))
            .endMetadata();
    List<PodCondition> conditions =
        pod.getStatus() == null || pod.getStatus().getConditions() == null
            ? null
            : pod.getStatus().getConditions().stream()
                .filter(c -> PodWrites.OUR_CONDITIONS.contains(c.getType()))
                .toList();
    if (conditions != null && !conditions.isEmpty()) {
      b.withNewStatus().withConditions(conditions).endStatus();
    }
    return b.build();
  }

  static Node trim(Node node) {
    var meta = node.getMetadata();
    NodeBuilder b =
        new NodeBuilder()
            .withNewMetadata()
            .withName(meta.getName())
            .withUid(meta.getUid())
            .withResourceVersion(meta.getResourceVersion())
            .withAnnotations(ours(meta.getAnnotations(), OwnAllocatable.ANNOTATION::equals))
            .endMetadata();
    if (node.getStatus() != null) {
      List<NodeCondition> conditions =
          node.getStatus().getConditions() == null
              ? null
              : node.getStatus().getConditions().stream()
                  .filter(c -> NodeWrites.OUR_CONDITIONS.contains(c.getType()))
                  .toList();
      b.withNewStatus()
          .withCapacity(resources(node.getStatus().getCapacity()))
          .withAllocatable(resources(node.getStatus().getAllocatable()))
          .withConditions(conditions == null || conditions.isEmpty() ? null : conditions)
          .endStatus();
    }
    return b.build();
  }

  private static Map<String, Quantity> resources(Map<String, Quantity> all) {
    if (all == null) {
      return null;
    }
    Map<String, Quantity> out = new TreeMap<>();
    all.forEach(
        (k, v) -> {
          if (NodeWrites.PERCENTAGES.contains(k) || OwnAllocatable.RECORDED.contains(k)) {
            out.put(k, v);
          }
        });
    return out.isEmpty() ? null : out;
  }

  private static Map<String, String> ours(Map<String, String> all, Predicate<String> key) {
    if (all == null || all.isEmpty()) {
      return null;
    }
    Map<String, String> out = new TreeMap<>();
    all.forEach(
        (k, v) -> {
          if (key.test(k)) {
            out.put(k, v);
          }
        });
    return out.isEmpty() ? null : out;
  }

  /** Newer of two resource versions; {@code true} when unsure (they are opaque strings). */
  static boolean atLeast(String rv, String than) {
    if (rv == null || than == null) {
      return true;
    }
    try {
      return Long.parseLong(rv) >= Long.parseLong(than);
    } catch (NumberFormatException e) {
      return true;
    }
  }

  /** Whether {@code rv} is known to be at least {@code than}. */
  static boolean knownAtLeast(String rv, String than) {
    try {
      return rv != null && than != null && Long.parseLong(rv) >= Long.parseLong(than);
    } catch (NumberFormatException e) {
      return false;
    }
  }

  // ---- the store ----

  /**
   * The informer's store, holding trimmed copies of the objects {@code keep} accepts, plus the
   * writer's own newer copies.
   */
  static final class TrimmedStore<T extends HasMetadata> implements ItemStore<T> {
    private final UnaryOperator<T> trim;
    private final Predicate<T> keep;
    private final Map<String, T> items = new ConcurrentHashMap<>();
    private final Map<String, T> written = new ConcurrentHashMap<>();

    TrimmedStore(UnaryOperator<T> trim, Predicate<T> keep) {
      this.trim = trim;
      this.keep = keep;
    }

    @Override
    public String getKey(T obj) {
      return Cache.metaNamespaceKeyFunc(obj);
    }

    @Override
    public T put(String key, T obj) {
      T mine = written.get(key);
      if (mine != null
          && atLeast(
              obj.getMetadata().getResourceVersion(), mine.getMetadata().getResourceVersion())) {
        written.remove(key, mine);
      }
      if (!keep.test(obj)) {
        return items.remove(key);
      }
      return items.put(key, trim.apply(obj));
    }

    @Override
    public T remove(String key) {
      written.remove(key);
      return items.remove(key);
    }

    @Override
    public Stream<String> keySet() {
      return items.keySet().stream();
    }

    @Override
    public Stream<T> values() {
      return items.values().stream();
    }

    @Override
    public int size() {
      return items.size();
    }

    @Override
    public T get(String key) {
      return items.get(key);
    }

    @Override
    public boolean isFullState() {
      return false;
    }

    /** The newest copy: the writer's own while the watch has not caught up with it. */
    T current(String key) {
      T mine = written.get(key);
      return mine != null ? mine : items.get(key);
    }

    void wrote(T obj) {
      String key = getKey(obj);
      T cached = items.get(key);
      if (cached == null
          || !knownAtLeast(
              cached.getMetadata().getResourceVersion(), obj.getMetadata().getResourceVersion())) {
        written.put(key, trim.apply(obj));
      }
    }
  }

  /** Tells {@link Changes} what changed in what gpushare writes. */
  private abstract static class Handler<T extends HasMetadata> implements ResourceEventHandler<T> {
    private final TrimmedStore<T> store;
    private final java.util.function.Function<T, List<Object>> owned;

    Handler(TrimmedStore<T> store, java.util.function.Function<T, List<Object>> owned) {
      this.store = store;
      this.owned = owned;
    }

    abstract void changed(T obj, Change change);

    @Override
    public void onAdd(T obj) {
      changed(obj, Change.ADDED);
    }

    @Override
    public void onUpdate(T before, T after) {
      if (before == null || !owned.apply(before).equals(owned.apply(after))) {
        changed(after, Change.OWNED);
      }
    }

    @Override
    public void onDelete(T obj, boolean finalStateUnknown) {
      changed(obj, Change.DELETED);
    }
  }
}
