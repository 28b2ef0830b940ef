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
import java.util.Map;

/**
 * The {@code events.k8s.io/v1} Events gpushare writes for what the arbiter recorded (SPEC §7): a
 * pure builder from an {@link EventView}. Reason and note are the recorded texts exactly ({@link
 * PodNotes}); the reporting controller is {@value #REPORTING_CONTROLLER}.
 *
 * <p>An Event's name is a hash of the object's uid and the Event's type, reason, note and time, so
 * the same recorded Event always has the same name: writing it again — after a resync, or by the
 * next singleton after a fail-over — is refused by the API server as already existing, and no Event
 * is ever shown twice.
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

  /** {@code <object-name>.<16 hex digits>}: a valid, stable name for one recorded Event. */
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
            String.valueOf(e.message()),
            e.time() == null ? "" : KubeTimes.microTime(e.time()));
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
