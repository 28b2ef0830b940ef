package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.gpushare.gpu.ChildProcess;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The admission webhooks and the pod's token against a real API server (issue 33, items 3 and 4).
 *
 * <p>The cluster is installed the way deploy/README.md "Install" does it without cert-manager:
 * {@code deploy/bootstrap-tls.sh} makes the CA, the Secret {@code gpushare-webhook-tls} and applies
 * the base with both <b>shipped</b> webhook configurations, their {@code caBundle} patched in. A
 * member runs in Kubernetes mode with the certificate and key of that Secret (as the kubelet mounts
 * it), the shipped {@code gpushare.pod-side} settings of {@code configmap.yaml}, and only the
 * shipped ServiceAccount's RBAC ({@link RealKubeApiServer#memberKubeconfig}); the API server calls
 * its webhook through the Service {@code gpushare-system/gpushare} ({@link ClusterNetwork}), TLS
 * checked end to end against the {@code caBundle}.
 *
 * <ul>
 *   <li>The reference manifest, {@code kubectl apply}'d, is stored with its limits in annotations
 *       and exactly the pod side deploy/README.md step 3 shows: the stored pod equals the manifest
 *       with the README's excerpt written in by hand (and {@code gpushare.dev/inject: "false"}), as
 *       the same API server admits and defaults it.
 *   <li>A second, test-owned mutating webhook that runs after gpushare's and changes the pod makes
 *       the API server invoke gpushare's again ({@code reinvocationPolicy: IfNeeded}): the stored
 *       pod is gpushare's result plus that change, nothing twice. A second apply, a server-side dry
 *       run and {@code kubectl diff} change nothing.
 *   <li>Bad manifests are refused by the webhook named in kubectl's error, with the product's
 *       message naming field and value; the validating webhook judges the pod after every mutation.
 *   <li>Pod Security: under {@code baseline} or {@code restricted} the pod is refused with the
 *       message the README quotes, and after the README's {@code kubectl label} it is admitted.
 *   <li>Tokens (item 4): a projected token of audience {@code gpushare} bound to the pod by
 *       TokenRequest, as the kubelet asks for it, may raise its own pod's demand on the member's
 *       API; the same for another pod, the pod's API-server token and a token for another audience
 *       are refused, all by the real TokenReview and SubjectAccessReview.
 * </ul>
 *
 * <p>One liberty: the member's socket lies in a temporary directory, not in the host's {@code
 * /run/gpushare/data-plane} (other jobs share this machine). The webhook mounts the socket's
 * directory, so the README's excerpt is compared with that one path put in for the README's. Every
 * RBAC denial in the member's log fails the class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubeWebhookTest {

  @RegisterExtension
  static final KubeControlPlane.Extension KUBE =
      KubeControlPlane.extension(KubeControlPlane.Options.apiServerOnly());

  static final ObjectMapper JSON = Api.JSON;
  static final ObjectMapper YAML =
      new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory());
  static final Path ROOT = KubeControlPlane.repositoryRoot();
  static final String SYSTEM = "gpushare-system";
  static final String NS = "default";
  static final String POD = "gpu-share-demo";
  static final String DEMO = "deploy/examples/gpu-share-demo.yaml";
  static final String NODE = "hpn-webhook";
  static final String README_DATA_PLANE = "/run/gpushare/data-plane";
  static final String CORE = "alibabacloud.com/gpu-core.percentage";
  static final String MEMORY = "alibabacloud.com/gpu-memory.percentage";
  static final Duration AWAIT = Duration.ofSeconds(60);

  /** The test-owned second webhook: its label on a pod says what it does to it. */
  static final String SECOND = "e2e.gpushare.dev/second-webhook";

  static final String SECOND_SERVICE = "e2e-second-webhook";
  static final String VENDOR_PRELOAD = "/opt/vendor/libhook.so";
  static final String LIBRARY = "/opt/gpushare/lib/libgpushare.so";

  private KubeControlPlane kube;
  private KubeControlPlane.Kubectl kubectl;
  private Path dir;
  private Path dataPlane;
  private ServerProcess member;
  private Api api;
  private HttpsServer second;
  private ExecutorService secondThreads;
  private final List<JsonNode> secondSaw = new CopyOnWriteArrayList<>();

  /** The reference pod as the API server stored it (test 1). */
  private JsonNode stored;

  @BeforeAll
  void install() throws Exception {
    kube = KUBE.get();
    kubectl = kube.kubectl();
    dir = Files.createTempDirectory("kube-webhook");
    bootstrapTls();
    // What kube-controller-manager's serviceaccount controller does (none runs here): the
    // ServiceAccount admission plugin refuses pods of a namespace without it.
    kubectl.run("-n", NS, "create", "serviceaccount", "default").ok();

    // The member's files as the kubelet mounts them: the Secret's certificate and key, and the
    // launcher's configuration from the shipped ConfigMap.
    Path tls = Files.createDirectories(dir.resolve("webhook-tls"));
    var secret = kube.admin().secrets().inNamespace(SYSTEM).withName("gpushare-webhook-tls").get();
    for (String key : List.of("tls.crt", "tls.key")) {
      Files.write(tls.resolve(key), Base64.getDecoder().decode(secret.getData().get(key)));
    }
    dataPlane = Files.createDirectories(dir.resolve("data-plane"));
    Path config = Files.writeString(dir.resolve("gpushare.conf"), memberConfig());

    int webhookPort = KubeControlPlane.freePort();
    kube.network().route(SYSTEM, "gpushare", "webhook", webhookPort);
    Path kubeconfig = RealKubeApiServer.memberKubeconfig(kube);
    Map<String, String> env = KubeApiServer.outsideACluster();
    env.put("KUBECONFIG", kubeconfig.toString());
    member =
        ServerProcess.startWithClock(
            "kube-webhook",
            dir.resolve("data"),
            "system",
            List.of("-Dkubernetes.auth.tryServiceAccount=false", "-Dkubernetes.namespace=" + NS),
            env,
            "--kubernetes",
            "--config",
            config.toString(),
            "--webhook-port",
            String.valueOf(webhookPort),
            "--tls-cert",
            tls.resolve("tls.crt").toString(),
            "--tls-key",
            tls.resolve("tls.key").toString());
    api = member.api();
    eventually(
        "the member serves its data plane",
        () -> assertTrue(Files.exists(dataPlane.resolve("gpushare.sock"))));

    // A GPU-HPN node with sharing on, as its kubelet registers it and an operator labels it.
    kube.admin()
        .nodes()
        .resource(
            KubernetesModeTest.referenceNode(
                NODE,
                "share-pool",
                "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
                    + " \"reservedEphemeralStorage\": \"1.5Ti\"}"))
        .create();
    eventually(
        "the member shares node " + NODE + "'s 16 GPUs",
        () -> assertEquals(16, api.node(NODE).path("gpus").size()));

    startSecondWebhook();
  }

  @AfterAll
  void uninstall() {
    try {
      if (second != null) {
        second.stop(0);
        secondThreads.shutdownNow();
      }
    } finally {
      try {
        if (member != null) {
          member.stop();
          assertEquals(
              List.of(),
              RealKubeApiServer.denials(member.logFile()),
              "the member, on the shipped ServiceAccount's RBAC, was refused by the API server");
        }
      } finally {
        if (dir != null) {
          KubeControlPlane.deleteTree(dir);
        }
      }
    }
  }

  // ---------------------------------------------------------------- item 3a

  @Test
  @Order(1)
  void theReferenceManifestIsStoredWithItsLimitsInAnnotationsAndThePodSideOfTheReadme()
      throws IOException {
    var apply = kubectl.run("apply", "-f", DEMO).ok();
    assertEquals("pod/" + POD + " created", apply.out().strip(), apply::toString);
    stored = getPod(NS, POD);

    // SPEC §3: the limits kept in annotations, the container's limits set to its requests.
    JsonNode annotations = stored.at("/metadata/annotations");
    assertEquals("100", annotations.path("alibabacloud.com/gpu-core-limit").asText(), "" + stored);
    assertEquals("100", annotations.path("alibabacloud.com/gpu-memory-limit").asText());
    JsonNode resources = stored.at("/spec/containers/0/resources");
    for (String r : List.of(CORE, MEMORY)) {
      assertEquals("10", resources.path("limits").path(r).asText(), r + " " + resources);
      assertEquals("10", resources.path("requests").path(r).asText(), r + " " + resources);
    }

    // The pod side: the manifest with README step 3's excerpt written in by hand (opted out, so
    // the webhook adds no second copy), admitted and defaulted by the same API server, is the pod
    // the webhook made. Defaults, kube-api-access-… and the limit annotations come alike to both.
    JsonNode excerpt = readmeExcerpt();
    ObjectNode byHand = demoManifest();
    ((ObjectNode) byHand.get("metadata")).put("name", POD + "-by-hand");
    ((ObjectNode) byHand.get("metadata"))
        .putObject("annotations")
        .put("gpushare.dev/inject", "false");
    ObjectNode spec = (ObjectNode) byHand.get("spec");
    spec.set("initContainers", excerpt.at("/spec/initContainers"));
    spec.set("volumes", excerpt.at("/spec/volumes"));
    ObjectNode demo = (ObjectNode) spec.at("/containers/0");
    assertEquals(demo.path("name"), excerpt.at("/spec/containers/0/name"));
    demo.set("env", excerpt.at("/spec/containers/0/env"));
    demo.set("volumeMounts", excerpt.at("/spec/containers/0/volumeMounts"));
    JsonNode admitted =
        JSON.readTree(
            kubectl
                .runWithInput(
                    byHand.toString(), "create", "--dry-run=server", "-o", "json", "-f", "-")
                .ok()
                .out());
    assertEquals(
        pretty(comparable(admitted)),
        pretty(comparable(stored)),
        "the stored pod is the manifest plus exactly deploy/README.md's excerpt (step 3)");
    // The excerpt's hostPath is the member's socket directory: the one path put in for the
    // README's.
    assertEquals(
        dataPlane.toString(),
        volume(stored, "gpushare-data-plane").at("/hostPath/path").asText(),
        "the data plane's hostPath is the member's socket directory");
  }

  // ---------------------------------------------------------------- item 3b

  @Test
  @Order(2)
  void aLaterWebhooksChangeMakesTheApiServerInvokeGpushareAgainAndNothingIsAddedTwice()
      throws IOException {
    assertTrue(stored != null, "test 1 stored the reference pod");
    // "label": the second webhook adds one label. The API server invokes gpushare's again (the
    // pod changed after it); it adds nothing.
    secondSaw.clear();
    JsonNode labelled = applyWithSecondWebhook(POD + "-labelled", "label");
    assertEquals(1, secondSaw.size(), "the second webhook was called once");
    assertEquals(
        "gpushare-lib",
        secondSaw.get(0).at("/spec/initContainers/0/name").asText(),
        "the second webhook runs after gpushare's: it saw the pod side");
    assertEquals(
        pretty(comparable(stored)),
        pretty(comparable(labelled)),
        "gpushare's pod, with nothing added twice");
    ObjectNode labels = (ObjectNode) stored.at("/metadata/labels").deepCopy();
    labels.put(SECOND, "label").put("e2e.gpushare.dev/seen-by", "second-webhook");
    assertEquals(labels, labelled.at("/metadata/labels"), "plus the second webhook's label");

    // "preload": the second webhook sets LD_PRELOAD to a library of its own, as a vendor's
    // webhook might. gpushare's, invoked again, puts its library back in front and adds nothing
    // else: proof that the API server did invoke it again.
    JsonNode preloaded = applyWithSecondWebhook(POD + "-preloaded", "preload");
    ObjectNode expected = (ObjectNode) comparable(stored);
    for (JsonNode e : expected.at("/spec/containers/0/env")) {
      if (e.path("name").asText().equals("LD_PRELOAD")) {
        ((ObjectNode) e).put("value", LIBRARY + ":" + VENDOR_PRELOAD);
      }
    }
    assertEquals(
        pretty(expected),
        pretty(comparable(preloaded)),
        "gpushare's pod with its library before the second webhook's, nothing else changed");

    // A server-side dry run of the manifest (a create, as the first apply was) is the stored pod.
    ObjectNode twin = demoManifest();
    ((ObjectNode) twin.get("metadata")).put("name", POD + "-dry-run");
    JsonNode dry =
        JSON.readTree(
            kubectl
                .runWithInput(
                    twin.toString(), "create", "--dry-run=server", "-o", "json", "-f", "-")
                .ok()
                .out());
    assertEquals(pretty(comparable(stored)), pretty(comparable(dry)), "a dry run changes nothing");

    // The same manifest applied again: kubectl's three-way merge asks for the manifest's limits
    // (100) back, an UPDATE the webhooks are not called for (CREATE only), and the API server
    // refuses it (a pod's resources are immutable), as deploy/README.md "Use it" says. Nothing is
    // written.
    String version = getPod(NS, POD).at("/metadata/resourceVersion").asText();
    var again = kubectl.run("apply", "-f", DEMO);
    assertNotEquals(0, again.status(), again::toString);
    for (String said :
        List.of(
            "The Pod \"" + POD + "\" is invalid: ",
            "spec.containers[0].resources.requests: Invalid value: \"10\": must be equal to"
                + " alibabacloud.com/gpu-core.percentage limit of 100",
            "spec: Forbidden: pod updates may not change fields other than")) {
      assertTrue(again.err().contains(said), () -> said + " in " + again);
    }
    assertEquals(
        version, getPod(NS, POD).at("/metadata/resourceVersion").asText(), "nothing was written");
  }

  // ---------------------------------------------------------------- item 3c

  @Test
  @Order(3)
  void badManifestsAreRefusedByTheNamedWebhookWithTheProductsMessage() throws IOException {
    String rules = "pod default/gpu-share-bad breaks the GPU-sharing rules (1 violation): ";
    String mutate = "admission webhook \"mutate.gpushare.dev\" denied the request: ";

    ObjectNode over100 = badPod();
    ((ObjectNode) over100.at("/spec/containers/0/resources/limits")).put(CORE, "200");
    assertRefused(
        over100,
        mutate
            + rules
            + "spec.containers[0].resources.limits[alibabacloud.com/gpu-core.percentage] is"
            + " \"200\"; want an integer from 10 to 100 (from the request up to one whole GPU);"
            + " one pod's share lies on one GPU, so no value exceeds 100 (shares are not"
            + " aggregated across GPUs)");

    ObjectNode requestOverLimit = badPod();
    ((ObjectNode) requestOverLimit.at("/spec/containers/0/resources/requests")).put(MEMORY, "50");
    ((ObjectNode) requestOverLimit.at("/spec/containers/0/resources/limits")).put(MEMORY, "40");
    assertRefused(
        requestOverLimit,
        mutate
            + rules
            + "spec.containers[0].resources.limits[alibabacloud.com/gpu-memory.percentage] is"
            + " \"40\"; want an integer from 50 to 100 (from the request up to one whole GPU)");

    // A volume of the pod's own under the webhook's name: shown as the API server sent it
    // (defaulted), the pod's own volumes before the ServiceAccount's.
    ObjectNode ownVolume = badPod();
    ((ObjectNode) ownVolume.get("spec"))
        .putArray("volumes")
        .addObject()
        .put("name", "gpushare-lib")
        .putObject("configMap")
        .put("name", "mine");
    assertRefused(
        ownVolume,
        mutate
            + rules
            + "spec.volumes[0] is"
            + " {\"name\":\"gpushare-lib\",\"configMap\":{\"name\":\"mine\",\"defaultMode\":420}};"
            + " want no volume of the pod's own named \"gpushare-lib\": the webhook adds an"
            + " emptyDir under that name for libgpushare.so; rename the pod's volume");

    ObjectNode badOptOut = badPod();
    ((ObjectNode) badOptOut.get("metadata"))
        .putObject("annotations")
        .put("gpushare.dev/inject", "no");
    assertRefused(
        badOptOut,
        mutate
            + rules
            + "metadata.annotations[gpushare.dev/inject] is \"no\"; want \"true\" (the default:"
            + " the webhook brings libgpushare.so into the pod) or \"false\" (the pod is left as"
            + " written, apart from its limit annotations)");

    // The validating webhook judges the final pod: here the second webhook gives the compute
    // class after gpushare's mutating webhook was passed over (no compute class then), and the
    // pod's policy "none" is refused by validate.gpushare.dev.
    ObjectNode lateSharer = badPod();
    ObjectNode labels = (ObjectNode) lateSharer.at("/metadata/labels");
    labels.remove("alibabacloud.com/compute-class");
    labels.put("alibabacloud.com/gpu-share-policy", "none").put(SECOND, "compute-class");
    ObjectNode res = (ObjectNode) lateSharer.at("/spec/containers/0/resources");
    ((ObjectNode) res.get("limits")).put(CORE, "10").put(MEMORY, "10");
    assertRefused(
        lateSharer,
        "admission webhook \"validate.gpushare.dev\" denied the request: "
            + rules
            + "metadata.labels[alibabacloud.com/gpu-share-policy] is \"none\"; want share-pool or"
            + " static, matching the node's policy; a pod that asks for shared GPU resources"
            + " cannot use none");
  }

  // ---------------------------------------------------------------- item 3d

  @Test
  @Order(4)
  void podSecurityRefusesThePodUnderBaselineOrRestrictedAndTheReadmesLabelAdmitsIt()
      throws IOException {
    String ns = "gpushare-psa";
    kubectl.run("create", "namespace", ns).ok();
    kubectl.run("-n", ns, "create", "serviceaccount", "default").ok();
    ObjectNode pod = demoManifest();
    ((ObjectNode) pod.get("metadata")).put("namespace", ns);
    String section = DeployManifestsTest.podSideSection().replaceAll("\\s+", " ");

    kubectl
        .run("label", "namespace", ns, "pod-security.kubernetes.io/enforce=baseline", "--overwrite")
        .ok();
    var baseline = kubectl.runWithInput(pod.toString(), "apply", "-f", "-");
    assertNotEquals(0, baseline.status(), baseline::toString);
    String quoted =
        "violates PodSecurity \"baseline:latest\": hostPath volumes (volume"
            + " \"gpushare-data-plane\")";
    assertEquals(
        "Error from server (Forbidden): error when creating \"STDIN\": pods \""
            + POD
            + "\" is forbidden: "
            + quoted,
        baseline.err().strip(),
        "the API server's refusal");
    assertTrue(section.contains(quoted), "deploy/README.md quotes the real message: " + quoted);

    kubectl
        .run(
            "label",
            "namespace",
            ns,
            "pod-security.kubernetes.io/enforce=restricted",
            "--overwrite")
        .ok();
    var restricted = kubectl.runWithInput(pod.toString(), "apply", "-f", "-");
    assertNotEquals(0, restricted.status(), restricted::toString);
    assertTrue(
        restricted.err().contains("violates PodSecurity \"restricted:latest\": ")
            && restricted
                .err()
                .contains(
                    "restricted volume types (volume \"gpushare-data-plane\" uses restricted"
                        + " volume type \"hostPath\")"),
        restricted::toString);

    // The README's command, as it is written there.
    String command = section.substring(section.indexOf("kubectl label namespace <namespace>"));
    command = command.substring(0, command.indexOf(" --overwrite") + " --overwrite".length());
    List<String> args = new ArrayList<>(List.of(command.replace("<namespace>", ns).split(" ")));
    assertEquals("kubectl", args.remove(0));
    assertEquals(
        List.of(
            "label",
            "namespace",
            ns,
            "pod-security.kubernetes.io/enforce=privileged",
            "--overwrite"),
        args);
    kubectl.run(args.toArray(String[]::new)).ok();
    var privileged = kubectl.runWithInput(pod.toString(), "apply", "-f", "-");
    assertEquals(0, privileged.status(), privileged::toString);
    assertEquals(
        dataPlane.toString(),
        volume(getPod(ns, POD), "gpushare-data-plane").at("/hostPath/path").asText(),
        "admitted with the pod side");
  }

  // ---------------------------------------------------------------- item 4

  @Test
  @Order(5)
  void thePodsProjectedTokenMayUseItsOwnPodOnlyAndNoOtherTokenStandsForThePod() {
    assertTrue(stored != null, "test 1 stored the reference pod");
    // The scheduler's binding puts the pod on the member's node: the member knows it.
    kube.admin()
        .bindings()
        .inNamespace(NS)
        .resource(
            new BindingBuilder()
                .withNewMetadata()
                .withName(POD)
                .endMetadata()
                .withNewTarget()
                .withApiVersion("v1")
                .withKind("Node")
                .withName(NODE)
                .endTarget()
                .build())
        .create();
    eventually(
        "the member knows " + POD + " on " + NODE,
        () -> assertEquals("Hibernation", api.pod(POD).path("state").asText()));

    String demand = Api.podPath(POD) + "/demand";
    // As the kubelet asks for the projected token of the gpushare-token volume: bound to the pod.
    String own = kube.token(NS, "default", "gpushare", 600, POD);
    String otherPods = kube.token(NS, "default", "gpushare", 600, POD + "-labelled");
    String apiServers = kube.token(NS, "default", null, 600, POD);
    String vaults = kube.token(NS, "default", "vault", 600, POD);

    Api.Resp other = api.withToken(Optional.of(otherPods)).post(demand, null, null);
    assertEquals(403, other.status(), other::toString);
    assertTrue(
        detail(other)
            .contains(
                "system:serviceaccount:default:default may not create pods/demand"
                    + " \"default/gpu-share-demo\" (API group gpushare.dev)"),
        other::toString);
    assertTrue(
        detail(other)
            .contains(
                "a pod's ServiceAccount token may use its own pod default/" + POD + "-labelled"),
        other::toString);

    Api.Resp api403 = api.withToken(Optional.of(apiServers)).post(demand, null, null);
    assertEquals(403, api403.status(), api403::toString);
    assertTrue(
        detail(api403)
            .contains(
                "a pod's own data plane needs a token with audience gpushare (the projected token"
                    + " the webhook mounts)"),
        api403::toString);

    Api.Resp vault = api.withToken(Optional.of(vaults)).post(demand, null, null);
    assertEquals(401, vault.status(), vault::toString);
    assertTrue(
        detail(vault).contains("the bearer token is not valid: for audience gpushare: "),
        vault::toString);
    assertEquals("Hibernation", api.pod(POD).path("state").asText(), "no refusal raised demand");

    Api.Resp accepted = api.withToken(Optional.of(own)).post(demand, null, null);
    assertEquals(200, accepted.status(), accepted::toString);
    String state = accepted.json().path("state").asText();
    assertTrue(List.of("Ready", "Running").contains(state), accepted::toString);
    Api.Resp released = api.withToken(Optional.of(own)).delete(demand);
    assertEquals(200, released.status(), released::toString);
    assertEquals("Hibernation", released.json().path("state").asText(), released::toString);
  }

  // ---------------------------------------------------------------- install

  /** deploy/README.md "Install" without cert-manager, as KubeManifestsTest runs it. */
  private void bootstrapTls() throws IOException, InterruptedException {
    ProcessBuilder pb =
        new ProcessBuilder("bash", ROOT.resolve("deploy/bootstrap-tls.sh").toString())
            .directory(ROOT.toFile())
            .redirectErrorStream(true);
    pb.environment().put("KUBECONFIG", kube.adminKubeconfig().toString());
    pb.environment().put("PATH", kube.bin() + java.io.File.pathSeparator + System.getenv("PATH"));
    Path log = dir.resolve("bootstrap-tls.log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    try {
      if (!p.waitFor(180, TimeUnit.SECONDS)) {
        fail("bootstrap-tls.sh did not finish within 180 s:\n" + Files.readString(log));
      }
    } finally {
      ChildProcess.killTree(p.toHandle());
    }
    assertEquals(0, p.exitValue(), () -> "bootstrap-tls.sh:\n" + readQuietly(log));
  }

  /**
   * The shipped ConfigMap's launcher configuration, with what a test on a shared machine must
   * change: the journal (the embedded H2 instead of the operator's PostgreSQL), the socket's
   * directory (a temporary one instead of the host's /run/gpushare/data-plane) and the API client's
   * rate (faster, as every Kubernetes-mode test runs it).
   */
  private String memberConfig() throws IOException {
    JsonNode cm = YAML.readTree(ROOT.resolve("deploy/configmap.yaml").toFile());
    String shipped = cm.at("/data/gpushare.conf").asText();
    assertTrue(shipped.contains("pod-side {"), "configmap.yaml has gpushare.pod-side");
    return shipped
        + "\n# KubeWebhookTest\n"
        + "gpushare.journal = null\n"
        + "gpushare.journal { kind = h2 }\n"
        + "gpushare.pod-side.socket = \""
        + dataPlane.resolve("gpushare.sock")
        + "\"\n"
        + "gpushare.kubernetes { qps = 200, burst = 400, max-backoff = 2s }\n";
  }

  // ---------------------------------------------------------------- the second webhook

  /**
   * A mutating webhook of the test's own, behind Service {@code default/e2e-second-webhook} (its
   * own CA in the caBundle), named so that it runs after gpushare's (configurations run in name
   * order); it judges pods labelled {@link #SECOND} and does what the label's value says.
   */
  private void startSecondWebhook() throws Exception {
    Path pki = Files.createDirectories(dir.resolve("second-webhook-pki"));
    Path caDir = Files.createDirectories(dir.resolve("second-webhook-ca"));
    String host = SECOND_SERVICE + "." + NS + ".svc";
    KubeControlPlane.Pki.ca(caDir, "e2e-second-webhook-ca");
    KubeControlPlane.Pki.leaf(
        pki, caDir, "/CN=" + host, "extendedKeyUsage=serverAuth\nsubjectAltName=DNS:" + host);

    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    Certificate cert;
    Certificate ca;
    try (InputStream in = Files.newInputStream(pki.resolve("tls.crt"))) {
      cert = x509.generateCertificate(in);
    }
    try (InputStream in = Files.newInputStream(pki.resolve("ca.crt"))) {
      ca = x509.generateCertificate(in);
    }
    String pem = Files.readString(pki.resolve("tls.key"));
    byte[] der =
        Base64.getMimeDecoder()
            .decode(pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", ""));
    PrivateKey key = KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(der));
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    char[] password = "e2e".toCharArray();
    store.setKeyEntry("tls", key, password, new Certificate[] {cert, ca});
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(store, password);
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(kmf.getKeyManagers(), null, null);

    second = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    second.setHttpsConfigurator(new HttpsConfigurator(ssl));
    second.createContext("/mutate", this::secondWebhook);
    secondThreads = Executors.newFixedThreadPool(2);
    second.setExecutor(secondThreads);
    second.start();
    kube.network().route(NS, SECOND_SERVICE, "https", second.getAddress().getPort());

    String caBundle = Base64.getEncoder().encodeToString(Files.readAllBytes(pki.resolve("ca.crt")));
    kubectl
        .runWithInput(
            """
            apiVersion: v1
            kind: Service
            metadata:
              name: %s
              namespace: %s
            spec:
              ports:
              - name: https
                port: 443
                targetPort: https
            ---
            apiVersion: admissionregistration.k8s.io/v1
            kind: MutatingWebhookConfiguration
            metadata:
              name: zz-e2e-second-webhook
            webhooks:
            - name: second.e2e.gpushare.dev
              admissionReviewVersions: ["v1"]
              sideEffects: None
              failurePolicy: Fail
              reinvocationPolicy: Never
              timeoutSeconds: 5
              clientConfig:
                caBundle: %s
                service:
                  name: %s
                  namespace: %s
                  path: /mutate
                  port: 443
              rules:
              - operations: ["CREATE"]
                apiGroups: [""]
                apiVersions: ["v1"]
                resources: ["pods"]
                scope: Namespaced
              objectSelector:
                matchExpressions:
                - key: %s
                  operator: Exists
            """
                .formatted(SECOND_SERVICE, NS, caBundle, SECOND_SERVICE, NS, SECOND),
            "apply",
            "-f",
            "-")
        .ok();
  }

  /** The second webhook: {@code label}, {@code preload} or {@code compute-class}. */
  private void secondWebhook(HttpExchange exchange) throws IOException {
    try (exchange) {
      JsonNode review = JSON.readTree(exchange.getRequestBody().readAllBytes());
      JsonNode pod = review.at("/request/object");
      secondSaw.add(pod);
      ArrayNode patch = JSON.createArrayNode();
      switch (pod.at("/metadata/labels").path(SECOND).asText()) {
        case "label" ->
            patch
                .addObject()
                .put("op", "add")
                .put("path", "/metadata/labels/e2e.gpushare.dev~1seen-by")
                .put("value", "second-webhook");
        case "preload" -> {
          JsonNode env = pod.at("/spec/containers/0/env");
          for (int j = 0; j < env.size(); j++) {
            if (env.get(j).path("name").asText().equals("LD_PRELOAD")) {
              patch
                  .addObject()
                  .put("op", "replace")
                  .put("path", "/spec/containers/0/env/" + j + "/value")
                  .put("value", VENDOR_PRELOAD);
            }
          }
        }
        case "compute-class" ->
            patch
                .addObject()
                .put("op", "add")
                .put("path", "/metadata/labels/alibabacloud.com~1compute-class")
                .put("value", "gpu-hpn");
        default -> {}
      }
      ObjectNode answer = JSON.createObjectNode();
      answer.put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
      ObjectNode response = answer.putObject("response");
      response.put("uid", review.at("/request/uid").asText()).put("allowed", true);
      if (!patch.isEmpty()) {
        response
            .put("patchType", "JSONPatch")
            .put("patch", Base64.getEncoder().encodeToString(JSON.writeValueAsBytes(patch)));
      }
      byte[] body = JSON.writeValueAsBytes(answer);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
    }
  }

  private JsonNode applyWithSecondWebhook(String name, String action) throws IOException {
    ObjectNode pod = demoManifest();
    ((ObjectNode) pod.get("metadata")).put("name", name);
    ((ObjectNode) pod.at("/metadata/labels")).put(SECOND, action);
    var apply = kubectl.runWithInput(pod.toString(), "apply", "-f", "-");
    assertEquals(0, apply.status(), apply::toString);
    return getPod(NS, name);
  }

  // ---------------------------------------------------------------- helpers

  private static String detail(Api.Resp r) {
    return r.json().path("detail").asText();
  }

  /** The reference manifest, as a JSON object to edit. */
  private static ObjectNode demoManifest() throws IOException {
    return (ObjectNode) YAML.readTree(ROOT.resolve(DEMO).toFile());
  }

  /** The reference manifest named gpu-share-bad, to break one rule in. */
  private static ObjectNode badPod() throws IOException {
    ObjectNode pod = demoManifest();
    ((ObjectNode) pod.get("metadata")).put("name", "gpu-share-bad");
    return pod;
  }

  private void assertRefused(ObjectNode pod, String message) {
    var apply = kubectl.runWithInput(pod.toString(), "apply", "-f", "-");
    assertNotEquals(0, apply.status(), apply::toString);
    assertEquals(
        "Error from server: error when creating \"STDIN\": " + message,
        apply.err().strip(),
        "kubectl's error");
    var get =
        kubectl.run("-n", NS, "get", "pod", "gpu-share-bad", "--ignore-not-found", "-o", "name");
    assertEquals("", get.ok().out().strip(), "nothing was stored");
  }

  /** deploy/README.md's step 3 excerpt, with the member's socket directory for the host's. */
  private JsonNode readmeExcerpt() throws IOException {
    JsonNode excerpt = DeployManifestsTest.yamlBlocks(DeployManifestsTest.podSideSection()).get(0);
    String text = excerpt.toString();
    assertTrue(text.contains(README_DATA_PLANE), text);
    return JSON.readTree(text.replace(README_DATA_PLANE, dataPlane.toString()));
  }

  private JsonNode getPod(String namespace, String name) throws IOException {
    return JSON.readTree(kubectl.run("-n", namespace, "get", "pod", name, "-o", "json").ok().out());
  }

  private static JsonNode volume(JsonNode pod, String name) {
    for (JsonNode v : pod.at("/spec/volumes")) {
      if (v.path("name").asText().equals(name)) {
        return v;
      }
    }
    throw new AssertionError("no volume " + name + " in " + pod);
  }

  /**
   * What two pods of one manifest share: the spec and the limit annotations; the random suffix of
   * kube-api-access-… dropped, and the volumes and mounts (which the ServiceAccount plugin and the
   * webhook append in their turn) in name order. The env stays in its order.
   */
  private static JsonNode comparable(JsonNode pod) throws IOException {
    String spec =
        pod.get("spec").toString().replaceAll("kube-api-access-[a-z0-9]{5}", "kube-api-access");
    ObjectNode out = JSON.createObjectNode();
    ObjectNode s = (ObjectNode) JSON.readTree(spec);
    sortByName(s.path("volumes"));
    for (String list : List.of("initContainers", "containers")) {
      for (JsonNode c : s.path(list)) {
        sortByName(c.path("volumeMounts"));
      }
    }
    ObjectNode limits = out.putObject("limitAnnotations");
    for (String a :
        List.of("alibabacloud.com/gpu-core-limit", "alibabacloud.com/gpu-memory-limit")) {
      limits.set(a, pod.at("/metadata/annotations").path(a));
    }
    out.set("spec", s);
    return out;
  }

  private static void sortByName(JsonNode list) {
    if (!(list instanceof ArrayNode array)) {
      return;
    }
    List<JsonNode> items = new ArrayList<>();
    array.forEach(items::add);
    items.sort(
        Comparator.comparing(n -> n.path("name").asText() + " " + n.path("mountPath").asText()));
    array.removeAll();
    items.forEach(array::add);
  }

  private static String pretty(JsonNode node) throws IOException {
    return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(node);
  }

  private static String readQuietly(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      return "(" + e + ")";
    }
  }

  interface Check {
    void run() throws Exception;
  }

  /** Polls {@code check} until it passes or {@link #AWAIT} is over; then its last failure. */
  private void eventually(String what, Check check) {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    while (true) {
      try {
        check.run();
        return;
      } catch (Exception | AssertionError e) {
        if (System.nanoTime() - deadline > 0) {
          throw new AssertionError(
              what + ": not within " + AWAIT.toSeconds() + " s; member log " + member.logFile(), e);
        }
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }
}
