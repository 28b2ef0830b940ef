package dev.gpushare.arbiter;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Small builders for arbitration tests. */
final class Books {
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private Books() {}

  static ShareBook node(int gpus, SharePolicy policy, QosConfig qos) {
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (int i = 0; i < gpus; i++) {
      slots.add(new ShareBook.GpuSlot(i, "GPU-" + i, true));
    }
    return ShareBook.empty("n1").withGpus(slots).withPolicy(policy, qos);
  }

  static PodKey key(String name) {
    return new PodKey("default", name, "uid-" + name);
  }

  static String id(String name) {
    return key(name).entityId();
  }

  static ShareBook pool(ShareBook book, String name, int request, int limit) {
    return book.addPod(
        key(name),
        PodSharing.shared(
            SharePolicy.SHARE_POOL, new Share(request, request), new Share(limit, limit), "c"));
  }

  static ShareBook pinned(ShareBook book, String name, int request) {
    return book.addPod(
        key(name),
        PodSharing.shared(
            SharePolicy.STATIC, new Share(request, request), new Share(100, 100), "c"));
  }

  static ShareBook demand(ShareBook book, String name, Instant at) {
    return book.enqueue(id(name), at).settle(at);
  }

  static List<String> queueNames(ShareBook book) {
    return book.queue().entries().stream().map(e -> e.pod().split("/")[1]).toList();
  }
}
