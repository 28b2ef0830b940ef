package dev.gpushare.gpu.proc;

import java.util.Objects;
import java.util.Optional;

/**
 * The Kubernetes pod (and, when the path names one, the container) that a process's cgroup places
 * it in, as read from {@code /proc/<pid>/cgroup} by {@link CgroupParser}.
 *
 * <p>The rule for each part:
 *
 * <ul>
 *   <li>{@code podUid}: the pod's {@code metadata.uid} in canonical form, lower case with dashes
 *       ({@code 1234abcd-...}); the systemd driver's underscores are turned back into dashes.
 *       Static (mirror) pods keep their 32-hex-digit UID, which has no dashes to restore.
 *   <li>{@code containerId}: the 64-hex-digit runtime ID of the cgroup directly under the pod's, as
 *       CRI reports it (without a {@code containerd://} style scheme). Empty when the process sits
 *       in the pod cgroup itself or in a child that is not a container (CRI-O's {@code
 *       crio-conmon-*}). A sandbox's pause process has its own container cgroup, so it reports the
 *       sandbox ID: the cgroup alone cannot tell a sandbox from a container.
 *   <li>{@code runtime}: {@code containerd}, {@code cri-o} or {@code docker} when the child's name
 *       carries the runtime's prefix ({@code cri-containerd-}, {@code crio-}, {@code docker-});
 *       empty for the cgroupfs driver's bare IDs, which every runtime writes alike.
 *   <li>{@code qos}: from the QoS level in the path; a pod directly under {@code kubepods} is
 *       Guaranteed.
 * </ul>
 */
public record PodCgroup(
    String podUid, Optional<String> containerId, Optional<String> runtime, QosClass qos) {

  /** The pod QoS classes, which the kubelet uses as the cgroup level above the pods. */
  public enum QosClass {
    GUARANTEED,
    BURSTABLE,
    BEST_EFFORT
  }

  public PodCgroup {
    Objects.requireNonNull(podUid, "podUid");
    Objects.requireNonNull(containerId, "containerId");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(qos, "qos");
  }
}
