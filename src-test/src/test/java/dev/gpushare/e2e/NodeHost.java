package dev.gpushare.e2e;

import dev.gpushare.gpu.ChildProcess;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * What a real node ({@link RealNode}) changes on this machine outside its own folder, recorded
 * before it starts and put back by {@link #restore}: the sysctls the kubelet sets, the paths the
 * kubelet, containerd and the DaemonSet's hostPath write to whatever their configuration says, the
 * cgroups {@code kubepods} and {@code k8s.io} of every hierarchy, the processes that containerd
 * re-parents away from the test (the runc shims), and every mount under the node's paths. One node
 * at a time on a machine: {@link #claim} holds a lock file until {@link #restore}.
 */
final class NodeHost {

  /** The sysctls the kubelet sets at start (protectKernelDefaults false), with their values. */
  static final List<String> SYSCTLS =
      List.of("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops");

  /**
   * Paths the node may write whatever its configuration: the kubelet's device-plugin socket and
   * container log links (hard-coded), containerd's defaults, the CNI plugins' cache, and the
   * DaemonSet's hostPath {@code /run/gpushare/data-plane}.
   */
  static final List<Path> PATHS =
      List.of(
          Path.of("/var/lib/kubelet"),
          Path.of("/var/log/containers"),
          Path.of("/var/log/pods"),
          Path.of("/run/containerd"),
          Path.of("/var/lib/containerd"),
          Path.of("/opt/containerd"),
          Path.of("/var/lib/cni"),
          Path.of("/run/gpushare"));

  /**
   * {@code ip netns}' folder: the node's namespace in it is deleted by name ({@link RealNode});
   * others' namespaces made meanwhile are left alone, and the folder goes only if the node made it.
   */
  static final Path NETNS = Path.of("/run/netns");

  static final Path CGROUPS = Path.of("/sys/fs/cgroup");
  static final List<String> CGROUP_NAMES = List.of("kubepods", "k8s.io");

  private final Path lockPath;
  private final FileChannel lockFile;
  private final FileLock lock;
  private final Map<String, String> sysctls = new LinkedHashMap<>();
  private final Map<Path, Set<Path>> before = new LinkedHashMap<>();
  private final Set<Path> cgroupsBefore = new HashSet<>();
  private final Set<String> mountsBefore = new HashSet<>();
  private boolean netnsBefore;

  private NodeHost(Path lockPath, FileChannel lockFile, FileLock lock) {
    this.lockPath = lockPath;
    this.lockFile = lockFile;
    this.lock = lock;
  }

  /**
   * Waits (10 minutes at most) until no other node runs here ({@code lock}, a file every node of
   * this machine uses), then records the machine.
   */
  static NodeHost claim(Path lock) throws IOException {
    FileChannel channel =
        FileChannel.open(lock, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
    FileLock held;
    while ((held = channel.tryLock()) == null) {
      if (System.nanoTime() > deadline) {
        channel.close();
        throw new AssertionError("another real node holds " + lock + " for over 10 minutes");
      }
      sleep(500);
    }
    NodeHost host = new NodeHost(lock, channel, held);
    for (String s : SYSCTLS) {
      host.sysctls.put(s, sysctl(s));
    }
    for (Path p : PATHS) {
      host.before.put(p, tree(p));
    }
    host.cgroupsBefore.addAll(cgroups());
    host.mountsBefore.addAll(mountsUnder(PATHS));
    host.netnsBefore = Files.exists(NETNS);
    return host;
  }

  /**
   * Puts the machine back: kills the shims whose command line names {@code mark} (the node's
   * folder, in their containerd address) with their containers, unmounts what is mounted under
   * {@code mark} and under the recorded paths, removes what appeared under those paths and the new
   * cgroups, restores the sysctls, and lets the next node start. Answers what it could not undo.
   */
  List<String> restore(Path mark) {
    List<String> failed = new ArrayList<>();
    try {
      for (ProcessHandle shim : shims(mark)) {
        List<ProcessHandle> left = ChildProcess.killTree(shim);
        if (!left.isEmpty()) {
          failed.add("shim " + shim.pid() + " and its containers still run: " + left);
        }
      }
      List<Path> roots = new ArrayList<>(List.of(mark));
      roots.addAll(PATHS);
      for (String m : unmount(roots, mountsBefore)) {
        failed.add("still mounted: " + m);
      }
      for (var e : before.entrySet()) {
        Set<Path> now = tree(e.getKey());
        now.removeAll(e.getValue());
        now.stream()
            .sorted(Comparator.comparingInt(Path::getNameCount).reversed())
            .forEach(
                p -> {
                  try {
                    Files.deleteIfExists(p);
                  } catch (IOException x) {
                    failed.add("cannot remove " + p + ": " + x);
                  }
                });
      }
      if (!netnsBefore && Files.isDirectory(NETNS) && tree(NETNS).size() == 1) {
        // ip netns made it a mount of its own: unmounted and removed, as it was not there.
        if (mountsUnder(List.of(NETNS)).contains(NETNS.toString())) {
          NodeImages.run(List.of("umount", NETNS.toString()), null);
        }
        try {
          Files.deleteIfExists(NETNS);
        } catch (IOException x) {
          failed.add("cannot remove " + NETNS + ": " + x);
        }
      }
      for (Path cg : cgroups()) {
        if (!cgroupsBefore.contains(cg)) {
          removeCgroup(cg, failed);
        }
      }
      for (var s : sysctls.entrySet()) {
        try {
          if (!sysctl(s.getKey()).equals(s.getValue())) {
            Files.writeString(Path.of("/proc/sys", s.getKey()), s.getValue());
          }
        } catch (IOException x) {
          failed.add("cannot restore sysctl " + s.getKey() + "=" + s.getValue() + ": " + x);
        }
      }
    } finally {
      try {
        lock.release();
        lockFile.close();
      } catch (IOException e) {
        failed.add("lock " + lockPath + ": " + e);
      }
    }
    return failed;
  }

  /**
   * A sysctl's value, read in one call: the kernel answers a read at a later offset of these files
   * with end-of-file, so a reader that takes one byte first (Files.readString) sees "1" for "10".
   */
  static String sysctl(String name) throws IOException {
    try (var in = Files.newInputStream(Path.of("/proc/sys", name))) {
      return new String(in.readNBytes(4096), java.nio.charset.StandardCharsets.US_ASCII).strip();
    }
  }

  /** The runc shims (and whatever else) whose command line names {@code mark}. */
  static List<ProcessHandle> shims(Path mark) {
    String needle = mark.toString();
    return ProcessHandle.allProcesses()
        .filter(p -> p.pid() != ProcessHandle.current().pid())
        .filter(
            p -> {
              try {
                String cmdline =
                    Files.readString(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
                return cmdline.contains("containerd-shim") && cmdline.contains(needle);
              } catch (IOException | RuntimeException e) {
                return false;
              }
            })
        .toList();
  }

  /**
   * Unmounts (deepest first, lazily when busy) every mount under {@code roots} but {@code keep}.
   */
  static List<String> unmount(List<Path> roots, Set<String> keep) {
    for (int round = 0; round < 3; round++) {
      List<String> mounts = new ArrayList<>(mountsUnder(roots));
      mounts.removeAll(keep);
      if (mounts.isEmpty()) {
        return List.of();
      }
      for (String m : mounts) {
        var r = NodeImages.run(List.of("umount", m), null);
        if (r.status() != 0) {
          NodeImages.run(List.of("umount", "-l", m), null);
        }
      }
    }
    List<String> left = new ArrayList<>(mountsUnder(roots));
    left.removeAll(keep);
    return left;
  }

  static List<String> mountsUnder(List<Path> roots) {
    try {
      List<String> out = new ArrayList<>();
      for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
        String point = unescape(line.split(" ")[4]);
        for (Path root : roots) {
          if (point.equals(root.toString()) || point.startsWith(root + "/")) {
            out.add(point);
            break;
          }
        }
      }
      out.sort(Comparator.comparingInt(String::length).reversed());
      return out;
    } catch (IOException e) {
      return List.of("(cannot read /proc/self/mountinfo: " + e + ")");
    }
  }

  private static String unescape(String s) {
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n");
  }

  /** {@code kubepods} and {@code k8s.io} of every hierarchy (v1 controllers, and v2). */
  static List<Path> cgroups() {
    List<Path> out = new ArrayList<>();
    try (Stream<Path> hierarchies = Files.list(CGROUPS)) {
      for (Path h : hierarchies.toList()) {
        for (String name : CGROUP_NAMES) {
          if (Files.isDirectory(h.resolve(name))) {
            out.add(h.resolve(name));
          }
        }
      }
    } catch (IOException e) {
      // no cgroup file system: nothing to remove
    }
    return out;
  }

  /** rmdir, deepest first; a cgroup keeps its processes' accounting a moment after they die. */
  private static void removeCgroup(Path cgroup, List<String> failed) {
    for (int attempt = 0; attempt < 50; attempt++) {
      try (Stream<Path> walk = Files.walk(cgroup)) {
        List<Path> dirs =
            walk.filter(Files::isDirectory)
                .sorted(Comparator.comparingInt(Path::getNameCount).reversed())
                .toList();
        for (Path d : dirs) {
          try {
            Files.deleteIfExists(d);
          } catch (IOException e) {
            // busy a moment longer: the next attempt
          }
        }
      } catch (IOException | java.io.UncheckedIOException e) {
        // gone meanwhile
      }
      if (!Files.exists(cgroup)) {
        return;
      }
      sleep(100);
    }
    failed.add("cgroup " + cgroup + " could not be removed");
  }

  /** Every path under {@code root} (itself included), not following links; empty if absent. */
  static Set<Path> tree(Path root) {
    Set<Path> out = new HashSet<>();
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return out;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      walk.forEach(out::add);
    } catch (IOException | java.io.UncheckedIOException e) {
      out.add(root);
    }
    return out;
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
