package dev.gpushare.arbiter;

import java.util.regex.Pattern;

/**
 * The Kubernetes object name rules that sharing relies on: pods and nodes are named by DNS-1123
 * subdomains, namespaces by DNS-1123 labels. Kubernetes would refuse anything else, so the embedded
 * mode refuses it too, and names stay safe inside persistence ids and URLs: no name holds the
 * {@code |}, {@code /} or {@code :} that separate the parts of a persistence or entity id, and the
 * longest id is bounded (persistence-config/EVENTS.md, "Persistence ids").
 */
public final class KubernetesNames {
  private KubernetesNames() {}

  public static final String DNS1123_LABEL_ACCEPTED =
      "a DNS-1123 label: at most 63 characters, lowercase letters, digits and '-', starting and"
          + " ending with a letter or digit";

  public static final String DNS1123_SUBDOMAIN_ACCEPTED =
      "a DNS-1123 subdomain: at most 253 characters, lowercase letters, digits, '-' and '.',"
          + " each '.'-separated part starting and ending with a letter or digit";

  /** The longest pod uid the API takes (Kubernetes makes them UUIDs, 36 characters). */
  public static final int MAX_UID_LENGTH = 128;

  public static final String UID_ACCEPTED =
      "a uid of at most "
          + MAX_UID_LENGTH
          + " characters: letters, digits, '-', '_' and '.' (Kubernetes assigns a UUID), or no"
          + " uid for one to be assigned";

  private static final String LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
  private static final Pattern UID_PATTERN =
      Pattern.compile("[A-Za-z0-9._-]{1," + MAX_UID_LENGTH + "}");
  private static final Pattern LABEL_PATTERN = Pattern.compile(LABEL);
  private static final Pattern SUBDOMAIN_PATTERN = Pattern.compile(LABEL + "(\\." + LABEL + ")*");

  public static boolean isDns1123Label(String name) {
    return name != null && name.length() <= 63 && LABEL_PATTERN.matcher(name).matches();
  }

  public static boolean isDns1123Subdomain(String name) {
    return name != null && name.length() <= 253 && SUBDOMAIN_PATTERN.matcher(name).matches();
  }

  /** A pod uid gpushare can key a pod by ({@link #UID_ACCEPTED}). */
  public static boolean isPodUid(String uid) {
    return uid != null && UID_PATTERN.matcher(uid).matches();
  }

  /** Whether {@code namespace}/{@code name} could name a pod Kubernetes accepts. */
  public static boolean isPodRef(String namespace, String name) {
    return isDns1123Label(namespace) && isDns1123Subdomain(name);
  }
}
