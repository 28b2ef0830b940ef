package dev.gpushare.cli;

import dev.gpushare.arbiter.KubernetesNames;
import java.util.Map;

/** A pod as {@code NAMESPACE/NAME}, as kubectl-minded users write it. */
record PodRef(String namespace, String name) {
  @Override
  public String toString() {
    return namespace + "/" + name;
  }

  /** {@code NS/NAME}, each a Kubernetes name; else a usage error naming {@code what}. */
  static PodRef parse(String value, String what) {
    String v = value == null ? "" : value.strip();
    int slash = v.indexOf('/');
    if (slash <= 0 || slash == v.length() - 1 || v.indexOf('/', slash + 1) >= 0) {
      throw new CliException(
          what + " '" + value + "': give the pod as NAMESPACE/NAME, e.g. default/my-notebook");
    }
    String ns = v.substring(0, slash);
    String name = v.substring(slash + 1);
    if (!KubernetesNames.isDns1123Label(ns)) {
      throw notAName(value, what, ns, "namespace", KubernetesNames.DNS1123_LABEL_ACCEPTED);
    }
    if (!KubernetesNames.isDns1123Subdomain(name)) {
      throw notAName(value, what, name, "name", KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED);
    }
    return new PodRef(ns, name);
  }

  private static CliException notAName(
      String value, String what, String part, String which, String accepted) {
    return new CliException(
        what
            + " '"
            + value
            + "': '"
            + part
            + "' is not a Kubernetes "
            + which
            + " (expected "
            + accepted
            + ")");
  }

  /**
   * The pod a workload runs for: {@code --pod}, else {@code $GPUSHARE_POD} ({@code NS/NAME}), else
   * the downward API's {@code $POD_NAMESPACE} and {@code $POD_NAME}.
   */
  static PodRef ofWorkload(String flag, Map<String, String> env) {
    if (flag != null) {
      return parse(flag, "--pod");
    }
    String pod = env.get("GPUSHARE_POD");
    if (pod != null && !pod.isBlank()) {
      return parse(pod, "$GPUSHARE_POD");
    }
    String ns = env.get("POD_NAMESPACE");
    String name = env.get("POD_NAME");
    if (ns != null && !ns.isBlank() && name != null && !name.isBlank()) {
      return parse(ns.strip() + "/" + name.strip(), "$POD_NAMESPACE/$POD_NAME");
    }
    throw new CliException(
        "which pod? give --pod NAMESPACE/NAME, set $GPUSHARE_POD=NAMESPACE/NAME, or set"
            + " $POD_NAMESPACE and $POD_NAME (the downward API: fieldRef metadata.namespace and"
            + " metadata.name)");
  }
}
