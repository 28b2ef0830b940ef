package dev.gpushare.arbiter;

import java.util.Comparator;
import java.util.List;
import java.util.OptionalInt;

/**
 * Where a share goes (SPEC §5 "Placement", §6 pinning): best fit — among the GPUs it fits, the one
 * that would have the least free room left (core plus memory percent), ties broken by the lowest
 * device index. Keeping whole GPUs free serves pods whose limit is 100.
 */
public final class Placement {
  private Placement() {}

  public static OptionalInt bestFit(List<GpuLoad> gpus, Share share) {
    return gpus.stream()
        .filter(g -> g.fits(share))
        .min(
            Comparator.comparingInt((GpuLoad g) -> g.roomLeftAfter(share))
                .thenComparingInt(GpuLoad::index))
        .map(g -> OptionalInt.of(g.index()))
        .orElse(OptionalInt.empty());
  }
}
