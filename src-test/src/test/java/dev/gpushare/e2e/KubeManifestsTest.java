package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code deploy/} against a real API server (issue 33, item 1): the install of deploy/README.md —
 * namespace, Secret, {@code kubectl apply --server-side -k deploy/} — with and without
 * cert-manager's CRDs, {@code bootstrap-tls.sh} (the install without cert-manager), and each
 * component through an overlay beside the base, as the README writes it. The real API server
 * validates every field (server-side apply with strict field validation), defaults, runs admission
 * (Pod Security warnings included) and the CRDs' schemas; what needs a CRD the cluster does not
 * have must be said by name, not skipped.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KubeManifestsTest {

  @RegisterExtension
  static final KubeControlPlane.Extension KUBE =
      KubeControlPlane.extension(KubeControlPlane.Options.apiServerOnly().withControllerManager());

  private static final ObjectMapper YAML =
      new ObjectMapper(new com.fasterxml.jackson.dataformat.yaml.YAMLFactory());
  private static final Path ROOT = KubeControlPlane.repositoryRoot();
  private static final String NS = "gpushare-system";

  /** The base as kustomize renders it: kind/namespace/name of every object. */
  private static List<String> rendered(KubeControlPlane.Kubectl kubectl, String target)
      throws IOException {
    String yaml = kubectl.run("kustomize", target).ok().out();
    List<String> out = new ArrayList<>();
    for (String doc : yaml.split("(?m)^---$")) {
      if (doc.isBlank()) {
        continue;
      }
      JsonNode o = YAML.readTree(doc);
      out.add(
          o.path("apiVersion").asText()
              + " "
              + o.path("kind").asText()
              + " "
              + o.path("metadata").path("namespace").asText("")
              + "/"
              + o.path("metadata").path("name").asText());
    }
    return out;
  }

  @Test
  @Order(1)
  void withoutCertManagerTheApplyNamesEveryObjectThatNeedsItsCrdAndAppliesTheRest()
      throws IOException {
    KubeControlPlane kube = KUBE.get();
    var kubectl = kube.kubectl();
    // deploy/README.md, "Install": the namespace and the Secret first.
    kubectl.run("create", "namespace", NS).ok();
    kubectl
        .run(
            "-n",
            NS,
            "create",
            "secret",
            "generic",
            "gpushare-postgres",
            "--from-literal=password=x")
        .ok();

    var apply = kubectl.run("apply", "--server-side", "-k", "deploy/");
    assertNotEquals(0, apply.status(), () -> "cert-manager's kinds are unknown here: " + apply);

    List<String> objects = rendered(kubectl, "deploy/");
    List<String> needCrd = objects.stream().filter(o -> o.startsWith("cert-manager.io/")).toList();
    assertEquals(5, needCrd.size(), () -> "the base's cert-manager objects: " + objects);
    for (String o : needCrd) {
      String[] parts = o.split(" ");
      String kind = parts[1];
      String name = parts[2].substring(parts[2].indexOf('/') + 1);
      assertTrue(
          apply.err().contains("name: \"" + name + "\"")
              && apply
                  .err()
                  .contains(
                      "no matches for kind \"" + kind + "\" in version \"cert-manager.io/v1\""),
          () -> "kubectl names " + kind + " " + name + " and its missing CRD:\n" + apply.err());
    }
    assertTrue(
        apply.err().contains("ensure CRDs are installed first"),
        () -> "kubectl says to install the CRDs:\n" + apply.err());
    // Everything else was applied, and is there as shipped.
    for (String o : objects) {
      if (o.startsWith("cert-manager.io/")) {
        continue;
      }
      assertExists(kubectl, o);
    }
  }

  @Test
  @Order(2)
  void bootstrapTlsInstallsWithoutCertManager() throws IOException {
    KubeControlPlane kube = KUBE.get();
    ProcessBuilder pb =
        new ProcessBuilder("bash", ROOT.resolve("deploy/bootstrap-tls.sh").toString())
            .directory(ROOT.toFile())
            .redirectErrorStream(true);
    pb.environment().put("KUBECONFIG", kube.adminKubeconfig().toString());
    pb.environment().put("PATH", kube.bin() + java.io.File.pathSeparator + System.getenv("PATH"));
    Path log = Files.createTempFile(kube.dir(), "bootstrap-tls", ".log");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    try {
      if (!p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS)) {
        fail("bootstrap-tls.sh did not finish within 180 s:\n" + Files.readString(log));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    } finally {
      dev.gpushare.gpu.ChildProcess.killTree(p.toHandle());
    }
    String out = Files.readString(log);
    assertEquals(0, p.exitValue(), () -> "bootstrap-tls.sh:\n" + out);
    assertTrue(out.contains("gpushare installed without cert-manager"), out);
    // The caBundle is the CA in Secret gpushare-ca, in both webhook configurations.
    var kubectl = kube.kubectl();
    String ca =
        kubectl
            .run("-n", NS, "get", "secret", "gpushare-ca", "-o", "jsonpath={.data.tls\\.crt}")
            .ok()
            .out();
    for (String kind : List.of("mutatingwebhookconfiguration", "validatingwebhookconfiguration")) {
      String bundle =
          kubectl
              .run("get", kind, "gpushare", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
              .ok()
              .out();
      assertEquals(ca, bundle, kind + "'s caBundle is the CA bootstrap-tls.sh made");
    }
    for (String secret : List.of("gpushare-webhook-tls", "gpushare-cluster-tls")) {
      assertEquals(
          "kubernetes.io/tls",
          kubectl.run("-n", NS, "get", "secret", secret, "-o", "jsonpath={.type}").ok().out());
    }
  }

  @Test
  @Order(3)
  void withTheCrdsTheBaseIsAcceptedAsShippedAndWarnsOnlyAboutWhatTheReadmeSays(@TempDir Path work)
      throws IOException {
    KubeControlPlane kube = KUBE.get();
    var kubectl = kube.kubectl();
    installCrds(kube);
    // Two nodes without a kubelet: a GPU-HPN node, tainted nvidia.com/gpu as GPU nodes
    // customarily are (the DaemonSet tolerates it, the schema job does not), and an ordinary one.
    // The DaemonSet wants exactly the first.
    Path nodes = work.resolve("nodes.yaml");
    Files.writeString(
        nodes,
        """
        apiVersion: v1
        kind: Node
        metadata:
          name: gpu-hpn-0
          labels: {alibabacloud.com/node-type: reserved}
        spec:
          taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: cpu-0}
        spec:
          taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        """);
    kubectl.run("apply", "-f", nodes.toString()).ok();
    // the API server taints a new node not-ready until its kubelet says it is ready (admission
    // plugin TaintNodesByCondition); there is no kubelet, so the test takes the taint off for it
    for (String n : List.of("gpu-hpn-0", "cpu-0")) {
      kubectl.run("taint", "node", n, "node.kubernetes.io/not-ready:NoSchedule-");
    }
    // The README's command as written (client-side apply), then the server-side apply, which
    // takes the objects over from it.
    var readme = kubectl.run("apply", "-k", "deploy/");
    assertEquals(0, readme.status(), () -> "kubectl apply -k deploy/: " + readme);
    var apply = kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "deploy/");
    assertEquals(0, apply.status(), () -> "kubectl apply --server-side -k deploy/: " + apply);
    for (String o : rendered(kubectl, "deploy/")) {
      assertExists(kubectl, o);
    }
    // The controllers take the workloads up: the Job's pod (the schema job) is created from the
    // shipped template and admitted in gpushare-system (Pod Security, ServiceAccount, quota), and
    // waits for a node it tolerates; the DaemonSet wants the one GPU-HPN node.
    long deadline = System.nanoTime() + 60_000_000_000L;
    String jobPods = "";
    String desired = "";
    while (System.nanoTime() < deadline) {
      jobPods =
          kubectl
              .run("-n", NS, "get", "pods", "-l", "job-name=gpushare-init-schema", "-o", "name")
              .ok()
              .out();
      desired =
          kubectl
              .run(
                  "-n",
                  NS,
                  "get",
                  "daemonset",
                  "gpushare",
                  "-o",
                  "jsonpath={.status.desiredNumberScheduled}")
              .ok()
              .out();
      if (!jobPods.isBlank() && desired.equals("1")) {
        break;
      }
      sleep(200);
    }
    String pods = jobPods;
    assertTrue(
        pods.startsWith("pod/gpushare-init-schema-"),
        () ->
            "the job controller made the schema job's pod: "
                + pods
                + "\n"
                + kube.log("kube-controller-manager", 20));
    String wanted = desired;
    assertEquals(
        "1",
        wanted,
        () ->
            "the DaemonSet wants the GPU-HPN node and no other: "
                + kubectl.run("get", "nodes", "--show-labels").out()
                + kubectl.run("-n", NS, "get", "daemonset", "gpushare", "-o", "yaml").out()
                + kube.log("kube-controller-manager", 40));
    // without a kubelet the pod would never run: the nodes go (the pod with them)
    kubectl.run("delete", "node", "gpu-hpn-0", "cpu-0", "--wait=false").ok();
    // deploy/README.md, "Install": the one PodSecurity warning lists exactly what the DaemonSet
    // relaxes: the hostPath volumes data-plane and host-proc and the init container
    // data-plane-dir.
    List<String> warnings = apply.err().lines().filter(l -> l.startsWith("Warning:")).toList();
    assertEquals(1, warnings.size(), () -> "one warning, the DaemonSet's: " + apply.err());
    String w = warnings.get(0);
    assertTrue(w.contains("would violate PodSecurity \"restricted:latest\""), w);
    assertEquals(
        new TreeSet<>(List.of("data-plane-dir")),
        quoted(w, "container"),
        () -> "the warning names the init container data-plane-dir and no other: " + w);
    assertEquals(
        new TreeSet<>(List.of("data-plane", "host-proc")),
        quoted(w, "volume"),
        () -> "the warning names the hostPath volumes data-plane and host-proc, no other: " + w);
    assertTrue(
        w.contains("volumes \"data-plane\", \"host-proc\" use restricted volume type \"hostPath\""),
        w);
    assertTrue(w.contains("\"CHOWN\", \"FOWNER\""), w);
    assertTrue(
        readme("deploy/README.md").contains(w.substring("Warning: ".length())),
        () -> "deploy/README.md quotes the warning as the API server writes it: " + w);

    // Applying again changes nothing: no conflict, no warning beyond the same one.
    var again = kubectl.run("apply", "--server-side", "-k", "deploy/");
    assertEquals(0, again.status(), () -> "a second apply: " + again);
  }

  @Test
  @Order(4)
  void everyComponentIsAcceptedThroughAnOverlayBesideTheBase(@TempDir Path work)
      throws IOException {
    KubeControlPlane kube = KUBE.get();
    var kubectl = kube.kubectl();
    // The README's layout: my-gpushare/ beside deploy/ (kustomize forbids an overlay inside its
    // base), so a copy of deploy/ and the overlay side by side.
    Path deploy = work.resolve("deploy");
    copyTree(ROOT.resolve("deploy"), deploy);
    Map<String, List<String>> overlays = new LinkedHashMap<>();
    overlays.put("lease-majority", List.of("lease-majority"));
    overlays.put("mps", List.of("mps"));
    overlays.put("scheduler-extender", List.of("scheduler-extender"));
    overlays.put("monitoring", List.of("monitoring"));
    overlays.put("all", List.of("lease-majority", "mps", "scheduler-extender", "monitoring"));
    for (var e : overlays.entrySet()) {
      Path overlay = Files.createDirectories(work.resolve("my-gpushare-" + e.getKey()));
      StringBuilder k =
          new StringBuilder(
              "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                  + "resources:\n- ../deploy\ncomponents:\n");
      for (String c : e.getValue()) {
        k.append("- ../deploy/").append(c).append('\n');
      }
      Files.writeString(overlay.resolve("kustomization.yaml"), k);
      var apply =
          kubectl.run("apply", "--server-side", "--force-conflicts", "-k", overlay.toString());
      assertEquals(0, apply.status(), () -> "overlay with " + e.getValue() + ": " + apply);
      for (String o : rendered(kubectl, overlay.toString())) {
        assertExists(kubectl, o);
      }
    }
    // And back to the plain base, as an operator who removes the components would.
    kubectl.run("apply", "--server-side", "--force-conflicts", "-k", "deploy/").ok();
  }

  // ---------------------------------------------------------------- helpers

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** The names in {@code what "NAME"} in a Pod Security warning, e.g. {@code container "x"}. */
  private static TreeSet<String> quoted(String warning, String what) {
    TreeSet<String> names = new TreeSet<>();
    // "volume \"a\"", or "volumes \"a\", \"b\"" (PodSecurity's plural)
    Matcher m = Pattern.compile(what + "s? ((?:\"[^\"]+\"(?:, )?)+)").matcher(warning);
    while (m.find()) {
      Matcher each = Pattern.compile("\"([^\"]+)\"").matcher(m.group(1));
      while (each.find()) {
        names.add(each.group(1));
      }
    }
    return names;
  }

  /** A README of the repository, with its lines joined (a quotation may be wrapped). */
  private static String readme(String path) throws IOException {
    return String.join(" ", Files.readString(ROOT.resolve(path)).split("\\s*\n\\s*"));
  }

  private static void installCrds(KubeControlPlane kube) {
    var kubectl = kube.kubectl();
    for (Path crd : KubeControlPlane.crds()) {
      kubectl.run("apply", "--server-side", "-f", crd.toString()).ok();
    }
    kubectl
        .run(
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/issuers.cert-manager.io",
            "crd/certificates.cert-manager.io",
            "crd/podmonitors.monitoring.coreos.com",
            "crd/prometheusrules.monitoring.coreos.com")
        .ok();
  }

  /** {@code apiVersion Kind ns/name} exists on the API server. */
  private static void assertExists(KubeControlPlane.Kubectl kubectl, String object) {
    String[] parts = object.split(" ");
    String ns = parts[2].substring(0, parts[2].indexOf('/'));
    String name = parts[2].substring(parts[2].indexOf('/') + 1);
    var resources = KUBE.get().admin().genericKubernetesResources(parts[0], parts[1]);
    var found =
        ns.isEmpty()
            ? resources.withName(name).get()
            : resources.inNamespace(ns).withName(name).get();
    assertTrue(found != null, () -> object + " is on the API server");
  }

  private static void copyTree(Path from, Path to) throws IOException {
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
}
