package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.gpushare.gpu.ChildProcess;
import io.fabric8.kubernetes.api.model.authentication.TokenRequest;
import io.fabric8.kubernetes.api.model.authentication.TokenRequestBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real Kubernetes control plane on loopback, built from the published Go modules by {@code
 * src-test/kube/build.sh}: etcd and kube-apiserver, with kube-scheduler and kube-controller-manager
 * where a test asks for them. The API server runs with what a real cluster has on: secure serving
 * with its own CA, client certificates, {@code --authorization-mode=Node,RBAC}, a service-account
 * issuer and signing key (TokenRequest, projected tokens with audiences, TokenReview), the default
 * admission plugins (PodSecurity, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, …) plus
 * NodeRestriction, and an egress selector whose {@code cluster} network is {@link ClusterNetwork}:
 * the API server calls a webhook's Service as in a cluster, and the test says which loopback port
 * plays the pod behind it.
 *
 * <p>Use it as a JUnit extension ({@link #extension}); without Go (so without the binaries) the
 * class is skipped with a message saying so. Start-up is bounded (each component must be healthy
 * within {@link #START_DEADLINE}) and {@link #close()} kills every process it started, with its
 * children, on every path.
 */
final class KubeControlPlane implements AutoCloseable {

  static final String VERSION = "v1.37.2";
  static final Duration START_DEADLINE = Duration.ofSeconds(120);
  static final String SERVICE_CIDR = "10.96.0.0/16";
  static final String ISSUER = "https://kubernetes.default.svc.cluster.local";

  /**
   * Which components beside etcd and the API server, and extra API-server flags (e.g. tighter
   * in-flight limits).
   */
  record Options(
      boolean scheduler,
      Path schedulerConfig,
      boolean controllerManager,
      List<String> apiServerFlags,
      boolean nodeLifecycle) {
    static Options apiServerOnly() {
      return new Options(false, null, false, List.of(), false);
    }

    Options withControllerManager() {
      return new Options(scheduler, schedulerConfig, true, apiServerFlags, nodeLifecycle);
    }

    /**
     * kube-controller-manager with the node lifecycle and taint eviction controllers on: for a real
     * node ({@link RealNode}), whose kubelet heartbeats, so that its not-ready taint goes once it
     * is Ready.
     */
    Options withNodeLifecycle() {
      return new Options(scheduler, schedulerConfig, true, apiServerFlags, true);
    }

    /** kube-scheduler with {@code config} (a KubeSchedulerConfiguration; null: its defaults). */
    Options withScheduler(Path config) {
      return new Options(true, config, controllerManager, apiServerFlags, nodeLifecycle);
    }

    /** {@code flags} after the API server's own (a flag given twice: the last one counts). */
    Options withApiServerFlags(String... flags) {
      List<String> all = new ArrayList<>(apiServerFlags);
      all.addAll(List.of(flags));
      return new Options(
          scheduler, schedulerConfig, controllerManager, List.copyOf(all), nodeLifecycle);
    }
  }

  private final Path dir;
  private final Path bin;
  private final List<Process> processes = new ArrayList<>();
  private int apiPort;
  private Path adminKubeconfig;
  private KubernetesClient admin;
  private ClusterNetwork network;

  private KubeControlPlane(Path dir, Path bin) {
    this.dir = dir;
    this.bin = bin;
  }

  // ---------------------------------------------------------------- the binaries

  /**
   * The folder with etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl:
   * built by {@code src-test/kube/build.sh}, which the Maven build runs before the tests (phase
   * process-test-classes; cached outside target/, so a rerun costs seconds, the first build about
   * 15 minutes). Nothing is built here ({@code --check}): a test never builds Go inside its
   * timeout. Skips the calling test when there is no Go to build them with; fails it when they are
   * not built.
   */
  static synchronized Path binaries() {
    if (binaries != null) {
      return binaries;
    }
    BuildResult result = runBuild(repositoryRoot().resolve("src-test/kube/build.sh"), "--check");
    assumeTrue(
        result.status() != 2,
        "no Go on PATH: the real Kubernetes control plane is built from Go modules"
            + " (src-test/kube/README.md); install Go 1.26 (.ci/run needs it) to run this test");
    if (result.status() != 0) {
      throw new AssertionError(
          "src-test/kube/build.sh --check (exit "
              + result.status()
              + "): the Maven build runs build.sh before the tests; outside it run"
              + " `bash src-test/kube/build.sh` first:\n"
              + result.err());
    }
    binaries = Path.of(result.out());
    return binaries;
  }

  /**
   * The kubectl of {@code src-test/kube} if it is built already (nothing is built here): for tests
   * that only render manifests with {@code kubectl kustomize} where no kubectl is on PATH.
   */
  static java.util.Optional<Path> builtKubectl() {
    BuildResult check = runBuild(repositoryRoot().resolve("src-test/kube/build.sh"), "--check");
    return check.status() == 0
        ? java.util.Optional.of(Path.of(check.out(), "kubectl"))
        : java.util.Optional.empty();
  }

  /** kwok, for the scale benchmark only: {@code build.sh --with-kwok} builds it on first use. */
  static Path kwok() {
    BuildResult result =
        runBuild(repositoryRoot().resolve("src-test/kube/build.sh"), "--with-kwok");
    assumeTrue(result.status() != 2, "no Go on PATH: kwok is built from its Go module");
    if (result.status() != 0) {
      throw new AssertionError(
          "src-test/kube/build.sh --with-kwok failed (exit "
              + result.status()
              + "):\n"
              + result.err());
    }
    return Path.of(result.out(), "kwok");
  }

  record BuildResult(int status, String out, String err) {}

  static BuildResult runBuild(Path script, String... args) {
    try {
      Path out = Files.createTempFile("kube-build", ".out");
      Path err = Files.createTempFile("kube-build", ".err");
      List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
      cmd.addAll(List.of(args));
      Process p =
          new ProcessBuilder(cmd)
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();
      boolean done;
      try {
        done = p.waitFor(60, TimeUnit.MINUTES);
      } finally {
        ChildProcess.killTree(p.toHandle());
      }
      String stdout = Files.readString(out).strip();
      String stderr = Files.readString(err);
      Files.delete(out);
      Files.delete(err);
      if (!done) {
        throw new AssertionError("src-test/kube/build.sh did not finish within 60 minutes");
      }
      return new BuildResult(p.exitValue(), stdout, stderr);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted while building the control plane", e);
    }
  }

  private static Path binaries;

  /** The CRDs build.sh copied from cert-manager's and the Prometheus Operator's modules. */
  static List<Path> crds() {
    Path bin = binaries();
    try (var files = Files.list(bin.getParent().getParent())) {
      Path crdDir =
          files
              .filter(p -> p.getFileName().toString().startsWith("crds-"))
              .findFirst()
              .orElseThrow(
                  () -> new AssertionError("build.sh left no crds-… folder beside " + bin));
      try (var crds = Files.list(crdDir)) {
        return crds.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Path repositoryRoot() {
    Path here = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize();
    Path root = here.getFileName().toString().equals("src-test") ? here.getParent() : here;
    if (!Files.isRegularFile(root.resolve("src-test/kube/build.sh"))) {
      throw new IllegalStateException("not the repository root: " + root);
    }
    return root;
  }

  // ---------------------------------------------------------------- start and stop

  /** Starts the control plane in {@code dir} (its PKI, etcd's data, every component's log). */
  static KubeControlPlane start(Path dir, Options options) {
    KubeControlPlane cp = new KubeControlPlane(dir, binaries());
    try {
      cp.startAll(options);
      return cp;
    } catch (RuntimeException | Error e) {
      cp.close();
      throw e;
    }
  }

  private void startAll(Options options) {
    try {
      Path pki = Files.createDirectories(dir.resolve("pki"));
      Pki.write(pki);
      int etcdPort = freePort();
      int peerPort = freePort();
      apiPort = freePort();
      String etcdUrl = "http://127.0.0.1:" + etcdPort;
      launch(
          "etcd",
          List.of(
              bin.resolve("etcd").toString(),
              "--name=etcd",
              "--data-dir=" + dir.resolve("etcd-data"),
              "--listen-client-urls=" + etcdUrl,
              "--advertise-client-urls=" + etcdUrl,
              "--listen-peer-urls=http://127.0.0.1:" + peerPort,
              "--initial-advertise-peer-urls=http://127.0.0.1:" + peerPort,
              "--initial-cluster=etcd=http://127.0.0.1:" + peerPort,
              "--unsafe-no-fsync=true",
              "--log-level=warn"),
          Map.of());
      awaitHttp("etcd", URI.create(etcdUrl + "/health"), null);

      network = new ClusterNetwork(null, dir.resolve("cluster-network.sock"));
      Path egress =
          Files.writeString(
              dir.resolve("egress-selector.yaml"),
              """
              apiVersion: apiserver.k8s.io/v1beta1
              kind: EgressSelectorConfiguration
              egressSelections:
              - name: cluster
                connection:
                  proxyProtocol: HTTPConnect
                  transport:
                    uds:
                      udsName: %s
              - name: controlplane
                connection:
                  proxyProtocol: Direct
              - name: etcd
                connection:
                  proxyProtocol: Direct
              """
                  .formatted(network.socket()));
      List<String> apiServer = new ArrayList<>();
      apiServer.addAll(
          List.of(
              bin.resolve("kube-apiserver").toString(),
              "--etcd-servers=" + etcdUrl,
              "--bind-address=127.0.0.1",
              "--advertise-address=127.0.0.1",
              // The "kubernetes" Service's endpoint is the advertised address, which validation
              // refuses on loopback; nothing here dials the API server through that Service.
              "--endpoint-reconciler-type=none",
              "--secure-port=" + apiPort,
              "--cert-dir=" + pki,
              "--tls-cert-file=" + pki.resolve("apiserver.crt"),
              "--tls-private-key-file=" + pki.resolve("apiserver.key"),
              "--client-ca-file=" + pki.resolve("ca.crt"),
              // What the API server shows a kubelet (logs, exec), as kubeadm lays it out.
              "--kubelet-client-certificate=" + pki.resolve("apiserver-kubelet-client.crt"),
              "--kubelet-client-key=" + pki.resolve("apiserver-kubelet-client.key"),
              "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
              "--authorization-mode=Node,RBAC",
              "--service-account-issuer=" + ISSUER,
              "--service-account-key-file=" + pki.resolve("sa.pub"),
              "--service-account-signing-key-file=" + pki.resolve("sa.key"),
              "--service-cluster-ip-range=" + SERVICE_CIDR,
              "--enable-admission-plugins=NodeRestriction",
              "--allow-privileged=true",
              "--egress-selector-config-file=" + egress,
              "--profiling=false",
              "--v=1"));
      apiServer.addAll(options.apiServerFlags());
      launch("kube-apiserver", apiServer, Map.of());
      adminKubeconfig = kubeconfig("admin", clientCertUser(pki, "admin"));
      awaitHttp("kube-apiserver", URI.create(server() + "/readyz"), pki.resolve("ca.crt"));
      admin =
          new KubernetesClientBuilder()
              .withConfig(Config.fromKubeconfig(Files.readString(adminKubeconfig)))
              .build();
      network.useClient(admin);
      if (options.controllerManager()) {
        Path kc = kubeconfig("controller-manager", clientCertUser(pki, "controller-manager"));
        launch(
            "kube-controller-manager",
            List.of(
                bin.resolve("kube-controller-manager").toString(),
                "--kubeconfig=" + kc,
                "--authentication-kubeconfig=" + kc,
                "--authorization-kubeconfig=" + kc,
                "--bind-address=127.0.0.1",
                "--secure-port=" + freePort(),
                "--cert-dir=" + dir.resolve("controller-manager-certs"),
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                "--service-account-private-key-file=" + pki.resolve("sa.key"),
                "--root-ca-file=" + pki.resolve("ca.crt"),
                "--service-cluster-ip-range=" + SERVICE_CIDR,
                // No kubelet heartbeats here (unless a real node runs): the node lifecycle
                // controller would taint every node unreachable and evict its pods; no cloud for
                // IPAM.
                options.nodeLifecycle()
                    ? "--controllers=*,-node-ipam-controller"
                    : "--controllers=*,-node-lifecycle-controller,-node-ipam-controller,"
                        + "-taint-eviction-controller",
                "--v=1"),
            Map.of());
      }
      if (options.scheduler()) {
        startScheduler(options.schedulerConfig(), null);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts kube-scheduler now, on the running API server: with {@code config} (a
   * KubeSchedulerConfiguration; null: the scheduler's defaults, leader election off) and the
   * credential of {@code kubeconfig} (null: the {@code system:kube-scheduler} client certificate).
   * Given a config, kube-scheduler ignores {@code --kubeconfig} (its client is the config's {@code
   * clientConnection}; without one, the in-cluster ServiceAccount, which no process here has), so
   * the scheduler runs with a copy of {@code config} whose {@code clientConnection.kubeconfig} is
   * {@code kubeconfig} unless the config names one; the rest of the config, leader election
   * included, is as given. Call it once, after {@link #start} (e.g. once the RBAC objects that the
   * scheduler's identity needs exist); {@link #close()} kills it with the rest. Its log is {@code
   * kube-scheduler.log}.
   */
  void startScheduler(Path config, Path kubeconfig) {
    try {
      Path kc =
          kubeconfig != null
              ? kubeconfig
              : kubeconfig("scheduler", clientCertUser(dir.resolve("pki"), "scheduler"));
      List<String> cmd = new ArrayList<>();
      cmd.add(bin.resolve("kube-scheduler").toString());
      if (config != null) {
        cmd.add("--config=" + withClientConnection(config, kc));
      } else {
        cmd.addAll(List.of("--kubeconfig=" + kc, "--leader-elect=false"));
      }
      cmd.addAll(
          List.of(
              "--authentication-kubeconfig=" + kc,
              "--authorization-kubeconfig=" + kc,
              "--bind-address=127.0.0.1",
              "--secure-port=" + freePort(),
              "--cert-dir=" + dir.resolve("scheduler-certs"),
              "--v=1"));
      // The scheduler reaches an extender's Service through the cluster network (its client
      // honours HTTPS_PROXY; the API server on 127.0.0.1 is never proxied).
      launch(
          "kube-scheduler",
          cmd,
          Map.of(
              "HTTPS_PROXY",
              "http://127.0.0.1:" + network.tcpPort(),
              "NO_PROXY",
              "127.0.0.1,localhost"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code config} with {@code clientConnection.kubeconfig} set, unless it names one already. */
  private Path withClientConnection(Path config, Path kubeconfig) throws IOException {
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    ObjectNode tree = (ObjectNode) yaml.readTree(config.toFile());
    ObjectNode client =
        tree.get("clientConnection") instanceof ObjectNode given
            ? given
            : tree.putObject("clientConnection");
    if (!client.hasNonNull("kubeconfig")) {
      client.put("kubeconfig", kubeconfig.toString());
    }
    Path effective = dir.resolve("kube-scheduler-config.yaml");
    yaml.writeValue(effective.toFile(), tree);
    return effective;
  }

  /** Kills every component (the API server first) with its children; idempotent. */
  @Override
  public void close() {
    if (admin != null) {
      admin.close();
      admin = null;
    }
    for (int i = processes.size() - 1; i >= 0; i--) {
      ChildProcess.killTree(processes.get(i).toHandle());
    }
    processes.clear();
    if (network != null) {
      network.close();
    }
  }

  // ---------------------------------------------------------------- what tests use

  /** {@code https://127.0.0.1:PORT}. */
  String server() {
    return "https://127.0.0.1:" + apiPort;
  }

  /** The cluster CA, which signed the API server's certificate. */
  Path caCertificate() {
    return dir.resolve("pki/ca.crt");
  }

  /** A kubeconfig for {@code system:masters} (cluster-admin), as {@code kubeadm}'s admin.conf. */
  Path adminKubeconfig() {
    return adminKubeconfig;
  }

  /** A fabric8 client with the admin credential. */
  KubernetesClient admin() {
    return admin;
  }

  ClusterNetwork network() {
    return network;
  }

  Path bin() {
    return bin;
  }

  Path dir() {
    return dir;
  }

  /** kubectl with the admin credential. */
  Kubectl kubectl() {
    return new Kubectl(bin.resolve("kubectl"), adminKubeconfig, dir);
  }

  /** kubectl with {@code kubeconfig}'s credential. */
  Kubectl kubectl(Path kubeconfig) {
    return new Kubectl(bin.resolve("kubectl"), kubeconfig, dir);
  }

  /**
   * A token for ServiceAccount {@code namespace/name} from the TokenRequest API, as the kubelet
   * asks for a projected token: {@code audience} (null: the API server's), {@code seconds} valid,
   * bound to pod {@code boundPod} of that namespace (with its uid) when not null.
   */
  String token(String namespace, String name, String audience, long seconds, String boundPod) {
    var spec = new TokenRequestBuilder().withNewSpec().withExpirationSeconds(seconds);
    if (audience != null) {
      spec = spec.withAudiences(audience);
    }
    if (boundPod != null) {
      var pod = admin.pods().inNamespace(namespace).withName(boundPod).get();
      if (pod == null) {
        throw new AssertionError("no pod " + namespace + "/" + boundPod + " to bind a token to");
      }
      spec =
          spec.withNewBoundObjectRef()
              .withApiVersion("v1")
              .withKind("Pod")
              .withName(boundPod)
              .withUid(pod.getMetadata().getUid())
              .endBoundObjectRef();
    }
    TokenRequest request = spec.endSpec().build();
    TokenRequest answer =
        admin.serviceAccounts().inNamespace(namespace).withName(name).tokenRequest(request);
    return answer.getStatus().getToken();
  }

  /**
   * A kubeconfig that authenticates with the client certificate {@code crt} and its {@code key}.
   */
  Path certificateKubeconfig(String name, Path crt, Path key) {
    try {
      return kubeconfig(
          name,
          "    client-certificate-data: "
              + base64(crt)
              + "\n    client-key-data: "
              + base64(key)
              + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The API server's port on 127.0.0.1. */
  int apiPort() {
    return apiPort;
  }

  /** A kubeconfig that authenticates with {@code token} (no client certificate). */
  Path tokenKubeconfig(String name, String token) {
    return kubeconfig(name, "    token: " + token + "\n");
  }

  /** The last lines of a component's log, for failure messages. */
  String log(String component, int lines) {
    try {
      List<String> all = Files.readAllLines(dir.resolve(component + ".log"));
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  // ---------------------------------------------------------------- the JUnit extension

  /**
   * Starts one control plane for the test class ({@code @RegisterExtension static}) in a temporary
   * directory and closes it after the class; {@code get()} inside tests.
   */
  static Extension extension(Options options) {
    return new Extension(options);
  }

  static final class Extension implements BeforeAllCallback, AfterAllCallback {
    private final Options options;
    private KubeControlPlane plane;
    private Path dir;

    private Extension(Options options) {
      this.options = options;
    }

    KubeControlPlane get() {
      if (plane == null) {
        throw new IllegalStateException("the control plane has not started");
      }
      return plane;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
      dir = Files.createTempDirectory("kube-" + context.getRequiredTestClass().getSimpleName());
      plane = KubeControlPlane.start(dir, options);
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
      try {
        if (plane != null) {
          plane.close();
        }
      } finally {
        plane = null;
        if (dir != null) {
          deleteTree(dir);
        }
      }
    }
  }

  // ---------------------------------------------------------------- helpers

  private void launch(String name, List<String> command, Map<String, String> env)
      throws IOException {
    ProcessBuilder pb =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(name + ".log").toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    for (String unset :
        List.of(
            "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HTTPS_PROXY")) {
      pb.environment().remove(unset);
    }
    pb.environment().putAll(env);
    processes.add(pb.start());
  }

  private void awaitHttp(String name, URI uri, Path ca) {
    // HTTP/1.1: kube-apiserver ends an unauthenticated client's HTTP/2 connection with a GOAWAY
    // after each request (its HTTP/2 DoS mitigation), which JDK 17's HttpClient may report as the
    // request's failure when the GOAWAY comes before the response (seen on a loaded machine).
    HttpClient.Builder b =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2));
    if (ca != null) {
      b.sslContext(trusting(ca));
    }
    HttpClient http = b.build();
    Process p = processes.get(processes.size() - 1);
    Instant deadline = Instant.now().plus(START_DEADLINE);
    String last = "no answer";
    while (Instant.now().isBefore(deadline)) {
      if (!p.isAlive()) {
        throw new AssertionError(
            name + " exited at start (status " + p.exitValue() + "):\n" + log(name, 40));
      }
      try {
        HttpResponse<String> r =
            http.send(
                HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          return;
        }
        last = r.statusCode() + " " + r.body();
      } catch (IOException e) {
        last = e.toString();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + name, e);
      }
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + name, e);
      }
    }
    throw new AssertionError(
        name
            + " not healthy within "
            + START_DEADLINE.toSeconds()
            + " s ("
            + uri
            + ": "
            + last
            + "):\n"
            + log(name, 40));
  }

  static SSLContext trusting(Path caPem) {
    try (InputStream in = Files.newInputStream(caPem)) {
      KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
      ks.load(null, null);
      int i = 0;
      for (var cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        ks.setCertificateEntry("ca" + i++, cert);
      }
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(ks);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException("trust store from " + caPem, e);
    }
  }

  private String clientCertUser(Path pki, String who) throws IOException {
    return "    client-certificate-data: "
        + base64(pki.resolve(who + ".crt"))
        + "\n    client-key-data: "
        + base64(pki.resolve(who + ".key"))
        + "\n";
  }

  private Path kubeconfig(String name, String user) {
    try {
      String text =
          """
          apiVersion: v1
          kind: Config
          clusters:
          - name: gpushare-test
            cluster:
              server: %s
              certificate-authority-data: %s
          users:
          - name: %s
            user:
          %s
          contexts:
          - name: %s
            context:
              cluster: gpushare-test
              user: %s
              namespace: default
          current-context: %s
          """
              .formatted(
                  server(), base64(caCertificate()), name, user.stripTrailing(), name, name, name);
      Path file = dir.resolve(name + ".kubeconfig");
      Files.writeString(file, text);
      Files.setPosixFilePermissions(
          file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String base64(Path file) throws IOException {
    return Base64.getEncoder().encodeToString(Files.readAllBytes(file));
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  static void deleteTree(Path root) {
    try (var walk = Files.walk(root)) {
      walk.sorted(java.util.Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  // a socket or file still held: the temporary directory goes with the machine
                }
              });
    } catch (IOException e) {
      // already gone
    }
  }

  // ---------------------------------------------------------------- kubectl

  /** The built kubectl with one kubeconfig; stdout and stderr kept apart. */
  static final class Kubectl {
    record Result(int status, String out, String err) {
      Result ok() {
        if (status != 0) {
          throw new AssertionError("kubectl failed: " + this);
        }
        return this;
      }

      @Override
      public String toString() {
        return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
      }
    }

    private final Path kubectl;
    private final Path kubeconfig;
    private final Path workDir;

    Kubectl(Path kubectl, Path kubeconfig, Path workDir) {
      this.kubectl = kubectl;
      this.kubeconfig = kubeconfig;
      this.workDir = workDir;
    }

    Result run(String... args) {
      return runWithInput(null, args);
    }

    /** {@code kubectl ARGS} with {@code stdin} as its standard input (null: none). */
    Result runWithInput(String stdin, String... args) {
      List<String> cmd = new ArrayList<>();
      cmd.add(kubectl.toString());
      cmd.add("--kubeconfig=" + kubeconfig);
      cmd.addAll(List.of(args));
      try {
        Path out = Files.createTempFile(workDir, "kubectl", ".out");
        Path err = Files.createTempFile(workDir, "kubectl", ".err");
        ProcessBuilder pb =
            new ProcessBuilder(cmd)
                .directory(repositoryRoot().toFile())
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        pb.environment().remove("KUBECONFIG");
        Process p = pb.start();
        try (var in = p.getOutputStream()) {
          if (stdin != null) {
            new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)).transferTo(in);
          }
        }
        boolean done;
        try {
          done = p.waitFor(120, TimeUnit.SECONDS);
        } finally {
          ChildProcess.killTree(p.toHandle());
        }
        String o = Files.readString(out);
        String e = Files.readString(err);
        Files.delete(out);
        Files.delete(err);
        if (!done) {
          throw new AssertionError("kubectl " + String.join(" ", args) + ": no end in 120 s");
        }
        return new Result(p.exitValue(), o, e);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }

  // ---------------------------------------------------------------- PKI

  /** The cluster's PKI, made with openssl as kubeadm lays it out (CA, serving, clients, SA key). */
  static final class Pki {
    private Pki() {}

    static void write(Path pki) throws IOException {
      openssl(
          pki,
          "req",
          "-x509",
          "-new",
          "-nodes",
          "-newkey",
          "rsa:2048",
          "-sha256",
          "-days",
          "30",
          "-subj",
          "/CN=kubernetes",
          "-addext",
          "basicConstraints=critical,CA:TRUE",
          "-addext",
          "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
          "-keyout",
          "ca.key",
          "-out",
          "ca.crt");
      sign(
          pki,
          "apiserver",
          "/CN=kube-apiserver",
          "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,"
              + "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,"
              + "DNS:kubernetes.default.svc.cluster.local");
      sign(pki, "admin", "/O=system:masters/CN=kubernetes-admin", "extendedKeyUsage=clientAuth");
      sign(
          pki,
          "apiserver-kubelet-client",
          "/O=system:masters/CN=kube-apiserver-kubelet-client",
          "extendedKeyUsage=clientAuth");
      sign(pki, "scheduler", "/CN=system:kube-scheduler", "extendedKeyUsage=clientAuth");
      sign(
          pki,
          "controller-manager",
          "/CN=system:kube-controller-manager",
          "extendedKeyUsage=clientAuth");
      openssl(
          pki,
          "genpkey",
          "-algorithm",
          "RSA",
          "-pkeyopt",
          "rsa_keygen_bits:2048",
          "-out",
          "sa.key");
      openssl(pki, "pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub");
    }

    private static void sign(Path pki, String name, String subject, String extensions)
        throws IOException {
      openssl(
          pki,
          "genpkey",
          "-algorithm",
          "RSA",
          "-pkeyopt",
          "rsa_keygen_bits:2048",
          "-out",
          name + ".key");
      openssl(pki, "req", "-new", "-key", name + ".key", "-subj", subject, "-out", name + ".csr");
      Files.writeString(
          pki.resolve(name + ".ext"),
          "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
              + extensions
              + "\n");
      openssl(
          pki,
          "x509",
          "-req",
          "-sha256",
          "-days",
          "30",
          "-in",
          name + ".csr",
          "-CA",
          "ca.crt",
          "-CAkey",
          "ca.key",
          "-CAcreateserial",
          "-extfile",
          name + ".ext",
          "-out",
          name + ".crt");
    }

    /** A CA in {@code dir}: tls.key (PKCS#8), tls.crt, and ca.crt (the same certificate). */
    static void ca(Path dir, String cn) throws IOException {
      openssl(
          dir,
          "genpkey",
          "-algorithm",
          "RSA",
          "-pkeyopt",
          "rsa_keygen_bits:2048",
          "-out",
          "tls.key");
      openssl(
          dir,
          "req",
          "-x509",
          "-new",
          "-key",
          "tls.key",
          "-sha256",
          "-days",
          "3650",
          "-subj",
          "/CN=" + cn,
          "-addext",
          "basicConstraints=critical,CA:TRUE",
          "-addext",
          "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
          "-out",
          "tls.crt");
      Files.copy(dir.resolve("tls.crt"), dir.resolve("ca.crt"));
    }

    /**
     * A certificate in {@code dir} signed by the CA in {@code ca} ({@link #ca}): tls.key (PKCS#8),
     * tls.crt with {@code extensions}, ca.crt; checked with {@code openssl verify}.
     */
    static void leaf(Path dir, Path ca, String subject, String extensions) throws IOException {
      openssl(
          dir,
          "genpkey",
          "-algorithm",
          "RSA",
          "-pkeyopt",
          "rsa_keygen_bits:2048",
          "-out",
          "tls.key");
      openssl(dir, "req", "-new", "-key", "tls.key", "-subj", subject, "-out", "tls.csr");
      Files.writeString(
          dir.resolve("ext.cnf"),
          "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
              + extensions
              + "\n");
      openssl(
          dir,
          "x509",
          "-req",
          "-sha256",
          "-days",
          "90",
          "-in",
          "tls.csr",
          "-CA",
          ca.resolve("tls.crt").toString(),
          "-CAkey",
          ca.resolve("tls.key").toString(),
          "-set_serial",
          "0x" + Long.toHexString(System.nanoTime()),
          "-extfile",
          "ext.cnf",
          "-out",
          "tls.crt");
      Files.copy(ca.resolve("tls.crt"), dir.resolve("ca.crt"));
      openssl(dir, "verify", "-CAfile", "ca.crt", "tls.crt");
    }

    static void openssl(Path dir, String... args) throws IOException {
      List<String> cmd = new ArrayList<>();
      cmd.add("openssl");
      cmd.addAll(List.of(args));
      Process p =
          new ProcessBuilder(cmd)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
              .start();
      try {
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
          throw new AssertionError("openssl " + String.join(" ", args) + " failed:\n" + out);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      } finally {
        ChildProcess.killTree(p.toHandle());
      }
    }
  }
}
