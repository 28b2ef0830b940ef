package dev.gpushare.arbiter;

import java.util.List;
import java.util.Map;

/**
 * A node's {@code status} as Kubernetes shows it: resource name to quantity text, and conditions.
 * Maps are sorted by resource name so that output is stable.
 */
public record NodeStatus(
    Map<String, String> capacity, Map<String, String> allocatable, List<NodeCondition> conditions)
    implements JsonSerializable {}
