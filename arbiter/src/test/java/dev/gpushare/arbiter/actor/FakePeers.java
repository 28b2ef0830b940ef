package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.PodKey;
import java.util.ArrayList;
import java.util.List;

/**
 * The arbiter's followers in memory: every pod record notice and every change told, in order.
 * Thread-safe: the arbiter calls it from its own thread, tests read it from theirs.
 */
final class FakePeers implements ArbiterPeers {

  /** A notice as the pod's record received it. */
  record Notified(PodKey key, PodNotice notice) {}

  /** A change as the views heard it. */
  record Changed(PodKey key, boolean deleted) {}

  private final List<Notified> notices = new ArrayList<>();
  private final List<Changed> changes = new ArrayList<>();

  synchronized void reset() {
    notices.clear();
    changes.clear();
  }

  synchronized List<Notified> notices() {
    return List.copyOf(notices);
  }

  synchronized List<Changed> changes() {
    return List.copyOf(changes);
  }

  /** Notices the pod {@code entityId}'s record received, oldest first. */
  synchronized List<PodNotice> noticesTo(String entityId) {
    return notices.stream()
        .filter(n -> n.key().entityId().equals(entityId))
        .map(Notified::notice)
        .toList();
  }

  synchronized PodNotice lastNoticeTo(String entityId) {
    List<PodNotice> to = noticesTo(entityId);
    if (to.isEmpty()) {
      throw new AssertionError("pod " + entityId + " received no notice; all: " + notices);
    }
    return to.get(to.size() - 1);
  }

  /** How often the views heard that {@code entityId} changed. */
  synchronized long changesOf(String entityId) {
    return changes.stream().filter(c -> c.key().entityId().equals(entityId)).count();
  }

  @Override
  public synchronized void changed(PodKey pod, boolean deleted) {
    changes.add(new Changed(pod, deleted));
  }

  @Override
  public synchronized void record(PodKey pod, PodNotice notice) {
    notices.add(new Notified(pod, notice));
  }
}
