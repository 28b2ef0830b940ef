package dev.gpushare.gpu.proc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpushare.gpu.proc.PodCgroup.QosClass;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CgroupParser} against {@code /proc/<pid>/cgroup} files as the kernel prints them (fixtures
 * under {@code cgroup/}), plus single paths for the rules the fixtures do not isolate.
 */
class CgroupParserTest {

  private static final String CID_A =
      "a569438a11023665114dea75bf5346664cff9727dda5712d1d5bd3e09eb92e19";
  private static final String CID_B =
      "59fa52a50611407b437608380357345e2b476d3a8db3729530b21aafe91107cc";
  private static final String UID_A = "e0be2663-c627-4487-b140-c74b6b548473";
  private static final String UID_B = "b301e441-8bc0-4c2c-9cf3-bb4e9b3d49f3";

  // cgroup v1, one line per hierarchy

  @Test
  void v1ContainerdWithSystemdDriver() {
    assertEquals(
        pod(UID_A, CID_A, "containerd", QosClass.BURSTABLE),
        parseFixture("v1-containerd-systemd.txt"));
  }

  @Test
  void v1DockerWithCgroupfsDriverHasNoRecognisableRuntime() {
    assertEquals(
        pod(UID_B, CID_B, null, QosClass.GUARANTEED), parseFixture("v1-docker-cgroupfs.txt"));
  }

  @Test
  void v1CrioWithSystemdDriver() {
    assertEquals(
        pod(
            "0d269e38-9a1d-4403-9660-a5e00a70ebc7",
            "36b2c1ce12fc360e4a781bca4e00bf9af5d7dbde5b5e909c9d5ca481549361fb",
            "cri-o",
            QosClass.BEST_EFFORT),
        parseFixture("v1-crio-systemd.txt"));
  }

  @Test
  void v1KindNodeOnADockerHostSeesTheNodeContainerAndKubeletRootAsPrefix() {
    assertEquals(
        pod(
            "5fcbb9f2-7650-4d7e-a8c3-0bc8bc1f5b89",
            "dc581b05438e99f8e35ce7b83167cd9d5da0887d86c30b795518975dec01fbbc",
            null,
            QosClass.BEST_EFFORT),
        parseFixture("v1-kind-nested.txt"));
  }

  @Test
  void v1ProcessDirectlyInThePodCgroupHasNoContainer() {
    assertEquals(
        pod("86d46859-23d1-43dd-89ff-0b37d4ef8d95", null, null, QosClass.BEST_EFFORT),
        parseFixture("v1-cgroupfs-pod-level.txt"));
  }

  @Test
  void v1RuntimeOnCgroupfsGivenASystemdCgroupsPathAndAStaticPodUid() {
    assertEquals(
        pod(
            "c67a52dd86c9df92dfa4b2cafe4e3011",
            "930e8cead956b476464af71b84521f17b5891eaeb326134431b496791dc1cff2",
            "containerd",
            QosClass.BURSTABLE),
        parseFixture("v1-mismatched-driver-static-pod.txt"));
  }

  @Test
  void v1SystemServiceIsNotAPod() {
    assertEquals(Optional.empty(), parseFixture("v1-system-service.txt"));
  }

  // cgroup v2, the single 0:: line

  @Test
  void v2ContainerdWithSystemdDriverGuaranteedPodSitsDirectlyUnderKubepodsSlice() {
    assertEquals(
        pod(
            "0639ab9b-2802-4c1f-b593-fb26546870fc",
            "1575973e2944372cac81b0ebf3c12470370d93ac47ef53c6a868952e34524d78",
            "containerd",
            QosClass.GUARANTEED),
        parseFixture("v2-containerd-systemd.txt"));
  }

  @Test
  void v2CrioWithSystemdDriver() {
    assertEquals(
        pod(
            "ba860ddf-a4da-4592-99ea-db63b6e050ce",
            "b68e6ec1dc8953fd0c283d4649a955c81da6ed24d825fb38f46d122241c580f4",
            "cri-o",
            QosClass.BURSTABLE),
        parseFixture("v2-crio-systemd.txt"));
  }

  @Test
  void v2CgroupfsDriver() {
    assertEquals(
        pod(
            "57a9ceb8-bf81-4a8a-8b35-e358da7b1eb3",
            "45ac895d998c66fa7eeb1de8829ca4cb7b4f6f366f23fe699442c8e7891b1db6",
            null,
            QosClass.BURSTABLE),
        parseFixture("v2-cgroupfs.txt"));
  }

  @Test
  void v2KindNodeSeenFromTheHostWithKubeletCgroupRoot() {
    assertEquals(
        pod(
            "bbf09597-50ed-4859-9186-de56d6e9c902",
            "94412046aa6b05474151b592dbc3526fee6bcb7dab14769feeeef375a94e58c1",
            "containerd",
            QosClass.BURSTABLE),
        parseFixture("v2-kind-systemd.txt"));
  }

  @Test
  void v2PauseProcessReportsItsSandboxIdAsTheContainer() {
    assertEquals(
        pod(
            "192b2baa-92de-4af6-b533-ee2e7548cecb",
            "7cc3f388352c4a0565e5f5abf779e3c06b027134c59ca1e1cc9bff095a7a88e8",
            "containerd",
            QosClass.BEST_EFFORT),
        parseFixture("v2-containerd-pause.txt"));
  }

  @Test
  void v2CrioConmonInThePodIsNotAContainer() {
    assertEquals(
        pod("1051e3de-2150-4d1f-a8d3-12a2b1fc4113", null, "cri-o", QosClass.BURSTABLE),
        parseFixture("v2-crio-conmon.txt"));
  }

  @Test
  void v2DeletedCgroupStillNamesItsPod() {
    assertEquals(
        pod(
            "fb9cd03a-955d-4dce-99ff-8922519ae3a6",
            "d22371ffcebc3babb8667ed996db760284882b71222ee407e413e11a01bcff70",
            "containerd",
            QosClass.BEST_EFFORT),
        parseFixture("v2-deleted.txt"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"v2-user-session.txt", "v2-init-scope.txt", "empty.txt", "garbage.txt"})
  void notAPodOrNotACgroupFileIsEmpty(String fixture) {
    assertEquals(Optional.empty(), parseFixture(fixture));
  }

  // Single paths

  @Test
  void cgroupfsPathsForEachQosClass() {
    assertEquals(
        pod(UID_A, CID_A, null, QosClass.BURSTABLE),
        CgroupParser.parse("0::/kubepods/burstable/pod" + UID_A + "/" + CID_A + "\n"));
    assertEquals(
        pod(UID_A, CID_A, null, QosClass.BEST_EFFORT),
        CgroupParser.parse("0::/kubepods/besteffort/pod" + UID_A + "/" + CID_A + "\n"));
    assertEquals(
        pod(UID_A, CID_A, null, QosClass.GUARANTEED),
        CgroupParser.parse("0::/kubepods/pod" + UID_A + "/" + CID_A + "\n"));
    assertEquals(
        pod(UID_A, CID_A, "cri-o", QosClass.GUARANTEED),
        CgroupParser.parse("0::/kubepods/pod" + UID_A + "/crio-" + CID_A + "\n"));
  }

  @Test
  void systemdDockerScopeAndPodSliceWithoutContainer() {
    String slice =
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
            + UID_A.replace('-', '_')
            + ".slice";
    assertEquals(
        pod(UID_A, CID_A, "docker", QosClass.BEST_EFFORT),
        CgroupParser.parse("0::" + slice + "/docker-" + CID_A + ".scope\n"));
    assertEquals(
        pod(UID_A, null, null, QosClass.BEST_EFFORT), CgroupParser.parse("0::" + slice + "\n"));
  }

  @Test
  void prefixesBeforeKubepodsAreSkipped() {
    assertEquals(
        pod(UID_A, CID_A, null, QosClass.BURSTABLE),
        CgroupParser.parse(
            "0::/docker/" + CID_B + "/kubepods/burstable/pod" + UID_A + "/" + CID_A + "\n"));
    assertEquals(
        pod(UID_A, CID_A, "containerd", QosClass.GUARANTEED),
        CgroupParser.parse(
            "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod"
                + UID_A.replace('-', '_')
                + ".slice/cri-containerd-"
                + CID_A
                + ".scope\n"));
  }

  @Test
  void segmentsBelowTheContainerAreIgnored() {
    assertEquals(
        pod(UID_A, CID_A, "cri-o", QosClass.BURSTABLE),
        CgroupParser.parse(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
                + UID_A.replace('-', '_')
                + ".slice/crio-"
                + CID_A
                + ".scope/container\n"));
  }

  @Test
  void nestedPodsGiveTheOutermostPod() {
    assertEquals(
        pod(UID_A, CID_A, null, QosClass.BURSTABLE),
        CgroupParser.parse(
            "0::/kubepods/burstable/pod"
                + UID_A
                + "/"
                + CID_A
                + "/kubelet/kubepods/besteffort/pod"
                + UID_B
                + "/"
                + CID_B
                + "\n"));
  }

  @Test
  void memoryLineIsPreferredThenCpuThenSystemdAndNonPodLinesAreSkipped() {
    String a = "/kubepods/burstable/pod" + UID_A + "/" + CID_A;
    String b = "/kubepods/burstable/pod" + UID_B + "/" + CID_B;
    assertEquals(
        UID_B,
        CgroupParser.parse("3:cpu,cpuacct:" + a + "\n2:memory:" + b + "\n1:name=systemd:" + a)
            .orElseThrow()
            .podUid());
    assertEquals(
        UID_B,
        CgroupParser.parse("4:pids:" + a + "\n3:cpu,cpuacct:" + b + "\n1:name=systemd:" + a)
            .orElseThrow()
            .podUid());
    assertEquals(
        UID_B,
        CgroupParser.parse("4:pids:" + a + "\n1:name=systemd:" + b + "\n0::" + a)
            .orElseThrow()
            .podUid());
    assertEquals(
        UID_A,
        CgroupParser.parse("9:memory:/\n3:cpu,cpuacct:/system.slice\n4:pids:" + a)
            .orElseThrow()
            .podUid());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "0::/",
        "0::/init.scope",
        "0::/system.slice/containerd.service",
        "0::/kubepods.slice",
        "0::/kubepods.slice/kubepods-burstable.slice",
        "0::/kubepods/burstable",
        "0::/other/burstable/pode0be2663-c627-4487-b140-c74b6b548473",
        "0::/kubepods/pod1234/" + CID_A,
        "0::/kubepods.slice/kubepods-podzz.slice",
        "0::/kubepods.slice/kubepods-pod.slice",
        "kubepods/pode0be2663-c627-4487-b140-c74b6b548473",
        "",
        "\n\n"
      })
  void pathsThatAreNotAPodAreEmpty(String content) {
    assertEquals(Optional.empty(), CgroupParser.parse(content));
  }

  @Test
  void nullContentIsEmpty() {
    assertEquals(Optional.empty(), CgroupParser.parse(null));
  }

  @Test
  void normaliseUidRestoresDashesAndLowerCase() {
    assertEquals(UID_A, CgroupParser.normaliseUid("E0BE2663_C627_4487_B140_C74B6B548473"));
    assertEquals(UID_A, CgroupParser.normaliseUid(UID_A));
    assertEquals(
        "c67a52dd86c9df92dfa4b2cafe4e3011",
        CgroupParser.normaliseUid("c67a52dd86c9df92dfa4b2cafe4e3011"));
  }

  static String fixture(String name) {
    try (InputStream in = CgroupParserTest.class.getResourceAsStream("/cgroup/" + name)) {
      if (in == null) {
        throw new IllegalArgumentException("no fixture " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Optional<PodCgroup> parseFixture(String name) {
    return CgroupParser.parse(fixture(name));
  }

  static Optional<PodCgroup> pod(String uid, String containerId, String runtime, QosClass qos) {
    return Optional.of(
        new PodCgroup(uid, Optional.ofNullable(containerId), Optional.ofNullable(runtime), qos));
  }
}
