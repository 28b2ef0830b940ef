package dev.gpushare.gpu.proc;

import static dev.gpushare.gpu.proc.CgroupParserTest.fixture;
import static dev.gpushare.gpu.proc.CgroupParserTest.pod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.proc.PodCgroup.QosClass;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link ProcessPods} over a fake proc tree, and once over the real {@code /proc}. */
class ProcessPodsTest {

  private static final Optional<PodCgroup> CRIO_POD =
      pod(
          "ba860ddf-a4da-4592-99ea-db63b6e050ce",
          "b68e6ec1dc8953fd0c283d4649a955c81da6ed24d825fb38f46d122241c580f4",
          "cri-o",
          QosClass.BURSTABLE);
  private static final Optional<PodCgroup> CONTAINERD_POD =
      pod(
          "e0be2663-c627-4487-b140-c74b6b548473",
          "a569438a11023665114dea75bf5346664cff9727dda5712d1d5bd3e09eb92e19",
          "containerd",
          QosClass.BURSTABLE);

  @TempDir Path proc;

  @Test
  void readsEachProcessCgroupFile() throws IOException {
    writeCgroup(4242, fixture("v2-crio-systemd.txt"));
    writeCgroup(17, fixture("v1-containerd-systemd.txt"));
    writeCgroup(1, fixture("v1-system-service.txt"));
    ProcessPods pods = new ProcessPods(proc);

    assertEquals(CRIO_POD, pods.podOf(4242));
    assertEquals(CONTAINERD_POD, pods.podOf(17));
    assertEquals(Optional.empty(), pods.podOf(1));
  }

  @Test
  void exitedOrInvalidProcessIsEmpty() throws IOException {
    Files.createDirectories(proc.resolve("99")); // directory left without its cgroup file
    ProcessPods pods = new ProcessPods(proc);

    assertEquals(Optional.empty(), pods.podOf(12345));
    assertEquals(Optional.empty(), pods.podOf(99));
    assertEquals(Optional.empty(), pods.podOf(0));
    assertEquals(Optional.empty(), pods.podOf(-1));
    assertEquals(Optional.empty(), new ProcessPods(proc.resolve("absent")).podOf(1));
  }

  @Test
  void fileThatCannotBeReadIsEmpty() throws IOException {
    Files.createDirectories(proc.resolve("7").resolve("cgroup")); // read fails with an IOException
    assertEquals(Optional.empty(), new ProcessPods(proc).podOf(7));
  }

  @Test
  void fileWithoutReadPermissionIsEmpty() throws IOException {
    Path file = writeCgroup(8, fixture("v2-crio-systemd.txt"));
    assumeTrue(
        Files.getFileStore(file).supportsFileAttributeView("posix"), "needs POSIX permissions");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("---------"));
    assumeFalse(Files.isReadable(file), "running as root: permissions do not stop reads");

    assertEquals(Optional.empty(), new ProcessPods(proc).podOf(8));
  }

  @Test
  void bytesThatAreNotUtf8AreEmpty() throws IOException {
    Path dir = Files.createDirectories(proc.resolve("5"));
    Files.write(dir.resolve("cgroup"), new byte[] {0, (byte) 0xff, (byte) 0xc3, 0x28, ':', '\n'});
    assertEquals(Optional.empty(), new ProcessPods(proc).podOf(5));

    try (InputStream garbage = getClass().getResourceAsStream("/cgroup/garbage.txt")) {
      Files.write(dir.resolve("cgroup"), garbage.readAllBytes());
    }
    assertEquals(Optional.empty(), new ProcessPods(proc).podOf(5));
  }

  @Test
  void answerFollowsTheFileWhenItChangesOrDisappears() throws IOException {
    ProcessPods pods = new ProcessPods(proc);
    Path file = writeCgroup(300, fixture("v2-crio-systemd.txt"));
    assertEquals(CRIO_POD, pods.podOf(300));

    // The pid is reused by a process of another pod.
    writeCgroup(300, fixture("v1-containerd-systemd.txt"));
    assertEquals(CONTAINERD_POD, pods.podOf(300));

    // The process is moved out of the pod.
    writeCgroup(300, fixture("v2-user-session.txt"));
    assertEquals(Optional.empty(), pods.podOf(300));

    // The process exits.
    Files.delete(file);
    assertEquals(Optional.empty(), pods.podOf(300));
  }

  @Test
  void readsTheRealProcSelfCgroupWithoutThrowing() throws IOException {
    Path self = Path.of("/proc/self/cgroup");
    assumeTrue(Files.isReadable(self), "no /proc here");
    String content = Files.readString(self);

    Optional<PodCgroup> pod = new ProcessPods().podOf(ProcessHandle.current().pid());

    // The build does not run in a pod here, so this is empty; were it run in one, it would be
    // found.
    assertEquals(content.contains("kubepods"), pod.isPresent(), content);
    assertEquals(CgroupParser.parse(content), pod);
  }

  private Path writeCgroup(long pid, String content) throws IOException {
    Path dir = Files.createDirectories(proc.resolve(Long.toString(pid)));
    return Files.writeString(dir.resolve("cgroup"), content, StandardCharsets.UTF_8);
  }

  /**
   * A member without hostPID reads the host's /proc elsewhere (gpushare.gpu.host-proc): a host PID
   * that this process's own namespace gives to another process (here this very JVM, which is in no
   * pod) is never signalled, whatever pod the host's tree says it is in.
   */
  @Test
  void aHostPidThatNamesAnotherProcessHereIsNeverKilled() throws IOException {
    long me = ProcessHandle.current().pid();
    assumeFalse(new ProcessPods().podOf(me).isPresent(), "this test runs in a pod itself");
    writeCgroup(me, fixture("v1-containerd-systemd.txt"));
    ProcessPods host = new ProcessPods(proc);
    dev.gpushare.gpu.GpuBackend member =
        new dev.gpushare.gpu.GpuBackend() {
          @Override
          public String name() {
            return "host-proc elsewhere";
          }

          @Override
          public java.util.List<dev.gpushare.gpu.GpuDevice> devices() {
            return java.util.List.of();
          }

          @Override
          public boolean healthy(String uuid) {
            return true;
          }

          @Override
          public java.util.List<dev.gpushare.gpu.GpuSample> sample() {
            return java.util.List.of();
          }

          @Override
          public ProcessPods processes() {
            return host;
          }
        };
    assertEquals(CONTAINERD_POD.map(PodCgroup::podUid), member.podUidOf(me), "mapped to its pod");
    assertEquals(false, member.kill(me), "not the same process in this namespace: not signalled");
    assertEquals(true, ProcessHandle.current().isAlive());
  }

  @Test
  void aTreeKnowsWhetherItIsThisProcesssOwnNamespace() throws IOException {
    assumeTrue(Files.isSymbolicLink(Path.of("/proc/self")), "no /proc here");
    assertEquals(true, new ProcessPods().isOwnNamespace());
    Files.createSymbolicLink(proc.resolve("self"), Path.of("999999999"));
    assertEquals(false, new ProcessPods(proc).isOwnNamespace(), "the host's, mounted elsewhere");
  }
}
