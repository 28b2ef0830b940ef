package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.gpu.ChildProcess;
import dev.gpushare.persistence.PostgresServer;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * gpushare on a {@link RealNode}, as deploy/README.md installs it: the operator's PostgreSQL, the
 * Secret, an overlay of deploy/ (the PostgreSQL URL, the reservation this machine has room for, and
 * settings a test adds) applied by {@code deploy/bootstrap-tls.sh}, the member awaited; and what
 * the tests on that node share (bounded waits, the member's own API).
 */
final class RealNodeSetup {
  private RealNodeSetup() {}

  static final Duration AWAIT = Duration.ofSeconds(120);
  static final Duration MEMBER_AWAIT = Duration.ofMinutes(8);
  static final String SYSTEM = "gpushare-system";
  static final Path ROOT = KubeControlPlane.repositoryRoot();
  static final ObjectMapper YAML =
      new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory());

  /**
   * deploy/README.md's install without cert-manager on {@code node}: a database and a user for
   * gpushare in {@code pg} (reached by the pods through the node's gateway), the product's image,
   * the namespace and the Secret, cert-manager's CRDs (no cert-manager runs: the overlay's base
   * keeps its Certificates), then {@code bootstrap-tls.sh} with the overlay; returns the Ready
   * member.
   */
  static Pod install(
      KubeControlPlane kube, RealNode node, PostgresServer pg, Path work, String settings)
      throws Exception {
    var kubectl = kube.kubectl();
    try (Connection c = PostgresServer.connect(pg.url());
        Statement st = c.createStatement()) {
      st.execute("CREATE ROLE gpushare LOGIN");
      st.execute("CREATE DATABASE gpushare OWNER gpushare");
    }
    node.exposeHost(5432, pg.port());
    node.importImage(node.images().member());
    kubectl.run("create", "namespace", SYSTEM).ok();
    kubectl
        .run(
            "-n",
            SYSTEM,
            "create",
            "secret",
            "generic",
            "gpushare-postgres",
            "--from-literal=password=unused-with-trust")
        .ok();
    for (Path crd : KubeControlPlane.crds()) {
      kubectl.run("apply", "--server-side", "-f", crd.toString()).ok();
    }
    kubectl
        .run(
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/certificates.cert-manager.io")
        .ok();
    String url = "jdbc:postgresql://" + RealNode.HOST_IP + ":5432/gpushare";
    bootstrapTls(kube, work, overlay(work, url, settings));
    return awaitMember(kube, node);
  }

  /**
   * A request to the member's own HTTP API at its pod's address (dialled into the node's network),
   * with the admin token the member wrote under --data: the answer's body; an answer that is not
   * 2xx fails the caller with it.
   */
  static String memberApi(KubeControlPlane kube, RealNode node, String method, String path)
      throws IOException {
    Pod member = awaitMember(kube, node);
    String token =
        kube.kubectl()
            .run(
                "-n",
                SYSTEM,
                "exec",
                member.getMetadata().getName(),
                "-c",
                "gpushare",
                "--",
                "cat",
                "/var/lib/gpushare/member/admin-token")
            .ok()
            .out()
            .strip();
    String request =
        method
            + " "
            + path
            + " HTTP/1.1\r\nHost: gpushare\r\nAuthorization: Bearer "
            + token
            + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    byte[] answer;
    try (java.nio.channels.SocketChannel ch = node.dial(member.getStatus().getPodIP(), 8080)) {
      ch.write(java.nio.ByteBuffer.wrap(request.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      answer = java.nio.channels.Channels.newInputStream(ch).readAllBytes();
    }
    String text = new String(answer, java.nio.charset.StandardCharsets.UTF_8);
    int end = text.indexOf("\r\n\r\n");
    String head = end < 0 ? text : text.substring(0, end);
    String body = end < 0 ? "" : text.substring(end + 4);
    if (head.toLowerCase(java.util.Locale.ROOT).contains("transfer-encoding: chunked")) {
      StringBuilder b = new StringBuilder();
      for (int at = 0; ; ) {
        int eol = body.indexOf("\r\n", at);
        int size = Integer.parseInt(body.substring(at, eol).strip(), 16);
        if (size == 0) {
          break;
        }
        b.append(body, eol + 2, eol + 2 + size);
        at = eol + 2 + size + 2;
      }
      body = b.toString();
    }
    if (!head.matches("(?s)HTTP/1\\.1 2\\d\\d.*")) {
      throw new AssertionError(method + " " + path + ": " + head + "\n" + body);
    }
    return body;
  }

  static Pod awaitMember(KubeControlPlane kube, RealNode node) {
    long deadline = System.nanoTime() + MEMBER_AWAIT.toNanos();
    String last = "no member pod";
    while (System.nanoTime() < deadline) {
      List<Pod> pods =
          kube.admin()
              .pods()
              .inNamespace(SYSTEM)
              .withLabel("app.kubernetes.io/name", "gpushare")
              .list()
              .getItems();
      for (Pod p : pods) {
        if (p.getMetadata().getDeletionTimestamp() == null
            && p.getStatus().getConditions() != null
            && p.getStatus().getConditions().stream()
                .anyMatch(c -> c.getType().equals("Ready") && c.getStatus().equals("True"))) {
          return p;
        }
      }
      last =
          pods.stream()
              .map(p -> p.getMetadata().getName() + " " + p.getStatus())
              .toList()
              .toString();
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
    var kubectl = kube.kubectl();
    String logs =
        kubectl
                .run(
                    "-n",
                    SYSTEM,
                    "logs",
                    "-l",
                    "app.kubernetes.io/name=gpushare",
                    "--tail=80",
                    "--all-containers")
                .out()
            + kubectl
                .run(
                    "-n",
                    SYSTEM,
                    "logs",
                    "-l",
                    "app.kubernetes.io/name=gpushare",
                    "--tail=80",
                    "--previous")
                .out();
    String job =
        kubectl.run("-n", SYSTEM, "logs", "job/gpushare-init-schema", "--tail=40").toString();
    throw new AssertionError(
        "the member is not Ready within "
            + MEMBER_AWAIT.toMinutes()
            + " min: "
            + last
            + "\n--- member log\n"
            + logs
            + "\n--- schema job\n"
            + job
            + "\n--- kubelet\n"
            + (node == null ? "" : node.log("kubelet", 40)));
  }

  /**
   * deploy/bootstrap-tls.sh with {@code kustomization} (deploy/README.md: the install without
   * cert-manager, with an overlay), the admin's kubeconfig and the built kubectl.
   */
  static void bootstrapTls(KubeControlPlane kube, Path work, Path kustomization) throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
                "bash",
                ROOT.resolve("deploy/bootstrap-tls.sh").toString(),
                kustomization.toString())
            .directory(ROOT.toFile())
            .redirectErrorStream(true);
    pb.environment().put("KUBECONFIG", kube.adminKubeconfig().toString());
    pb.environment().put("PATH", kube.bin() + java.io.File.pathSeparator + System.getenv("PATH"));
    Path log = work.resolve("bootstrap-tls.log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(180, TimeUnit.SECONDS), "bootstrap-tls.sh ends within 180 s");
    } finally {
      ChildProcess.killTree(p.toHandle());
    }
    assertEquals(0, p.exitValue(), () -> "bootstrap-tls.sh:\n" + read(log));
  }

  /**
   * deploy/README.md's overlay beside a copy of deploy/: the ConfigMap's file replaced by the
   * shipped one with {@code url} for the PostgreSQL URL and {@code settings} added (HOCON, as an
   * operator's overlay adds keys), and the reservation patched.
   */
  static Path overlay(Path work, String url, String settings) throws IOException {
    copyTree(ROOT.resolve("deploy"), work.resolve("deploy"));
    Path overlay = Files.createDirectories(work.resolve("my-gpushare"));
    JsonNode cm = YAML.readTree(ROOT.resolve("deploy/configmap.yaml").toFile());
    String shipped = cm.at("/data/gpushare.conf").asText();
    String placeholder = "jdbc:postgresql://gpushare-postgres.gpushare-system.svc:5432/gpushare";
    assertTrue(shipped.contains(placeholder), "configmap.yaml names " + placeholder);
    Files.writeString(
        overlay.resolve("gpushare.conf"), shipped.replace(placeholder, url) + "\n" + settings);
    Files.writeString(
        overlay.resolve("kustomization.yaml"),
        """
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources:
        - ../deploy
        configMapGenerator:
        - name: gpushare-config
          namespace: gpushare-system
          behavior: replace
          files:
          - gpushare.conf
        patches:
        - target: {kind: DaemonSet, name: gpushare}
          patch: |-
            - {op: replace, path: /spec/template/spec/containers/0/resources/requests/cpu, value: 500m}
            - {op: replace, path: /spec/template/spec/containers/0/resources/requests/memory, value: 3Gi}
            - {op: replace, path: /spec/template/spec/containers/0/resources/limits/memory, value: 3Gi}
        - target: {kind: DaemonSet, name: gpushare}
          patch: |-
            apiVersion: apps/v1
            kind: DaemonSet
            metadata: {name: gpushare, namespace: gpushare-system}
            spec:
              template:
                spec:
                  containers:
                  - name: gpushare
                    env:
                    - name: JAVA_TOOL_OPTIONS
                      value: "-Xms256m -Xmx1g -XX:ActiveProcessorCount=4 -Djava.io.tmpdir=/tmp -Duser.home=/tmp"
        """);
    return overlay;
  }

  static void copyTree(Path from, Path to) throws IOException {
    try (var walk = Files.walk(from)) {
      for (Path p : walk.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
  }

  static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      return "(" + e + ")";
    }
  }

  /**
   * A PostgreSQL server for the class, on loopback (the node's pods reach it through the gateway).
   */
  static final class Postgres implements BeforeAllCallback, AfterAllCallback {
    PostgresServer server;
    private Path dir;

    @Override
    public void beforeAll(ExtensionContext context) throws IOException {
      dir = Files.createTempDirectory("real-node-pg");
      server = PostgresServer.start(dir.resolve("data"));
    }

    @Override
    public void afterAll(ExtensionContext context) {
      if (server != null) {
        server.close();
        server = null;
      }
      if (dir != null) {
        KubeControlPlane.deleteTree(dir);
      }
    }
  }

  // ---------------------------------------------------------------- helpers

  static <T> T eventually(String what, Callable<T> check, RealNode node) {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    while (true) {
      try {
        return check.call();
      } catch (Exception | AssertionError e) {
        if (System.nanoTime() - deadline > 0) {
          throw new AssertionError(
              what
                  + ": not within "
                  + AWAIT.toSeconds()
                  + " s\n--- kubelet\n"
                  + node.log("kubelet", 30)
                  + "\n--- containerd\n"
                  + node.log("containerd", 30),
              e);
        }
      }
      try {
        Thread.sleep(250);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
  }

  static List<String> lines(String s) {
    return s.lines().toList();
  }
}
