package dev.gpushare.arbiter;

import java.time.Instant;

/**
 * A node condition in the shape Kubernetes shows ({@code kubectl get node -o yaml}). {@code
 * lastTransitionTime} changes only when {@code status} or {@code reason} changes; {@code
 * lastHeartbeatTime} whenever the condition is computed again.
 */
public record NodeCondition(
    String type,
    String status,
    String reason,
    String message,
    Instant lastHeartbeatTime,
    Instant lastTransitionTime)
    implements JsonSerializable {}
