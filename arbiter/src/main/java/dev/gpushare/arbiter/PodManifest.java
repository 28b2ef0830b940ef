package dev.gpushare.arbiter;

import java.util.List;
import java.util.Map;

/**
 * The parts of a Kubernetes Pod manifest that sharing cares about, free of any Kubernetes or JSON
 * library. Resource quantities are kept as the text the user wrote ({@code 100}, {@code "50Gi"}).
 *
 * @param uid may be {@code null}: the API assigns one
 * @param nodeName may be {@code null}: the embedded scheduler picks a node
 */
public record PodManifest(
    String namespace,
    String name,
    String uid,
    String nodeName,
    Map<String, String> labels,
    Map<String, String> annotations,
    List<ContainerResources> containers) {

  /** One container's {@code resources}: requests and limits, resource name to quantity text. */
  public record ContainerResources(
      String name, Map<String, String> requests, Map<String, String> limits) {}
}
