package dev.gpushare.arbiter;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Set;
import java.util.TreeSet;

/**
 * The one home of the rule that tags journal events with the pods they concern, so that a pod's
 * whole history (its own record and every decision of every node's arbiter about it, across
 * deletions and re-creations of the same name) is one query by tag (persistence-config/EVENTS.md,
 * "Tags: a pod's history").
 *
 * <p>The tag names the pod by {@code namespace/name}, without its uid: two pods of one name (one
 * deleted, the next created, perhaps on another node) share one history. It must fit the journal's
 * {@code event_tag.tag} column, {@code VARCHAR(256)} on PostgreSQL, while a namespace (63) and a
 * name (253) make up to 317 characters. So the tag is {@code pod:<ns>/<name>} when that is at most
 * {@value #MAX_LENGTH} characters (every name up to 188 characters in the longest namespace), and
 * otherwise {@code pod-sha256:<64 hex digits>}, the SHA-256 of the UTF-8 bytes of {@code
 * <ns>/<name>} (75 characters). The two forms cannot meet: a Kubernetes name holds no {@code :}.
 */
public final class HistoryTags {
  private HistoryTags() {}

  /** The width of PostgreSQL's {@code event_tag.tag} column. */
  public static final int MAX_LENGTH = 256;

  static final String READABLE = "pod:";
  static final String HASHED = "pod-sha256:";

  /** The history tag of the pod {@code namespace/name}. */
  public static String of(String namespace, String name) {
    String ref = namespace + "/" + name;
    String readable = READABLE + ref;
    if (readable.length() <= MAX_LENGTH) {
      return readable;
    }
    return HASHED + sha256(ref);
  }

  /** The history tag of {@code key}'s name (the uid does not count). */
  public static String of(PodKey key) {
    return of(key.namespace(), key.name());
  }

  /**
   * The history tag of a pod named by its entity id {@code ns/name/uid} ({@link PodKey#entityId()},
   * how the arbiter's events name pods); {@code null} for anything else.
   */
  public static String ofEntityId(String entityId) {
    if (entityId == null) {
      return null;
    }
    int first = entityId.indexOf('/');
    int last = entityId.lastIndexOf('/');
    if (first <= 0 || last <= first + 1) {
      return null;
    }
    return of(entityId.substring(0, first), entityId.substring(first + 1, last));
  }

  /** The tags of the pods named by {@code entityIds}, each once; nulls and non-ids are skipped. */
  public static Set<String> ofEntityIds(Iterable<String> entityIds) {
    Set<String> tags = new TreeSet<>();
    for (String id : entityIds) {
      String tag = ofEntityId(id);
      if (tag != null) {
        tags.add(tag);
      }
    }
    return Set.copyOf(tags);
  }

  private static String sha256(String text) {
    try {
      MessageDigest digest = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every Java platform", e);
    }
  }
}
