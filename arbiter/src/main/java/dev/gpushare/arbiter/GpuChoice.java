package dev.gpushare.arbiter;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/**
 * Which fitting GPU of a node a grant or a pin takes ({@code gpushare.placement}): the one setting
 * that the node's arbiter and the scheduler extender's score share, so that the extender scores a
 * node on the GPU the arbiter will really pick.
 *
 * <ul>
 *   <li>{@link #BEST_FIT} (default): SPEC §5 "Placement" and §6 — the GPU with the least free room
 *       left, ties by lowest index ({@link Placement#bestFit}). The reference example and its tests
 *       are stated in these terms.
 *   <li>{@link #LEAST_FRAGMENTING}: the fragmentation-aware choice of the extender's score and the
 *       trace replay applied inside the node ({@link Placement#leastFragmenting(List, Share)}): the
 *       GPU whose taking leaves the node's free compute usable by the most of the node's own share
 *       classes; equal choices fall back to best fit. Opt-in: it departs from SPEC §5's rule where
 *       the tightest GPU would keep a remainder no share on the node can use.
 * </ul>
 */
public enum GpuChoice {
  BEST_FIT("best-fit"),
  LEAST_FRAGMENTING("least-fragmenting");

  private final String key;

  GpuChoice(String key) {
    this.key = key;
  }

  /** The configuration value. */
  public String key() {
    return key;
  }

  public static Optional<GpuChoice> byKey(String key) {
    return Arrays.stream(values()).filter(c -> c.key.equals(key)).findFirst();
  }

  /** The accepted values, for error messages. */
  public static String keys() {
    return Arrays.stream(values()).map(GpuChoice::key).collect(Collectors.joining(" or "));
  }

  /** The GPU {@code share} goes to, among those it fits; empty when it fits none. */
  public OptionalInt choose(List<GpuLoad> gpus, Share share) {
    return this == BEST_FIT
        ? Placement.bestFit(gpus, share)
        : Placement.leastFragmenting(gpus, share);
  }
}
