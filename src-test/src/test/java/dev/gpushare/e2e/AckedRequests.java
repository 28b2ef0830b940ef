package dev.gpushare.e2e;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * What clients know of the demands and releases they sent while members fail: which requests were
 * acknowledged, and which were left unanswered (and so may or may not have taken effect). The
 * fail-over tests check with {@link #lost} that every acknowledged request is still in force.
 */
final class AckedRequests {
  private AckedRequests() {}

  enum Kind {
    DEMAND,
    RELEASE
  }

  /** The states a pod may be in after the last acknowledged request of this kind. */
  static Set<String> effect(Kind kind) {
    if (kind == Kind.DEMAND) {
      return Set.of("Ready", "Running");
    }
    return Set.of("Hibernation"); // null (never demanded) too
  }

  /** One request: when it was sent, whether and when it was acknowledged. */
  static final class Op {
    final String pod;
    final Kind kind;
    final String via;
    final long sendNanos;
    volatile long ackNanos = -1;
    volatile int status = -1;
    volatile String answer;

    Op(String pod, Kind kind, String via) {
      this.pod = pod;
      this.kind = kind;
      this.via = via;
      this.sendNanos = System.nanoTime();
    }

    @Override
    public String toString() {
      return kind
          + " "
          + pod
          + " via "
          + via
          + (ackNanos > 0 ? " acked" : " → " + (status < 0 ? "" : status + " ") + answer);
    }
  }

  /** What a client knows of one pod: its last acknowledged request, and an unanswered one. */
  static final class Track {
    final String pod;
    Kind lastAcked = Kind.RELEASE; // Hibernation at the start
    Op lastAckedOp;
    Op lastDemand;
    Op uncertain;

    Track(String pod) {
      this.pod = pod;
    }

    @Override
    public String toString() {
      return "last acknowledged " + lastAckedOp + ", unanswered " + uncertain;
    }
  }

  /**
   * The pods whose state contradicts their last acknowledged request (allowing either outcome of an
   * unanswered request after it), each with why; empty when nothing acknowledged was lost.
   */
  static List<String> lost(Collection<Track> tracks, Function<String, String> stateOf) {
    List<String> lost = new ArrayList<>();
    for (Track track : tracks) {
      String state = stateOf.apply(track.pod);
      if (track.uncertain != null) {
        Set<String> allowed = new HashSet<>(effect(track.lastAcked));
        allowed.addAll(effect(track.uncertain.kind));
        if (!allowed.contains(state)) {
          lost.add(track.pod + " is " + state + ", allowed " + allowed + " (" + track + ")");
        }
      } else if (!effect(track.lastAcked).contains(state)) {
        lost.add(track.pod + " is " + state + " after acknowledged " + track.lastAckedOp);
      }
    }
    return lost;
  }
}
