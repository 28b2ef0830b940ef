package dev.gpushare.node.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;

/**
 * How a member finds its cluster (ARCHITECTURE.md §2): on its own (embedded mode, or a process
 * outside Kubernetes), or, inside a Kubernetes pod, through Pekko Management's cluster bootstrap
 * with the Kubernetes API discovery of the other gpushare pods ({@value #KUBERNETES_RESOURCE}).
 * Either way a member that runs on a node says so through its cluster role ({@link
 * NodeShardAllocation#roleFor}), which brings that node's shard to it.
 *
 * <p>The launcher's two calls:
 *
 * <pre>{@code
 * ClusterFormation formation = ClusterFormation.fromEnvironment(System::getenv);  // or embedded()
 * Config system = formation.config()                 // above GpuShareRuntime.config()
 *     .withFallback(GpuShareRuntime.config()).withFallback(ConfigFactory.load());
 * ...
 * formation.start(system)                            // before GpuShareRuntime.start: completes
 *     .thenCompose(up -> GpuShareRuntime.start(...)) //   once this member is Up
 * }</pre>
 *
 * @param bootstrap cluster bootstrap through the Kubernetes API, else a cluster of its own
 * @param node the node this member runs on ({@code NODE_NAME}), if any
 * @param podIp the pod's address ({@code POD_IP}) for remoting and management, if known
 */
public record ClusterFormation(boolean bootstrap, Optional<String> node, Optional<String> podIp) {

  /** Cluster bootstrap, discovery, remoting port and split-brain settings of Kubernetes mode. */
  public static final String KUBERNETES_RESOURCE = "gpushare-cluster-k8s.conf";

  /** Set by the kubelet in every pod; the sign that a member runs in Kubernetes. */
  public static final String IN_CLUSTER_VARIABLE = "KUBERNETES_SERVICE_HOST";

  /** A one-member cluster on loopback, on no particular node (the embedded default). */
  public static ClusterFormation embedded() {
    return new ClusterFormation(false, Optional.empty(), Optional.empty());
  }

  /** Bootstrap through the Kubernetes API, as a member of {@code node} when one is named. */
  public static ClusterFormation kubernetes(Optional<String> node, Optional<String> podIp) {
    return new ClusterFormation(true, node, podIp);
  }

  /**
   * From the pod's environment (daemonset.yaml): inside a pod ({@value #IN_CLUSTER_VARIABLE} set)
   * cluster bootstrap with {@code NODE_NAME} as the member's node and {@code POD_IP} as its
   * address; elsewhere (a developer's machine, the end-to-end tests against a mock API server) a
   * cluster of its own, still on {@code NODE_NAME} if set.
   */
  public static ClusterFormation fromEnvironment(Function<String, String> env) {
    Optional<String> node = value(env, "NODE_NAME");
    return value(env, IN_CLUSTER_VARIABLE).isPresent()
        ? kubernetes(node, value(env, "POD_IP"))
        : new ClusterFormation(false, node, Optional.empty());
  }

  /**
   * This member's actor-system settings, unresolved (environment substitutions such as {@code
   * POD_NAMESPACE} are resolved with the rest): its node role, and with bootstrap the Kubernetes
   * resource and the pod's address. Goes above {@code GpuShareRuntime.config()}, whose loopback
   * address and random port it replaces.
   */
  public Config config() {
    Config roles = NodeShardAllocation.rolesConfig(node);
    if (!bootstrap) {
      return roles;
    }
    Config address =
        podIp
            .map(
                ip ->
                    ConfigFactory.parseMap(
                        Map.of(
                            "pekko.remote.artery.canonical.hostname", ip,
                            "pekko.management.http.hostname", ip)))
            .orElse(ConfigFactory.empty());
    return roles.withFallback(address).withFallback(kubernetesResource());
  }

  /**
   * Forms or joins the cluster; completes once this member is Up. Without bootstrap the member
   * joins the configured {@code pekko.cluster.seed-nodes} (Pekko does that by itself at start) or,
   * when there are none, itself.
   */
  public CompletionStage<Done> start(ActorSystem<?> system) {
    if (bootstrap) {
      return bootstrap(system).thenCompose(uri -> whenUp(system));
    }
    if (system.settings().config().getStringList("pekko.cluster.seed-nodes").isEmpty()) {
      selfJoin(system);
    }
    return whenUp(system);
  }

  /** {@value #KUBERNETES_RESOURCE}, unresolved. */
  public static Config kubernetesResource() {
    return ConfigFactory.parseResources(
        ClusterFormation.class.getClassLoader(),
        KUBERNETES_RESOURCE,
        ConfigParseOptions.defaults().setAllowMissing(false));
  }

  /** The member forms a cluster of its own (embedded mode). */
  public static void selfJoin(ActorSystem<?> system) {
    Cluster cluster = Cluster.get(system);
    cluster.join(cluster.selfAddress());
  }

  /**
   * Starts the management endpoint (health, cluster state read-only, the bootstrap's contact point)
   * and then cluster bootstrap, which discovers the other members through the Kubernetes API and
   * joins them, or forms the cluster if it is the lowest-addressed of the first ones. Completes
   * with the management address once it listens; membership follows asynchronously ({@link
   * #whenUp}).
   */
  public static CompletionStage<String> bootstrap(ActorSystem<?> system) {
    return PekkoManagement.get(system)
        .start()
        .thenApply(
            uri -> {
              ClusterBootstrap.get(system).start();
              return uri.toString();
            });
  }

  /**
   * Completes once this member is Up (at once if it already is); fails if it is removed (or its
   * actor system stops) first.
   */
  public static CompletionStage<Done> whenUp(ActorSystem<?> system) {
    CompletableFuture<Done> up = new CompletableFuture<>();
    Cluster cluster = Cluster.get(system);
    cluster.registerOnMemberUp(() -> up.complete(Done.getInstance()));
    cluster.registerOnMemberRemoved(
        () ->
            up.completeExceptionally(
                new IllegalStateException(
                    "member " + cluster.selfAddress() + " was removed before it came Up")));
    return up;
  }

  private static Optional<String> value(Function<String, String> env, String name) {
    return Optional.ofNullable(env.apply(name)).map(String::strip).filter(v -> !v.isEmpty());
  }
}
