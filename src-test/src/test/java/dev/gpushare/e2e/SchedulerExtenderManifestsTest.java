package dev.gpushare.e2e;

import static dev.gpushare.e2e.DeployManifestsTest.DEPLOY;
import static dev.gpushare.e2e.DeployManifestsTest.NS;
import static dev.gpushare.e2e.DeployManifestsTest.YAML;
import static dev.gpushare.e2e.DeployManifestsTest.typed;
import static dev.gpushare.e2e.DeployManifestsTest.unknownFields;
import static dev.gpushare.e2e.DeployManifestsTest.yamlDocuments;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.e2e.DeployManifestsTest.Doc;
import dev.gpushare.http.auth.Scope;
import dev.gpushare.http.extender.SchedulerExtenderRoutes;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.Subject;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The scheduler-extender component ({@code deploy/scheduler-extender/}, SPEC §8): its
 * KubeSchedulerConfiguration parses with only the fields kube-scheduler knows and points at the
 * extender's paths, port, certificates and Lease as the other objects define them; every object
 * parses into fabric8's typed model; the RBAC rule is the one {@code auth/Scope} asks for; and an
 * overlay with the component renders.
 */
class SchedulerExtenderManifestsTest {
  static final Path DIR = DEPLOY.resolve("scheduler-extender");
  static final String CONFIG_FILE = "kube-scheduler-config.yaml";
  static final String SCHEDULER = "gpushare-scheduler";
  static final int EXTENDER_PORT = 8444;

  /**
   * The fields of {@code kubescheduler.config.k8s.io/v1} that the file may use: kube-scheduler
   * decodes its config strictly, so an unknown or misspelt field stops it.
   */
  static final Set<String> CONFIG_FIELDS =
      Set.of(
          "apiVersion",
          "kind",
          "parallelism",
          "leaderElection",
          "clientConnection",
          "healthzBindAddress",
          "metricsBindAddress",
          "enableProfiling",
          "enableContentionProfiling",
          "percentageOfNodesToScore",
          "podInitialBackoffSeconds",
          "podMaxBackoffSeconds",
          "profiles",
          "extenders",
          "delayCacheUntilActive");

  static final Set<String> LEADER_ELECTION_FIELDS =
      Set.of(
          "leaderElect",
          "leaseDuration",
          "renewDeadline",
          "retryPeriod",
          "resourceLock",
          "resourceName",
          "resourceNamespace");

  static final Set<String> PROFILE_FIELDS =
      Set.of("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig");

  /** {@code Extender} of kubescheduler.config.k8s.io/v1. */
  static final Set<String> EXTENDER_FIELDS =
      Set.of(
          "urlPrefix",
          "filterVerb",
          "preemptVerb",
          "prioritizeVerb",
          "weight",
          "bindVerb",
          "enableHTTPS",
          "tlsConfig",
          "httpTimeout",
          "nodeCacheCapable",
          "managedResources",
          "ignorable");

  /** {@code ExtenderTLSConfig}: client certificates and a CA, no bearer token. */
  static final Set<String> TLS_FIELDS =
      Set.of(
          "insecure",
          "serverName",
          "certFile",
          "keyFile",
          "caFile",
          "certData",
          "keyData",
          "caData");

  static final Set<String> MANAGED_RESOURCE_FIELDS = Set.of("name", "ignoredByScheduler");

  static JsonNode kustomization;
  static JsonNode config;
  static List<Doc> docs;

  @BeforeAll
  static void read() throws IOException {
    DeployManifestsTest.readManifests();
    kustomization = YAML.readTree(DIR.resolve("kustomization.yaml").toFile());
    config = YAML.readTree(DIR.resolve(CONFIG_FILE).toFile());
    docs = new ArrayList<>();
    for (JsonNode r : kustomization.path("resources")) {
      Path file = DIR.resolve(r.asText());
      List<JsonNode> trees = yamlDocuments(Files.readString(file));
      assertEquals(1, trees.size(), file.getFileName() + ": one object per file");
      docs.add(new Doc(file, trees.get(0)));
    }
  }

  // ---------------------------------------------------------------- the component

  @Test
  void theComponentListsEveryFileOfItsDirectoryAndHasAReadme() throws IOException {
    assertEquals("kustomize.config.k8s.io/v1alpha1", kustomization.path("apiVersion").asText());
    assertEquals("Component", kustomization.path("kind").asText());
    assertFalse(kustomization.has("namespace"), "one RoleBinding lives in kube-system");
    Set<String> listed = new TreeSet<>();
    kustomization.path("resources").forEach(r -> assertTrue(listed.add(r.asText()), r.asText()));
    kustomization.path("patches").forEach(p -> assertTrue(listed.add(p.path("path").asText())));
    JsonNode generator = kustomization.path("configMapGenerator").get(0);
    assertEquals(SCHEDULER + "-config", generator.path("name").asText());
    assertEquals(NS, generator.path("namespace").asText());
    generator.path("files").forEach(f -> assertTrue(listed.add(f.asText()), f.asText()));
    Set<String> present;
    try (Stream<Path> files = Files.list(DIR)) {
      present =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".yaml") && !n.equals("kustomization.yaml"))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertEquals(present, listed, "kustomization.yaml vs deploy/scheduler-extender/*.yaml");
    assertTrue(Files.isRegularFile(DIR.resolve("README.md")));
    // the base's kustomization does not list the component's files
    JsonNode base = YAML.readTree(DEPLOY.resolve("kustomization.yaml").toFile());
    base.path("resources").forEach(r -> assertFalse(r.asText().contains("scheduler-extender")));
  }

  @Test
  void everyObjectParsesIntoFabric8sTypedModelWithoutUnknownFields() {
    for (Doc d : docs) {
      String where = d.file().getFileName() + " (" + d.key() + ")";
      if (d.group().equals(DeployManifestsTest.CERT_MANAGER)) {
        assertEquals("cert-manager.io/v1", d.apiVersion(), where);
        continue;
      }
      assertEquals(List.of(), unknownFields(typed(d)), where + ": fields fabric8 does not know");
      String ns = d.namespace();
      if (d.kind().startsWith("Cluster")) {
        assertEquals(null, ns, where);
      } else if (d.name().equals(SCHEDULER + "-authentication-reader")) {
        assertEquals("kube-system", ns, where);
      } else {
        assertEquals(NS, ns, where);
      }
    }
  }

  // ---------------------------------------------------------------- KubeSchedulerConfiguration

  @Test
  void theSchedulerConfigurationUsesOnlyFieldsKubeSchedulerKnows() {
    assertEquals("kubescheduler.config.k8s.io/v1", config.path("apiVersion").asText());
    assertEquals("KubeSchedulerConfiguration", config.path("kind").asText());
    assertKnown(config, CONFIG_FIELDS, "$");
    assertKnown(config.path("leaderElection"), LEADER_ELECTION_FIELDS, "$.leaderElection");
    config.path("profiles").forEach(p -> assertKnown(p, PROFILE_FIELDS, "$.profiles[]"));
    assertEquals(1, config.path("extenders").size());
    JsonNode e = config.path("extenders").get(0);
    assertKnown(e, EXTENDER_FIELDS, "$.extenders[0]");
    assertKnown(e.path("tlsConfig"), TLS_FIELDS, "$.extenders[0].tlsConfig");
    e.path("managedResources")
        .forEach(r -> assertKnown(r, MANAGED_RESOURCE_FIELDS, "$.extenders[0].managedResources[]"));
    assertEquals(
        SCHEDULER, config.path("profiles").get(0).path("schedulerName").asText(), "profile");
  }

  @Test
  void theExtenderEntryPointsAtTheExtendersPathsOverMutualTls() {
    JsonNode e = extender();
    URI prefix = URI.create(e.path("urlPrefix").asText());
    assertEquals("https", prefix.getScheme());
    assertEquals("gpushare." + NS + ".svc", prefix.getHost(), "the gpushare Service");
    assertEquals(EXTENDER_PORT, prefix.getPort());
    assertEquals(
        SchedulerExtenderRoutes.FILTER_PATH,
        prefix.getPath() + "/" + e.path("filterVerb").asText());
    assertEquals(
        SchedulerExtenderRoutes.PRIORITIZE_PATH,
        prefix.getPath() + "/" + e.path("prioritizeVerb").asText());
    assertFalse(e.has("bindVerb"), "kube-scheduler binds");
    assertFalse(e.has("preemptVerb"));
    assertTrue(e.path("weight").asInt() > 0);
    assertFalse(e.path("nodeCacheCapable").asBoolean(true));
    assertFalse(e.path("ignorable").asBoolean(true));
    assertTrue(e.path("enableHTTPS").asBoolean());
    Duration timeout = Duration.parse("PT" + e.path("httpTimeout").asText().toUpperCase());
    assertTrue(timeout.compareTo(Duration.ofSeconds(1)) >= 0, timeout.toString());
    Map<String, Boolean> managed = new java.util.TreeMap<>();
    e.path("managedResources")
        .forEach(
            r -> managed.put(r.path("name").asText(), r.path("ignoredByScheduler").asBoolean()));
    assertEquals(
        Map.of(
            "alibabacloud.com/gpu-core.percentage", false,
            "alibabacloud.com/gpu-memory.percentage", false,
            "nvidia.com/gpu", false),
        managed);
  }

  @Test
  void theSchedulerPresentsTheClientCertificateAndTrustsTheMembersServingCa() {
    JsonNode tls = extender().path("tlsConfig");
    assertFalse(tls.path("insecure").asBoolean(false));
    // the serving certificate is the webhook's: its names include serverName and the URL's host
    JsonNode webhookCert =
        DeployManifestsTest.doc("Certificate", "gpushare-webhook").tree().path("spec");
    List<String> dnsNames = new ArrayList<>();
    webhookCert.path("dnsNames").forEach(n -> dnsNames.add(n.asText()));
    assertTrue(dnsNames.contains(tls.path("serverName").asText()), dnsNames.toString());
    assertTrue(dnsNames.contains(URI.create(extender().path("urlPrefix").asText()).getHost()));

    Deployment deployment = typed(doc("Deployment", SCHEDULER));
    PodSpec pod = deployment.getSpec().getTemplate().getSpec();
    Container c = pod.getContainers().get(0);
    assertEquals(
        "gpushare-scheduler-client-tls",
        secretBehind(pod, c, tls.path("certFile").asText(), "tls.crt"));
    assertEquals(
        "gpushare-scheduler-client-tls",
        secretBehind(pod, c, tls.path("keyFile").asText(), "tls.key"));
    assertEquals(
        webhookCert.path("secretName").asText(),
        secretBehind(pod, c, tls.path("caFile").asText(), "ca.crt"));
    // the client certificate: client auth, from the component's own CA
    JsonNode client = doc("Certificate", "gpushare-scheduler-client").tree().path("spec");
    assertEquals("gpushare-scheduler-client-tls", client.path("secretName").asText());
    assertTrue(texts(client.path("usages")).contains("client auth"));
    assertFalse(texts(client.path("usages")).contains("server auth"));
    assertEquals("gpushare-scheduler-ca", client.path("issuerRef").path("name").asText(), "issuer");
    JsonNode issuer = doc("Issuer", "gpushare-scheduler-ca").tree().path("spec");
    JsonNode ca = doc("Certificate", "gpushare-scheduler-ca").tree().path("spec");
    assertEquals(ca.path("secretName").asText(), issuer.path("ca").path("secretName").asText());
    assertTrue(ca.path("isCA").asBoolean());
    assertEquals(
        "gpushare-selfsigned",
        ca.path("issuerRef").path("name").asText(),
        "the base's self-signed Issuer");
    DeployManifestsTest.doc("Issuer", "gpushare-selfsigned");
  }

  @Test
  void theConfigIsMountedFromTheGeneratedConfigMapAndTheLeaseIsTheSchedulers() {
    Deployment deployment = typed(doc("Deployment", SCHEDULER));
    PodSpec pod = deployment.getSpec().getTemplate().getSpec();
    Container c = pod.getContainers().get(0);
    String flag = c.getCommand().stream().filter(a -> a.startsWith("--config=")).findFirst().get();
    Path path = Path.of(flag.substring("--config=".length()));
    assertEquals(CONFIG_FILE, path.getFileName().toString());
    VolumeMount mount = mountOf(c, path.getParent().toString());
    Volume v = volume(pod, mount.getName());
    assertEquals(SCHEDULER + "-config", v.getConfigMap().getName());
    assertEquals(SCHEDULER, pod.getServiceAccountName());

    JsonNode lease = config.path("leaderElection");
    assertTrue(lease.path("leaderElect").asBoolean());
    assertEquals(NS, lease.path("resourceNamespace").asText());
    Role role = typed(doc("Role", SCHEDULER + "-lease"));
    PolicyRule rule = role.getRules().get(0);
    assertEquals(List.of("leases"), rule.getResources());
    assertEquals(List.of(lease.path("resourceName").asText()), rule.getResourceNames());
  }

  @Test
  void theSchedulerPodMeetsPodSecurityRestricted() {
    Deployment deployment = typed(doc("Deployment", SCHEDULER));
    PodSpec pod = deployment.getSpec().getTemplate().getSpec();
    assertNotEquals(Boolean.TRUE, pod.getHostNetwork());
    assertEquals(Boolean.TRUE, pod.getSecurityContext().getRunAsNonRoot());
    assertEquals("RuntimeDefault", pod.getSecurityContext().getSeccompProfile().getType());
    for (Volume v : pod.getVolumes()) {
      assertTrue(v.getConfigMap() != null || v.getSecret() != null || v.getEmptyDir() != null);
    }
    for (Container c : pod.getContainers()) {
      SecurityContext sc = c.getSecurityContext();
      assertEquals(Boolean.FALSE, sc.getAllowPrivilegeEscalation());
      assertEquals(Boolean.TRUE, sc.getReadOnlyRootFilesystem());
      assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
    }
  }

  // ---------------------------------------------------------------- access

  @Test
  void theClusterRoleGrantsWhatScopeAsksOfTheExtenderToTheSchedulers() {
    Scope scope = Scope.of("POST", SchedulerExtenderRoutes.FILTER_PATH);
    assertEquals(scope, Scope.of("POST", SchedulerExtenderRoutes.PRIORITIZE_PATH));
    ClusterRole role = typed(doc("ClusterRole", "gpushare-scheduler-extender"));
    assertEquals(1, role.getRules().size());
    PolicyRule rule = role.getRules().get(0);
    assertEquals(List.of(Scope.API_GROUP), rule.getApiGroups());
    assertEquals(List.of(scope.resource()), rule.getResources());
    assertEquals(List.of(scope.verb()), rule.getVerbs());
    ClusterRoleBinding binding = typed(doc("ClusterRoleBinding", "gpushare-scheduler-extender"));
    assertEquals("gpushare-scheduler-extender", binding.getRoleRef().getName());
    Set<String> subjects = new TreeSet<>();
    for (Subject s : binding.getSubjects()) {
      subjects.add(
          s.getKind()
              + ":"
              + (s.getNamespace() == null ? "" : s.getNamespace() + "/")
              + s.getName());
    }
    assertEquals(
        Set.of("User:system:kube-scheduler", "ServiceAccount:" + NS + "/" + SCHEDULER), subjects);
  }

  @Test
  void onlyTheSchedulerPodsReachTheExtenderPort() {
    NetworkPolicy np = typed(doc("NetworkPolicy", "gpushare-scheduler-extender"));
    assertEquals(
        DeployManifestsTest.daemonSetSelector(), np.getSpec().getPodSelector().getMatchLabels());
    assertEquals(1, np.getSpec().getIngress().size());
    NetworkPolicyIngressRule rule = np.getSpec().getIngress().get(0);
    assertEquals(EXTENDER_PORT, rule.getPorts().get(0).getPort().getIntVal());
    Map<String, String> from = rule.getFrom().get(0).getPodSelector().getMatchLabels();
    Deployment deployment = typed(doc("Deployment", SCHEDULER));
    Map<String, String> schedulerPods =
        deployment.getSpec().getTemplate().getMetadata().getLabels();
    assertTrue(
        schedulerPods.entrySet().containsAll(from.entrySet()), from + " vs " + schedulerPods);
    assertFalse(
        DeployManifestsTest.daemonSetSelector().entrySet().containsAll(from.entrySet()),
        "the members themselves are not the scheduler");
  }

  // ---------------------------------------------------------------- the members' listener

  @Test
  void theDaemonSetPatchStartsTheListenerOnTheServicesPortWithTheClientCa() throws IOException {
    ObjectNode ds = (ObjectNode) DeployManifestsTest.doc("DaemonSet", "gpushare").tree().deepCopy();
    JsonNode patch = YAML.readTree(DIR.resolve("daemonset-extender.yaml").toFile());
    for (JsonNode op : patch) {
      assertEquals("add", op.path("op").asText());
      String at = op.path("path").asText();
      assertTrue(at.endsWith("/-"), "appends only: " + at);
      JsonNode list = ds.at(at.substring(0, at.length() - 2));
      assertTrue(list.isArray(), at);
      ((ArrayNode) list).add(op.path("value"));
    }
    DaemonSet patched = typed(new Doc(DIR.resolve("daemonset-extender.yaml"), ds));
    checkMembers(patched);
    Service service =
        typed(new Doc(DIR, YAML.readTree(DIR.resolve("service-extender.yaml").toFile())));
    checkServicePort(service.getSpec().getPorts());
  }

  static void checkMembers(DaemonSet ds) {
    PodSpec pod = ds.getSpec().getTemplate().getSpec();
    Container c = pod.getContainers().get(0);
    assertEquals("gpushare", c.getName());
    List<String> args = c.getArgs();
    assertEquals(Integer.toString(EXTENDER_PORT), args.get(args.indexOf("--extender-port") + 1));
    String clientCa = args.get(args.indexOf("--extender-client-ca") + 1);
    assertEquals("gpushare-scheduler-ca", secretBehind(pod, c, clientCa, "tls.crt"));
    assertTrue(args.contains("--tls-cert") && args.contains("--tls-key"), "the serving pair");
    assertTrue(
        c.getPorts().stream()
            .anyMatch(
                p -> "extender".equals(p.getName()) && p.getContainerPort() == EXTENDER_PORT));
    Volume v = volume(pod, "scheduler-ca");
    assertEquals(1, v.getSecret().getItems().size(), "the CA's certificate, never its key");
  }

  static void checkServicePort(List<ServicePort> ports) {
    ServicePort p =
        ports.stream().filter(x -> "extender".equals(x.getName())).findFirst().orElseThrow();
    assertEquals(EXTENDER_PORT, p.getPort());
    assertEquals("extender", p.getTargetPort().getStrVal());
  }

  @Test
  void kubectlKustomizeRendersAnOverlayWithTheComponent() throws Exception {
    List<Doc> rendered = DeployManifestsTest.kustomize("scheduler-extender");
    // every base object, every component object and the generated ConfigMap
    assertEquals(
        DeployManifestsTest.docs.size() + docs.size() + 1, rendered.size(), keys(rendered));
    checkMembers(typed(only(rendered, "DaemonSet")));
    Service service =
        typed(
            rendered.stream()
                .filter(d -> d.kind().equals("Service") && d.name().equals("gpushare"))
                .findFirst()
                .orElseThrow());
    checkServicePort(service.getSpec().getPorts());
    assertEquals(3, service.getSpec().getPorts().size(), "webhook, http, extender");
    Doc configMap =
        rendered.stream()
            .filter(d -> d.kind().equals("ConfigMap") && d.name().startsWith(SCHEDULER))
            .findFirst()
            .orElseThrow();
    assertEquals(NS, configMap.namespace());
    assertEquals(config, YAML.readTree(configMap.tree().path("data").path(CONFIG_FILE).asText()));
    Deployment deployment = typed(only(rendered, "Deployment"));
    assertTrue(
        deployment.getSpec().getTemplate().getSpec().getVolumes().stream()
            .anyMatch(
                v ->
                    v.getConfigMap() != null
                        && v.getConfigMap().getName().equals(configMap.name())),
        "the Deployment mounts the generated (hash-suffixed) ConfigMap");
    Doc reader =
        rendered.stream()
            .filter(d -> d.name().equals(SCHEDULER + "-authentication-reader"))
            .findFirst()
            .orElseThrow();
    assertEquals("kube-system", reader.namespace());
  }

  // ---------------------------------------------------------------- helpers

  static JsonNode extender() {
    return config.path("extenders").get(0);
  }

  static Doc doc(String kind, String name) {
    return docs.stream()
        .filter(d -> d.kind().equals(kind) && d.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind + " " + name + " in " + DIR));
  }

  static Doc only(List<Doc> docs, String kind) {
    List<Doc> found = docs.stream().filter(d -> d.kind().equals(kind)).toList();
    assertEquals(1, found.size(), kind);
    return found.get(0);
  }

  static String keys(List<Doc> docs) {
    return docs.stream().map(Doc::key).sorted().collect(Collectors.joining(", "));
  }

  static void assertKnown(JsonNode object, Set<String> known, String where) {
    assertTrue(object.isObject(), where + " is an object");
    for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      String field = it.next();
      assertTrue(known.contains(field), where + "." + field + ": kube-scheduler has no such field");
    }
  }

  static List<String> texts(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  static VolumeMount mountOf(Container c, String directory) {
    return c.getVolumeMounts().stream()
        .filter(m -> m.getMountPath().equals(directory))
        .findFirst()
        .orElseThrow(() -> new AssertionError(directory + " is not mounted in " + c.getName()));
  }

  static Volume volume(PodSpec pod, String name) {
    return pod.getVolumes().stream()
        .filter(v -> v.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no volume " + name));
  }

  /** The Secret whose {@code key} the container sees at {@code file}. */
  static String secretBehind(PodSpec pod, Container c, String file, String key) {
    Path path = Path.of(file);
    VolumeMount mount = mountOf(c, path.getParent().toString());
    Volume v = volume(pod, mount.getName());
    assertTrue(v.getSecret() != null, file + " is not from a Secret");
    List<KeyToPath> items = v.getSecret().getItems();
    String name = path.getFileName().toString();
    boolean projected =
        items == null || items.isEmpty()
            ? name.equals(key)
            : items.stream().anyMatch(i -> i.getKey().equals(key) && i.getPath().equals(name));
    assertTrue(projected, file + " is not the key " + key + " of " + v.getSecret());
    return v.getSecret().getSecretName();
  }
}
