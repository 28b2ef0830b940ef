package dev.gpushare.arbiter;

/**
 * CPU and memory the sharing module withholds from pods, per GPU of the node (SPEC §2). The
 * default, 2 CPUs and 10Gi per GPU, gives exactly the reference figures for 16 GPUs (176 → 144
 * CPUs, 1800Gi → 1640Gi).
 *
 * @param cpu a Kubernetes quantity ({@code "2"}, {@code "500m"})
 * @param memory a Kubernetes quantity ({@code "10Gi"})
 */
public record ReservedPerGpu(String cpu, String memory) implements JsonSerializable {
  public static final ReservedPerGpu DEFAULT = new ReservedPerGpu("2", "10Gi");
}
