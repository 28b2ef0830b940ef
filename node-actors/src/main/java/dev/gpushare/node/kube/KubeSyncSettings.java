package dev.gpushare.node.kube;

import java.time.Duration;

/**
 * How {@link KubeWriter} talks to the API server.
 *
 * @param mode what gpushare may write in node status ({@link NodeStatusMode})
 * @param qps requests per second on average, reads included
 * @param burst requests an idle writer may send at once
 * @param maxBackoff the longest wait before retrying a write refused with 429, 5xx or a timeout
 * @param reportingInstance the Events' {@code reportingInstance}: who wrote them (the pod name of
 *     the singleton's member is a good choice); at most 128 characters
 */
public record KubeSyncSettings(
    NodeStatusMode mode, double qps, int burst, Duration maxBackoff, String reportingInstance) {

  public static final double DEFAULT_QPS = 20;
  public static final int DEFAULT_BURST = 40;
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(30);

  public KubeSyncSettings {
    if (mode == null) {
      throw new IllegalArgumentException(
          "mode is missing; want one of KUBELET (ordinary nodes), VIRTUAL (no kubelet)");
    }
    if (!(qps > 0) || Double.isInfinite(qps)) {
      throw new IllegalArgumentException(
          "qps is " + qps + "; want a finite number of requests per second above 0");
    }
    if (burst < 1) {
      throw new IllegalArgumentException("burst is " + burst + "; want an integer of at least 1");
    }
    if (maxBackoff == null || maxBackoff.isNegative() || maxBackoff.isZero()) {
      throw new IllegalArgumentException(
          "maxBackoff is " + maxBackoff + "; want a duration above 0, such as PT30S");
    }
    if (reportingInstance == null
        || reportingInstance.isBlank()
        || reportingInstance.length() > 128) {
      throw new IllegalArgumentException(
          "reportingInstance is "
              + (reportingInstance == null ? "missing" : "\"" + reportingInstance + "\"")
              + "; want a name of 1 to 128 characters, such as the pod's name");
    }
  }

  /**
   * KUBELET mode, {@value #DEFAULT_QPS} QPS, burst {@value #DEFAULT_BURST}, back-off up to 30 s.
   */
  public static KubeSyncSettings defaults(String reportingInstance) {
    return new KubeSyncSettings(
        NodeStatusMode.KUBELET, DEFAULT_QPS, DEFAULT_BURST, DEFAULT_MAX_BACKOFF, reportingInstance);
  }

  public KubeSyncSettings withMode(NodeStatusMode mode) {
    return new KubeSyncSettings(mode, qps, burst, maxBackoff, reportingInstance);
  }
}
