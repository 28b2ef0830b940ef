package dev.gpushare.arbiter;

import java.util.Map;
import java.util.TreeMap;

/**
 * What one GPU carries, as placement sees it: the shares held on it by pod (limits in share-pool,
 * requests in static), and whether it may take new work.
 */
public record GpuLoad(int index, boolean healthy, Map<String, Share> held) {

  public GpuLoad {
    held = new TreeMap<>(held);
  }

  public Share used() {
    return held.values().stream().reduce(Share.NONE, Share::plus);
  }

  public boolean fits(Share share) {
    return healthy && share.fitsBeside(used());
  }

  /** Free room that would be left after adding {@code share}: core plus memory percent. */
  public int roomLeftAfter(Share share) {
    Share after = used().plus(share);
    return (100 - after.core()) + (100 - after.memory());
  }
}
