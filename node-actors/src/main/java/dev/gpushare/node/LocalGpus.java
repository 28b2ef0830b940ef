package dev.gpushare.node;

import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.gpu.ScriptableGpus;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The GPUs this member can see, by node: which nodes it samples telemetry of, and through which
 * backend. The rule:
 *
 * <ul>
 *   <li>A member that runs on a node (cluster role {@code node:<name>}) samples that node only:
 *       through the real backend it was given (NVML), else a simulated backend shaped like the
 *       node's registered GPUs.
 *   <li>A member on no node that forms its own cluster (the embedded default) samples every
 *       registered node, each through a simulated backend.
 *   <li>Any other member (a control-plane-only member of a cluster) samples nothing.
 * </ul>
 *
 * A simulated backend ({@link GpuBackends#simulated}) keeps its script ({@link ScriptableGpus}) for
 * as long as the member runs and the node keeps its GPU count.
 */
final class LocalGpus {
  private final Optional<String> ownNode;
  private final Optional<GpuBackend> real;
  private final boolean samplesEveryNode;
  private final Map<String, GpuBackend> simulated = new ConcurrentHashMap<>();

  /**
   * @param ownNode the node this member runs on, if any
   * @param real the backend of that node's GPUs when it is not simulated
   * @param samplesEveryNode whether this member samples every registered node (embedded mode)
   */
  LocalGpus(Optional<String> ownNode, Optional<GpuBackend> real, boolean samplesEveryNode) {
    this.ownNode = ownNode;
    this.real = ownNode.isPresent() ? real : Optional.empty();
    this.samplesEveryNode = samplesEveryNode && ownNode.isEmpty();
  }

  /** Whether this member samples {@code node}. */
  boolean samples(String node) {
    return samplesEveryNode || ownNode.map(node::equals).orElse(false);
  }

  /** Of {@code registered}, the nodes this member samples. */
  List<String> sampled(List<String> registered) {
    return registered.stream().filter(this::samples).toList();
  }

  /** The real backend of this member's node, if it has one. */
  Optional<GpuBackend> real(String node) {
    return ownNode.map(node::equals).orElse(false) ? real : Optional.empty();
  }

  /**
   * The backend to sample {@code node} through, whose registered GPUs are {@code gpus}: the real
   * one, or a simulated one of that shape (made anew, script dropped, when the shape changed).
   */
  Optional<GpuBackend> backend(String node, List<GpuDevice> gpus) {
    if (!samples(node)) {
      return Optional.empty();
    }
    if (real(node).isPresent()) {
      return real(node);
    }
    return Optional.of(simulated(node, gpus));
  }

  /** The simulated GPUs of {@code node} shaped like {@code gpus}, to script. */
  ScriptableGpus scriptable(String node, List<GpuDevice> gpus) {
    return simulated(node, gpus)
        .scriptable()
        .orElseThrow(() -> new IllegalStateException("a simulated backend can be scripted"));
  }

  /** The simulated backend of {@code node} shaped like {@code gpus}. */
  private GpuBackend simulated(String node, List<GpuDevice> gpus) {
    String model = gpus.isEmpty() ? RuntimeSettings.DEFAULT_GPU_MODEL : gpus.get(0).model();
    long memory = gpus.isEmpty() ? RuntimeSettings.DEFAULT_GPU_MEMORY_MIB : gpus.get(0).memoryMiB();
    return simulated.compute(
        node,
        (n, was) ->
            was != null && was.devices().equals(gpus)
                ? was
                : GpuBackends.simulated(n, gpus.size(), model, memory));
  }
}
