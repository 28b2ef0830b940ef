package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.e2e.PodSide.Proc;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.zjsonpatch.JsonPatch;
import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 25 end to end: the reference manifest, applied unchanged, runs on a GPU share through what
 * the admission webhook brings into it, with the credential never leaving the node.
 *
 * <ul>
 *   <li>A real member ({@link ServerProcess}, {@code --kubernetes} against the fabric8 mock API
 *       server, the admission webhook over HTTPS, the data plane on a Unix socket) and the
 *       reference manifest, sent to its webhook as the API server sends it (an AdmissionReview of
 *       the pod after the API server's defaulting: with its own ServiceAccount token volume).
 *   <li>The mutated pod is created and bound to a node; a {@link Kubelet} runs it: the downward
 *       API, the init container's copy step (the launcher's {@code install-library}, as the image's
 *       entrypoint runs it), the projected token written for its audience, the container's own
 *       command ({@code sleep 1000h}, which never touches a GPU) with the environment and {@code
 *       LD_PRELOAD} of the patch, and then a CUDA program in the container ({@code kubectl exec},
 *       as a notebook user runs one) against the fake driver.
 *   <li>The mock API server answers TokenReview as a real one does: a token is authenticated only
 *       for the audiences it was issued for ({@code spec.audiences}, else the API server's own).
 *       The program is granted its GPU by the member through that path; a token for another
 *       audience, and the pod's own API-server token, are refused.
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PodSideWebhookTest {

  static final String NODE = "hpn-podside";
  static final String IMAGE = "gpushare:e2e";
  static final String POD = "gpu-share-demo";
  static final String API_AUDIENCE = "https://kubernetes.default.svc.cluster.local";
  static final String TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews";
  static final String ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
  static final Duration AWAIT = Duration.ofSeconds(60);

  @TempDir static Path dir;
  private KubeApiServer kube;
  private ServerProcess member;
  private Api api;
  private Path socket;
  private int webhookPort;
  private List<String> gpus;
  private JsonNode review;
  private JsonNode mutated;
  private Kubelet kubelet;
  private Proc sleep;

  @BeforeAll
  void start() throws Exception {
    PodSide side = PodSide.get(); // skips where there is no C compiler
    kube = new KubeApiServer();
    kube.answerPosts(TOKEN_REVIEWS, PodSideWebhookTest::tokenReview);
    kube.answerPosts(ACCESS_REVIEWS, PodSideWebhookTest::noRbac);
    // The socket's host directory: the member's (DaemonSet hostPath), mounted into the pods.
    Path dataPlane = Files.createDirectories(dir.resolve("run/data-plane"));
    socket = dataPlane.resolve("gpushare.sock");
    Path config = dir.resolve("gpushare.conf");
    Files.writeString(
        config,
        """
        gpushare {
          nodes = []
          kubernetes { qps = 200, burst = 400, max-backoff = 2s }
          pod-side {
            socket = "%s"
            image = "%s"
          }
        }
        """
            .formatted(socket, IMAGE));
    Path tls = Files.createDirectories(dir.resolve("tls"));
    copyResource("e2e/tls/webhook.crt", tls.resolve("tls.crt"));
    copyResource("e2e/tls/webhook.key", tls.resolve("tls.key"));
    try (ServerSocket s = new ServerSocket(0)) {
      webhookPort = s.getLocalPort();
    }
    member =
        ServerProcess.start(
            "podside-webhook",
            dir.resolve("data"),
            kube.clientProperties(),
            KubeApiServer.outsideACluster(),
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
    kube.createNode(
        KubernetesModeTest.referenceNode(
            NODE,
            "share-pool",
            "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
                + " \"reservedEphemeralStorage\": \"1.5Ti\"}"));
    gpus = eventually("node " + NODE + " is sharing with its 16 GPUs", () -> uuids());
    assertTrue(Files.exists(socket), "the member serves the data plane at " + socket);
  }

  @AfterAll
  void stop() {
    if (sleep != null) {
      sleep.close();
    }
    try {
      if (member != null) {
        member.stop();
      }
    } finally {
      if (kube != null) {
        kube.close();
      }
    }
  }

  // ---------------------------------------------------------------- admission

  @Test
  @Order(1)
  void theReferenceManifestIsCompletedByTheWebhookOverHttps() throws Exception {
    review = admissionReview(referencePod());
    JsonNode answer = sendReview(review);
    JsonNode response = answer.get("response");
    assertTrue(response.path("allowed").asBoolean(), answer.toString());
    assertEquals("JSONPatch", response.path("patchType").asText(), answer.toString());
    JsonNode patch = Api.JSON.readTree(Base64.getDecoder().decode(response.get("patch").asText()));
    mutated = JsonPatch.apply(patch, review.at("/request/object").deepCopy());

    JsonNode demo = mutated.at("/spec/containers/0");
    assertEquals("sleep", demo.at("/command/0").asText(), "the command as the user wrote it");
    assertEquals("gpushare-lib", mutated.at("/spec/initContainers/0/name").asText());
    assertEquals(IMAGE, mutated.at("/spec/initContainers/0/image").asText());
    Map<String, JsonNode> env = new HashMap<>();
    demo.path("env").forEach(e -> env.put(e.get("name").asText(), e));
    assertEquals("unix:" + socket, env.get("GPUSHARE_SERVER").path("value").asText());
    assertTrue(env.get("LD_PRELOAD").path("value").asText().endsWith("/libgpushare.so"));
    assertEquals(
        "/var/run/secrets/gpushare.dev/token/token",
        env.get("GPUSHARE_TOKEN_FILE").path("value").asText());

    // Re-invocation (reinvocationPolicy: IfNeeded) changes nothing.
    ObjectNode again = review.deepCopy();
    ((ObjectNode) again.get("request")).set("object", mutated);
    JsonNode second = sendReview(again);
    assertTrue(second.at("/response/allowed").asBoolean(), second.toString());
    assertFalse(second.get("response").has("patch"), second.toString());
  }

  // ---------------------------------------------------------------- the kubelet runs it

  @Test
  @Order(2)
  void theKubeletRunsTheMutatedPodAndItsCudaProgramIsGrantedThroughTheSocket() throws Exception {
    ObjectNode bound = mutated.deepCopy();
    ((ObjectNode) bound.get("spec")).put("nodeName", NODE); // the scheduler's binding
    ((ObjectNode) bound.get("metadata")).put("uid", "6b1f4c1e-0000-4000-8000-00000000d3e0");
    Pod pod = Serialization.unmarshal(bound.toString(), Pod.class);
    kube.kubectl.pods().inNamespace(Api.NS).resource(pod).create();
    eventually(
        "the member knows the pod",
        () -> {
          assertEquals("Hibernation", api.pod(POD).path("state").asText());
          return null;
        });

    PodSide side = PodSide.get();
    kubelet =
        new Kubelet(
            pod,
            Files.createDirectories(dir.resolve("pod")),
            Map.of(
                IMAGE,
                List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp",
                    ServerProcess.classPath(),
                    "dev.gpushare.http.Main")),
            PodSideWebhookTest::issue,
            side.fakes(),
            gpus);
    List<PodSide.Result> init = kubelet.runInitContainers();
    assertTrue(init.get(0).out().contains("installed "), init.get(0).out());
    Path library = kubelet.volume("gpushare-lib").resolve("libgpushare.so");
    assertTrue(Files.isRegularFile(library), "the init container copied the library");
    assertTrue(
        Files.readString(kubelet.volume("gpushare-token").resolve("token"))
            .equals(issue("gpushare", Api.NS + "/" + POD)),
        "the projected token of audience gpushare");

    // The container's own command: sleep never touches a GPU, so the pod stays asleep.
    sleep = kubelet.start("demo");
    assertTrue(sleep.isAlive(), sleep.transcript());

    // A CUDA program in the container (kubectl exec): demand, grant, its GPU, release at exit.
    Path workload = side.program("workload");
    try (Proc cuda =
        kubelet.exec(
            "demo",
            List.of(workload.toString(), "init", "ctx", "alloc:1000000", "count", "exit:0"),
            Map.of("FAKE_CUDA_TRACE", "1"))) {
      Pattern granted =
          Pattern.compile("fake libcuda: cuInit CUDA_VISIBLE_DEVICES=(GPU-[0-9a-f-]+)");
      String uuid = cuda.awaitErr(granted.pattern()).group(1);
      assertTrue(gpus.contains(uuid), uuid + " is one of the node's GPUs " + gpus);
      cuda.awaitOut("init -> 0");
      cuda.awaitOut("count -> 0 1"); // only its GPU
      assertEquals(0, cuda.awaitExit(), cuda.transcript());
    }
    eventually(
        "the share is released when the pod's last GPU process exits",
        () -> {
          JsonNode view = api.pod(POD);
          assertEquals("Hibernation", view.path("state").asText(), view.toString());
          return null;
        });
    assertTrue(sleep.isAlive(), "the container's own process goes on: " + sleep.transcript());

    // The member reviewed the projected token for its audience, and never saw the API token.
    List<JsonNode> reviews = kube.reviewed(TOKEN_REVIEWS);
    assertFalse(reviews.isEmpty());
    boolean audienceAsked = false;
    for (JsonNode r : reviews) {
      String token = r.at("/spec/token").asText();
      assertFalse(token.startsWith("api."), "the pod's API-server token reached the member");
      if (token.equals(issue("gpushare", Api.NS + "/" + POD))) {
        audienceAsked |= r.at("/spec/audiences").toString().equals("[\"gpushare\"]");
      }
    }
    assertTrue(audienceAsked, "TokenReview asked for audience gpushare: " + reviews);
  }

  @Test
  @Order(3)
  void aTokenForAnotherAudienceOrThePodsApiTokenIsRefused() throws Exception {
    Path tokenFile = kubelet.volume("gpushare-token").resolve("token");
    Path workload = PodSide.get().program("workload");
    String ref = Api.NS + "/" + POD;
    for (String[] c :
        new String[][] {
          {issue("vault", ref), "HTTP 401"},
          {issue(null, ref), "HTTP 403"},
        }) {
      Files.writeString(tokenFile, c[0]); // as the kubelet rotates it; read at every request
      try (Proc cuda =
          kubelet.exec(
              "demo",
              List.of(workload.toString(), "init", "exit:0"),
              Map.of("GPUSHARE_ON_ERROR", "fail"))) {
        cuda.awaitErr(".*refused the token \\(" + c[1] + ".*");
        cuda.awaitOut("init -> 100"); // CUDA_ERROR_NO_DEVICE: nothing runs without a grant
        assertEquals(0, cuda.awaitExit(), cuda.transcript());
        if (c[1].equals("HTTP 401")) {
          assertTrue(
              cuda.transcript().contains("for audience gpushare"),
              "the refusal names the audience: " + cuda.transcript());
        }
        if (c[1].equals("HTTP 403")) {
          assertTrue(
              cuda.transcript().contains("gpushare"),
              "the refusal names the audience: " + cuda.transcript());
        }
      }
      assertEquals("Hibernation", api.pod(POD).path("state").asText(), "no demand was raised");
    }
    Files.writeString(tokenFile, issue("gpushare", ref));
  }

  /**
   * The README's Kubernetes section shows the reference manifest exactly as the product's docs
   * write it: the manifest this test applies.
   */
  @Test
  @Order(4)
  void theReadmesKubernetesSectionShowsTheManifestThisTestApplies() throws IOException {
    Path readme =
        Path.of(System.getProperty("basedir", "."))
            .toAbsolutePath()
            .getParent()
            .resolve("README.md");
    String text = Files.readString(readme);
    int section = text.indexOf("## On Kubernetes");
    assertTrue(section >= 0, "README.md has a section \"On Kubernetes\"");
    int start = text.indexOf("```yaml\n", section) + "```yaml\n".length();
    String shown = text.substring(start, text.indexOf("```\n", start));
    String manifest;
    try (InputStream in = resource("examples/gpu-share-demo.yaml")) {
      manifest = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    String body = manifest.substring(manifest.indexOf("apiVersion:"));
    assertEquals(body, shown, "README.md's manifest is the reference manifest, unchanged");
  }

  // ---------------------------------------------------------------- the API server's part

  /**
   * What TokenRequest issues: a token naming its audience and pod (audience null: the API
   * server's), in the bearer token's alphabet (RFC 6750 token68), as a JWT is.
   */
  static String issue(String audience, String pod) {
    Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
    byte[] ref = pod.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    return audience == null
        ? "api." + b64.encodeToString(ref)
        : "sa."
            + b64.encodeToString(audience.getBytes(java.nio.charset.StandardCharsets.UTF_8))
            + "."
            + b64.encodeToString(ref);
  }

  private static String decode(String part) {
    return new String(Base64.getUrlDecoder().decode(part), java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * TokenReview as the API server answers it: authenticated only when the token's audiences meet
   * {@code spec.audiences} (absent: the API server's own), {@code status.audiences} the ones met.
   */
  static JsonNode tokenReview(JsonNode body) {
    String token = body.at("/spec/token").asText();
    List<String> asked = new ArrayList<>();
    body.at("/spec/audiences").forEach(a -> asked.add(a.asText()));
    List<String> target = asked.isEmpty() ? List.of(API_AUDIENCE) : asked;
    String audience;
    String pod;
    String[] parts = token.split("\\.");
    if (parts.length == 2 && parts[0].equals("api")) {
      audience = API_AUDIENCE;
      pod = decode(parts[1]);
    } else if (parts.length == 3 && parts[0].equals("sa")) {
      audience = decode(parts[1]);
      pod = decode(parts[2]);
    } else {
      audience = null;
      pod = null;
    }
    ObjectNode review = Api.JSON.createObjectNode();
    review.put("apiVersion", "authentication.k8s.io/v1").put("kind", "TokenReview");
    review.set("spec", body.get("spec"));
    ObjectNode status = review.putObject("status");
    if (audience == null || !target.contains(audience)) {
      status.put("authenticated", false);
      status.put(
          "error",
          audience == null
              ? "invalid bearer token"
              : "token audiences [\""
                  + audience
                  + "\"] is invalid for the target audiences "
                  + target);
      return review;
    }
    String ns = pod.substring(0, pod.indexOf('/'));
    String name = pod.substring(pod.indexOf('/') + 1);
    status.put("authenticated", true);
    ObjectNode user = status.putObject("user");
    user.put("username", "system:serviceaccount:" + ns + ":default");
    user.put("uid", "5f0e0c1a-0000-4000-8000-0000000000aa");
    user.putArray("groups")
        .add("system:serviceaccounts")
        .add("system:serviceaccounts:" + ns)
        .add("system:authenticated");
    ObjectNode extra = user.putObject("extra");
    extra.putArray("authentication.kubernetes.io/pod-name").add(name);
    extra
        .putArray("authentication.kubernetes.io/pod-uid")
        .add("6b1f4c1e-0000-4000-8000-00000000d3e0");
    ArrayNode met = status.putArray("audiences");
    met.add(audience);
    return review;
  }

  /** SubjectAccessReview: the pod's ServiceAccount has no RBAC rule on gpushare.dev. */
  static JsonNode noRbac(JsonNode body) {
    ObjectNode review = Api.JSON.createObjectNode();
    review.put("apiVersion", "authorization.k8s.io/v1").put("kind", "SubjectAccessReview");
    review.set("spec", body.get("spec"));
    review.putObject("status").put("allowed", false).put("reason", "no RBAC policy matched");
    return review;
  }

  // ---------------------------------------------------------------- helpers

  /** The reference manifest as the API server hands it to admission: defaulted, with its token. */
  private static ObjectNode referencePod() throws IOException {
    ObjectNode pod;
    try (InputStream in = resource("examples/gpu-share-demo.yaml")) {
      pod = (ObjectNode) Api.JSON.valueToTree(Serialization.unmarshal(in, Pod.class));
    }
    ObjectNode spec = (ObjectNode) pod.get("spec");
    spec.put("serviceAccountName", "default");
    ObjectNode sa = spec.putArray("volumes").addObject().put("name", "kube-api-access-x7k2p");
    ArrayNode sources = sa.putObject("projected").put("defaultMode", 420).putArray("sources");
    sources
        .addObject()
        .putObject("serviceAccountToken")
        .put("expirationSeconds", 3607)
        .put("path", "token");
    ObjectNode ca = sources.addObject().putObject("configMap").put("name", "kube-root-ca.crt");
    ca.putArray("items").addObject().put("key", "ca.crt").put("path", "ca.crt");
    ObjectNode ns =
        sources
            .addObject()
            .putObject("downwardAPI")
            .putArray("items")
            .addObject()
            .put("path", "namespace");
    ns.putObject("fieldRef").put("apiVersion", "v1").put("fieldPath", "metadata.namespace");
    ((ObjectNode) spec.at("/containers/0"))
        .putArray("volumeMounts")
        .addObject()
        .put("name", "kube-api-access-x7k2p")
        .put("readOnly", true)
        .put("mountPath", "/var/run/secrets/kubernetes.io/serviceaccount");
    return pod;
  }

  private static JsonNode admissionReview(ObjectNode pod) {
    ObjectNode review = Api.JSON.createObjectNode();
    review.put("apiVersion", "admission.k8s.io/v1").put("kind", "AdmissionReview");
    ObjectNode request = review.putObject("request");
    request.put("uid", "3c2d1e0f-0000-4000-8000-000000000025");
    request.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
    request.putObject("resource").put("group", "").put("version", "v1").put("resource", "pods");
    request.put("name", POD).put("namespace", Api.NS).put("operation", "CREATE");
    request.putObject("userInfo").put("username", "kubernetes-admin");
    request.set("object", pod);
    return review;
  }

  private JsonNode sendReview(JsonNode review) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    try (InputStream in = resource("e2e/tls/webhook.crt")) {
      trust.setCertificateEntry(
          "webhook", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(null, tmf.getTrustManagers(), null);
    HttpClient client =
        HttpClient.newBuilder().sslContext(ssl).connectTimeout(Duration.ofSeconds(10)).build();
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(
                    URI.create("https://localhost:" + webhookPort + "/admission/mutate?timeout=5s"))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(review.toString()))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return Api.JSON.readTree(r.body());
  }

  private List<String> uuids() {
    JsonNode node = api.node(NODE);
    List<String> out = new ArrayList<>();
    node.path("gpus").forEach(g -> out.add(g.path("uuid").asText()));
    assertEquals(16, out.size(), node.toString());
    return out;
  }

  private static InputStream resource(String name) {
    InputStream in = PodSideWebhookTest.class.getClassLoader().getResourceAsStream(name);
    if (in == null) {
      throw new IllegalStateException("no test resource " + name);
    }
    return in;
  }

  private static void copyResource(String name, Path to) throws IOException {
    try (InputStream in = resource(name)) {
      Files.write(to, in.readAllBytes());
    }
  }

  interface Check<T> {
    T get() throws Exception;
  }

  private <T> T eventually(String what, Check<T> check) {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    while (true) {
      try {
        return check.get();
      } catch (Exception | AssertionError e) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError(
              what + ": not within " + AWAIT.toSeconds() + " s; server log " + member.logFile(), e);
        }
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }
}
