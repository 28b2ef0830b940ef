package dev.gpushare.node.kube;

import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.node.api.Views.EventView;
import io.fabric8.kubernetes.api.model.MicroTime;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.api.model.events.v1.EventBuilder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code events.k8s.io/v1} Events gpushare writes for what the arbiter recorded (SPEC §7): a
 * pure builder from an {@link EventView}. Reason and note are the recorded texts exactly ({@link
 * PodNotes}); the reporting controller is {@value #REPORTING_CONTROLLER}.
 *
 * <p>Events are written as series, as {@code events.k8s.io/v1} means them: the recorded Events of
 * one object with the same type, reason and note are one Event whose {@code series} counts the
 * occurrences ({@code count}, {@code lastObservedTime}), so that a repeat costs a patch, not a new
 * object. An Event's name is a hash of the object's uid and the series' type, reason and note, so
 * the same series always has the same name: the next singleton after a fail-over finds it ({@code
 * KubeWriter} lists gpushare's Events when it starts), and a create of one that exists is refused
 * by the API server, so no Event is ever shown twice.
 */
final class KubeEvents {
  private KubeEvents() {}

  static final String REPORTING_CONTROLLER = PodNotes.SOURCE;

  /** Events of cluster-scoped objects (nodes) live here, as the kubelet's do. */
  static final String CLUSTER_EVENTS_NAMESPACE = "default";

  /** The API server refuses notes longer than this many bytes. */
  static final int MAX_NOTE_BYTES = 1024;

  private static final Map<String, String> ACTIONS =
      Map.of(
          PodNotes.PREEMPTED, "Preempted",
          PodNotes.PREEMPT, "Preempt",
          PodNotes.FRAGMENTED, "Pin",
          PodNotes.PINNED, "Pin");

  static ObjectReference pod(String namespace, String name, String uid) {
    return new ObjectReferenceBuilder()
        .withApiVersion("v1")
        .withKind("Pod")
        .withNamespace(namespace)
        .withName(name)
        .withUid(uid)
        .build();
  }

  static ObjectReference node(String name, String uid) {
    return new ObjectReferenceBuilder()
        .withApiVersion("v1")
        .withKind("Node")
        .withName(name)
        .withUid(uid)
        .build();
  }

  /**
   * The recorded Events of one object with one type, reason and note: {@code first} the earliest,
   * {@code count} how many, {@code last} when the latest was observed ({@code null} time: now).
   */
  record Series(String name, EventView first, int count, Instant last) {}

  /** {@code events} as series, in the order of their first occurrence. */
  static List<Series> series(ObjectReference regarding, List<EventView> events, Instant now) {
    Map<String, Series> out = new LinkedHashMap<>();
    for (EventView e : events) {
      String name = name(regarding, e);
      Instant at = e.time() == null ? now : e.time();
      Series s = out.get(name);
      if (s == null) {
        out.put(name, new Series(name, e, 1, at));
      } else {
        out.put(
            name, new Series(name, s.first(), s.count() + 1, at.isAfter(s.last()) ? at : s.last()));
      }
    }
    return List.copyOf(out.values());
  }

  /** The Event to create for a series: its first occurrence, and its count once it repeats. */
  static Event desired(ObjectReference regarding, Series s, String reportingInstance, Instant now) {
    Event e = desired(regarding, s.first(), reportingInstance, now);
    if (s.count() > 1) {
      e.setSeries(
          new io.fabric8.kubernetes.api.model.events.v1.EventSeries(
              s.count(), new MicroTime(KubeTimes.microTime(s.last()))));
    }
    return e;
  }

  /** The merge patch that brings an existing Event's series to {@code s}. */
  static String seriesPatch(Series s) {
    return "{\"series\":{\"count\":"
        + s.count()
        + ",\"lastObservedTime\":\""
        + KubeTimes.microTime(s.last())
        + "\"}}";
  }

  /**
   * The Event to create for {@code e} about {@code regarding}, in {@code regarding}'s namespace (or
   * {@value #CLUSTER_EVENTS_NAMESPACE}); {@code e.time()} {@code null} means {@code now}.
   */
  static Event desired(
      ObjectReference regarding, EventView e, String reportingInstance, Instant now) {
    String namespace =
        regarding.getNamespace() == null ? CLUSTER_EVENTS_NAMESPACE : regarding.getNamespace();
    return new EventBuilder()
        .withNewMetadata()
        .withName(name(regarding, e))
        .withNamespace(namespace)
        .endMetadata()
        .withRegarding(regarding)
        .withEventTime(new MicroTime(KubeTimes.microTime(e.time() == null ? now : e.time())))
        .withType(e.type())
        .withReason(e.reason())
        .withNote(note(e.message()))
        .withAction(action(e.reason()))
        .withReportingController(REPORTING_CONTROLLER)
        .withReportingInstance(reportingInstance)
        .build();
  }

  /**
   * {@code <object-name>.<16 hex digits>}: a valid, stable name for the series {@code e} belongs to
   * (its object, type, reason and note; not its time).
   */
  static String name(ObjectReference regarding, EventView e) {
    String identity =
        String.join(
            "\n",
            String.valueOf(regarding.getKind()),
            String.valueOf(regarding.getNamespace()),
            String.valueOf(regarding.getName()),
            String.valueOf(regarding.getUid()),
            String.valueOf(e.type()),
            String.valueOf(e.reason()),
            String.valueOf(e.message()));
    String hash = HexFormat.of().formatHex(sha256(identity), 0, 8);
    String prefix = regarding.getName();
    if (prefix.length() > 253 - 17) {
      prefix = prefix.substring(0, 253 - 17).replaceAll("[.-]+$", "");
    }
    return prefix + "." + hash;
  }

  /**
   * What the Event's {@code action} says was done: {@code Preempt}, {@code Preempted}, {@code Pin}.
   */
  static String action(String reason) {
    String known = ACTIONS.get(reason);
    if (known != null) {
      return known;
    }
    return reason != null && reason.startsWith("GPUShare") && reason.length() > 8
        ? reason.substring(8)
        : String.valueOf(reason);
  }

  private static String note(String message) {
    if (message == null) {
      return null;
    }
    byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
    if (bytes.length <= MAX_NOTE_BYTES) {
      return message;
    }
    String ellipsis = "…";
    int budget = MAX_NOTE_BYTES - ellipsis.getBytes(StandardCharsets.UTF_8).length;
    StringBuilder out = new StringBuilder();
    int used = 0;
    for (int i = 0; i < message.length(); ) {
      int cp = message.codePointAt(i);
      int len = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
      if (used + len > budget) {
        break;
      }
      out.appendCodePoint(cp);
      used += len;
      i += Character.charCount(cp);
    }
    return out.append(ellipsis).toString();
  }

  private static byte[] sha256(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }
}
