package dev.gpushare.node.kube;

/**
 * Who else writes a node's status, and therefore what gpushare may write there.
 *
 * <ul>
 *   <li>{@link #KUBELET} (ordinary nodes): the kubelet owns capacity and allocatable of CPU, memory
 *       and ephemeral storage and rewrites them on every status update; gpushare writes only what
 *       no kubelet writes — the two percentage resources and its two conditions. The CPU and memory
 *       the sharing module keeps for itself are withheld from pods by the requests of the gpushare
 *       DaemonSet pod on the node, which the scheduler already subtracts.
 *   <li>{@link #VIRTUAL} (virtual nodes, no kubelet): gpushare also writes allocatable CPU, memory
 *       and ephemeral storage as SPEC §2 says, recording the node's own values first in {@link
 *       OwnAllocatable#ANNOTATION}.
 * </ul>
 */
public enum NodeStatusMode {
  KUBELET,
  VIRTUAL
}
