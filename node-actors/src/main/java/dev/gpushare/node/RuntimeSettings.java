package dev.gpushare.node;

import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import java.time.Duration;
import java.util.List;

/**
 * How the node runtime is set up: the configured nodes to register at first start (a node already
 * in the journal keeps what the journal says), what the sharing module reserves per GPU, and how
 * long internal asks may take, and the GPU side ({@link GpuSettings}).
 */
public record RuntimeSettings(
    List<ConfiguredNode> nodes,
    ReservedPerGpu reservedPerGpu,
    Duration askTimeout,
    GpuSettings gpu) {

  /** With the default GPU settings ({@link GpuSettings#DEFAULT}). */
  public RuntimeSettings(
      List<ConfiguredNode> nodes, ReservedPerGpu reservedPerGpu, Duration askTimeout) {
    this(nodes, reservedPerGpu, askTimeout, GpuSettings.DEFAULT);
  }

  /**
   * A GPU-HPN node of the configuration (embedded mode): its manifest ({@code
   * status.capacity["nvidia.com/gpu"]} gives the number of GPUs) and the model and memory its GPUs
   * report until hardware reports its own.
   */
  public record ConfiguredNode(NodeManifest manifest, String gpuModel, long gpuMemoryMiB) {}

  public static final String DEFAULT_GPU_MODEL = "NVIDIA H800";
  public static final long DEFAULT_GPU_MEMORY_MIB = 81559;
}
