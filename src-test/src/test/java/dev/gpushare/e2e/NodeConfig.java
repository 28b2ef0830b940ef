package dev.gpushare.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The configuration files of a {@link RealNode}, all in its folder {@code dir}: containerd's (its
 * own root, state, sockets, shim sockets and runc root; NRI off; overlayfs; the runc v2 runtime
 * through the fake NVIDIA runtime; the pinned pause image; the CNI folders), the pod network's CNI
 * configuration (bridge {@code cni0}, host-local IPAM in {@link RealNode#POD_CIDR}), and the
 * kubelet's identity and KubeletConfiguration.
 */
final class NodeConfig {

  private NodeConfig() {}

  /** The CNI configuration and containerd's config.toml; answers the latter. */
  static Path containerd(Path dir, Path bin, Path runtime) throws IOException {
    Path cni = Files.createDirectories(dir.resolve("cni/net.d"));
    Files.writeString(
        cni.resolve("10-gpushare-e2e.conflist"),
        """
        {"cniVersion": "1.0.0", "name": "gpushare-e2e", "plugins": [{
          "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
          "hairpinMode": true,
          "ipam": {"type": "host-local", "ranges": [[{"subnet": "%s"}]],
                   "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "%s"}}]}
        """
            .formatted(RealNode.POD_CIDR, dir.resolve("cni/ipam")));
    Path c = Files.createDirectories(dir.resolve("containerd"));
    return Files.writeString(
        c.resolve("config.toml"),
        """
            version = 4
            root = "%1$s/root"
            state = "%1$s/state"
            temp = "%1$s/tmp"
            imports = []
            disabled_plugins = ["io.containerd.nri.v1.nri"]
            [plugins]
              [plugins.'io.containerd.server.v1.grpc']
                address = "%1$s/containerd.sock"
              [plugins.'io.containerd.server.v1.ttrpc']
                address = "%1$s/containerd.sock.ttrpc"
              [plugins.'io.containerd.server.v1.debug']
                address = "%1$s/debug.sock"
              [plugins.'io.containerd.shim.v1.manager']
                socket_dir = "%1$s/s"
              [plugins.'io.containerd.internal.v1.opt']
                path = "%1$s/opt"
              [plugins.'io.containerd.image-verifier.v1.bindir']
                bin_dir = "%1$s/image-verifier"
              [plugins.'io.containerd.cri.v1.images']
                snapshotter = 'overlayfs'
                [plugins.'io.containerd.cri.v1.images'.pinned_images]
                  sandbox = '%2$s'
              [plugins.'io.containerd.cri.v1.runtime']
                restrict_oom_score_adj = true
                netns_mounts_under_state_dir = true
                cdi_spec_dirs = []
                [plugins.'io.containerd.cri.v1.runtime'.containerd]
                  default_runtime_name = 'runc'
                  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
                    runtime_type = 'io.containerd.runc.v2'
                    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
                      BinaryName = '%3$s'
                      Root = "%1$s/runc"
                      SystemdCgroup = false
                [plugins.'io.containerd.cri.v1.runtime'.cni]
                  bin_dirs = ['%4$s']
                  conf_dir = '%5$s'
                  max_conf_num = 1
              [plugins.'io.containerd.grpc.v1.cri']
                stream_server_address = '127.0.0.1'
            """
            .formatted(c, NodeImages.PAUSE, runtime, bin.resolve("cni"), cni));
  }

  /**
   * The kubelet's kubeconfig: a client certificate from the control plane's CA for {@code
   * system:node:NAME} in {@code system:nodes}, as kubeadm issues it (NodeRestriction is on).
   */
  static Path kubeconfig(KubeControlPlane plane, Path dir, String name) throws IOException {
    Path pki = Files.createDirectories(dir.resolve("kubelet-client"));
    client(plane.dir().resolve("pki"), pki, "kubelet", "/O=system:nodes/CN=system:node:" + name);
    return plane.certificateKubeconfig(
        "kubelet-" + name, pki.resolve("kubelet.crt"), pki.resolve("kubelet.key"));
  }

  /** The KubeletConfiguration: cgroup v1 and cgroupfs, this node's containerd, its folders. */
  static Path kubelet(KubeControlPlane plane, Path dir) throws IOException {
    String socket = "unix://" + dir.resolve("containerd/containerd.sock");
    return Files.writeString(
        dir.resolve("kubelet.yaml"),
        """
            apiVersion: kubelet.config.k8s.io/v1beta1
            kind: KubeletConfiguration
            failCgroupV1: false
            cgroupDriver: cgroupfs
            cgroupsPerQOS: true
            enforceNodeAllocatable: [pods]
            containerRuntimeEndpoint: %1$s
            imageServiceEndpoint: %1$s
            failSwapOn: false
            makeIPTablesUtilChains: false
            readOnlyPort: 0
            address: %2$s
            port: 10250
            healthzBindAddress: 127.0.0.1
            podLogsDir: %3$s
            volumePluginDir: %4$s
            evictionHard: {memory.available: 1Mi, nodefs.available: 1%%, imagefs.available: 1%%,
              nodefs.inodesFree: 1%%, imagefs.inodesFree: 1%%}
            imageGCHighThresholdPercent: 100
            imageGCLowThresholdPercent: 99
            serializeImagePulls: false
            maxPods: 30
            authentication:
              anonymous: {enabled: false}
              webhook: {enabled: true}
              x509: {clientCAFile: %5$s}
            authorization: {mode: Webhook}
            """
            .formatted(
                socket,
                RealNode.NODE_IP,
                dir.resolve("pod-logs"),
                dir.resolve("volume-plugins"),
                plane.caCertificate()));
  }

  /**
   * A client certificate {@code name}.crt and key {@code name}.key in {@code dir}, signed by the
   * cluster CA in {@code pki} ({@link KubeControlPlane.Pki#write}): e.g. a kubelet's, {@code
   * /O=system:nodes/CN=system:node:NAME} as kubeadm issues it.
   */
  static void client(Path pki, Path dir, String name, String subject) throws IOException {
    KubeControlPlane.Pki.openssl(
        dir,
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        name + ".key");
    KubeControlPlane.Pki.openssl(
        dir, "req", "-new", "-key", name + ".key", "-subj", subject, "-out", name + ".csr");
    Files.writeString(
        dir.resolve(name + ".ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            + "extendedKeyUsage=clientAuth\n");
    KubeControlPlane.Pki.openssl(
        dir,
        "x509",
        "-req",
        "-sha256",
        "-days",
        "30",
        "-in",
        name + ".csr",
        "-CA",
        pki.resolve("ca.crt").toString(),
        "-CAkey",
        pki.resolve("ca.key").toString(),
        "-set_serial",
        "0x" + Long.toHexString(System.nanoTime()),
        "-extfile",
        name + ".ext",
        "-out",
        name + ".crt");
  }
}
