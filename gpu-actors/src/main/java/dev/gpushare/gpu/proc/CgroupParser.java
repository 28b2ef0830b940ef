package dev.gpushare.gpu.proc;

import dev.gpushare.gpu.proc.PodCgroup.QosClass;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds the pod of a process from the text of its {@code /proc/<pid>/cgroup}.
 *
 * <p>The file has one line per hierarchy, {@code <id>:<controllers>:<path>}: many lines under
 * cgroup v1 (hybrid systems add a {@code 0::} line) and the single line {@code 0::<path>} under
 * cgroup v2. Lines are tried in the order {@code memory}, {@code cpu}, {@code name=systemd}, the
 * unified {@code 0::} line, then the rest, and the first whose path names a pod wins (in practice
 * they all agree; the order only matters when some hierarchy is left at {@code /}).
 *
 * <p>A path names a pod when one of its segments is a kubelet pod cgroup, wherever it sits (kind
 * nodes, {@code --cgroup-root}, or a runtime under {@code containerd.service} add a prefix):
 *
 * <ul>
 *   <li>systemd driver: {@code [<prefix>-]kubepods[-burstable|-besteffort]-pod<uid>.slice}, with
 *       the UID's dashes written as underscores ({@code kubelet-kubepods-...} under kind);
 *   <li>cgroupfs driver: {@code pod<uid>} directly under {@code kubepods}, {@code
 *       kubepods/burstable} or {@code kubepods/besteffort}.
 * </ul>
 *
 * The segment right after the pod's names the container: {@code cri-containerd-<id>.scope}, {@code
 * crio-<id>.scope}, {@code docker-<id>.scope} (systemd), a bare {@code <id>} or {@code crio-<id>}
 * (cgroupfs), with {@code <id>} 64 hex digits; deeper segments are ignored. A runtime whose driver
 * does not match the kubelet's writes {@code <pod slice>:<prefix>:<id>} as one segment, which is
 * read the same way. When pods nest (a cluster inside a pod), the outermost pod is the one this
 * node's kubelet runs, and is the one returned. A path marked {@code (deleted)} (a process left in
 * a removed cgroup) still names its pod.
 *
 * <p>Anything else, including malformed text, yields empty; nothing here throws.
 */
public final class CgroupParser {

  private static final Pattern SYSTEMD_POD =
      Pattern.compile("(?:.+-)?kubepods(?:-(burstable|besteffort))?-pod([0-9A-Fa-f_]+)\\.slice");
  private static final Pattern CGROUPFS_POD = Pattern.compile("pod([0-9A-Fa-f-]+)");
  private static final Pattern CONTAINER =
      Pattern.compile("(?:(cri-containerd|crio|docker)-)?([0-9a-f]{64})(?:\\.scope)?");
  private static final Pattern CRIO_CONMON =
      Pattern.compile("crio-conmon-[0-9a-f]{64}(?:\\.scope)?");
  private static final Pattern UID =
      Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}");
  private static final String DELETED = " (deleted)";

  private CgroupParser() {}

  /**
   * The pod of the process whose {@code /proc/<pid>/cgroup} reads {@code procCgroupFileContent}, or
   * empty when it is not in a pod or the text is not a cgroup file.
   */
  public static Optional<PodCgroup> parse(String procCgroupFileContent) {
    if (procCgroupFileContent == null) {
      return Optional.empty();
    }
    List<Line> lines = new ArrayList<>();
    for (String raw : procCgroupFileContent.split("\\R")) {
      Line line = Line.of(raw);
      if (line != null) {
        lines.add(line);
      }
    }
    lines.sort(Comparator.comparingInt(Line::rank));
    for (Line line : lines) {
      Optional<PodCgroup> pod = parsePath(line.path());
      if (pod.isPresent()) {
        return pod;
      }
    }
    return Optional.empty();
  }

  /**
   * A pod UID as Kubernetes writes it: lower case, with the underscores of a systemd slice name
   * turned back into dashes ({@code 1234ABCD_56ef_...} becomes {@code 1234abcd-56ef-...}).
   */
  public static String normaliseUid(String uid) {
    return Objects.requireNonNull(uid, "uid").trim().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /** The pod named by one cgroup path, e.g. {@code /kubepods/burstable/pod<uid>/<id>}. */
  static Optional<PodCgroup> parsePath(String path) {
    String[] segments = path.split("/");
    for (int i = 0; i < segments.length; i++) {
      String segment = segments[i];
      String child = i + 1 < segments.length ? segments[i + 1] : "";
      // A runtime on the cgroupfs driver given a systemd cgroupsPath: "<slice>:<prefix>:<id>".
      String[] mixed = segment.split(":", -1);
      if (mixed.length == 3) {
        segment = mixed[0];
        child = mixed[1] + "-" + mixed[2];
      }
      Optional<PodCgroup> pod = systemdPod(segment, child);
      if (pod.isEmpty()) {
        pod = cgroupfsPod(segments, i, child);
      }
      if (pod.isPresent()) {
        return pod;
      }
    }
    return Optional.empty();
  }

  private static Optional<PodCgroup> systemdPod(String segment, String child) {
    Matcher m = SYSTEMD_POD.matcher(segment);
    if (!m.matches()) {
      return Optional.empty();
    }
    QosClass qos;
    if (m.group(1) == null) {
      qos = QosClass.GUARANTEED;
    } else if (m.group(1).equals("burstable")) {
      qos = QosClass.BURSTABLE;
    } else {
      qos = QosClass.BEST_EFFORT;
    }
    return pod(m.group(2), qos, child);
  }

  private static Optional<PodCgroup> cgroupfsPod(String[] segments, int i, String child) {
    Matcher m = CGROUPFS_POD.matcher(segments[i]);
    if (!m.matches() || i == 0) {
      return Optional.empty();
    }
    String parent = segments[i - 1];
    QosClass qos;
    if (parent.equals("kubepods")) {
      qos = QosClass.GUARANTEED;
    } else if (i >= 2 && segments[i - 2].equals("kubepods") && parent.equals("burstable")) {
      qos = QosClass.BURSTABLE;
    } else if (i >= 2 && segments[i - 2].equals("kubepods") && parent.equals("besteffort")) {
      qos = QosClass.BEST_EFFORT;
    } else {
      return Optional.empty();
    }
    return pod(m.group(1), qos, child);
  }

  private static Optional<PodCgroup> pod(String rawUid, QosClass qos, String child) {
    String uid = normaliseUid(rawUid);
    if (!UID.matcher(uid).matches()) {
      return Optional.empty();
    }
    Optional<String> containerId = Optional.empty();
    Optional<String> runtime = Optional.empty();
    Matcher c = CONTAINER.matcher(child);
    if (c.matches()) {
      containerId = Optional.of(c.group(2));
      runtime = Optional.ofNullable(runtimeOf(c.group(1)));
    } else if (CRIO_CONMON.matcher(child).matches()) {
      runtime = Optional.of("cri-o");
    }
    return Optional.of(new PodCgroup(uid, containerId, runtime, qos));
  }

  private static String runtimeOf(String prefix) {
    if (prefix == null) {
      return null;
    }
    switch (prefix) {
      case "cri-containerd":
        return "containerd";
      case "crio":
        return "cri-o";
      case "docker":
        return "docker";
      default:
        return null;
    }
  }

  /** One well-formed line of the file; {@code rank} orders the hierarchies to try. */
  private record Line(int rank, String path) {

    static Line of(String raw) {
      int first = raw.indexOf(':');
      int second = first < 0 ? -1 : raw.indexOf(':', first + 1);
      if (first <= 0 || second < 0 || !raw.substring(0, first).chars().allMatch(Line::isDigit)) {
        return null;
      }
      String controllers = raw.substring(first + 1, second);
      String path = raw.substring(second + 1);
      if (path.endsWith(DELETED)) {
        path = path.substring(0, path.length() - DELETED.length());
      }
      if (!path.startsWith("/")) {
        return null;
      }
      List<String> names = List.of(controllers.split(","));
      int rank;
      if (names.contains("memory")) {
        rank = 0;
      } else if (names.contains("cpu")) {
        rank = 1;
      } else if (names.contains("name=systemd")) {
        rank = 2;
      } else if (controllers.isEmpty()) {
        rank = 3;
      } else {
        rank = 4;
      }
      return new Line(rank, path);
    }

    private static boolean isDigit(int ch) {
      return ch >= '0' && ch <= '9';
    }
  }
}
