package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import io.fabric8.kubernetes.api.model.Node;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real Kubernetes node for the end-to-end tests, on a running {@link KubeControlPlane}: a kubelet
 * (v1.37.2), containerd (v2.4) and runc (v1.5) built from their Go modules by {@code
 * src-test/kube/build.sh}, registered with the API server as a GPU-HPN node ({@code
 * alibabacloud.com/node-type=reserved}, {@code nvidia.com/gpu} in its capacity) that runs real pods
 * in real containers.
 *
 * <p><b>Its network</b> is a network namespace of the test's own ({@code ip netns}): containerd and
 * the kubelet run in it, so the pods' CNI bridge ({@code cni0}, {@link #POD_CIDR}, host-local
 * IPAM), the kubelet's address {@link #NODE_IP} and every pod address live there, and nothing is
 * added to the host's network. One process, {@code node_gateway} ({@code src/test/native}), has a
 * socket in both namespaces and forwards TCP: the kubelet reaches the API server at the same {@code
 * 127.0.0.1:PORT} as on the host; the pods reach it at the {@code kubernetes} Service ({@link
 * #KUBERNETES_SERVICE_IP}{@code :443}, an address of the node's namespace: what kube-proxy would
 * send there), and the test's own servers at {@link #HOST_IP} ({@link Options#withHostPort}); the
 * API server and the test reach the kubelet and the pods through the control plane's {@link
 * ClusterNetwork}, which dials them through the gateway ({@link #dial}).
 *
 * <p><b>The GPU</b> is the tests' fake driver put into containers as the legacy NVIDIA container
 * runtime does: containerd's runc is {@code src-test/kube/nvidia-container-runtime.sh}, which gives
 * a container with {@code NVIDIA_VISIBLE_DEVICES} the fake {@code libnvidia-ml.so.1} and {@code
 * libcuda.so.1}, the device directory {@code /dev/fake-gpu} (the virtual GPU's file, and the fake
 * driver's kernel socket, {@code fake_gpu_kernel}, which tells a process its host PID) and the
 * node's GPUs ({@link #gpus()}).
 *
 * <p><b>Clean-up</b>, on every path (a failed start included, and a JVM shutdown hook as the last
 * resort): the kubelet is stopped, every pod sandbox stopped and removed through the CRI ({@code
 * crictl rmp}), containerd, the shims it re-parented away from the test and their containers
 * killed, and {@link NodeHost} puts the machine back (mounts, cgroups, hard-coded paths, sysctls).
 * The node's logs are kept under {@code target/e2e-logs}. One node at a time runs on a machine.
 */
final class RealNode implements AutoCloseable, ClusterNetwork.NodeNetwork {

  static final String POD_CIDR = "10.244.0.0/24";
  static final String POD_PREFIX = "10.244.0.";
  static final String NODE_IP = "10.250.0.2";
  static final String HOST_IP = "10.250.0.1";
  static final String KUBERNETES_SERVICE_IP = "10.96.0.1";
  static final Duration START_DEADLINE = Duration.ofMinutes(3);
  static final long GPU_MEMORY = 80L << 30;

  private static final AtomicInteger SEQ = new AtomicInteger();

  /**
   * The node's name, its GPUs, its {@code alibabacloud.com/gpu-share-policy} label (null: none),
   * and the test's loopback ports its pods reach at {@link #HOST_IP} (node port to host port).
   */
  record Options(String name, int gpus, String policy, Map<Integer, Integer> hostPorts) {
    static Options named(String name) {
      return new Options(name, 2, null, Map.of());
    }

    Options withGpus(int n) {
      return new Options(name, n, policy, hostPorts);
    }

    Options withPolicy(String p) {
      return new Options(name, gpus, p, hostPorts);
    }

    /** The pods reach {@code 127.0.0.1:hostPort} of the test at {@link #HOST_IP}{@code :port}. */
    Options withHostPort(int port, int hostPort) {
      Map<Integer, Integer> all = new LinkedHashMap<>(hostPorts);
      all.put(port, hostPort);
      return new Options(name, gpus, policy, Map.copyOf(all));
    }
  }

  private final KubeControlPlane plane;
  private final Options options;
  private final Path bin;
  private final Path dir;
  private final String netns;
  private final NodeHost host;
  private final Map<String, Process> processes = new LinkedHashMap<>();
  private final List<String> gpus = new ArrayList<>();
  private Thread hook;
  private boolean attached;
  private boolean closed;

  private RealNode(KubeControlPlane plane, Options options, Path bin, Path dir, NodeHost host) {
    this.plane = plane;
    this.options = options;
    this.bin = bin;
    this.dir = dir;
    this.host = host;
    this.netns = "gpushare-" + dir.getFileName().toString().replaceAll("[^A-Za-z0-9]", "");
    for (int i = 0; i < options.gpus(); i++) {
      gpus.add(String.format("GPU-e2e0%04d-0000-4000-8000-%012d", SEQ.get(), i));
    }
  }

  // ---------------------------------------------------------------- prerequisites

  /**
   * The node's binaries ({@code build.sh --node --check}). Skips the caller where Go, a Debian
   * package the build or the node needs, or root is missing; fails it where they are not built.
   */
  static Path binaries() {
    assumeTrue(
        "root".equals(System.getProperty("user.name")),
        "the real node runs containers: it needs root (network namespaces, mounts, cgroups)");
    var r =
        KubeControlPlane.runBuild(
            KubeControlPlane.repositoryRoot().resolve("src-test/kube/build.sh"),
            "--node",
            "--check");
    assumeTrue(
        r.status() != 2,
        "no Go on PATH: the real node is built from Go modules (src-test/kube/README.md)");
    assumeTrue(r.status() != 5, r.err().strip());
    if (r.status() != 0) {
      throw new AssertionError(
          "src-test/kube/build.sh --node --check (exit "
              + r.status()
              + "): the Maven build runs build.sh before the tests; outside it run"
              + " `bash src-test/kube/build.sh` first:\n"
              + r.err());
    }
    for (String tool : List.of("ip", "nsenter", "mount", "umount", "jq", "tar", "ldd")) {
      assumeTrue(
          NodeImages.run(List.of("sh", "-c", "command -v " + tool), null).status() == 0,
          "no '"
              + tool
              + "' on PATH: the real node needs it (jq: apt-get install jq; .ci/run"
              + " installs it)");
    }
    NodeImages.busybox();
    return Path.of(r.out());
  }

  // ---------------------------------------------------------------- start

  /** Starts a node on {@code plane}; on any failure everything started so far is undone. */
  static RealNode start(KubeControlPlane plane, Options options) {
    Path bin = binaries();
    PodSide side = PodSide.get();
    NodeHost host;
    Path dir;
    try {
      host = NodeHost.claim(bin.getParent().getParent().resolve(".real-node.lock"));
      // Short: Unix socket paths hold at most 107 bytes.
      dir = Files.createTempDirectory(Path.of("/tmp"), "rn" + SEQ.incrementAndGet() + "-");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    RealNode node = new RealNode(plane, options, bin, dir, host);
    node.hook = new Thread(node::close, "real-node-shutdown-" + options.name());
    Runtime.getRuntime().addShutdownHook(node.hook);
    try {
      node.startAll(side);
      return node;
    } catch (IOException e) {
      node.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException | Error e) {
      node.close();
      throw e;
    }
  }

  private void startAll(PodSide side) throws IOException {
    // The network namespace: the node's address, the kubernetes Service's and the test's host's.
    sh("ip netns add " + netns);
    in("ip link set lo up");
    for (String ip : List.of(NODE_IP, KUBERNETES_SERVICE_IP, HOST_IP)) {
      in("ip addr add " + ip + "/32 dev lo");
    }
    String api = "127.0.0.1:" + plane.apiPort();
    List<String> gateway =
        new ArrayList<>(
            List.of(
                side.program("node_gateway").toString(),
                "/run/netns/" + netns,
                "node:" + api + "=host:" + api,
                "node:" + KUBERNETES_SERVICE_IP + ":443=host:" + api,
                "host:" + dir.resolve("gateway.sock") + "=node"));
    options
        .hostPorts()
        .forEach((p, h) -> gateway.add("node:" + HOST_IP + ":" + p + "=host:127.0.0.1:" + h));
    awaitReady(launch("gateway", gateway, false), "gateway");

    // The fake driver: its libraries, the device directory and its kernel socket.
    Path driver = Files.createDirectories(dir.resolve("driver"));
    for (String lib : List.of("libnvidia-ml.so.1", "libcuda.so.1")) {
      Files.copy(
          side.fakes().resolve(lib), driver.resolve(lib), StandardCopyOption.REPLACE_EXISTING);
    }
    Path device = Files.createDirectories(dir.resolve("fake-gpu"));
    Files.setPosixFilePermissions(device, PosixFilePermissions.fromString("rwxrwxrwx"));
    // the driver's settings where a process `kubectl exec` starts finds them too (its environment
    // lacks what the runtime added): fake_cuda.c and fake_nvml.c read this file
    Files.writeString(
        device.resolve("config"),
        "FAKE_GPU_FILE=/dev/fake-gpu/gpu\nFAKE_GPU_KERNEL=/dev/fake-gpu/kernel.sock\n"
            + "FAKE_CUDA_UUIDS="
            + String.join(",", gpus)
            + "\nFAKE_NVML_UUIDS="
            + String.join(",", gpus)
            + "\nFAKE_CUDA_MEMORY="
            + GPU_MEMORY
            + "\n");
    awaitReady(
        launch(
            "fake-gpu-kernel",
            List.of(
                side.program("fake_gpu_kernel").toString(),
                device.resolve("kernel.sock").toString()),
            false),
        "fake-gpu-kernel");
    Path runtime = dir.resolve("nvidia-container-runtime");
    Files.writeString(
        runtime,
        "#!/usr/bin/env bash\n"
            + "export GPUSHARE_RUNC="
            + bin.resolve("runc")
            + " GPUSHARE_FAKE_NVML="
            + driver.resolve("libnvidia-ml.so.1")
            + " GPUSHARE_FAKE_CUDA="
            + driver.resolve("libcuda.so.1")
            + " GPUSHARE_FAKE_GPU_DIR="
            + device
            + " GPUSHARE_GPU_UUIDS="
            + String.join(",", gpus)
            + " GPUSHARE_GPU_MEMORY="
            + GPU_MEMORY
            + " GPUSHARE_RUNTIME_LOG="
            + dir.resolve("nvidia-container-runtime.log")
            + "\nexec bash "
            + KubeControlPlane.repositoryRoot().resolve("src-test/kube/nvidia-container-runtime.sh")
            + " \"$@\"\n");
    Files.setPosixFilePermissions(runtime, PosixFilePermissions.fromString("rwxr-xr-x"));

    startContainerd(runtime);
    NodeImages images = images();
    importImage(images.pause(side.program("pause")));
    importImage(
        images.workload(
            Map.of(
                "workload", side.program("workload"),
                "nvml_view", side.program("nvml_view"),
                "busy", side.program("busy"))));
    importImage(images.stress(Map.of("sleep", side.program("gpu_sleep"))));
    startKubelet();
    plane.network().attach(this);
    attached = true;
  }

  private void startContainerd(Path runtime) throws IOException {
    Path config = NodeConfig.containerd(dir, bin, runtime);
    Process p =
        launch(
            "containerd",
            List.of(bin.resolve("containerd").toString(), "--config", config.toString()),
            true);
    awaitUntil("containerd", p, () -> ctr("version").status() == 0 ? "" : null);
  }

  /** {@code ctr} on this node's containerd, in the CRI's namespace. */
  NodeImages.Result ctr(String... args) {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                bin.resolve("ctr").toString(),
                "--address",
                dir.resolve("containerd/containerd.sock").toString(),
                "-n",
                "k8s.io"));
    cmd.addAll(List.of(args));
    return NodeImages.run(cmd, null);
  }

  /** Imports an image tar (OCI layout or {@code docker save}) under the names it carries. */
  void importImage(Path tar) {
    var r = ctr("images", "import", "--local", "--snapshotter", "overlayfs", tar.toString());
    if (r.status() != 0) {
      throw new AssertionError("ctr images import " + tar + ": " + r.out());
    }
  }

  /** The images of this machine (cached) and of this checkout (under target/). */
  NodeImages images() {
    return new NodeImages(
        bin.getParent().getParent().resolve("images"),
        Path.of(System.getProperty("basedir", "."), "target", "real-node-images").toAbsolutePath());
  }

  private void startKubelet() throws IOException {
    Path kubeconfig = NodeConfig.kubeconfig(plane, dir, options.name());
    Path config = NodeConfig.kubelet(plane, dir);
    StringBuilder labels = new StringBuilder("alibabacloud.com/node-type=reserved");
    if (options.policy() != null) {
      labels.append(",alibabacloud.com/gpu-share-policy=").append(options.policy());
    }
    Process p =
        launch(
            "kubelet",
            List.of(
                bin.resolve("kubelet").toString(),
                "--config=" + config,
                "--kubeconfig=" + kubeconfig,
                "--root-dir=" + dir.resolve("kubelet"),
                "--cert-dir=" + dir.resolve("kubelet-pki"),
                "--hostname-override=" + options.name(),
                "--node-ip=" + NODE_IP,
                "--node-labels=" + labels,
                "--v=2"),
            true);
    awaitUntil("kubelet", p, this::ready);
    // What NVIDIA's device plugin advertises: the node's GPUs as an extended resource.
    plane
        .admin()
        .nodes()
        .withName(options.name())
        .subresource("status")
        .patch(
            io.fabric8.kubernetes.client.dsl.base.PatchContext.of(
                io.fabric8.kubernetes.client.dsl.base.PatchType.JSON),
            "[{\"op\":\"add\",\"path\":\"/status/capacity/nvidia.com~1gpu\",\"value\":\""
                + options.gpus()
                + "\"}]");
    awaitUntil(
        "kubelet",
        p,
        () -> {
          Node n = plane.admin().nodes().withName(options.name()).get();
          var q = n.getStatus().getAllocatable().get("nvidia.com/gpu");
          return q != null && q.getAmount().equals(Integer.toString(options.gpus())) ? "" : null;
        });
  }

  /** "" once the node is Ready (and untainted), else null. */
  private String ready() {
    Node n = plane.admin().nodes().withName(options.name()).get();
    if (n == null || n.getStatus() == null || n.getStatus().getConditions() == null) {
      return null;
    }
    boolean ready =
        n.getStatus().getConditions().stream()
            .anyMatch(c -> c.getType().equals("Ready") && c.getStatus().equals("True"));
    boolean tainted = n.getSpec().getTaints() != null && !n.getSpec().getTaints().isEmpty();
    return ready && !tainted ? "" : null;
  }

  // ---------------------------------------------------------------- what tests use

  String name() {
    return options.name();
  }

  /**
   * The node's pods reach {@code 127.0.0.1:hostPort} of the test at {@link #HOST_IP}{@code :port}
   * from now on (e.g. a PostgreSQL server the test runs): one more gateway, stopped with the node.
   */
  void exposeHost(int port, int hostPort) {
    try {
      awaitReady(
          launch(
              "gateway-" + port,
              List.of(
                  PodSide.get().program("node_gateway").toString(),
                  "/run/netns/" + netns,
                  "node:" + HOST_IP + ":" + port + "=host:127.0.0.1:" + hostPort),
              false),
          "gateway-" + port);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The node's GPUs' UUIDs, as the fake driver shows them in its containers. */
  List<String> gpus() {
    return List.copyOf(gpus);
  }

  Path dir() {
    return dir;
  }

  /** The last lines of the node's component {@code name}'s log (kubelet, containerd, …). */
  String log(String name, int lines) {
    try {
      List<String> all = Files.readAllLines(dir.resolve(name + ".log"));
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  @Override
  public boolean owns(String ip) {
    return ip.equals(NODE_IP) || ip.startsWith(POD_PREFIX);
  }

  /** A connection to {@code ip:port} in the node's network, through the gateway. */
  @Override
  public SocketChannel dial(String ip, int port) throws IOException {
    SocketChannel c = SocketChannel.open(StandardProtocolFamily.UNIX);
    try {
      c.connect(UnixDomainSocketAddress.of(dir.resolve("gateway.sock")));
      c.write(ByteBuffer.wrap((ip + ":" + port + "\n").getBytes(StandardCharsets.US_ASCII)));
      ByteBuffer one = ByteBuffer.allocate(1);
      StringBuilder answer = new StringBuilder();
      while (answer.length() < 200) {
        one.clear();
        if (c.read(one) < 0) {
          break;
        }
        char ch = (char) one.get(0);
        if (ch == '\n') {
          break;
        }
        answer.append(ch);
      }
      if (!answer.toString().equals("OK")) {
        throw new IOException("node " + options.name() + ": " + ip + ":" + port + ": " + answer);
      }
      return c;
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  // ---------------------------------------------------------------- stop

  /** Stops everything and puts the machine back; idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<String> failed = new ArrayList<>();
    if (attached) {
      plane.network().detach(this);
    }
    // The kubelet first, so that it starts nothing more; then every pod through the CRI, as the
    // kubelet would tear it down (containers, network, mounts).
    stop("kubelet");
    if (alive("containerd")) {
      var rm =
          NodeImages.run(
              List.of(
                  bin.resolve("crictl").toString(),
                  "--runtime-endpoint",
                  "unix://" + dir.resolve("containerd/containerd.sock"),
                  "--timeout",
                  "60s",
                  "rmp",
                  "--all",
                  "--force"),
              null);
      if (rm.status() != 0) {
        failed.add("crictl rmp --all --force: " + rm.out());
      }
    }
    List<Process> started = new ArrayList<>(processes.values());
    for (int i = started.size() - 1; i >= 0; i--) {
      List<ProcessHandle> left = ChildProcess.killTree(started.get(i).toHandle());
      if (!left.isEmpty()) {
        failed.add("still running: " + left);
      }
    }
    processes.clear();
    var del = NodeImages.run(List.of("ip", "netns", "delete", netns), null);
    if (del.status() != 0 && Files.exists(Path.of("/run/netns", netns))) {
      failed.add("ip netns delete " + netns + ": " + del.out());
    }
    failed.addAll(host.restore(dir));
    keepLogs();
    KubeControlPlane.deleteTree(dir);
    if (hook != null && Thread.currentThread() != hook) {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // the JVM is shutting down: the hook runs this again, which returns at once
      }
    }
    if (!failed.isEmpty()) {
      System.err.println("real node " + options.name() + ": clean-up left " + failed);
      throw new AssertionError("real node " + options.name() + " clean-up: " + failed);
    }
  }

  private void stop(String name) {
    Process p = processes.get(name);
    if (p != null) {
      ChildProcess.killTree(p.toHandle());
    }
  }

  private boolean alive(String name) {
    Process p = processes.get(name);
    return p != null && p.isAlive();
  }

  /** The node's logs into target/e2e-logs, for a failure's post-mortem. */
  private void keepLogs() {
    try {
      Path logs =
          Files.createDirectories(
              Path.of(System.getProperty("basedir", "."), "target", "e2e-logs")
                  .resolve("real-node-" + options.name() + "-" + dir.getFileName()));
      try (var files = Files.list(dir)) {
        for (Path f : files.toList()) {
          if (f.getFileName().toString().endsWith(".log")) {
            Files.copy(f, logs.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
      // The containers' logs, as the kubelet wrote them (pod-logs/<ns>_<pod>_<uid>/<c>/<n>.log).
      Path pods = dir.resolve("pod-logs");
      if (Files.isDirectory(pods)) {
        try (var walk = Files.walk(pods)) {
          for (Path f : walk.filter(Files::isRegularFile).toList()) {
            Path to = logs.resolve("pods").resolve(pods.relativize(f).toString());
            Files.createDirectories(to.getParent());
            Files.copy(f, to, StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    } catch (IOException e) {
      // the logs are a convenience
    }
  }

  // ---------------------------------------------------------------- helpers

  /**
   * Starts {@code command} (in the node's network namespace when {@code inNode}), its output into
   * {@code name}.log.
   */
  private Process launch(String name, List<String> command, boolean inNode) throws IOException {
    List<String> cmd = new ArrayList<>();
    if (inNode) {
      cmd.addAll(List.of("nsenter", "--net=/run/netns/" + netns, "--"));
    }
    cmd.addAll(command);
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    if (!name.startsWith("gateway") && !name.equals("fake-gpu-kernel")) {
      pb.redirectOutput(dir.resolve(name + ".log").toFile());
    }
    for (String unset :
        List.of(
            "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HTTPS_PROXY")) {
      pb.environment().remove(unset);
    }
    Process p = pb.start();
    processes.put(name, p);
    return p;
  }

  /** Waits for the first line of {@code p} to be "ready"; the rest of its output into its log. */
  private void awaitReady(Process p, String name) throws IOException {
    BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String first = r.readLine();
    if (!"ready".equals(first)) {
      throw new AssertionError(name + " did not start: " + first);
    }
    Path log = dir.resolve(name + ".log");
    Thread t =
        new Thread(
            () -> {
              try (var out = Files.newOutputStream(log)) {
                Channels.newInputStream(Channels.newChannel(p.getInputStream())).transferTo(out);
              } catch (IOException e) {
                // the process ended
              }
            },
            "real-node-" + name + "-log");
    t.setDaemon(true);
    t.start();
  }

  private interface Probe {
    /** "" when done, null when not yet. */
    String check() throws Exception;
  }

  /** Polls {@code probe} until done, {@code p} dies, or {@link #START_DEADLINE} passes. */
  private void awaitUntil(String name, Process p, Probe probe) {
    long deadline = System.nanoTime() + START_DEADLINE.toNanos();
    String last = "not yet";
    while (System.nanoTime() < deadline) {
      if (!p.isAlive()) {
        throw new AssertionError(
            name + " exited (status " + p.exitValue() + "):\n" + log(name, 60));
      }
      try {
        if (probe.check() != null) {
          return;
        }
      } catch (Exception e) {
        last = e.toString();
      }
      try {
        Thread.sleep(250);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + name, e);
      }
    }
    throw new AssertionError(
        name
            + " not ready within "
            + START_DEADLINE.toSeconds()
            + " s ("
            + last
            + "):\n"
            + log(name, 60));
  }

  private void sh(String command) {
    var r = NodeImages.run(List.of("sh", "-c", command), null);
    if (r.status() != 0) {
      throw new AssertionError(command + ": " + r.out());
    }
  }

  /** A command in the node's network namespace. */
  private void in(String command) {
    sh("nsenter --net=/run/netns/" + netns + " -- " + command);
  }

  // ---------------------------------------------------------------- the JUnit extension

  /**
   * Starts a node on {@code plane}'s control plane for the test class ({@code @RegisterExtension
   * static}, after the plane's) and stops it after the class, before the plane.
   */
  static Extension extension(KubeControlPlane.Extension plane, Options options) {
    return new Extension(plane, options);
  }

  static final class Extension implements BeforeAllCallback, AfterAllCallback {
    private final KubeControlPlane.Extension plane;
    private final Options options;
    private RealNode node;

    private Extension(KubeControlPlane.Extension plane, Options options) {
      this.plane = plane;
      this.options = options;
    }

    RealNode get() {
      if (node == null) {
        throw new IllegalStateException("the real node has not started");
      }
      return node;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
      node = RealNode.start(plane.get(), options);
    }

    @Override
    public void afterAll(ExtensionContext context) {
      if (node != null) {
        try {
          node.close();
        } finally {
          node = null;
        }
      }
    }
  }
}
