package dev.gpushare.arbiter;

import java.time.Duration;

/**
 * The share-pool QoS config, from the node annotation {@code alibabacloud.com/gpu-share-qos-config}
 * (SPEC §2).
 *
 * @param preemptEnabled whether a queued pod may preempt a running one
 * @param podMaxDurationMinutes a pod Running continuously longer than this is a preemption
 *     candidate
 * @param reservedEphemeralStorage a Kubernetes quantity, as written ({@code "1.5Ti"})
 */
public record QosConfig(
    boolean preemptEnabled, int podMaxDurationMinutes, String reservedEphemeralStorage)
    implements JsonSerializable {

  public static final String ANNOTATION = "alibabacloud.com/gpu-share-qos-config";

  /** The defaults (design): no preemption, 120 minutes, nothing reserved. */
  public static final QosConfig DEFAULT = new QosConfig(false, 120, "0");

  public Duration podMaxDuration() {
    return Duration.ofMinutes(podMaxDurationMinutes);
  }
}
