package dev.gpushare.e2e;

import static dev.gpushare.e2e.RealNodeSetup.SYSTEM;
import static dev.gpushare.e2e.RealNodeSetup.eventually;
import static dev.gpushare.e2e.RealNodeSetup.memberApi;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sharing on a real node (issue 37): the shipped DaemonSet's member, real pods in real containers
 * (their command PID 1 of its PID namespace, the library brought by the webhook, the fake driver
 * put in by the node's NVIDIA runtime), the member without hostPID naming their processes by host
 * PID. The tests run in order on one install:
 *
 * <ol>
 *   <li>the reference pod, applied with kubectl: it waits with the waiting line while the GPUs are
 *       taken, then runs; the member's {@code processes} answer names its PID 1 by its host PID;
 *   <li>a pod over its core limit settles at it, and sees its own use relative to its limit;
 *   <li>SPEC §5 played by four pods;
 *   <li>preemption (the victim's own SIGUSR1 handler saves within the grace), revocation (PID 1
 *       ends with SIGUSR1's status), deletion (the kubelet's SIGTERM releases the share and the
 *       next pod runs), and a process that uses a GPU without the library is reported;
 *   <li>a member restart while a pod runs and while an NVML-first workload starts;
 *   <li>idle release, turned on by a new ConfigMap: the idle pod is released, the busy one never;
 *   <li>demand to Running here and over loopback, beside each other;
 *   <li>the uninstall leaves nothing of the product on the node.
 * </ol>
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RealNodeSharingTest {

  @RegisterExtension
  static final KubeControlPlane.Extension KUBE =
      KubeControlPlane.extension(
          KubeControlPlane.Options.apiServerOnly().withNodeLifecycle().withScheduler(null));

  @RegisterExtension static final RealNodeSetup.Postgres PG = new RealNodeSetup.Postgres();

  @RegisterExtension
  static final RealNode.Extension NODE =
      RealNode.extension(KUBE, RealNode.Options.named("hpn-share-1").withGpus(2));

  @TempDir static Path work;

  static final String NS = "default";
  static final Duration PREEMPT_AFTER =
      Duration.ofSeconds(65); // podMaxDurationMinutes 1, and a bit

  /** Every test starts on a node whose GPUs no pod of an earlier one holds, whatever it did. */
  @AfterEach
  void deleteThePods(org.junit.jupiter.api.TestInfo test) throws java.io.IOException {
    if (KUBE.get() == null || NODE.get() == null) {
      return;
    }
    // the member's log, for a post-mortem (its pods' logs go with them at the uninstall)
    Path logs =
        Files.createDirectories(
            Path.of(System.getProperty("basedir", "."), "target", "e2e-logs", "real-node-sharing"));
    Files.writeString(
        logs.resolve(test.getTestMethod().map(m -> m.getName()).orElse("test") + "-member.log"),
        kube()
            .kubectl()
            .run(
                "-n",
                SYSTEM,
                "logs",
                "-l",
                "app.kubernetes.io/name=gpushare",
                "-c",
                "gpushare",
                "--tail=-1",
                "--prefix")
            .out());
    kube().kubectl().run("delete", "pods", "--all", "-n", NS, "--wait=true", "--timeout=120s");
  }

  static KubeControlPlane kube() {
    return KUBE.get();
  }

  static RealNode node() {
    return NODE.get();
  }

  @Test
  @Order(1)
  void installedAsShippedWithSharingOn() throws Exception {
    RealNodeSetup.install(kube(), node(), PG.server, work, "");
    kubectl("label", "node", node().name(), "alibabacloud.com/gpu-share-policy=share-pool");
    eventually(
        "the node's 2 GPUs in its status",
        () -> {
          var q =
              kube()
                  .admin()
                  .nodes()
                  .withName(node().name())
                  .get()
                  .getStatus()
                  .getAllocatable()
                  .get("alibabacloud.com/gpu-core.percentage");
          assertEquals("200", q == null ? null : q.getAmount());
          return q;
        },
        node());
  }

  @Test
  @Order(2)
  void theReferencePodWaitsWithTheWaitingLineThenRunsItsCommandAsPid1() throws Exception {
    // both GPUs taken by pods whose limit is a whole GPU
    apply(sharePod("hold-0", 100, "workload", "init", "ctx", "hold"));
    awaitState("hold-0", "Running");
    apply(sharePod("hold-1", 100, "workload", "init", "ctx", "hold"));
    awaitState("hold-1", "Running");
    // deploy/examples/gpu-share-demo.yaml as shipped, its cpu and memory (5 CPUs, 50Gi) those this
    // 2-core, 24 GiB node has room for: nothing else changed
    String demo =
        Files.readString(RealNodeSetup.ROOT.resolve("deploy/examples/gpu-share-demo.yaml"));
    assertTrue(demo.contains("cpu: '5'") && demo.contains("memory: 50Gi"), demo);
    kubectlIn(demo.replace("cpu: '5'", "cpu: 100m").replace("memory: 50Gi", "memory: 128Mi"));
    awaitState("gpu-share-demo", "Ready"); // its PID 1's cuInit raised the demand
    awaitLog(
        "gpu-share-demo", "^You have been waiting for \\d+ seconds\\. Approximate position: 1$");
    kubectl("delete", "pod", "hold-1", "--wait=true", "--timeout=60s");
    JsonNode running = awaitState("gpu-share-demo", "Running");
    String uuid = running.at("/gpu/uuid").asText();
    Matcher m =
        awaitLog(
            "gpu-share-demo",
            "^gpu_sleep: pid (\\d+): cuInit 0 after .* ms, context 0, .* on (\\S+);");
    assertEquals("1", m.group(1), "the command is PID 1 of its container");
    assertEquals(uuid, m.group(2), "its driver sees the GPU the member granted");
    Pod pod = pod("gpu-share-demo");
    ContainerStatus lib = pod.getStatus().getInitContainerStatuses().get(0);
    assertEquals("gpushare-lib", lib.getName());
    assertEquals(0, lib.getState().getTerminated().getExitCode(), "the library was copied");
    assertEquals(
        String.valueOf(running.at("/gpu/index").asInt()),
        annotation(pod, "gpushare.dev/gpu-index"));
    // the member (no hostPID) names the pod's PID 1 by its host PID
    long host = hostPid(pod, "sleep");
    JsonNode processes =
        eventually(
            "the member names the pod's process",
            () -> {
              JsonNode p =
                  json(memberApi(kube(), node(), "GET", podPath("gpu-share-demo") + "/processes"));
              assertTrue(p.path("hostPids").toString().contains(String.valueOf(host)), p::toString);
              return p;
            },
            node());
    assertEquals("[1]", processes.path("nsPids").toString(), processes::toString);
    deletePods("gpu-share-demo", "hold-0");
  }

  @Test
  @Order(3)
  void aPodOverItsCoreLimitSettlesAtItAndSeesItsOwnUseRelativeToIt() throws Exception {
    apply(sharePod("busy-30", 30, "busy", "--seconds", "600"));
    JsonNode v = awaitState("busy-30", "Running");
    long host = hostPid(pod("busy-30"), "busy");
    String uuid = v.at("/gpu/uuid").asText();
    // as a monitor on the node sees it: NVML over the whole GPU, the pod's process by its host PID
    List<Double> settled = new ArrayList<>();
    eventually(
        "busy-30 at 30 % of its GPU, ± 5, for 1 s",
        () -> {
          double share = RealNodeWatch.share(node(), uuid, host, 1000);
          settled.add(share);
          assertTrue(Math.abs(share - 30) <= 5, () -> "its share of the GPU: " + settled);
          return share;
        },
        node());
    // inside the pod: its own use relative to its limit (30 of 30: near 100), not the GPU's
    String inside = kubectl("exec", "busy-30", "--", "nvml_view");
    Matcher util = Pattern.compile("gpu index=\\d+ uuid=" + uuid + " util=(\\d+) ").matcher(inside);
    assertTrue(util.find(), inside);
    assertTrue(Integer.parseInt(util.group(1)) >= 80, () -> "relative to its limit: " + inside);
    System.out.println("RealNodeSharingTest: busy-30 settled at " + settled);
    deletePods("busy-30");
  }

  @Test
  @Order(4)
  void specSection5PlayedByFourPods() throws Exception {
    apply(sharePod("a", 50, "workload", "init", "ctx", "hold"));
    assertEquals(0, awaitState("a", "Running").at("/gpu/index").asInt());
    apply(sharePod("c", 100, "workload", "init", "ctx", "hold"));
    assertEquals(1, awaitState("c", "Running").at("/gpu/index").asInt());
    apply(sharePod("d", 100, "workload", "init", "ctx", "hold"));
    assertEquals(1, awaitState("d", "Ready").path("queuePosition").asInt());
    apply(sharePod("b", 50, "workload", "init", "ctx", "hold"));
    assertEquals(2, awaitState("b", "Ready").path("queuePosition").asInt());
    awaitLog("d", "^You have been waiting for \\d+ seconds\\. Approximate position: 1$");
    awaitLog("b", "^You have been waiting for \\d+ seconds\\. Approximate position: 2$");
    // T2: C finishes (its process ends: the library releases the share)
    kubectl("exec", "c", "--", "kill", "-TERM", "1");
    assertEquals(1, awaitState("d", "Running").at("/gpu/index").asInt());
    assertEquals(0, awaitState("b", "Running").at("/gpu/index").asInt());
    assertEquals("Hibernation", state("c"));
    eventually(
        "the device annotations after T2",
        () -> {
          assertEquals("0", annotation(pod("a"), "gpushare.dev/gpu-index"));
          assertEquals("0", annotation(pod("b"), "gpushare.dev/gpu-index"));
          assertEquals("1", annotation(pod("d"), "gpushare.dev/gpu-index"));
          assertEquals(null, annotation(pod("c"), "gpushare.dev/gpu-index"));
          return null;
        },
        node());
    assertEquals(128 + 15, exitCode("c"), "C's PID 1 ended with SIGTERM's status");
    assertTrue(events("GPUSharePreempted").isEmpty(), "no preemption in the reference example");
    deletePods("a", "b", "c", "d");
  }

  @Test
  @Order(5)
  void preemptionRevocationAndDeletionOfRealPodsAndUngrantedUseSeen() throws Exception {
    kubectl(
        "annotate",
        "--overwrite",
        "node",
        node().name(),
        "alibabacloud.com/gpu-share-qos-config={\"preemptEnabled\": true,"
            + " \"podMaxDurationMinutes\": 1}");
    // a process of a sharing pod that bypasses the library, on GPU 0 without a grant
    apply(
        sharePod(
            "bypass", 10, "/bin/sh", "-c", "env -u LD_PRELOAD workload init ctx loop:50:100000"));
    // v0 saves on SIGUSR1 (a Python framework's handler, then its copy off the GPU), v1 does not
    apply(sharePod("v0", 100, "workload", "init", "ctx", "alloc:4096", "memcpy", "train:20"));
    awaitState("v0", "Running");
    Thread.sleep(PREEMPT_AFTER.toMillis()); // v0 becomes a candidate (Running over a minute)
    // v1 takes the other GPU and is no candidate yet: p can only preempt v0 (and v0, queued again
    // with its demand, cannot preempt v1 in turn)
    apply(sharePod("v1", 100, "workload", "init", "ctx", "hold"));
    awaitState("v1", "Running");
    apply(sharePod("p", 100, "workload", "init", "ctx", "hold"));
    JsonNode p = awaitState("p", "Running");
    // v0 ran longest: preempted, its handler saved within the grace and it exited 0
    assertEquals(0, exitCode("v0"), () -> "v0's end:\n" + logs("v0"));
    assertTrue(
        logs("v0").lines().anyMatch(l -> l.equals("save -> 0 after SIGUSR1")), () -> logs("v0"));
    assertEquals(null, annotation(pod("v0"), "gpushare.dev/gpu-index"));
    PodCondition reclaim =
        pod("v0").getStatus().getConditions().stream()
            .filter(c -> c.getType().equals("Interruption.GPUShareReclaim"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no reclaim condition: " + pod("v0")));
    assertEquals("True", reclaim.getStatus());
    assertEquals("GPUSharePreempted", reclaim.getReason());
    assertEquals("GPU is preempted by p.", reclaim.getMessage());
    assertTrue(
        events("GPUSharePreempted").contains("v0: GPU is preempted by p."),
        events("GPUSharePreempted")::toString);
    assertTrue(
        events("GPUSharePreempt").contains("p: GPU is preempted from v0."),
        events("GPUSharePreempt")::toString);
    assertEquals(0, p.at("/gpu/index").asInt());
    // revocation: v1's share released from outside; its PID 1 (SIGUSR1 at its default) ends
    memberApi(kube(), node(), "DELETE", podPath("v1") + "/demand");
    assertEquals(128 + 10, exitCode("v1"), () -> "v1's end:\n" + logs("v1"));
    // deletion: q queues for a whole GPU; deleting p (the kubelet's SIGTERM) lets it run
    apply(sharePod("q", 100, "workload", "init", "ctx", "hold"));
    awaitState("q", "Running"); // GPU 1, which v1 left
    apply(sharePod("r", 100, "workload", "init", "ctx", "hold"));
    awaitState("r", "Ready");
    kubectl("delete", "pod", "p", "--wait=true", "--timeout=60s");
    assertEquals(0, awaitState("r", "Running").at("/gpu/index").asInt());
    // the bypassing process has used GPU 0 without a grant for longer than the contract takes
    eventually(
        "GPUShareUngrantedUse on bypass",
        () -> {
          assertTrue(
              events("GPUShareUngrantedUse").stream().anyMatch(e -> e.startsWith("bypass: ")));
          return null;
        },
        node());
    deletePods("bypass", "v0", "v1", "q", "r");
  }

  @Test
  @Order(6)
  void aMemberRestartLosesNoGrantAndNvmlNeverShowsNoGpu() throws Exception {
    apply(sharePod("steady", 50, "busy", "--seconds", "900", "--report-ms", "1000"));
    String index = String.valueOf(awaitState("steady", "Running").at("/gpu/index").asInt());
    // an NVML-first workload, admitted now (while a member serves the webhook), starts while the
    // member restarts: it looks for a GPU through NVML again and again, then makes its first CUDA
    // call
    apply(
        sharePod(
            "nvml-first",
            50,
            "/bin/sh",
            "-c",
            "until [ -e /go ]; do sleep 0.2; done; for i in $(seq 30); do nvml_view | head -1;"
                + " sleep 0.5; done; nvml_view --then-cuinit; sleep 3600"));
    awaitContainerRunning("nvml-first");
    String before = RealNodeSetup.awaitMember(kube(), node()).getMetadata().getName();
    kubectl("-n", SYSTEM, "rollout", "restart", "daemonset/gpushare");
    kubectl("exec", "nvml-first", "--", "touch", "/go");
    String after =
        eventually(
            "a new member",
            () -> {
              String n = RealNodeSetup.awaitMember(kube(), node()).getMetadata().getName();
              assertFalse(n.equals(before), n);
              return n;
            },
            node());
    awaitLog("nvml-first", "^cuInit 0$");
    String nvml = logs("nvml-first");
    assertTrue(
        nvml.lines().filter(l -> l.startsWith("count ")).allMatch(l -> l.equals("count 1")), nvml);
    assertEquals("Running", state("steady"));
    assertEquals(index, annotation(pod("steady"), "gpushare.dev/gpu-index"), "no grant lost");
    // its CUDA calls went on: launches in the last seconds, after the new member came
    int mark = logs("steady").lines().toList().size();
    eventually(
        "steady launches after the restart",
        () -> {
          List<String> l =
              logs("steady").lines().skip(mark).filter(x -> x.matches("\\d+ [1-9]\\d*")).toList();
          assertTrue(l.size() >= 3, () -> "after " + after + ": " + l);
          return l;
        },
        node());
  }

  @Test
  @Order(7)
  void idleReleaseTurnedOnReleasesTheIdlePodAndNeverTheBusyOne() throws Exception {
    String before = RealNodeSetup.awaitMember(kube(), node()).getMetadata().getName();
    Path overlay =
        RealNodeSetup.overlay(
            work.resolve("idle"),
            "jdbc:postgresql://" + RealNode.HOST_IP + ":5432/gpushare",
            "gpushare.gpu { idle-release-after = 15s, idle-release-grace = 5s }");
    // configmap.yaml: a change takes effect when the members restart
    kubectl("apply", "-k", overlay.toString());
    kubectl("-n", SYSTEM, "rollout", "restart", "daemonset/gpushare");
    eventually(
        "the member with idle release on",
        () -> {
          assertFalse(
              RealNodeSetup.awaitMember(kube(), node()).getMetadata().getName().equals(before));
          return null;
        },
        node());
    apply(sharePod("steady", 50, "busy", "--seconds", "900"));
    awaitState("steady", "Running");
    apply(sharePod("idle", 50, "workload", "init", "ctx", "hold"));
    awaitState("idle", "Running");
    eventually(
        "idle is released",
        () -> {
          assertTrue(events("GPUShareIdleReleased").stream().anyMatch(e -> e.startsWith("idle: ")));
          return null;
        },
        node());
    assertEquals(128 + 10, exitCode("idle"), () -> logs("idle"));
    assertEquals("Running", state("steady"), "the busy pod is never released");
    assertTrue(events("GPUShareIdle").stream().noneMatch(e -> e.startsWith("steady: ")));
    deletePods("steady", "idle");
  }

  @Test
  @Order(8)
  void demandToRunningHereBesideOverLoopback() throws Exception {
    List<Double> real = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      // the reference image's sleep: its cuInit is the demand, and the GPU is free
      apply(
          sharePod("timed-" + i, 50, "sleep", "3600")
              .replace("image: " + NodeImages.WORKLOAD, "image: " + NodeImages.STRESS));
      Matcher m = awaitLog("timed-" + i, "^gpu_sleep: .*cuInit 0 after ([0-9.]+) ms");
      real.add(Double.parseDouble(m.group(1)));
      deletePods("timed-" + i);
    }
    List<Double> loopback = RealNodeWatch.loopbackDemands(work.resolve("loopback"), 3);
    System.out.println(
        "RealNodeSharingTest: demand -> Running (cuInit, the GPU free): real node "
            + real
            + " ms; over loopback in the same run "
            + loopback
            + " ms");
  }

  @Test
  @Order(9)
  void theUninstallLeavesNothingOfTheProductOnTheNode() throws Exception {
    kubectl("delete", "pods", "--all", "-n", NS, "--wait=true", "--timeout=120s");
    List<String> uids =
        kube().admin().pods().inNamespace(SYSTEM).list().getItems().stream()
            .map(p -> p.getMetadata().getUid())
            .toList();
    assertFalse(uids.isEmpty(), "the member's pods before the uninstall");
    Path overlay = work.resolve("idle/my-gpushare");
    kubectl(
        "delete", "-k", overlay.toString(), "--wait=true", "--timeout=180s", "--ignore-not-found");
    eventually(
        "no member, no product process on the node",
        () -> {
          assertTrue(kube().admin().pods().inNamespace(SYSTEM).list().getItems().isEmpty());
          assertEquals(List.of(), RealNodeWatch.productProcesses());
          return null;
        },
        node());
    Path dataPlane = Path.of("/run/gpushare/data-plane");
    try (var left = Files.list(dataPlane)) {
      assertEquals(List.of(), left.toList(), "no socket, no file");
    }
    assertEquals(List.of(), RealNodeWatch.mountsOf(uids), "no mount of the member's pods");
    try (var pods = Files.list(node().dir().resolve("kubelet/pods"))) {
      assertTrue(
          pods.noneMatch(d -> uids.contains(d.getFileName().toString())),
          "no folder of the member's pods in the kubelet's");
    }
  }

  // ---------------------------------------------------------------- helpers

  /** A share-pool pod as users write it (cpu and memory this small node has room for). */
  static String sharePod(String name, int limit, String... command) {
    StringBuilder cmd = new StringBuilder();
    for (String c : command) {
      cmd.append(cmd.length() == 0 ? "" : ", ").append(Api.JSON.valueToTree(c).toString());
    }
    return """
        apiVersion: v1
        kind: Pod
        metadata:
          name: %s
          namespace: default
          labels:
            alibabacloud.com/compute-class: gpu-hpn
            alibabacloud.com/gpu-share-policy: share-pool
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 30
          containers:
          - name: main
            image: %s
            imagePullPolicy: IfNotPresent
            env:
            - {name: GPUSHARE_WAIT_INTERVAL, value: 1s}
            - {name: GPUSHARE_GRACE, value: 5s}
            command: [%s]
            resources:
              requests:
                cpu: 10m
                memory: 32Mi
                alibabacloud.com/gpu-core.percentage: 10
                alibabacloud.com/gpu-memory.percentage: 10
              limits:
                memory: 96Mi
                alibabacloud.com/gpu-core.percentage: %d
                alibabacloud.com/gpu-memory.percentage: %d
        """
        .formatted(name, NodeImages.WORKLOAD, cmd, limit, limit);
  }

  static void apply(String yaml) {
    kubectlIn(yaml);
  }

  static void kubectlIn(String yaml) {
    kube().kubectl().runWithInput(yaml, "apply", "-f", "-").ok();
  }

  static String kubectl(String... args) {
    return kube().kubectl().run(args).ok().out();
  }

  static String podPath(String name) {
    return "/v1/namespaces/" + NS + "/pods/" + name;
  }

  static JsonNode json(String text) throws java.io.IOException {
    return Api.JSON.readTree(text);
  }

  static String state(String name) throws Exception {
    return json(memberApi(kube(), node(), "GET", podPath(name))).path("state").asText();
  }

  /** The member's view of the pod once it is in {@code state}. */
  static JsonNode awaitState(String name, String state) {
    return eventually(
        name + " " + state,
        () -> {
          JsonNode v = json(memberApi(kube(), node(), "GET", podPath(name)));
          assertEquals(state, v.path("state").asText(), v::toString);
          return v;
        },
        node());
  }

  static Pod pod(String name) {
    return kube().admin().pods().inNamespace(NS).withName(name).get();
  }

  static String annotation(Pod pod, String key) {
    Map<String, String> a = pod.getMetadata().getAnnotations();
    return a == null ? null : a.get(key);
  }

  static String logs(String name) {
    return kube().kubectl().run("logs", name).out(); // the pod's (first) app container
  }

  static Matcher awaitLog(String name, String regex) {
    Pattern p = Pattern.compile(regex, Pattern.MULTILINE);
    return eventually(
        name + "'s log shows " + regex,
        () -> {
          String log = logs(name);
          Matcher m = p.matcher(log);
          assertTrue(m.find(), log);
          return m;
        },
        node());
  }

  static void awaitContainerRunning(String name) {
    eventually(
        name + "'s container runs",
        () -> {
          var st = pod(name).getStatus().getContainerStatuses();
          assertTrue(st != null && !st.isEmpty() && st.get(0).getState().getRunning() != null);
          return null;
        },
        node());
  }

  /** The exit code of the pod's container once it has ended. */
  static int exitCode(String name) {
    return eventually(
        name + " ended",
        () -> {
          var t = pod(name).getStatus().getContainerStatuses().get(0).getState().getTerminated();
          assertTrue(t != null, () -> name + " still runs");
          return t.getExitCode();
        },
        node());
  }

  /** "pod: note" of each Event of {@code reason} in the namespace. */
  static List<String> events(String reason) {
    String out =
        kubectl(
            "get",
            "events",
            "-n",
            NS,
            "--field-selector",
            "reason=" + reason,
            "-o",
            "jsonpath={range .items[*]}{.involvedObject.name}: {.message}{\"\\n\"}{end}");
    return out.lines().filter(l -> !l.isBlank()).toList();
  }

  /** The host PID of the pod's process whose command line starts with {@code command}. */
  static long hostPid(Pod pod, String command) {
    return eventually(
        "the host PID of " + pod.getMetadata().getName() + "'s " + command,
        () -> RealNodeWatch.hostPid(pod.getMetadata().getUid(), command),
        node());
  }

  static void deletePods(String... names) {
    List<String> args =
        new ArrayList<>(List.of("delete", "pod", "-n", NS, "--wait=true", "--timeout=90s"));
    args.addAll(List.of(names));
    kubectl(args.toArray(String[]::new));
  }
}
