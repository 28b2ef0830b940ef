package dev.gpushare.arbiter;

import java.util.regex.Pattern;

/**
 * The Kubernetes object name rules that sharing relies on: pods and nodes are named by DNS-1123
 * subdomains, namespaces by DNS-1123 labels. Kubernetes would refuse anything else, so the embedded
 * mode refuses it too, and names stay safe inside persistence ids and URLs.
 */
public final class KubernetesNames {
  private KubernetesNames() {}

  public static final String DNS1123_LABEL_ACCEPTED =
      "a DNS-1123 label: at most 63 characters, lowercase letters, digits and '-', starting and"
          + " ending with a letter or digit";

  public static final String DNS1123_SUBDOMAIN_ACCEPTED =
      "a DNS-1123 subdomain: at most 253 characters, lowercase letters, digits, '-' and '.',"
          + " each '.'-separated part starting and ending with a letter or digit";

  private static final String LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
  private static final Pattern LABEL_PATTERN = Pattern.compile(LABEL);
  private static final Pattern SUBDOMAIN_PATTERN = Pattern.compile(LABEL + "(\\." + LABEL + ")*");

  public static boolean isDns1123Label(String name) {
    return name != null && name.length() <= 63 && LABEL_PATTERN.matcher(name).matches();
  }

  public static boolean isDns1123Subdomain(String name) {
    return name != null && name.length() <= 253 && SUBDOMAIN_PATTERN.matcher(name).matches();
  }
}
