package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@link KubeApiServer}'s face on a real control plane ({@link KubeControlPlane}): the test's own
 * calls go in as cluster-admin (kubectl's role), while the member gets <b>only</b> what {@code
 * deploy/} grants the ServiceAccount {@code gpushare-system/gpushare} — the shipped Namespace,
 * ServiceAccount, ClusterRole, Role and their bindings are applied with kubectl, and the member's
 * kubeconfig carries a token for that ServiceAccount from the TokenRequest API, not an admin
 * credential. Every RBAC denial in a member's log fails the test ({@link #assertNoDenials}).
 */
final class RealKubeApiServer extends KubeApiServer {

  /** How long the member's token lives: longer than any test class here. */
  private static final long TOKEN_SECONDS = 4 * 3600;

  /** What the API server answers when RBAC refuses: {@code … is forbidden: User "…" cannot …}. */
  static final Pattern DENIAL = Pattern.compile("forbidden: User \"[^\"]*\" cannot ");

  /** The shipped objects that give the member its identity and rights, in apply order. */
  static final List<String> RBAC =
      List.of(
          "deploy/namespace.yaml",
          "deploy/serviceaccount.yaml",
          "deploy/clusterrole.yaml",
          "deploy/clusterrolebinding.yaml",
          "deploy/role.yaml",
          "deploy/rolebinding.yaml");

  private final KubeControlPlane plane;
  private final Path dir;
  private final Path memberKubeconfig;

  private RealKubeApiServer(KubeControlPlane plane, Path dir, Path memberKubeconfig) {
    super(plane.admin());
    this.plane = plane;
    this.dir = dir;
    this.memberKubeconfig = memberKubeconfig;
  }

  /** Starts a control plane (etcd and the API server) and installs the member's RBAC. */
  static RealKubeApiServer start() {
    return start(KubeControlPlane.Options.apiServerOnly());
  }

  /** As {@link #start()}, with the components and API-server flags of {@code options}. */
  static RealKubeApiServer start(KubeControlPlane.Options options) {
    Path dir;
    try {
      dir = Files.createTempDirectory("real-kube-api");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    KubeControlPlane plane = KubeControlPlane.start(dir, options);
    try {
      var kubectl = plane.kubectl();
      for (String file : RBAC) {
        kubectl.run("apply", "--server-side", "-f", file).ok();
      }
      // What kube-controller-manager's serviceaccount controller does for every namespace (the
      // ServiceAccount admission plugin refuses pods without it); this control plane runs none.
      kubectl.run("-n", NS, "create", "serviceaccount", "default").ok();
      return new RealKubeApiServer(plane, dir, memberKubeconfig(plane));
    } catch (RuntimeException | Error e) {
      plane.close();
      KubeControlPlane.deleteTree(dir);
      throw e;
    }
  }

  /**
   * A member's kubeconfig on {@code plane}, where {@link #RBAC} is applied: a token of the
   * ServiceAccount {@code gpushare-system/gpushare} from the TokenRequest API (no admin
   * credential), checked to carry the shipped rights and nothing more — it may patch node status,
   * and may not read Secrets.
   */
  static Path memberKubeconfig(KubeControlPlane plane) {
    String token = plane.token("gpushare-system", "gpushare", null, TOKEN_SECONDS, null);
    Path kubeconfig = plane.tokenKubeconfig("gpushare-member", token);
    var member = plane.kubectl(kubeconfig);
    assertEquals("yes", member.run("auth", "can-i", "patch", "nodes/status").out().strip());
    assertEquals("no", member.run("auth", "can-i", "list", "secrets", "-A").out().strip());
    // DENIAL matches what this API server answers when RBAC refuses (else the check of the
    // member's log could never fail).
    var refused = member.run("-n", "default", "get", "secrets");
    assertTrue(
        DENIAL.matcher(refused.err()).find(),
        () -> "an RBAC refusal matches " + DENIAL + ": " + refused);
    return kubeconfig;
  }

  /** The lines of {@code log} that show the API server refusing the member ({@link #DENIAL}). */
  static List<String> denials(Path log) {
    try {
      return Files.readAllLines(log).stream()
          .filter(line -> DENIAL.matcher(line).find())
          .map(line -> log.getFileName() + ": " + line)
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  KubeControlPlane plane() {
    return plane;
  }

  /** The member's kubeconfig: the API server, its CA, the ServiceAccount token. */
  Path memberKubeconfig() {
    return memberKubeconfig;
  }

  @Override
  String url() {
    return plane.server();
  }

  /** Nothing points the member anywhere but its kubeconfig ({@link #memberEnvironment()}). */
  @Override
  List<String> clientProperties() {
    return List.of("-Dkubernetes.auth.tryServiceAccount=false", "-Dkubernetes.namespace=" + NS);
  }

  @Override
  Map<String, String> memberEnvironment() {
    Map<String, String> env = outsideACluster();
    env.put("KUBECONFIG", memberKubeconfig.toString());
    return env;
  }

  /** Every log of the member (each start writes its own: {@code LABEL-N.log}) must be free. */
  @Override
  void assertNoDenials(Path memberLog) {
    String name = memberLog.getFileName().toString();
    String label = name.replaceFirst("-\\d+\\.log$", "-");
    List<String> denials = new ArrayList<>();
    try (var logs = Files.list(memberLog.getParent())) {
      for (Path log : logs.filter(p -> p.getFileName().toString().startsWith(label)).toList()) {
        denials.addAll(denials(log));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertEquals(
        List.of(),
        denials,
        "the member, on the shipped ServiceAccount's RBAC, was refused by the API server");
  }

  /**
   * {@code kubectl delete pod}, and then what the kubelet does once the containers have stopped:
   * the final delete with grace period 0 (a pod bound to a node stays Terminating until then).
   */
  @Override
  void deletePod(String pod) {
    kubectl.pods().inNamespace(NS).withName(pod).delete();
    kubectl.pods().inNamespace(NS).withName(pod).withGracePeriod(0).delete();
  }

  @Override
  void answerPosts(
      String path,
      java.util.function.Function<
              com.fasterxml.jackson.databind.JsonNode, com.fasterxml.jackson.databind.JsonNode>
          answer) {
    throw new UnsupportedOperationException(
        "a real API server computes " + path + " itself; nothing to stand in for");
  }

  @Override
  List<String> recentExchanges() {
    return List.of(
        "(a real API server: its log is " + dir.resolve("kube-apiserver.log") + ")",
        plane.log("kube-apiserver", 10));
  }

  @Override
  public void close() {
    try {
      plane.close();
    } finally {
      KubeControlPlane.deleteTree(dir);
    }
  }
}
