package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.http.admission.AdmissionReviewer;
import dev.gpushare.http.launch.EmbeddedConfig;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.PodSideSettings;
import dev.gpushare.node.cluster.ClusterFormation;
import dev.gpushare.persistence.JournalSettings;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhook;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.RuleWithOperations;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ServiceReference;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhook;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.math.BigDecimal;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The kustomize base in {@code deploy/} (issue 3): every manifest parses into fabric8's typed model
 * with no field that model does not know, the facts the arbiter relies on hold (webhook scope and
 * failure policy, least-privilege RBAC, the DaemonSet's security and reservation, the TLS chain,
 * the image Jib builds), and {@code kubectl kustomize deploy/} renders every object where kubectl
 * is installed. The pod side (issue 25): the member's data-plane socket directory and the init
 * container that hands it over, the namespace's Pod Security labels, the ConfigMap's {@code
 * gpushare.pod-side} as the launcher reads it, and the README's excerpt of what the webhook injects
 * compared with what the webhook really adds to the reference manifest.
 */
class DeployManifestsTest {

  /** Surefire runs in {@code src-test/}; the manifests live beside it. */
  static final Path DEPLOY = Path.of("..", "deploy").toAbsolutePath().normalize();

  static final Path JIB_POM = DEPLOY.resolveSibling("http-api").resolve("pom.xml");

  static final String NS = "gpushare-system";
  static final String CERT_MANAGER = "cert-manager.io";

  /** API groups whose kinds fabric8 models; an object of any other group needs a check here. */
  static final Set<String> TYPED_GROUPS =
      Set.of(
          "",
          "apps",
          "batch",
          "rbac.authorization.k8s.io",
          "policy",
          "networking.k8s.io",
          "admissionregistration.k8s.io");

  /** The reference GPU-HPN node (SPEC §2): its GPU count sizes the DaemonSet's reservation. */
  static final int REFERENCE_GPUS = 16;

  static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  static final KubernetesSerialization K8S = new KubernetesSerialization();

  /** One YAML document of a manifest file. */
  record Doc(Path file, JsonNode tree) {
    String apiVersion() {
      return tree.path("apiVersion").asText();
    }

    String group() {
      String v = apiVersion();
      return v.contains("/") ? v.substring(0, v.indexOf('/')) : "";
    }

    String kind() {
      return tree.path("kind").asText();
    }

    String name() {
      return tree.path("metadata").path("name").asText();
    }

    String namespace() {
      return tree.path("metadata").path("namespace").asText(null);
    }

    String key() {
      return kind() + "/" + (namespace() == null ? "" : namespace() + "/") + name();
    }
  }

  /** Documented templates ({@code *.example.yaml}): parsed like the rest, never kustomized. */
  static final String EXAMPLE_SUFFIX = ".example.yaml";

  /** The Secret the operator creates before installing; the members and the Job read it. */
  static final String POSTGRES_SECRET = "gpushare-postgres";

  static final String JOB = "gpushare-init-schema";

  static List<Path> manifestFiles;
  static List<Doc> docs;
  static List<Doc> examples;

  @BeforeAll
  static void readManifests() throws IOException {
    assertTrue(Files.isDirectory(DEPLOY), DEPLOY + " is missing");
    try (Stream<Path> files = Files.list(DEPLOY)) {
      manifestFiles =
          files
              .filter(p -> p.getFileName().toString().endsWith(".yaml"))
              .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
              .sorted()
              .toList();
    }
    List<Path> templates =
        manifestFiles.stream()
            .filter(p -> p.getFileName().toString().endsWith(EXAMPLE_SUFFIX))
            .toList();
    manifestFiles =
        manifestFiles.stream()
            .filter(p -> !p.getFileName().toString().endsWith(EXAMPLE_SUFFIX))
            .toList();
    assertFalse(manifestFiles.isEmpty(), "no manifest in " + DEPLOY);
    docs = readDocs(manifestFiles);
    examples = readDocs(templates);
  }

  static List<Doc> readDocs(List<Path> files) throws IOException {
    List<Doc> all = new ArrayList<>();
    for (Path file : files) {
      List<JsonNode> trees = yamlDocuments(Files.readString(file));
      assertEquals(1, trees.size(), file.getFileName() + ": one object per file");
      trees.forEach(t -> all.add(new Doc(file, t)));
    }
    return List.copyOf(all);
  }

  // ---------------------------------------------------------------- parsing and kustomization

  @Test
  void kustomizationListsEveryManifestFileAndNothingElse() throws IOException {
    JsonNode k = YAML.readTree(DEPLOY.resolve("kustomization.yaml").toFile());
    assertEquals("Kustomization", k.path("kind").asText());
    assertEquals(NS, k.path("namespace").asText());
    Set<String> listed = new TreeSet<>();
    k.path("resources").forEach(r -> assertTrue(listed.add(r.asText()), "listed twice: " + r));
    Set<String> present =
        manifestFiles.stream()
            .map(p -> p.getFileName().toString())
            .collect(Collectors.toCollection(TreeSet::new));
    assertEquals(present, listed, "kustomization.yaml resources vs deploy/*.yaml");
  }

  @Test
  void everyObjectParsesIntoFabric8sTypedModelWithoutUnknownFields() {
    List<Doc> all = new ArrayList<>(docs);
    all.addAll(examples);
    for (Doc d : all) {
      String where = d.file().getFileName() + " (" + d.key() + ")";
      if (d.group().equals(CERT_MANAGER)) {
        GenericKubernetesResource r = K8S.convertValue(d.tree(), GenericKubernetesResource.class);
        assertEquals("cert-manager.io/v1", r.getApiVersion(), where);
        assertTrue(Set.of("Issuer", "Certificate").contains(r.getKind()), where);
        continue;
      }
      assertTrue(
          TYPED_GROUPS.contains(d.group()),
          where + ": API group '" + d.group() + "' is not checked by this test; add it");
      HasMetadata typed = typed(d);
      assertEquals(List.of(), unknownFields(typed), where + ": fields fabric8 does not know");
    }
  }

  @Test
  void theUnknownFieldCheckCatchesAMisspelledField() {
    ObjectNode ds = (ObjectNode) doc("DaemonSet", "gpushare").tree().deepCopy();
    ObjectNode container =
        (ObjectNode) ds.path("spec").path("template").path("spec").path("containers").get(0);
    container.set("securityContxt", container.remove("securityContext"));
    assertEquals(
        List.of("$.spec.template.spec.containers[0].securityContxt"),
        unknownFields(typed(new Doc(DEPLOY.resolve("daemonset.yaml"), ds))));
  }

  @Test
  void namespacedObjectsLiveInTheArbitersNamespaceAndClusterScopedOnesInNone() {
    for (Doc d : docs) {
      boolean namespaced = d.group().equals(CERT_MANAGER) || typed(d) instanceof Namespaced;
      if (namespaced) {
        assertEquals(NS, d.namespace(), d.key());
      } else {
        assertNull(d.namespace(), d.key() + " is cluster-scoped");
      }
    }
    assertEquals(NS, doc("Namespace", NS).name());
  }

  // ---------------------------------------------------------------- admission webhooks

  @Test
  void webhooksSeeOnlySharingPodsOnCreateAndFailClosed() {
    MutatingWebhookConfiguration m = typed(doc("MutatingWebhookConfiguration", "gpushare"));
    ValidatingWebhookConfiguration v = typed(doc("ValidatingWebhookConfiguration", "gpushare"));
    assertEquals(1, m.getWebhooks().size());
    assertEquals(1, v.getWebhooks().size());
    MutatingWebhook mw = m.getWebhooks().get(0);
    ValidatingWebhook vw = v.getWebhooks().get(0);

    assertEquals("IfNeeded", mw.getReinvocationPolicy());
    record Hook(
        String name,
        List<String> versions,
        String sideEffects,
        String failurePolicy,
        Integer timeout,
        Map<String, String> objectLabels,
        List<RuleWithOperations> rules,
        io.fabric8.kubernetes.api.model.LabelSelector namespaces,
        ServiceReference service) {}
    List<Hook> hooks =
        List.of(
            new Hook(
                "/admission/mutate",
                mw.getAdmissionReviewVersions(),
                mw.getSideEffects(),
                mw.getFailurePolicy(),
                mw.getTimeoutSeconds(),
                mw.getObjectSelector().getMatchLabels(),
                mw.getRules(),
                mw.getNamespaceSelector(),
                mw.getClientConfig().getService()),
            new Hook(
                "/admission/validate",
                vw.getAdmissionReviewVersions(),
                vw.getSideEffects(),
                vw.getFailurePolicy(),
                vw.getTimeoutSeconds(),
                vw.getObjectSelector().getMatchLabels(),
                vw.getRules(),
                vw.getNamespaceSelector(),
                vw.getClientConfig().getService()));
    for (Hook h : hooks) {
      assertEquals(List.of("v1"), h.versions(), h.name());
      assertEquals("None", h.sideEffects(), h.name());
      assertEquals("Fail", h.failurePolicy(), h.name());
      assertEquals(5, h.timeout(), h.name());
      assertEquals(Map.of(Manifests.COMPUTE_CLASS, "gpu-hpn"), h.objectLabels(), h.name());
      assertEquals(1, h.rules().size(), h.name());
      RuleWithOperations rule = h.rules().get(0);
      assertEquals(List.of("CREATE"), rule.getOperations(), h.name());
      assertEquals(List.of(""), rule.getApiGroups(), h.name());
      assertEquals(List.of("v1"), rule.getApiVersions(), h.name());
      assertEquals(List.of("pods"), rule.getResources(), h.name());
      assertEquals(1, h.namespaces().getMatchExpressions().size(), h.name());
      var exclude = h.namespaces().getMatchExpressions().get(0);
      assertEquals("kubernetes.io/metadata.name", exclude.getKey(), h.name());
      assertEquals("NotIn", exclude.getOperator(), h.name());
      assertEquals(List.of(NS), exclude.getValues(), h.name());
      assertEquals("gpushare", h.service().getName(), h.name());
      assertEquals(NS, h.service().getNamespace(), h.name());
      assertEquals(h.name(), h.service().getPath());
      assertEquals(443, h.service().getPort(), h.name());
    }

    // The webhook Service forwards 443 to the DaemonSet's webhook port, the one --webhook-port
    // opens.
    Service svc = typed(doc("Service", "gpushare"));
    ServicePort port = servicePort(svc, 443);
    assertEquals(8443, containerPort(port.getTargetPort()));
    assertEquals("8443", argValue("--webhook-port"));
    assertEquals(daemonSetSelector(), svc.getSpec().getSelector());
  }

  // ---------------------------------------------------------------- TLS

  @Test
  void certManagerIssuesTheServingCertificateTheDaemonSetMountsAndInjectsItsCa() {
    GenericKubernetesResource selfSigned = generic("Issuer", "gpushare-selfsigned");
    assertNotNull(selfSigned.get("spec", "selfSigned"), "self-signed issuer");

    GenericKubernetesResource ca = generic("Certificate", "gpushare-ca");
    assertEquals(Boolean.TRUE, ca.get("spec", "isCA"));
    assertEquals("Issuer", ca.get("spec", "issuerRef", "kind"));
    assertEquals(selfSigned.getMetadata().getName(), ca.get("spec", "issuerRef", "name"));

    GenericKubernetesResource caIssuer = generic("Issuer", "gpushare-ca");
    assertEquals(ca.<String>get("spec", "secretName"), caIssuer.get("spec", "ca", "secretName"));

    GenericKubernetesResource serving = generic("Certificate", "gpushare-webhook");
    assertEquals("Issuer", serving.get("spec", "issuerRef", "kind"));
    assertEquals(caIssuer.getMetadata().getName(), serving.get("spec", "issuerRef", "name"));
    List<String> dnsNames = serving.get("spec", "dnsNames");
    assertTrue(dnsNames.contains("gpushare." + NS + ".svc"), dnsNames.toString());
    // Java reads PKCS#8 PEM keys without extra libraries.
    assertEquals("PKCS8", serving.get("spec", "privateKey", "encoding"));
    List<String> usages = serving.get("spec", "usages");
    assertTrue(usages.contains("server auth"), usages.toString());

    String secretName = serving.get("spec", "secretName");
    Volume tls = volumeMountedAt(parent(argValue("--tls-cert")));
    assertEquals(secretName, tls.getSecret().getSecretName());
    assertEquals(parent(argValue("--tls-cert")), parent(argValue("--tls-key")));
    assertEquals("tls.crt", Path.of(argValue("--tls-cert")).getFileName().toString());
    assertEquals("tls.key", Path.of(argValue("--tls-key")).getFileName().toString());

    String injectFrom = NS + "/" + serving.getMetadata().getName();
    for (String kind : List.of("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")) {
      HasMetadata hook = typed(doc(kind, "gpushare"));
      assertEquals(
          injectFrom,
          hook.getMetadata().getAnnotations().get("cert-manager.io/inject-ca-from"),
          kind);
    }
  }

  @Test
  void theBootstrapScriptWithoutCertManagerWritesTheSameSecretAndPatchesBothWebhooks()
      throws IOException {
    Path script = DEPLOY.resolve("bootstrap-tls.sh");
    assertTrue(Files.isRegularFile(script), script + " is missing");
    assertTrue(Files.isExecutable(script), script + " is not executable");
    String text = Files.readString(script);
    String secretName = generic("Certificate", "gpushare-webhook").get("spec", "secretName");
    for (String expected :
        List.of(
            "TLS_SECRET=" + secretName,
            "CLUSTER_SECRET="
                + generic("Certificate", "gpushare-cluster").get("spec", "secretName"),
            "NS=" + NS,
            "SVC=gpushare",
            "WEBHOOK=gpushare",
            "mutatingwebhookconfiguration",
            "validatingwebhookconfiguration",
            "/webhooks/0/clientConfig/caBundle",
            "genpkey")) {
      assertTrue(text.contains(expected), "bootstrap-tls.sh lacks " + expected);
    }
  }

  @Test
  void theMembersMountTheClusterCertificateWhereTheirRemotingReadsIt() {
    // Kubernetes mode's remoting settings, as a member in a pod resolves them (no override).
    com.typesafe.config.Config k8s =
        dev.gpushare.node.cluster.ClusterFormation.kubernetesResource()
            .withFallback(com.typesafe.config.ConfigFactory.defaultReference())
            .resolve();
    assertEquals("tls-tcp", k8s.getString("pekko.remote.artery.transport"));
    String mount = k8s.getString("pekko.remote.artery.ssl.rotating-keys-engine.secret-mount-point");
    String secretName = generic("Certificate", "gpushare-cluster").get("spec", "secretName");
    var volume =
        podSpec().getVolumes().stream()
            .filter(v -> v.getSecret() != null && secretName.equals(v.getSecret().getSecretName()))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no volume of the Secret " + secretName));
    assertTrue(
        arbiter().getVolumeMounts().stream()
            .anyMatch(
                m ->
                    m.getName().equals(volume.getName())
                        && m.getMountPath().equals(mount)
                        && Boolean.TRUE.equals(m.getReadOnly())),
        () -> "the arbiter mounts " + secretName + " read-only at " + mount);
    assertEquals(
        "gpushare-ca",
        generic("Certificate", "gpushare-cluster").get("spec", "issuerRef", "name"),
        "issued by the root CA itself: the provider follows no intermediate CA");
  }

  // ---------------------------------------------------------------- RBAC

  @Test
  void rbacGrantsExactlyTheDocumentedVerbsEachWithAReason() throws IOException {
    ClusterRole role = typed(doc("ClusterRole", "gpushare"));
    Map<String, Set<String>> granted = new TreeMap<>();
    for (PolicyRule rule : role.getRules()) {
      assertTrue(rule.getResourceNames().isEmpty(), "resourceNames: " + rule);
      assertTrue(rule.getNonResourceURLs().isEmpty(), "nonResourceURLs: " + rule);
      for (String group : rule.getApiGroups()) {
        for (String resource : rule.getResources()) {
          granted
              .computeIfAbsent(group + "/" + resource, k -> new TreeSet<>())
              .addAll(rule.getVerbs());
        }
      }
    }
    Map<String, Set<String>> documented =
        Map.of(
            "/nodes", Set.of("get", "list", "watch", "patch"),
            "/nodes/status", Set.of("patch"),
            "/pods", Set.of("get", "list", "watch", "patch"),
            "/pods/status", Set.of("patch"),
            "events.k8s.io/events", Set.of("create", "patch", "list"),
            "authentication.k8s.io/tokenreviews", Set.of("create"),
            "authorization.k8s.io/subjectaccessreviews", Set.of("create"));
    assertEquals(new TreeMap<>(documented), granted);

    // Every rule is preceded by the comment that says why it is needed.
    List<String> lines = Files.readAllLines(DEPLOY.resolve("clusterrole.yaml"));
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).startsWith("- apiGroups:")) {
        assertTrue(lines.get(i - 1).startsWith("#"), "rule at line " + (i + 1) + " has no reason");
      }
    }

    ClusterRoleBinding binding = typed(doc("ClusterRoleBinding", "gpushare"));
    assertEquals("ClusterRole", binding.getRoleRef().getKind());
    assertEquals(role.getMetadata().getName(), binding.getRoleRef().getName());
    assertEquals(1, binding.getSubjects().size());
    var subject = binding.getSubjects().get(0);
    ServiceAccount sa = typed(doc("ServiceAccount", "gpushare"));
    assertEquals("ServiceAccount", subject.getKind());
    assertEquals(sa.getMetadata().getName(), subject.getName());
    assertEquals(NS, subject.getNamespace());
    assertEquals(sa.getMetadata().getName(), podSpec().getServiceAccountName());
  }

  /**
   * The viewer role reads every read-only resource of the API (Scope's names), a pod's history
   * ({@code get pods/history}) included, and changes nothing.
   */
  @Test
  void theViewerRoleReadsNodesPodsTheirHistoriesAndTheJournalOnly() throws IOException {
    ClusterRole viewer = typed(doc("ClusterRole", "gpushare-viewer"));
    Map<String, Set<String>> readOnly = new TreeMap<>();
    for (String r :
        List.of(
            "nodes",
            "nodes/queue",
            "pods",
            "pods/history",
            "journal",
            "clock",
            "metrics",
            "changes")) {
      readOnly.put("gpushare.dev/" + r, Set.of("get", "list", "watch"));
    }
    assertEquals(readOnly, grants(viewer.getRules()));
  }

  @Test
  void theNamespacedRoleGrantsClusterBootstrapItsPodDiscoveryOnly() throws IOException {
    Role role = typed(doc("Role", "gpushare"));
    assertEquals(NS, role.getMetadata().getNamespace());
    assertEquals(Map.of("/pods", Set.of("get", "list", "watch")), grants(role.getRules()));
    assertEveryRuleHasAReason(DEPLOY.resolve("role.yaml"));
    assertBoundToTheServiceAccountOnly(typed(doc("RoleBinding", "gpushare")), "Role", "gpushare");
  }

  @Test
  void theLeaseMajorityComponentGrantsTheOneLeaseAndSwitchesTheStrategy() throws IOException {
    Path component = DEPLOY.resolve("lease-majority");
    JsonNode k = YAML.readTree(component.resolve("kustomization.yaml").toFile());
    assertEquals("Component", k.path("kind").asText());
    Set<String> listed = new TreeSet<>();
    k.path("resources").forEach(r -> listed.add(r.asText()));
    assertEquals(Set.of("role-lease.yaml", "rolebinding-lease.yaml"), listed);
    List<Doc> own = new ArrayList<>();
    for (String file : listed) {
      List<JsonNode> trees = yamlDocuments(Files.readString(component.resolve(file)));
      assertEquals(1, trees.size(), file + ": one object per file");
      own.add(new Doc(component.resolve(file), trees.get(0)));
    }
    for (Doc d : own) {
      assertEquals(NS, d.namespace(), d.key());
      assertEquals(List.of(), unknownFields(typed(d)), d.key() + ": fields fabric8 does not know");
    }
    Role role = typed(own.stream().filter(d -> d.kind().equals("Role")).findFirst().orElseThrow());
    Config cluster = ClusterFormation.kubernetesResource();
    String leaseName =
        cluster.getString("pekko.cluster.split-brain-resolver.lease-majority.lease-name");
    // create cannot be limited to a name; get and update are, to the resolver's one Lease.
    Map<String, Set<String>> byName = new TreeMap<>();
    for (PolicyRule rule : role.getRules()) {
      assertEquals(List.of("coordination.k8s.io"), rule.getApiGroups(), rule.toString());
      assertEquals(List.of("leases"), rule.getResources(), rule.toString());
      byName
          .computeIfAbsent(String.join(",", rule.getResourceNames()), n -> new TreeSet<>())
          .addAll(rule.getVerbs());
    }
    assertEquals(Map.of("", Set.of("create"), leaseName, Set.of("get", "update")), byName);
    assertEveryRuleHasAReason(component.resolve("role-lease.yaml"));
    assertBoundToTheServiceAccountOnly(
        typed(own.stream().filter(d -> d.kind().equals("RoleBinding")).findFirst().orElseThrow()),
        "Role",
        role.getMetadata().getName());
    // The variable the component sets is the one the member's configuration reads.
    String patch = k.path("patches").get(0).path("patch").asText();
    assertTrue(patch.contains("GPUSHARE_SPLIT_BRAIN_STRATEGY"), patch);
    assertTrue(patch.contains("lease-majority"), patch);
    Config switched =
        cluster
            .withFallback(
                ConfigFactory.parseMap(Map.of("GPUSHARE_SPLIT_BRAIN_STRATEGY", "lease-majority")))
            .resolve();
    assertEquals(
        "lease-majority", switched.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals(
        "pekko.coordination.lease.kubernetes",
        switched.getString(
            "pekko.cluster.split-brain-resolver.lease-majority.lease-implementation"));
  }

  static Map<String, Set<String>> grants(List<PolicyRule> rules) {
    Map<String, Set<String>> granted = new TreeMap<>();
    for (PolicyRule rule : rules) {
      assertTrue(rule.getResourceNames().isEmpty(), "resourceNames: " + rule);
      assertTrue(rule.getNonResourceURLs().isEmpty(), "nonResourceURLs: " + rule);
      for (String group : rule.getApiGroups()) {
        for (String resource : rule.getResources()) {
          granted
              .computeIfAbsent(group + "/" + resource, k -> new TreeSet<>())
              .addAll(rule.getVerbs());
        }
      }
    }
    return granted;
  }

  /** Every rule is preceded by the comment that says why it is needed. */
  static void assertEveryRuleHasAReason(Path file) throws IOException {
    List<String> lines = Files.readAllLines(file);
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).startsWith("- apiGroups:")) {
        assertTrue(
            lines.get(i - 1).startsWith("#"),
            file.getFileName() + ": rule at line " + (i + 1) + " has no reason");
      }
    }
  }

  static void assertBoundToTheServiceAccountOnly(RoleBinding binding, String kind, String name) {
    assertEquals(NS, binding.getMetadata().getNamespace());
    assertEquals(kind, binding.getRoleRef().getKind());
    assertEquals(name, binding.getRoleRef().getName());
    assertEquals(1, binding.getSubjects().size());
    var subject = binding.getSubjects().get(0);
    assertEquals("ServiceAccount", subject.getKind());
    assertEquals(podSpec().getServiceAccountName(), subject.getName());
    assertEquals(NS, subject.getNamespace());
  }

  // ---------------------------------------------------------------- DaemonSet

  @Test
  void oneMemberPerGpuHpnNodeUpdatedOneNodeAtATime() {
    DaemonSet ds = typed(doc("DaemonSet", "gpushare"));
    PodSpec pod = podSpec();
    assertEquals(Map.of("alibabacloud.com/node-type", "reserved"), pod.getNodeSelector());
    assertEquals("system-node-critical", pod.getPriorityClassName());
    assertEquals("RollingUpdate", ds.getSpec().getUpdateStrategy().getType());
    assertEquals(
        new IntOrString(1),
        ds.getSpec().getUpdateStrategy().getRollingUpdate().getMaxUnavailable());
    assertEquals(ds.getSpec().getSelector().getMatchLabels(), daemonSetSelector());
    daemonSetSelector()
        .forEach(
            (k, v) -> assertEquals(v, ds.getSpec().getTemplate().getMetadata().getLabels().get(k)));
  }

  @Test
  void theArbiterContainerGetsWhatNvmlNeedsAndNothingMore() {
    PodSpec pod = podSpec();
    assertNotEquals(Boolean.TRUE, pod.getHostNetwork(), "hostNetwork");
    assertNotEquals(Boolean.TRUE, pod.getHostPID(), "hostPID");
    assertNotEquals(Boolean.TRUE, pod.getHostIPC(), "hostIPC");
    assertEquals(Boolean.TRUE, pod.getSecurityContext().getRunAsNonRoot());
    assertEquals("RuntimeDefault", pod.getSecurityContext().getSeccompProfile().getType());

    Container c = arbiter();
    SecurityContext sc = c.getSecurityContext();
    assertNotEquals(Boolean.TRUE, sc.getPrivileged(), "privileged");
    assertEquals(Boolean.FALSE, sc.getAllowPrivilegeEscalation());
    assertEquals(Boolean.TRUE, sc.getReadOnlyRootFilesystem());
    assertEquals(Boolean.TRUE, sc.getRunAsNonRoot());
    assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
    assertTrue(sc.getCapabilities().getAdd().isEmpty(), "capabilities added");

    assertEquals("all", env(c, "NVIDIA_VISIBLE_DEVICES"));
    assertEquals("utility", env(c, "NVIDIA_DRIVER_CAPABILITIES"));

    // The journal is in PostgreSQL: the only host directory handed to the arbiter's uid is the
    // data-plane socket's, and the only init container is the one that hands it over.
    assertEquals(
        List.of(DATA_PLANE_INIT),
        pod.getInitContainers().stream().map(Container::getName).toList(),
        "init containers");

    // No container holds a GPU: that would make the member an exclusive-GPU pod (SPEC §2).
    for (Container any : allContainers()) {
      for (Map<String, Quantity> q :
          List.of(any.getResources().getRequests(), any.getResources().getLimits())) {
        assertFalse(
            q != null && q.containsKey("nvidia.com/gpu"), any.getName() + " asks for a GPU");
      }
    }

    // Two host paths only: the data-plane socket's directory, and the host's /proc read-only
    // (NVML's host PIDs to pods, gpushare.gpu.host-proc); no /dev, no driver directory, and no
    // journal on the node (it is the shared PostgreSQL database). --data (clock.txt of a manual
    // clock) is an emptyDir.
    List<String> hostPaths =
        pod.getVolumes().stream()
            .filter(v -> v.getHostPath() != null)
            .map(v -> v.getName() + "=" + v.getHostPath().getPath())
            .toList();
    assertEquals(
        List.of(DATA_PLANE_VOLUME + "=" + DATA_PLANE_DIR, HOST_PROC_VOLUME + "=/proc"),
        hostPaths,
        "host paths");
    VolumeMount hostProc =
        arbiter().getVolumeMounts().stream()
            .filter(m -> m.getName().equals(HOST_PROC_VOLUME))
            .findFirst()
            .orElseThrow();
    assertEquals(HOST_PROC_MOUNT, hostProc.getMountPath());
    assertEquals(Boolean.TRUE, hostProc.getReadOnly(), "the host's /proc is read-only");
    ConfigMap cm = typed(doc("ConfigMap", "gpushare-config"));
    assertTrue(
        cm.getData().get("gpushare.conf").contains("host-proc = \"" + HOST_PROC_MOUNT + "\""),
        "gpushare.gpu.host-proc names the mount");
    assertNotNull(
        volumeMountedAt(Path.of(argValue("--data")).getParent().toString()).getEmptyDir(),
        "--data is a folder the member makes in an emptyDir");
  }

  // ---------------------------------------------------------------- the pod side (issue 25)

  /** The host directory of the member's data-plane socket: on the host, in the member, in pods. */
  static final String DATA_PLANE_DIR = "/run/gpushare/data-plane";

  static final String DATA_PLANE_VOLUME = "data-plane";

  /** The host's /proc in the member: NVML's host PIDs mapped to pods through their cgroups. */
  static final String HOST_PROC_VOLUME = "host-proc";

  static final String HOST_PROC_MOUNT = "/host/proc";

  /** The root init container that hands that directory to the member's uid. */
  static final String DATA_PLANE_INIT = "data-plane-dir";

  @Test
  void theMemberMountsTheDataPlaneSocketsHostDirectoryReadWriteAtTheSamePath() {
    Volume v = volumeMountedAt(DATA_PLANE_DIR);
    assertEquals(DATA_PLANE_VOLUME, v.getName());
    assertEquals(DATA_PLANE_DIR, v.getHostPath().getPath(), "the same path on the host");
    assertEquals("DirectoryOrCreate", v.getHostPath().getType(), "the first member creates it");
    VolumeMount m =
        arbiter().getVolumeMounts().stream()
            .filter(x -> x.getName().equals(DATA_PLANE_VOLUME))
            .findFirst()
            .orElseThrow();
    assertNotEquals(Boolean.TRUE, m.getReadOnly(), "the member creates its socket there");
    // The socket the launcher serves lies in that directory (what the webhook mounts into pods).
    assertEquals(PodSideSettings.DEPLOY_SOCKET, launcherConfig().podSide().socket().orElseThrow());
    assertEquals(DATA_PLANE_DIR, parent(PodSideSettings.DEPLOY_SOCKET));
  }

  @Test
  void aRootInitContainerWithOnlyChownAndFownerHandsTheDirectoryToTheMembersUid() {
    PodSpec pod = podSpec();
    Container init = pod.getInitContainers().get(0);
    assertEquals(DATA_PLANE_INIT, init.getName());
    assertEquals(arbiter().getImage(), init.getImage(), "the member's image: nothing else to pull");
    long uid = pod.getSecurityContext().getRunAsUser();
    long gid = pod.getSecurityContext().getRunAsGroup();
    assertEquals(uid, arbiter().getSecurityContext().getRunAsUser());
    assertEquals(
        List.of(
            "/bin/sh",
            "-c",
            "chown " + uid + ":" + gid + " " + DATA_PLANE_DIR + " && chmod 0755 " + DATA_PLANE_DIR),
        init.getCommand());
    assertTrue(init.getArgs().isEmpty(), init.getArgs().toString());
    assertEquals(
        List.of(DATA_PLANE_VOLUME + "=" + DATA_PLANE_DIR),
        init.getVolumeMounts().stream().map(m -> m.getName() + "=" + m.getMountPath()).toList());
    assertNotEquals(Boolean.TRUE, init.getVolumeMounts().get(0).getReadOnly());
    assertTrue(init.getPorts().isEmpty());
    assertNotNull(init.getResources().getLimits().get("memory"), "a memory limit");

    // Root, because it chowns a directory the kubelet created as root; nothing else.
    SecurityContext sc = init.getSecurityContext();
    assertEquals(Long.valueOf(0), sc.getRunAsUser());
    assertEquals(Boolean.FALSE, sc.getRunAsNonRoot(), "overrides the pod's runAsNonRoot");
    assertEquals(Boolean.FALSE, sc.getPrivileged());
    assertEquals(Boolean.FALSE, sc.getAllowPrivilegeEscalation());
    assertEquals(Boolean.TRUE, sc.getReadOnlyRootFilesystem());
    assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
    assertEquals(Set.of("CHOWN", "FOWNER"), new TreeSet<>(sc.getCapabilities().getAdd()));
    assertTrue(BASELINE_CAPABILITIES.containsAll(sc.getCapabilities().getAdd()));
    assertNull(sc.getSeccompProfile(), "the pod's RuntimeDefault applies");
  }

  @Test
  void theInitContainersCommandLeavesTheDirectoryToTheMemberWithMode0755() throws Exception {
    Optional<Path> sh = onPath("sh");
    Assumptions.assumeTrue(sh.isPresent(), "sh is not on PATH");
    Assumptions.assumeTrue(
        "root".equals(System.getProperty("user.name")), "chown to another uid needs root");
    Path dir = Files.createTempDirectory("gpushare-data-plane");
    try {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      String command =
          podSpec()
              .getInitContainers()
              .get(0)
              .getCommand()
              .get(2)
              .replace(DATA_PLANE_DIR, dir.toString());
      Process p = new ProcessBuilder(sh.get().toString(), "-c", command).inheritIO().start();
      try {
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "sh -c " + command);
      } finally {
        ChildProcess.killTree(p.toHandle()); // it holds the fork's output (inheritIO)
      }
      assertEquals(0, p.exitValue(), command);
      assertEquals(
          podSpec().getSecurityContext().getRunAsUser().intValue(),
          Files.getAttribute(dir, "unix:uid"));
      assertEquals(
          podSpec().getSecurityContext().getRunAsGroup().intValue(),
          Files.getAttribute(dir, "unix:gid"));
      assertEquals(
          PosixFilePermissions.fromString("rwxr-xr-x"), Files.getPosixFilePermissions(dir));
      // Again: a restarted member finds the directory already handed over.
      Process again = new ProcessBuilder(sh.get().toString(), "-c", command).inheritIO().start();
      try {
        assertTrue(again.waitFor(30, TimeUnit.SECONDS));
      } finally {
        ChildProcess.killTree(again.toHandle());
      }
      assertEquals(0, again.exitValue(), "idempotent");
    } finally {
      deleteTree(dir);
    }
  }

  /** deploy/README.md, whose pod-side section shows what the webhook adds. */
  static final Path README = DEPLOY.resolve("README.md");

  static final String POD_SIDE_SECTION = "## The pod side: what the webhook injects";

  @Test
  void theReadmesExcerptIsExactlyWhatTheWebhookAddsToTheReferencePod() throws IOException {
    List<JsonNode> blocks = yamlBlocks(podSideSection());
    EmbeddedConfig config = launcherConfig();
    JsonNode before = demoPodJson();
    JsonNode after = webhook(before, config.podSide());
    assertExcerpt(blocks.get(0), before, after, "step 3");

    // The namespace step names the level that admits the pod's hostPath volumes.
    assertTrue(
        podSideSection()
            .contains(
                "kubectl label namespace <namespace>"
                    + " pod-security.kubernetes.io/enforce=privileged --overwrite"),
        "the kubectl label command of step 2");
    assertTrue(
        after.path("spec").path("volumes").findValues("hostPath").size() > 0,
        "the webhook adds a hostPath: hence privileged");
  }

  @Test
  void theReadmesMpsExcerptIsExactlyWhatTheWebhookAddsOnMpsNodes() throws IOException {
    List<JsonNode> blocks = yamlBlocks(podSideSection());
    PodSideSettings plain = launcherConfig().podSide();
    PodSideSettings mps =
        launcherConfig(Map.of("PGPASSWORD", TEST_PASSWORD, "GPUSHARE_MPS_ROOT", MPS_ROOT))
            .podSide();
    JsonNode before = webhook(demoPodJson(), plain);
    JsonNode after = webhook(demoPodJson(), mps);
    // blocks: step 3's excerpt, step 5's annotation, step 6's MPS additions.
    assertEquals(3, blocks.size(), "YAML blocks of the pod-side section");
    assertEquals(
        "false",
        blocks.get(1).path("metadata").path("annotations").path("gpushare.dev/inject").asText());
    ObjectNode excerpt = YAML.createObjectNode();
    excerpt.set("spec", blocks.get(2));
    assertExcerpt(excerpt, before, after, "step 6");
  }

  /** The text of the README's pod-side section. */
  static String podSideSection() throws IOException {
    String text = Files.readString(README);
    int start = text.indexOf(POD_SIDE_SECTION);
    assertTrue(start >= 0, "deploy/README.md has no section " + POD_SIDE_SECTION);
    int end = text.indexOf("\n## ", start + POD_SIDE_SECTION.length());
    return text.substring(start, end < 0 ? text.length() : end);
  }

  /** The fenced yaml blocks of {@code text}, parsed. */
  static List<JsonNode> yamlBlocks(String text) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    String[] lines = text.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      if (lines[i].strip().equals("```yaml")) {
        StringBuilder block = new StringBuilder();
        for (i++; !lines[i].strip().equals("```"); i++) {
          block.append(lines[i]).append('\n');
        }
        out.add(YAML.readTree(block.toString()));
      }
    }
    return out;
  }

  /** The reference manifest (deploy/examples/gpu-share-demo.yaml) as the webhook receives it. */
  static JsonNode demoPodJson() throws IOException {
    return Api.JSON.readTree(K8S.asJson(KubernetesModeTest.demoPod()));
  }

  /** The pod after the mutating webhook's patch for a CREATE with these settings. */
  static JsonNode webhook(JsonNode pod, PodSideSettings podSide) throws IOException {
    ObjectNode review = Api.JSON.createObjectNode();
    review.put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
    ObjectNode request = review.putObject("request");
    request.put("uid", "00000000-0000-0000-0000-000000000025");
    request.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
    request.putObject("resource").put("group", "").put("version", "v1").put("resource", "pods");
    request.put("name", pod.path("metadata").path("name").asText());
    request.put("namespace", pod.path("metadata").path("namespace").asText());
    request.put("operation", "CREATE");
    request.set("object", pod);
    JsonNode answer = Api.JSON.valueToTree(AdmissionReviewer.mutate(review, podSide));
    assertTrue(answer.at("/response/allowed").asBoolean(), answer.toString());
    JsonNode patch =
        Api.JSON.readTree(Base64.getDecoder().decode(answer.at("/response/patch").asText()));
    JsonNode out = pod.deepCopy();
    for (JsonNode op : patch) {
      out = applyOp(out, op);
    }
    return out;
  }

  /** One JSONPatch operation ({@code add} or {@code replace}: what the webhook sends). */
  static JsonNode applyOp(JsonNode root, JsonNode op) {
    String kind = op.path("op").asText();
    assertTrue(Set.of("add", "replace").contains(kind), "the webhook's operations: " + op);
    String path = op.path("path").asText();
    int slash = path.lastIndexOf('/');
    JsonNode parent = root.at(path.substring(0, slash));
    String last = path.substring(slash + 1).replace("~1", "/").replace("~0", "~");
    JsonNode value = op.get("value").deepCopy();
    if (parent instanceof ObjectNode o) {
      o.set(last, value);
    } else if (parent instanceof ArrayNode a) {
      if (last.equals("-")) {
        a.add(value);
      } else if (kind.equals("add")) {
        a.insert(Integer.parseInt(last), value);
      } else {
        a.set(Integer.parseInt(last), value);
      }
    } else {
      fail("no parent for " + op + " in " + root);
    }
    return root;
  }

  /**
   * The excerpt is what the webhook added: every field it shows is in the pod after the webhook
   * (lists of named items matched by name, other lists equal), and every item the webhook added to
   * a list of named items (init containers, volumes, the GPU container's env and mounts) is shown.
   */
  static void assertExcerpt(JsonNode excerpt, JsonNode before, JsonNode after, String where) {
    assertContained(excerpt, after, where + " $");
    for (String list : List.of("initContainers", "volumes")) {
      assertEquals(
          added(before.path("spec").path(list), after.path("spec").path(list)),
          names(excerpt.path("spec").path(list)),
          where + ": spec." + list + " the webhook added");
    }
    JsonNode gpuBefore = before.path("spec").path("containers").get(0);
    JsonNode gpuAfter = after.path("spec").path("containers").get(0);
    JsonNode gpuShown = excerpt.path("spec").path("containers").get(0);
    for (String list : List.of("env", "volumeMounts")) {
      assertEquals(
          added(gpuBefore.path(list), gpuAfter.path(list)),
          names(gpuShown.path(list)),
          where + ": the GPU container's " + list + " the webhook added, in its order");
      assertShownWhole(gpuShown.path(list), gpuAfter.path(list), where + " " + list);
    }
    for (String list : List.of("initContainers", "volumes")) {
      assertShownWhole(
          excerpt.path("spec").path(list), after.path("spec").path(list), where + " " + list);
    }
  }

  /** Every item shown is shown whole: nothing of the webhook's item is left out. */
  static void assertShownWhole(JsonNode shown, JsonNode actual, String at) {
    for (JsonNode item : shown) {
      String name = item.path("name").asText();
      for (JsonNode a : actual) {
        if (name.equals(a.path("name").asText(null))) {
          assertContained(a, item, at + "[" + name + "] (the README leaves something out)");
        }
      }
    }
  }

  static void assertContained(JsonNode shown, JsonNode actual, String at) {
    if (shown.isObject()) {
      assertTrue(actual.isObject(), at + ": " + actual);
      shown
          .fields()
          .forEachRemaining(
              f -> assertContained(f.getValue(), actual.path(f.getKey()), at + "." + f.getKey()));
    } else if (shown.isArray() && shown.size() > 0 && shown.get(0).has("name")) {
      assertTrue(actual.isArray(), at + ": " + actual);
      for (JsonNode item : shown) {
        String name = item.path("name").asText();
        JsonNode match = null;
        for (JsonNode a : actual) {
          if (name.equals(a.path("name").asText(null))) {
            match = a;
          }
        }
        assertNotNull(match, at + ": no item named " + name + " in " + actual);
        assertContained(item, match, at + "[" + name + "]");
      }
    } else if (shown.isNumber() && actual.isNumber()) {
      assertTrue(
          shown.decimalValue().compareTo(actual.decimalValue()) == 0,
          at + ": shown " + shown + ", the webhook's " + actual);
    } else if (shown.isArray()) {
      assertEquals(shown.size(), actual.size(), at + ": " + actual);
      for (int i = 0; i < shown.size(); i++) {
        assertContained(shown.get(i), actual.get(i), at + "[" + i + "]");
      }
    } else {
      assertEquals(shown.asText(), actual.asText(null), at);
      assertEquals(shown.isTextual(), actual.isTextual(), at + ": " + shown + " vs " + actual);
    }
  }

  static List<String> names(JsonNode list) {
    List<String> out = new ArrayList<>();
    list.forEach(n -> out.add(n.path("name").asText()));
    return out;
  }

  /** The names in {@code after} that {@code before} does not have, in {@code after}'s order. */
  static List<String> added(JsonNode before, JsonNode after) {
    Set<String> had = new TreeSet<>(names(before));
    return names(after).stream().filter(n -> !had.contains(n)).toList();
  }

  @Test
  void theConfigMapsPodSideBlockWritesEveryKeyOutWithAReasonAndTheLauncherAcceptsIt() {
    Config block = ConfigFactory.parseString(configMapFile()).getConfig("gpushare.pod-side");
    assertEquals(
        Set.of(
            "socket",
            "inject",
            "image",
            "image-pull-policy",
            "library-dir",
            "token-audience",
            "token-expiration",
            "runtime-class",
            "mps-uid"),
        block.root().keySet(),
        "every key written out");
    for (String key : block.root().keySet()) {
      assertFalse(
          block.getValue(key).origin().comments().isEmpty(), "gpushare.pod-side." + key + ": why");
    }

    PodSideSettings podSide = launcherConfig().podSide();
    PodSideSettings d = PodSideSettings.DEFAULT;
    assertEquals(Optional.of(PodSideSettings.DEPLOY_SOCKET), podSide.socket());
    assertTrue(podSide.inject(), "the webhook injects");
    // The init container in the pods is the member's own image, so library and member match.
    assertEquals(arbiter().getImage(), podSide.image());
    // Every other key at the launcher's default.
    assertEquals(d.imagePullPolicy(), podSide.imagePullPolicy());
    assertEquals(d.libraryDir(), podSide.libraryDir());
    assertEquals(d.tokenAudience(), podSide.tokenAudience());
    assertEquals(d.tokenExpiration(), podSide.tokenExpiration());
    assertEquals(d.runtimeClass(), podSide.runtimeClass());
    assertEquals(d.mpsUid(), podSide.mpsUid());
    // MPS is the mps component's (GPUSHARE_MPS_ROOT), not the base's.
    assertEquals(Optional.empty(), podSide.mpsRoot());
    assertEquals(
        Optional.of(MPS_ROOT),
        launcherConfig(Map.of("PGPASSWORD", TEST_PASSWORD, "GPUSHARE_MPS_ROOT", MPS_ROOT))
            .podSide()
            .mpsRoot());
    // The member serves the webhook, and injecting needs the socket: both are there.
    assertTrue(arbiter().getArgs().contains("--webhook-port"));
  }

  // ---------------------------------------------------------------- the PostgreSQL journal

  /** What the test's environment answers for the variable {@code password-env} names. */
  static final String TEST_PASSWORD = "s3cret-from-the-secret";

  @Test
  void theConfigMapSelectsTheSharedPostgresJournalAsTheLauncherReadsIt() {
    JournalSettings journal = launcherConfig().journal();
    JournalSettings.Postgres pg =
        assertInstanceOf(JournalSettings.Postgres.class, journal, journal.kind());
    assertEquals("postgres", pg.kind());
    assertEquals("jdbc:postgresql://gpushare-postgres." + NS + ".svc:5432/gpushare", pg.url());
    assertEquals("gpushare", pg.user());
    assertEquals(TEST_PASSWORD, pg.password(), "read from the variable password-env names");
    assertFalse(pg.createSchema(), "operators own the DDL: the Job creates the tables");

    // Without the variable (no Secret behind it) the launcher refuses to start, naming it.
    LaunchException e =
        assertThrows(LaunchException.class, () -> launcherConfig(Map.of()), "no PGPASSWORD");
    assertTrue(e.getMessage().contains("PGPASSWORD"), e.getMessage());

    // The members may reach the database's port (any address: it may be a managed server).
    NetworkPolicy np = typed(doc("NetworkPolicy", "gpushare"));
    int port = URI.create(pg.url().substring("jdbc:".length())).getPort();
    assertEquals(5432, port);
    assertTrue(
        np.getSpec().getEgress().stream()
            .anyMatch(
                r ->
                    r.getTo().isEmpty()
                        && r.getPorts().stream()
                            .anyMatch(
                                p ->
                                    "TCP".equals(p.getProtocol())
                                        && p.getPort().getIntVal() == port)),
        "egress to PostgreSQL on " + port);
  }

  @Test
  void theMembersAndTheJobReadThePasswordFromThePostgresSecret() {
    String variable = configMapJournal().getString("postgres.password-env");
    assertEquals("PGPASSWORD", variable);
    for (Container c : List.of(arbiter(), initSchemaContainer())) {
      EnvVar e =
          c.getEnv().stream()
              .filter(v -> v.getName().equals(variable))
              .findFirst()
              .orElseThrow(() -> new AssertionError(c.getName() + " has no env " + variable));
      assertNull(e.getValue(), c.getName() + ": never a literal password");
      assertEquals(POSTGRES_SECRET, e.getValueFrom().getSecretKeyRef().getName(), c.getName());
      assertEquals("password", e.getValueFrom().getSecretKeyRef().getKey(), c.getName());
      assertNotEquals(Boolean.TRUE, e.getValueFrom().getSecretKeyRef().getOptional(), c.getName());
    }
    // The base holds no Secret; the documented template is not part of it.
    assertTrue(docs.stream().noneMatch(d -> d.kind().equals("Secret")), "a Secret in the base");
    Doc template =
        examples.stream()
            .filter(d -> d.kind().equals("Secret"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no *" + EXAMPLE_SUFFIX + " Secret template"));
    assertEquals("secret-postgres" + EXAMPLE_SUFFIX, template.file().getFileName().toString());
    Secret secret = typed(template);
    assertEquals(POSTGRES_SECRET, secret.getMetadata().getName());
    assertEquals(NS, secret.getMetadata().getNamespace());
    assertEquals(Set.of("password"), secret.getStringData().keySet());
  }

  @Test
  void theInitSchemaJobRunsTheLauncherCommandWithTheMembersConfiguration() {
    Job job = typed(doc("Job", JOB));
    PodSpec pod = job.getSpec().getTemplate().getSpec();
    Container c = initSchemaContainer();
    assertEquals(List.of("init-schema", "--config", argValue("--config")), c.getArgs());
    assertTrue(c.getCommand().isEmpty(), "the image's entrypoint, the launcher's Main");
    assertEquals(arbiter().getImage(), c.getImage());

    // The same ConfigMap file, mounted where --config points.
    String dir = parent(argValue("--config"));
    String volume =
        c.getVolumeMounts().stream()
            .filter(m -> m.getMountPath().equals(dir))
            .map(VolumeMount::getName)
            .findFirst()
            .orElseThrow(() -> new AssertionError("nothing mounted at " + dir));
    Volume config =
        pod.getVolumes().stream().filter(v -> v.getName().equals(volume)).findFirst().orElseThrow();
    assertEquals(volumeMountedAt(dir).getConfigMap().getName(), config.getConfigMap().getName());

    assertEquals("OnFailure", pod.getRestartPolicy());
    assertTrue(job.getSpec().getBackoffLimit() > 0, "backoffLimit");
    assertTrue(job.getSpec().getTtlSecondsAfterFinished() > 0, "ttlSecondsAfterFinished");
    assertEquals(Boolean.FALSE, pod.getAutomountServiceAccountToken(), "no API access");
    assertEquals(podSpec().getSecurityContext(), pod.getSecurityContext());
    assertEquals(arbiter().getSecurityContext(), c.getSecurityContext());
    assertEquals(List.of(), pod.getInitContainers());

    // Not a member: cluster bootstrap's pod discovery and the members' NetworkPolicy skip it.
    Map<String, String> labels = job.getSpec().getTemplate().getMetadata().getLabels();
    Config cluster = ClusterFormation.kubernetesResource().resolve();
    String selector =
        cluster
            .getString("pekko.discovery.kubernetes-api.pod-label-selector")
            .replace(
                "%s",
                cluster.getString(
                    "pekko.management.cluster.bootstrap.contact-point-discovery.service-name"));
    String[] label = selector.split("=", 2);
    assertNotEquals(label[1], labels.get(label[0]), "the Job's pod would be a contact point");
    NetworkPolicy np = typed(doc("NetworkPolicy", "gpushare"));
    assertFalse(
        labels.entrySet().containsAll(np.getSpec().getPodSelector().getMatchLabels().entrySet()),
        "the members' NetworkPolicy selects the Job");
  }

  @Test
  void theNamespaceEnforcesPrivilegedForTheSocketDirectoryAloneAndWarnsAndAuditsAtRestricted() {
    Map<String, String> labels = typed(doc("Namespace", NS)).getMetadata().getLabels();
    assertEquals("privileged", labels.get("pod-security.kubernetes.io/enforce"));
    assertEquals("restricted", labels.get("pod-security.kubernetes.io/warn"));
    assertEquals("restricted", labels.get("pod-security.kubernetes.io/audit"));
    // What "privileged" admits beyond "restricted": the data-plane hostPath and the root init
    // container that chowns it (tested above), nothing else. Every other volume and container of
    // the namespace meets "restricted".
    Job job = typed(doc("Job", JOB));
    List<String> relaxed = new ArrayList<>();
    Map<String, PodSpec> pods =
        Map.of("DaemonSet", podSpec(), "Job", job.getSpec().getTemplate().getSpec());
    for (Map.Entry<String, PodSpec> entry : new TreeMap<>(pods).entrySet()) {
      PodSpec pod = entry.getValue();
      assertNotEquals(Boolean.TRUE, pod.getHostNetwork());
      assertNotEquals(Boolean.TRUE, pod.getHostPID());
      assertNotEquals(Boolean.TRUE, pod.getHostIPC());
      assertEquals(Boolean.TRUE, pod.getSecurityContext().getRunAsNonRoot());
      assertEquals("RuntimeDefault", pod.getSecurityContext().getSeccompProfile().getType());
      for (Volume v : pod.getVolumes()) {
        if (v.getHostPath() != null) {
          relaxed.add(
              entry.getKey() + " hostPath " + v.getName() + "=" + v.getHostPath().getPath());
          continue;
        }
        assertTrue(
            v.getConfigMap() != null || v.getSecret() != null || v.getEmptyDir() != null,
            "restricted allows configMap, secret and emptyDir here, not " + v);
      }
      List<Container> containers = new ArrayList<>(pod.getInitContainers());
      containers.addAll(pod.getContainers());
      for (Container c : containers) {
        if (Long.valueOf(0).equals(c.getSecurityContext().getRunAsUser())) {
          relaxed.add(entry.getKey() + " root container " + c.getName());
          continue;
        }
        SecurityContext sc = c.getSecurityContext();
        assertNotEquals(Boolean.TRUE, sc.getPrivileged(), c.getName());
        assertEquals(Boolean.FALSE, sc.getAllowPrivilegeEscalation(), c.getName());
        assertNotEquals(Long.valueOf(0), sc.getRunAsUser(), c.getName());
        assertNotEquals(Boolean.FALSE, sc.getRunAsNonRoot(), c.getName());
        assertEquals(List.of("ALL"), sc.getCapabilities().getDrop(), c.getName());
        assertTrue(sc.getCapabilities().getAdd().isEmpty(), c.getName());
        assertTrue(
            c.getPorts().stream().allMatch(p -> p.getHostPort() == null),
            c.getName() + " hostPort");
      }
    }
    assertEquals(
        List.of(
            "DaemonSet hostPath " + DATA_PLANE_VOLUME + "=" + DATA_PLANE_DIR,
            "DaemonSet hostPath " + HOST_PROC_VOLUME + "=/proc",
            "DaemonSet root container " + DATA_PLANE_INIT),
        relaxed,
        "what the namespace's privileged level admits");
  }

  @Test
  void theRequestsAreTheSharingModulesReservationForTheReferenceNode() {
    Map<String, Quantity> requests = arbiter().getResources().getRequests();
    assertEquals(0, requests.get("cpu").getNumericalAmount().compareTo(new BigDecimal(32)));
    assertEquals(
        0,
        requests
            .get("memory")
            .getNumericalAmount()
            .compareTo(BigDecimal.valueOf(160L).multiply(BigDecimal.valueOf(1L << 30))));
    // The same figures as the launcher's reservation per GPU (SPEC §2), for 16 GPUs.
    var reserved = launcherConfig().settings().reservedPerGpu();
    BigDecimal gpus = BigDecimal.valueOf(REFERENCE_GPUS);
    assertEquals(
        0,
        new Quantity(reserved.cpu())
            .getNumericalAmount()
            .multiply(gpus)
            .compareTo(requests.get("cpu").getNumericalAmount()));
    assertEquals(
        0,
        new Quantity(reserved.memory())
            .getNumericalAmount()
            .multiply(gpus)
            .compareTo(requests.get("memory").getNumericalAmount()));
  }

  @Test
  void theLauncherIsStartedInKubernetesModeWithItsNodeAndItsFiles() {
    Container c = arbiter();
    assertTrue(c.getArgs().contains("--kubernetes"), c.getArgs().toString());
    assertEquals("/var/lib/gpushare/member", argValue("--data"));
    assertEquals("0.0.0.0", argValue("--host"));
    assertEquals("8080", argValue("--port"));
    assertEquals("spec.nodeName", fieldRef(c, "NODE_NAME"));
    assertEquals("metadata.name", fieldRef(c, "POD_NAME"));
    assertEquals("metadata.namespace", fieldRef(c, "POD_NAMESPACE"));
    assertEquals("status.podIP", fieldRef(c, "POD_IP"));

    assertEquals("/healthz", c.getLivenessProbe().getHttpGet().getPath());
    assertEquals("/readyz", c.getReadinessProbe().getHttpGet().getPath());
    assertEquals(8080, containerPort(c.getLivenessProbe().getHttpGet().getPort()));
    assertEquals(8080, containerPort(c.getReadinessProbe().getHttpGet().getPort()));
    Set<Integer> ports =
        c.getPorts().stream().map(ContainerPort::getContainerPort).collect(Collectors.toSet());
    assertEquals(Set.of(8080, 8443, MANAGEMENT_PORT, REMOTING_PORT), ports);

    // --config names a key of the ConfigMap, mounted where the flag points.
    Path config = Path.of(argValue("--config"));
    ConfigMap cm = typed(doc("ConfigMap", "gpushare-config"));
    assertEquals(
        cm.getMetadata().getName(),
        volumeMountedAt(config.getParent().toString()).getConfigMap().getName());
    assertTrue(
        cm.getData().containsKey(config.getFileName().toString()),
        cm.getData().keySet().toString());

    Service api = typed(doc("Service", "gpushare"));
    assertEquals(8080, containerPort(servicePort(api, 8080).getTargetPort()));
    Service local = typed(doc("Service", "gpushare-node"));
    assertEquals("Local", local.getSpec().getInternalTrafficPolicy());
    assertEquals(8080, containerPort(servicePort(local, 8080).getTargetPort()));
    assertEquals(daemonSetSelector(), local.getSpec().getSelector());
  }

  /** Pekko Management (cluster bootstrap's contact point) and Pekko remoting. */
  static final int MANAGEMENT_PORT = 7626;

  static final int REMOTING_PORT = 25520;

  @Test
  void theMembersFindEachOtherThroughTheApiOnTheDaemonSetsNamedPorts() {
    Config cluster = ClusterFormation.kubernetesResource().resolve();
    Container c = arbiter();
    String discovery = "pekko.management.cluster.bootstrap.contact-point-discovery.";
    // The discovery looks up the management port by name; it and remoting are fixed ports.
    assertEquals(
        cluster.getInt("pekko.management.http.port"),
        containerPort(new IntOrString(cluster.getString(discovery + "port-name"))));
    assertEquals(MANAGEMENT_PORT, cluster.getInt("pekko.management.http.port"));
    assertEquals(REMOTING_PORT, cluster.getInt("pekko.remote.artery.canonical.port"));
    assertEquals(REMOTING_PORT, containerPort(new IntOrString("remoting")));
    // The label selector finds the DaemonSet's pods, the container check names its container.
    String selector =
        cluster
            .getString("pekko.discovery.kubernetes-api.pod-label-selector")
            .replace("%s", cluster.getString(discovery + "service-name"));
    String[] label = selector.split("=", 2);
    assertEquals(label[1], daemonSetSelector().get(label[0]), selector);
    assertEquals(c.getName(), cluster.getString("pekko.discovery.kubernetes-api.container-name"));
  }

  @Test
  void theConfigMapIsAcceptedByTheLauncherAndHasNoSimulatedNodes() {
    var settings = launcherConfig().settings();
    assertEquals(List.of(), settings.nodes(), "Kubernetes mode: nodes come from the informers");
  }

  // ---------------------------------------------------------------- disruption and network

  @Test
  void evictionsNeverTakeTheLastMember() {
    PodDisruptionBudget pdb = typed(doc("PodDisruptionBudget", "gpushare"));
    // For DaemonSet pods Kubernetes honours only an integer minAvailable: maxUnavailable needs a
    // scale subresource, and without one the disruption controller refuses every eviction.
    assertNull(pdb.getSpec().getMaxUnavailable());
    assertEquals(new IntOrString(1), pdb.getSpec().getMinAvailable());
    assertEquals("AlwaysAllow", pdb.getSpec().getUnhealthyPodEvictionPolicy());
    assertEquals(daemonSetSelector(), pdb.getSpec().getSelector().getMatchLabels());
  }

  @Test
  void networkPolicyOpensTheWebhookToAllAndTheApiToTheClusterAndEgressToDnsAndTheApiServer() {
    NetworkPolicy np = typed(doc("NetworkPolicy", "gpushare"));
    assertEquals(daemonSetSelector(), np.getSpec().getPodSelector().getMatchLabels());
    assertEquals(Set.of("Ingress", "Egress"), Set.copyOf(np.getSpec().getPolicyTypes()));

    List<NetworkPolicyIngressRule> ingress = np.getSpec().getIngress();
    NetworkPolicyIngressRule webhook = ingressFor(ingress, 8443);
    assertTrue(webhook.getFrom().isEmpty(), "8443 must be open to any source: " + webhook);
    NetworkPolicyIngressRule api = ingressFor(ingress, 8080);
    assertEquals(1, api.getFrom().size());
    assertNotNull(api.getFrom().get(0).getNamespaceSelector(), "8080 from the cluster's pods");
    assertNull(api.getFrom().get(0).getIpBlock());
    // Remoting and management: from the other members only.
    Map<String, String> members = Map.of("app.kubernetes.io/name", "gpushare");
    for (int port : List.of(REMOTING_PORT, MANAGEMENT_PORT)) {
      NetworkPolicyIngressRule rule = ingressFor(ingress, port);
      assertEquals(1, rule.getFrom().size(), port + ": " + rule);
      assertNull(rule.getFrom().get(0).getNamespaceSelector(), port + ": this namespace only");
      assertEquals(members, rule.getFrom().get(0).getPodSelector().getMatchLabels());
      assertEquals(
          members.get("app.kubernetes.io/name"),
          daemonSetSelector().get("app.kubernetes.io/name"),
          "the members' label");
    }
    assertEquals(4, ingress.size(), "no other ingress: " + ingress);

    Set<String> egress = new TreeSet<>();
    for (NetworkPolicyEgressRule rule : np.getSpec().getEgress()) {
      for (NetworkPolicyPort p : rule.getPorts()) {
        egress.add(p.getProtocol() + "/" + p.getPort().getIntVal());
        if (p.getPort().getIntVal() == REMOTING_PORT
            || p.getPort().getIntVal() == MANAGEMENT_PORT) {
          assertEquals(1, rule.getTo().size(), "to the other members only: " + rule);
          assertEquals(members, rule.getTo().get(0).getPodSelector().getMatchLabels());
        }
      }
    }
    assertEquals(
        Set.of(
            "UDP/53",
            "TCP/53",
            "TCP/443",
            "TCP/6443",
            "TCP/5432",
            "TCP/" + REMOTING_PORT,
            "TCP/" + MANAGEMENT_PORT),
        egress);
  }

  // ---------------------------------------------------------------- the image

  @Test
  void jibBuildsTheImageTheDaemonSetRunsAndIsBoundToNoPhase() throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    Document pom = f.newDocumentBuilder().parse(JIB_POM.toFile());
    Element jib = null;
    NodeList plugins = pom.getElementsByTagName("plugin");
    for (int i = 0; i < plugins.getLength(); i++) {
      Element p = (Element) plugins.item(i);
      if ("jib-maven-plugin".equals(childText(p, "artifactId"))) {
        jib = p;
      }
    }
    assertNotNull(jib, "http-api/pom.xml has no jib-maven-plugin");
    assertEquals("com.google.cloud.tools", childText(jib, "groupId"));
    assertNull(child(jib, "executions"), "a bound Jib goal would need a registry in every build");
    Element conf = child(jib, "configuration");
    Element container = child(conf, "container");
    assertEquals("eclipse-temurin:17-jre", childText(child(conf, "from"), "image"));
    assertEquals("dev.gpushare.http.Main", childText(container, "mainClass"));
    assertTrue(childText(container, "user").startsWith("65532"), "image user");
    Set<String> exposed = new TreeSet<>();
    NodeList ports = child(container, "ports").getElementsByTagName("port");
    for (int i = 0; i < ports.getLength(); i++) {
      exposed.add(ports.item(i).getTextContent().strip());
    }
    assertEquals(Set.of("8080", "8443"), exposed);

    String image = childText(child(conf, "to"), "image");
    for (Container c : allContainers()) {
      assertEquals(image, c.getImage(), c.getName());
    }
    assertEquals(image, initSchemaContainer().getImage(), JOB);
    assertEquals(
        podSpec().getSecurityContext().getRunAsUser(),
        Long.valueOf(childText(container, "user").split(":")[0]));
  }

  // ---------------------------------------------------------------- kubectl kustomize

  /**
   * What {@code kubectl kustomize} renders: the base alone, or with {@code components} (of deploy/)
   * through an overlay outside the base's directory (kustomize wants relative paths). The calling
   * test is skipped when neither kubectl is on PATH nor src-test/kube built.
   */
  static List<Doc> kustomize(String... components) throws Exception {
    Optional<Path> kubectl = onPath("kubectl").or(KubeControlPlane::builtKubectl);
    Assumptions.assumeTrue(
        kubectl.isPresent(),
        "kubectl is not on PATH, and src-test/kube (bash src-test/kube/build.sh) is not built");
    Path overlay = Files.createTempDirectory("gpushare-overlay");
    Path out = Files.createTempFile("kustomize", ".yaml");
    Path err = Files.createTempFile("kustomize", ".err");
    try {
      Path target = DEPLOY;
      if (components.length > 0) {
        String base = overlay.relativize(DEPLOY).toString().replace('\\', '/');
        StringBuilder kustomization =
            new StringBuilder(
                "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                    + "kind: Kustomization\n"
                    + "resources:\n- "
                    + base
                    + "\ncomponents:\n");
        for (String component : components) {
          kustomization.append("- ").append(base).append('/').append(component).append('\n');
        }
        Files.writeString(overlay.resolve("kustomization.yaml"), kustomization);
        target = overlay;
      }
      Process p =
          new ProcessBuilder(kubectl.get().toString(), "kustomize", target.toString())
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        fail("kubectl kustomize did not finish within 60 s");
      }
      assertEquals(0, p.exitValue(), "kubectl kustomize: " + Files.readString(err));
      return yamlDocuments(Files.readString(out)).stream().map(t -> new Doc(out, t)).toList();
    } finally {
      Files.deleteIfExists(overlay.resolve("kustomization.yaml"));
      Files.deleteIfExists(overlay);
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  @Test
  void kubectlKustomizeRendersEveryObject() throws Exception {
    List<Doc> rendered = DeployManifestsTest.kustomize();
    Set<String> expected = new TreeSet<>();
    docs.forEach(d -> expected.add(d.key()));
    Set<String> actual = new TreeSet<>();
    rendered.forEach(d -> assertTrue(actual.add(d.key()), "rendered twice: " + d.key()));
    assertEquals(expected, actual);
    for (Doc d : rendered) {
      if (!d.group().equals(CERT_MANAGER)) {
        assertEquals(List.of(), unknownFields(typed(d)), "rendered " + d.key());
      }
    }
  }

  @Test
  void kubectlKustomizeRendersAnOverlayWithTheLeaseMajorityComponent() throws Exception {
    List<Doc> rendered = DeployManifestsTest.kustomize("lease-majority");
    Set<String> keys = rendered.stream().map(Doc::key).collect(Collectors.toSet());
    assertTrue(keys.contains("Role/" + NS + "/gpushare-lease"), keys.toString());
    assertTrue(keys.contains("RoleBinding/" + NS + "/gpushare-lease"), keys.toString());
    assertEquals(docs.size() + 2, keys.size(), keys.toString());
    DaemonSet ds =
        typed(
            rendered.stream().filter(d -> d.kind().equals("DaemonSet")).findFirst().orElseThrow());
    Container c = ds.getSpec().getTemplate().getSpec().getContainers().get(0);
    assertEquals("gpushare", c.getName());
    assertEquals("lease-majority", env(c, "GPUSHARE_SPLIT_BRAIN_STRATEGY"));
    assertEquals("spec.nodeName", fieldRef(c, "NODE_NAME"), "the base's variables stay");
  }

  // ---------------------------------------------------------------- the mps component

  /** The opt-in CUDA MPS component: one control daemon per GPU (deploy/mps/README.md). */
  static final Path MPS = DEPLOY.resolve("mps");

  /** The pipe root: the same path on the host, in mps-control, the arbiter and the workloads. */
  static final String MPS_ROOT = "/run/gpushare/mps";

  static final String MPS_CONTAINER = "mps-control";

  /** Pod Security "baseline" lets a container add these capabilities and no other. */
  static final Set<String> BASELINE_CAPABILITIES =
      Set.of(
          "AUDIT_WRITE",
          "CHOWN",
          "DAC_OVERRIDE",
          "FOWNER",
          "FSETID",
          "KILL",
          "MKNOD",
          "NET_BIND_SERVICE",
          "SETFCAP",
          "SETGID",
          "SETPCAP",
          "SETUID",
          "SYS_CHROOT");

  static final List<String> FAKE_GPUS =
      List.of(
          "GPU-11111111-2222-3333-4444-555555555555", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");

  @Test
  void theMpsComponentListsEveryFileOfItsDirectoryAndEachParsesWithoutUnknownFields()
      throws IOException {
    JsonNode k = YAML.readTree(MPS.resolve("kustomization.yaml").toFile());
    assertEquals("kustomize.config.k8s.io/v1alpha1", k.path("apiVersion").asText());
    assertEquals("Component", k.path("kind").asText());
    Set<String> resources = new TreeSet<>();
    k.path("resources").forEach(r -> assertTrue(resources.add(r.asText()), "listed twice: " + r));
    Set<String> patches = new TreeSet<>();
    for (JsonNode p : k.path("patches")) {
      assertTrue(p.has("path"), "every patch is a file of the component: " + p);
      assertFalse(p.has("patch"), "no inline patch: " + p);
      assertTrue(patches.add(p.path("path").asText()), "listed twice: " + p);
    }
    assertEquals(Set.of("configmap-mps-daemons.yaml"), resources);
    assertEquals(Set.of("daemonset-mps.yaml", "namespace-privileged.yaml"), patches);
    Set<String> listed = new TreeSet<>(resources);
    listed.addAll(patches);
    Set<String> present;
    try (Stream<Path> files = Files.list(MPS)) {
      present =
          files
              .map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".yaml") && !n.equals("kustomization.yaml"))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertEquals(present, listed, "kustomization.yaml vs deploy/mps/*.yaml");
    assertTrue(Files.isRegularFile(MPS.resolve("README.md")), "deploy/mps/README.md");
    for (String file : listed) {
      Doc d = mpsDoc(file);
      if (d.kind().equals("Namespace")) {
        assertEquals(NS, d.name(), d.key());
      } else {
        assertEquals(NS, d.namespace(), d.key());
      }
      assertEquals(List.of(), unknownFields(typed(d)), file + ": fields fabric8 does not know");
    }
  }

  @Test
  void theMpsPatchTargetsTheDaemonSetAndAddsExactlyTheMpsControlContainer() throws IOException {
    Doc patchDoc = mpsDoc("daemonset-mps.yaml");
    DaemonSet patch = typed(patchDoc);
    DaemonSet base = typed(doc("DaemonSet", "gpushare"));
    assertEquals(base.getMetadata().getName(), patch.getMetadata().getName());
    assertEquals(base.getMetadata().getNamespace(), patch.getMetadata().getNamespace());
    PodSpec pod = patch.getSpec().getTemplate().getSpec();
    assertNull(pod.getHostIPC(), "no hostIPC: the shm directory is mounted instead");
    assertNull(pod.getHostPID());
    assertNull(pod.getHostNetwork());
    assertNull(pod.getSecurityContext(), "the pod's security context stays the base's");
    assertTrue(pod.getInitContainers().isEmpty());

    // Strategic merge by name: the arbiter's entry and one new container.
    List<String> names = pod.getContainers().stream().map(Container::getName).toList();
    assertEquals(List.of("gpushare", MPS_CONTAINER), names);
    Set<String> added = new TreeSet<>(names);
    podSpec().getContainers().forEach(c -> added.remove(c.getName()));
    assertEquals(Set.of(MPS_CONTAINER), added);

    // The arbiter's entry only adds its two variables; nothing of the base's container changes.
    JsonNode arbiterEntry =
        patchDoc.tree().path("spec").path("template").path("spec").path("containers").get(0);
    Set<String> fields = new TreeSet<>();
    arbiterEntry.fieldNames().forEachRemaining(fields::add);
    assertEquals(Set.of("name", "env"), fields);
    Container arbiterPatch = pod.getContainers().get(0);
    Map<String, String> arbiterEnv = new TreeMap<>();
    arbiterPatch.getEnv().forEach(e -> arbiterEnv.put(e.getName(), e.getValue()));
    assertEquals(Map.of("GPUSHARE_MPS", "on", "GPUSHARE_MPS_ROOT", MPS_ROOT), arbiterEnv);
    for (EnvVar e : arbiter().getEnv()) {
      assertFalse(arbiterEnv.containsKey(e.getName()), "the base already sets " + e.getName());
    }

    Container mps = pod.getContainers().get(1);
    ConfigMap script = typed(mpsDoc("configmap-mps-daemons.yaml"));
    assertEquals(List.of("/bin/sh", "/etc/gpushare/mps/mps-daemons.sh"), mps.getCommand());
    assertTrue(mps.getArgs().isEmpty(), mps.getArgs().toString());
    assertTrue(mps.getImage().startsWith("nvcr.io/nvidia/cuda:"), mps.getImage());
    assertEquals(MPS_ROOT, env(mps, "MPS_ROOT"));
    assertEquals("all", env(mps, "NVIDIA_VISIBLE_DEVICES"));
    // compute: nvidia-cuda-mps-control and -server; utility: nvidia-smi (the host's, mounted).
    assertEquals(
        Set.of("compute", "utility"), Set.of(env(mps, "NVIDIA_DRIVER_CAPABILITIES").split(",")));
    assertEquals("true", env(mps, "NVIDIA_DISABLE_REQUIRE"));
    assertTrue(mps.getPorts().isEmpty());
    // The MPS servers run in this container: a limit would kill every client's server.
    assertTrue(mps.getResources().getLimits().isEmpty(), "no limits");
    assertNotNull(mps.getResources().getRequests().get("cpu"));
    assertNotNull(mps.getResources().getRequests().get("memory"));

    // As restrictive as MPS allows: root with six default capabilities, nothing more.
    SecurityContext sc = mps.getSecurityContext();
    assertEquals(Boolean.FALSE, sc.getPrivileged());
    assertEquals(Boolean.FALSE, sc.getAllowPrivilegeEscalation());
    assertEquals(Boolean.TRUE, sc.getReadOnlyRootFilesystem());
    assertEquals(Long.valueOf(0), sc.getRunAsUser());
    assertEquals(Boolean.FALSE, sc.getRunAsNonRoot(), "overrides the pod's runAsNonRoot");
    assertEquals(List.of("ALL"), sc.getCapabilities().getDrop());
    Set<String> caps = new TreeSet<>(sc.getCapabilities().getAdd());
    assertEquals(Set.of("CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"), caps);
    assertTrue(BASELINE_CAPABILITIES.containsAll(caps), caps.toString());

    // Its volumes are new ones; the two hostPaths are the pipe root and its shm directory.
    Map<String, Volume> volumes = new TreeMap<>();
    pod.getVolumes().forEach(v -> volumes.put(v.getName(), v));
    assertEquals(Set.of("mps-script", "mps-root", "mps-shm", "mps-tmp"), volumes.keySet());
    podSpec()
        .getVolumes()
        .forEach(v -> assertFalse(volumes.containsKey(v.getName()), "base volume " + v));
    Map<String, VolumeMount> mounts = new TreeMap<>();
    mps.getVolumeMounts().forEach(m -> mounts.put(m.getName(), m));
    assertEquals(volumes.keySet(), mounts.keySet(), "every volume mounted, only these");

    Volume root = volumes.get("mps-root");
    assertEquals(MPS_ROOT, root.getHostPath().getPath());
    assertEquals("DirectoryOrCreate", root.getHostPath().getType());
    assertEquals(MPS_ROOT, mounts.get("mps-root").getMountPath());
    assertNotEquals(Boolean.TRUE, mounts.get("mps-root").getReadOnly(), "the sockets are there");

    Volume shm = volumes.get("mps-shm");
    assertEquals(MPS_ROOT + "/shm", shm.getHostPath().getPath());
    assertEquals("DirectoryOrCreate", shm.getHostPath().getType());
    assertEquals("/dev/shm", mounts.get("mps-shm").getMountPath());

    Volume scriptVolume = volumes.get("mps-script");
    assertEquals(script.getMetadata().getName(), scriptVolume.getConfigMap().getName());
    assertEquals(Boolean.TRUE, mounts.get("mps-script").getReadOnly());
    Path command = Path.of(mps.getCommand().get(1));
    assertEquals(command.getParent().toString(), mounts.get("mps-script").getMountPath());
    assertTrue(
        script.getData().containsKey(command.getFileName().toString()),
        "the command is the ConfigMap's script");

    assertNotNull(volumes.get("mps-tmp").getEmptyDir());
    assertEquals("/tmp", mounts.get("mps-tmp").getMountPath());
  }

  @Test
  void theMpsComponentStillAsksForPrivilegedItselfAndNothingElse() throws IOException {
    Doc d = mpsDoc("namespace-privileged.yaml");
    assertEquals("Namespace", d.kind());
    HasMetadata ns = typed(d);
    assertEquals(NS, ns.getMetadata().getName());
    assertEquals(
        Map.of("pod-security.kubernetes.io/enforce", "privileged"), ns.getMetadata().getLabels());
    // Redundant since the data-plane socket: the base enforces privileged itself. Kept, so that
    // the component still gets what it needs over an overlay that tightens the base again.
    Map<String, String> base = typed(doc("Namespace", NS)).getMetadata().getLabels();
    assertEquals("privileged", base.get("pod-security.kubernetes.io/enforce"));
    assertEquals("restricted", base.get("pod-security.kubernetes.io/warn"));
  }

  @Test
  void theMpsScriptConfigMapParsesAndItsScriptIsValidPosixSh() throws Exception {
    ConfigMap cm = typed(mpsDoc("configmap-mps-daemons.yaml"));
    assertEquals(NS, cm.getMetadata().getNamespace());
    assertEquals(Set.of("mps-daemons.sh"), cm.getData().keySet());
    String script = mpsScript();
    assertTrue(script.startsWith("#!/bin/sh\n"), "a POSIX sh script");
    assertTrue(script.contains("MPS_ROOT=${MPS_ROOT:-" + MPS_ROOT + "}"), "the root's default");
    assertTrue(script.contains("MPS_CHECK_SECONDS=${MPS_CHECK_SECONDS:-10}"), "checks every 10 s");
    Optional<Path> sh = onPath("sh");
    Assumptions.assumeTrue(sh.isPresent(), "sh is not on PATH");
    Path dir = Files.createTempDirectory("gpushare-mps");
    try {
      Path file = Files.writeString(dir.resolve("mps-daemons.sh"), script);
      Path out = dir.resolve("out");
      Process p =
          new ProcessBuilder(sh.get().toString(), "-n", file.toString())
              .redirectErrorStream(true)
              .redirectOutput(out.toFile())
              .start();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        fail("sh -n did not finish within 30 s");
      }
      assertEquals(0, p.exitValue(), "sh -n: " + Files.readString(out));
    } finally {
      deleteTree(dir);
    }
  }

  @Test
  void theMpsScriptStartsOneDaemonPerGpuRestartsALostOneAndQuitsEveryOneOnSigterm()
      throws Exception {
    Optional<Path> sh = onPath("sh");
    Assumptions.assumeTrue(sh.isPresent(), "sh is not on PATH");
    Path dir = Files.createTempDirectory("gpushare-mps");
    Process p = null;
    try {
      Path bin = Files.createDirectory(dir.resolve("bin"));
      Path root = dir.resolve("root");
      Path calls = dir.resolve("calls");
      Path out = dir.resolve("out");
      Files.createFile(calls);
      // Fakes of the driver's tools: nvidia-smi lists two GPUs; nvidia-cuda-mps-control -d
      // records its environment and creates the control socket (a plain file here), and as a
      // client it records the command it read and the pipe directory it was sent to.
      writeExecutable(
          bin.resolve("nvidia-smi"),
          "#!/bin/sh\n"
              + "[ \"$*\" = \"--query-gpu=uuid --format=csv,noheader\" ]"
              + " || { echo \"unexpected: $*\" >&2; exit 2; }\n"
              + "printf '%s\\n' "
              + String.join(" ", FAKE_GPUS)
              + "\n");
      writeExecutable(
          bin.resolve("nvidia-cuda-mps-control"),
          "#!/bin/sh\n"
              + "if [ \"${1:-}\" = -d ]; then\n"
              // the socket exists before the start is recorded: the test waits for the record
              + "  : > \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
              + "  echo \"start CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
              + " CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY"
              + " CUDA_MPS_LOG_DIRECTORY=$CUDA_MPS_LOG_DIRECTORY\" >> '"
              + calls
              + "'\n"
              + "  exit 0\n"
              + "fi\n"
              + "read -r command\n"
              + "echo \"$command CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY\" >> '"
              + calls
              + "'\n"
              + "[ \"$command\" = quit ] && rm -f \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
              + "exit 0\n");
      Path script = Files.writeString(dir.resolve("mps-daemons.sh"), mpsScript());

      ProcessBuilder pb =
          new ProcessBuilder(sh.get().toString(), script.toString())
              .redirectErrorStream(true)
              .redirectOutput(out.toFile());
      Map<String, String> env = pb.environment();
      env.put("PATH", bin + File.pathSeparator + env.getOrDefault("PATH", "/usr/bin:/bin"));
      env.put("MPS_ROOT", root.toString());
      env.put("MPS_CHECK_SECONDS", "1");
      p = pb.start();

      // One daemon per GPU, each with its GPU and its own directories.
      awaitCalls(calls, out, c -> c.size() >= FAKE_GPUS.size(), "a daemon started per GPU");
      List<String> started = lines(calls);
      for (String uuid : FAKE_GPUS) {
        Path pipe = root.resolve(uuid).resolve("pipe");
        Path log = root.resolve(uuid).resolve("log");
        assertTrue(Files.isDirectory(pipe), pipe.toString());
        assertTrue(Files.isDirectory(log), log.toString());
        assertTrue(
            started.contains(
                "start CUDA_VISIBLE_DEVICES="
                    + uuid
                    + " CUDA_MPS_PIPE_DIRECTORY="
                    + pipe
                    + " CUDA_MPS_LOG_DIRECTORY="
                    + log),
            uuid + " in " + started);
      }
      assertEquals(FAKE_GPUS.size(), started.size(), started.toString());
      assertEquals(
          PosixFilePermissions.fromString("rwxrwxrwx"),
          Files.getPosixFilePermissions(root.resolve("shm")),
          "the shared /dev/shm is writable by every client's UID");

      // A daemon whose control socket disappears is started again, and only that one.
      String lost = FAKE_GPUS.get(1);
      Files.delete(root.resolve(lost).resolve("pipe").resolve("control"));
      awaitCalls(calls, out, c -> c.size() > FAKE_GPUS.size(), "the lost daemon restarted");
      String restarted = lines(calls).get(FAKE_GPUS.size());
      assertTrue(restarted.startsWith("start CUDA_VISIBLE_DEVICES=" + lost + " "), restarted);

      // SIGTERM: quit to every daemon, exit 0.
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        fail("the script did not stop within 10 s of SIGTERM:\n" + Files.readString(out));
      }
      assertEquals(0, p.exitValue(), Files.readString(out));
      List<String> quits =
          lines(calls).stream().filter(l -> !l.startsWith("start ")).sorted().toList();
      List<String> expected =
          FAKE_GPUS.stream()
              .map(u -> "quit CUDA_MPS_PIPE_DIRECTORY=" + root.resolve(u).resolve("pipe"))
              .sorted()
              .toList();
      assertEquals(expected, quits, Files.readString(out));
    } finally {
      if (p != null && p.isAlive()) {
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
      }
      deleteTree(dir);
    }
  }

  @Test
  void kubectlKustomizeRendersAnOverlayWithTheMpsAndLeaseMajorityComponents() throws Exception {
    List<Doc> rendered = DeployManifestsTest.kustomize("mps", "lease-majority");
    Set<String> keys = rendered.stream().map(Doc::key).collect(Collectors.toSet());
    assertTrue(keys.contains("ConfigMap/" + NS + "/gpushare-mps-daemons"), keys.toString());
    assertEquals(docs.size() + 3, keys.size(), keys.toString());
    for (Doc d : rendered) {
      if (!d.group().equals(CERT_MANAGER)) {
        assertEquals(List.of(), unknownFields(typed(d)), "rendered " + d.key());
      }
    }
    HasMetadata ns =
        typed(rendered.stream().filter(d -> d.kind().equals("Namespace")).findFirst().get());
    assertEquals(
        "privileged", ns.getMetadata().getLabels().get("pod-security.kubernetes.io/enforce"));
    DaemonSet ds =
        typed(rendered.stream().filter(d -> d.kind().equals("DaemonSet")).findFirst().get());
    PodSpec pod = ds.getSpec().getTemplate().getSpec();
    assertEquals(
        List.of("gpushare", MPS_CONTAINER),
        pod.getContainers().stream().map(Container::getName).toList());
    Container c = pod.getContainers().get(0);
    assertEquals("on", env(c, "GPUSHARE_MPS"));
    assertEquals(MPS_ROOT, env(c, "GPUSHARE_MPS_ROOT"));
    assertEquals("lease-majority", env(c, "GPUSHARE_SPLIT_BRAIN_STRATEGY"));
    assertEquals("spec.nodeName", fieldRef(c, "NODE_NAME"), "the base's variables stay");
    // The arbiter container keeps the base's restricted settings and mounts none of MPS.
    assertEquals(arbiter().getSecurityContext(), c.getSecurityContext());
    assertEquals(arbiter().getVolumeMounts(), c.getVolumeMounts());
    assertEquals(arbiter().getImage(), c.getImage());
    assertEquals(podSpec().getSecurityContext(), pod.getSecurityContext());
    assertNotEquals(Boolean.TRUE, pod.getHostIPC());
    Set<String> volumes =
        pod.getVolumes().stream().map(Volume::getName).collect(Collectors.toSet());
    assertTrue(volumes.containsAll(Set.of("mps-script", "mps-root", "mps-shm", "mps-tmp")));
    assertTrue(volumes.containsAll(Set.of("data", "config", "tls", "tmp")), volumes.toString());
    // The base's socket directory and its init container stay beside MPS.
    assertTrue(volumes.contains(DATA_PLANE_VOLUME), volumes.toString());
    assertEquals(
        List.of(DATA_PLANE_INIT),
        pod.getInitContainers().stream().map(Container::getName).toList());
  }

  /** The one object of a file of deploy/mps/. */
  static Doc mpsDoc(String file) throws IOException {
    Path path = MPS.resolve(file);
    List<JsonNode> trees = yamlDocuments(Files.readString(path));
    assertEquals(1, trees.size(), file + ": one object per file");
    return new Doc(path, trees.get(0));
  }

  /** The script the mps-control container runs, as its ConfigMap holds it. */
  static String mpsScript() throws IOException {
    ConfigMap cm = typed(mpsDoc("configmap-mps-daemons.yaml"));
    return cm.getData().get("mps-daemons.sh");
  }

  static void writeExecutable(Path file, String text) throws IOException {
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Waits at most 10 s for the recorded calls to satisfy {@code done}. */
  static void awaitCalls(Path calls, Path out, Predicate<List<String>> done, String what)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!done.test(lines(calls))) {
      if (System.nanoTime() > deadline) {
        fail(
            what
                + " within 10 s; calls: "
                + lines(calls)
                + "\nscript output:\n"
                + Files.readString(out));
      }
      Thread.sleep(20);
    }
  }

  static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Collections.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  // ---------------------------------------------------------------- helpers

  static List<JsonNode> yamlDocuments(String text) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(text)) {
      while (it.hasNext()) {
        JsonNode n = it.next();
        if (n != null && !n.isNull() && !n.isMissingNode() && !n.isEmpty()) {
          out.add(n);
        }
      }
    }
    return out;
  }

  static Doc doc(String kind, String name) {
    return docs.stream()
        .filter(d -> d.kind().equals(kind) && d.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind + " " + name + " in " + DEPLOY));
  }

  /** The object in fabric8's typed model; a kind fabric8 does not model fails. */
  @SuppressWarnings("unchecked")
  static <T extends HasMetadata> T typed(Doc d) {
    Object o;
    try {
      o = K8S.unmarshal(Api.JSON.writeValueAsString(d.tree()));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertFalse(
        o instanceof GenericKubernetesResource,
        d.key() + ": " + d.apiVersion() + " " + d.kind() + " is not a kind fabric8 models");
    return (T) o;
  }

  static GenericKubernetesResource generic(String kind, String name) {
    return K8S.convertValue(doc(kind, name).tree(), GenericKubernetesResource.class);
  }

  /**
   * The paths of every field the typed model did not recognise: fabric8 keeps them in each model
   * object's {@code additionalProperties} instead of failing, so the whole object graph is walked
   * through its Jackson properties.
   */
  static List<String> unknownFields(Object root) {
    List<String> out = new ArrayList<>();
    walk(root, "$", out, Collections.newSetFromMap(new IdentityHashMap<>()));
    return out;
  }

  private static void walk(Object o, String path, List<String> out, Set<Object> seen) {
    if (o == null) {
      return;
    }
    if (o instanceof Map<?, ?> map) {
      map.forEach((k, v) -> walk(v, path + "." + k, out, seen));
      return;
    }
    if (o instanceof Collection<?> list) {
      int i = 0;
      for (Object e : list) {
        walk(e, path + "[" + i++ + "]", out, seen);
      }
      return;
    }
    if (!o.getClass().getName().startsWith("io.fabric8.") || !seen.add(o)) {
      return;
    }
    for (Method m : o.getClass().getMethods()) {
      if (m.getParameterCount() != 0 || Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      if (m.isAnnotationPresent(JsonAnyGetter.class)
          || m.getName().equals("getAdditionalProperties")) {
        if (invoke(m, o) instanceof Map<?, ?> extra) {
          extra.keySet().forEach(k -> out.add(path + "." + k));
        }
      } else if (m.isAnnotationPresent(JsonProperty.class)) {
        walk(invoke(m, o), path + "." + m.getAnnotation(JsonProperty.class).value(), out, seen);
      }
    }
  }

  private static Object invoke(Method m, Object o) {
    try {
      return m.invoke(o);
    } catch (IllegalAccessException | InvocationTargetException e) {
      throw new AssertionError("reading " + m + " of " + o.getClass().getName(), e);
    }
  }

  static PodSpec podSpec() {
    DaemonSet ds = typed(doc("DaemonSet", "gpushare"));
    return ds.getSpec().getTemplate().getSpec();
  }

  static Container arbiter() {
    return podSpec().getContainers().stream()
        .filter(c -> c.getName().equals("gpushare"))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no container gpushare in the DaemonSet"));
  }

  static List<Container> allContainers() {
    List<Container> all = new ArrayList<>(podSpec().getInitContainers());
    all.addAll(podSpec().getContainers());
    return all;
  }

  static Map<String, String> daemonSetSelector() {
    DaemonSet ds = typed(doc("DaemonSet", "gpushare"));
    return ds.getSpec().getSelector().getMatchLabels();
  }

  /** The value after {@code flag} in the arbiter container's args. */
  static String argValue(String flag) {
    List<String> args = arbiter().getArgs();
    int i = args.indexOf(flag);
    assertTrue(i >= 0 && i + 1 < args.size(), flag + " with a value in " + args);
    return args.get(i + 1);
  }

  static String env(Container c, String name) {
    return c.getEnv().stream()
        .filter(e -> e.getName().equals(name))
        .map(EnvVar::getValue)
        .findFirst()
        .orElseThrow(() -> new AssertionError("no env " + name));
  }

  static String fieldRef(Container c, String name) {
    return c.getEnv().stream()
        .filter(e -> e.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no env " + name))
        .getValueFrom()
        .getFieldRef()
        .getFieldPath();
  }

  static String parent(String path) {
    return Path.of(path).getParent().toString();
  }

  /** The arbiter's volume mounted at {@code mountPath}. */
  static Volume volumeMountedAt(String mountPath) {
    String name =
        arbiter().getVolumeMounts().stream()
            .filter(m -> m.getMountPath().equals(mountPath))
            .map(VolumeMount::getName)
            .findFirst()
            .orElseThrow(() -> new AssertionError("nothing mounted at " + mountPath));
    return podSpec().getVolumes().stream()
        .filter(v -> v.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no volume " + name));
  }

  /** A port of the arbiter container, by number or by name. */
  static int containerPort(IntOrString port) {
    if (port.getIntVal() != null) {
      return port.getIntVal();
    }
    return arbiter().getPorts().stream()
        .filter(p -> port.getStrVal().equals(p.getName()))
        .map(ContainerPort::getContainerPort)
        .findFirst()
        .orElseThrow(() -> new AssertionError("no container port named " + port.getStrVal()));
  }

  static ServicePort servicePort(Service svc, int port) {
    return svc.getSpec().getPorts().stream()
        .filter(p -> p.getPort() == port)
        .findFirst()
        .orElseThrow(
            () -> new AssertionError(svc.getMetadata().getName() + " has no port " + port));
  }

  static NetworkPolicyIngressRule ingressFor(List<NetworkPolicyIngressRule> rules, int port) {
    List<NetworkPolicyIngressRule> matching =
        rules.stream()
            .filter(r -> r.getPorts().stream().anyMatch(p -> p.getPort().getIntVal() == port))
            .toList();
    assertEquals(1, matching.size(), "ingress rules for " + port + ": " + matching);
    assertEquals(1, matching.get(0).getPorts().size(), "one port per ingress rule");
    assertEquals("TCP", matching.get(0).getPorts().get(0).getProtocol());
    return matching.get(0);
  }

  /**
   * The ConfigMap's file as the launcher reads it with {@code --config}, in a pod whose {@code
   * PGPASSWORD} comes from the Secret.
   */
  static EmbeddedConfig launcherConfig() {
    return launcherConfig(Map.of("PGPASSWORD", TEST_PASSWORD));
  }

  /** The same with the given environment (never the test process's own). */
  static EmbeddedConfig launcherConfig(Map<String, String> environment) {
    try {
      Path tmp = Files.createTempFile("gpushare", ".conf");
      try {
        Files.writeString(tmp, configMapFile(), StandardCharsets.UTF_8);
        return EmbeddedConfig.from(
            EmbeddedConfig.resolve(EmbeddedConfig.load(Optional.of(tmp)), ConfigFactory.empty()),
            environment::get);
      } finally {
        Files.deleteIfExists(tmp);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The text of the ConfigMap's file that {@code --config} names. */
  static String configMapFile() {
    ConfigMap cm = typed(doc("ConfigMap", "gpushare-config"));
    return cm.getData().get(Path.of(argValue("--config")).getFileName().toString());
  }

  /** {@code gpushare.journal} of the ConfigMap's file, as HOCON. */
  static Config configMapJournal() {
    return ConfigFactory.parseString(configMapFile()).getConfig("gpushare.journal");
  }

  static Container initSchemaContainer() {
    Job job = typed(doc("Job", JOB));
    List<Container> containers = job.getSpec().getTemplate().getSpec().getContainers();
    assertEquals(1, containers.size(), JOB + " containers");
    return containers.get(0);
  }

  static Optional<Path> onPath(String command) {
    String path = System.getenv("PATH");
    if (path == null) {
      return Optional.empty();
    }
    return Stream.of(path.split(File.pathSeparator))
        .filter(dir -> !dir.isBlank())
        .map(dir -> Path.of(dir, command))
        .filter(Files::isExecutable)
        .findFirst();
  }

  static Element child(Element parent, String name) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(name)) {
        return e;
      }
    }
    return null;
  }

  static String childText(Element parent, String name) {
    Element e = child(parent, name);
    return e == null ? null : e.getTextContent().strip();
  }
}
