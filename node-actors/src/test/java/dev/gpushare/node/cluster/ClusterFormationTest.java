package dev.gpushare.node.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.node.GpuShareRuntime;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sbr.SplitBrainResolverProvider;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.Test;

/** How a member finds its cluster, and the settings each way brings (README.md "Cluster mode"). */
class ClusterFormationTest {

  /** What the launcher builds: the formation's settings over the runtime's, resolved. */
  static Config system(ClusterFormation formation, Config above) {
    return above
        .withFallback(formation.config())
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load())
        .resolve();
  }

  static Config system(ClusterFormation formation) {
    return system(formation, ConfigFactory.empty());
  }

  @Test
  void insideAPodTheMemberBootstrapsOnItsNodeAndAddressElsewhereItJoinsItself() {
    ClusterFormation pod =
        ClusterFormation.fromEnvironment(
            Map.of(
                    "KUBERNETES_SERVICE_HOST", "10.96.0.1",
                    "NODE_NAME", "gpu-node-7",
                    "POD_IP", "10.1.7.3")
                ::get);
    assertEquals(
        ClusterFormation.kubernetes(Optional.of("gpu-node-7"), Optional.of("10.1.7.3")), pod);

    // The end-to-end tests run --kubernetes against a mock API server, outside any pod.
    ClusterFormation outside =
        ClusterFormation.fromEnvironment(Map.of("NODE_NAME", "gpu-node-7", "POD_IP", " ")::get);
    assertFalse(outside.bootstrap());
    assertEquals(Optional.of("gpu-node-7"), outside.node());
    assertEquals(Optional.empty(), outside.podIp());

    assertEquals(ClusterFormation.embedded(), ClusterFormation.fromEnvironment(k -> null));
  }

  @Test
  void theEmbeddedMemberStaysOnLoopbackWithoutRolesAndWithTheResolverKeepingTheMajority() {
    Config c = system(ClusterFormation.embedded());
    assertEquals(List.of(), c.getStringList("pekko.cluster.roles"));
    assertFalse(c.hasPath("gpushare.cluster.bootstrap"));
    assertEquals("127.0.0.1", c.getString("pekko.remote.artery.canonical.hostname"));
    assertEquals(0, c.getInt("pekko.remote.artery.canonical.port"));
    assertEquals(
        SplitBrainResolverProvider.class.getName(),
        c.getString("pekko.cluster.downing-provider-class"));
    assertEquals(
        "keep-majority", c.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals(
        Duration.ofSeconds(20), c.getDuration("pekko.cluster.split-brain-resolver.stable-after"));
  }

  @Test
  void aMemberOnANodeHasThatNodesRole() {
    Config c = system(new ClusterFormation(false, Optional.of("gpu-node-7"), Optional.empty()));
    assertEquals(List.of("node:gpu-node-7"), c.getStringList("pekko.cluster.roles"));
    assertEquals("node:gpu-node-7", NodeShardAllocation.roleFor("gpu-node-7"));
    assertEquals(Optional.of("gpu-node-7"), NodeShardAllocation.nodeOf("node:gpu-node-7"));
    assertEquals(Optional.empty(), NodeShardAllocation.nodeOf("node:"));
    assertEquals(Optional.empty(), NodeShardAllocation.nodeOf("dc-default"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> NodeShardAllocation.roleFor(" "));
    assertTrue(e.getMessage().contains("NODE_NAME"), e.getMessage());
  }

  @Test
  void kubernetesModeDiscoversTheGpusharePodsThroughTheApiAndListensOnThePodAddress() {
    Config c =
        system(ClusterFormation.kubernetes(Optional.of("gpu-node-7"), Optional.of("10.1.7.3")));
    assertEquals(List.of("node:gpu-node-7"), c.getStringList("pekko.cluster.roles"));
    // GpuShareRuntime.start then leaves joining to the bootstrap.
    assertTrue(c.getBoolean("gpushare.cluster.bootstrap"));
    assertEquals("10.1.7.3", c.getString("pekko.remote.artery.canonical.hostname"));
    assertEquals(25520, c.getInt("pekko.remote.artery.canonical.port"));
    assertEquals("10.1.7.3", c.getString("pekko.management.http.hostname"));
    assertEquals(7626, c.getInt("pekko.management.http.port"));
    // A downed member's process exits, and Kubernetes restarts it; never in embedded mode.
    assertTrue(c.getBoolean("pekko.coordinated-shutdown.exit-jvm"));
    assertFalse(
        system(ClusterFormation.embedded()).getBoolean("pekko.coordinated-shutdown.exit-jvm"));

    String discovery = "pekko.management.cluster.bootstrap.contact-point-discovery.";
    assertEquals("gpushare", c.getString(discovery + "service-name"));
    assertEquals("kubernetes-api", c.getString(discovery + "discovery-method"));
    assertEquals("management", c.getString(discovery + "port-name"));
    assertEquals(1, c.getInt(discovery + "required-contact-point-nr"));
    assertEquals(
        "app.kubernetes.io/name=%s",
        c.getString("pekko.discovery.kubernetes-api.pod-label-selector"));
    assertTrue(c.getBoolean("pekko.discovery.kubernetes-api.use-raw-ip"));
    assertEquals("gpushare", c.getString("pekko.discovery.kubernetes-api.container-name"));

    // keep-majority unless told otherwise; lease-majority ready to be switched on.
    assertEquals(
        "keep-majority", c.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals(
        "pekko.coordination.lease.kubernetes",
        c.getString("pekko.cluster.split-brain-resolver.lease-majority.lease-implementation"));
    assertEquals(
        "gpushare-pekko-sbr",
        c.getString("pekko.cluster.split-brain-resolver.lease-majority.lease-name"));
    assertEquals(
        "org.apache.pekko.coordination.lease.kubernetes.NativeKubernetesLease",
        c.getString("pekko.coordination.lease.kubernetes.lease-class"));
    // Without POD_NAMESPACE the namespace comes from the service account.
    assertEquals("<namespace>", c.getString("pekko.coordination.lease.kubernetes.namespace"));
    assertEquals("<pod-namespace>", c.getString("pekko.discovery.kubernetes-api.pod-namespace"));
  }

  @Test
  void theDaemonSetsVariablesSwitchTheStrategyTheQuorumAndTheNamespace() {
    // ${?VAR} reads the config root before the environment: the same substitution the pod's
    // environment feeds.
    Config env =
        ConfigFactory.parseMap(
            Map.of(
                "GPUSHARE_SPLIT_BRAIN_STRATEGY", "lease-majority",
                "GPUSHARE_REQUIRED_CONTACT_POINTS", "3",
                "POD_NAMESPACE", "gpushare-system"));
    Config c =
        ClusterFormation.kubernetes(Optional.of("n"), Optional.empty())
            .config()
            .withFallback(GpuShareRuntime.config())
            .withFallback(env)
            .withFallback(ConfigFactory.load())
            .resolve();
    assertEquals(
        "lease-majority", c.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals(
        3,
        c.getInt(
            "pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr"));
    assertEquals("gpushare-system", c.getString("pekko.coordination.lease.kubernetes.namespace"));
    assertEquals("gpushare-system", c.getString("pekko.discovery.kubernetes-api.pod-namespace"));
  }

  @Test
  void bootstrapFormsTheClusterThroughTheManagementContactPointWhichThenReportsReady()
      throws Exception {
    // Kubernetes mode on loopback, with the API discovery replaced by a fixed list naming this
    // member's own management endpoint: the lowest (only) contact point forms the cluster.
    int managementPort;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      managementPort = free.getLocalPort();
    }
    Config c =
        system(
            ClusterFormation.kubernetes(Optional.of("n"), Optional.of("127.0.0.1")),
            ConfigFactory.parseString(
                "pekko.loglevel = WARNING\n"
                    // The test JVM must outlive the member.
                    + "pekko.coordinated-shutdown.exit-jvm = off\n"
                    + "pekko.remote.artery.canonical.port = 0\n"
                    + "pekko.management.http.port = "
                    + managementPort
                    + "\n"
                    + "pekko.cluster.jmx.enabled = off\n"
                    + "pekko.discovery.config.services.gpushare.endpoints = "
                    + "[{host = \"127.0.0.1\", port = "
                    + managementPort
                    + "}]\n"
                    + "pekko.management.cluster.bootstrap.contact-point-discovery {\n"
                    + "  discovery-method = config\n"
                    + "  port-name = \"\"\n"
                    + "  stable-margin = 1s\n"
                    + "  interval = 200ms\n"
                    + "}\n"));
    ActorTestKit kit = ActorTestKit.create("gpushare", c);
    try {
      ActorSystem<Void> system = kit.system();
      String uri =
          ClusterFormation.bootstrap(system).toCompletableFuture().get(20, TimeUnit.SECONDS);
      assertEquals("http://127.0.0.1:" + managementPort, uri.replaceAll("/$", ""));
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      assertEquals(200, get(http, uri, "alive"));

      ClusterFormation.whenUp(system).toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals(
          List.of("node:n"),
          Cluster.get(system).selfMember().getRoles().stream()
              .filter(r -> r.startsWith("node:"))
              .toList());
      // Readiness includes cluster membership (Up): what a probe on the management port sees.
      assertEquals(200, get(http, uri, "ready"));
      // The read-only cluster state names each member's node (README.md "Cluster mode").
      HttpResponse<String> members =
          http.send(
              HttpRequest.newBuilder(URI.create(uri.replaceAll("/$", "") + "/cluster/members"))
                  .timeout(Duration.ofSeconds(5))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertEquals(200, members.statusCode());
      assertTrue(members.body().contains("\"node:n\""), members.body());
      // Already Up: completes at once.
      ClusterFormation.whenUp(system).toCompletableFuture().get(5, TimeUnit.SECONDS);
    } finally {
      kit.shutdownTestKit();
    }
  }

  static int get(HttpClient http, String base, String path) throws Exception {
    String url = base.endsWith("/") ? base + path : base + "/" + path;
    return http.send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).GET().build(),
            HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }
}
