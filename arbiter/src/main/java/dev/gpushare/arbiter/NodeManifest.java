package dev.gpushare.arbiter;

import java.util.Map;

/**
 * The parts of a Kubernetes Node that sharing cares about: labels, annotations and the node's
 * <em>own</em> capacity and allocatable (what it reports without sharing), resource name to
 * quantity text ({@code cpu: "176"}, {@code memory: "1800Gi"}, {@code nvidia.com/gpu: "16"}). An
 * empty {@code allocatable} means "same as capacity".
 */
public record NodeManifest(
    String name,
    Map<String, String> labels,
    Map<String, String> annotations,
    Map<String, String> capacity,
    Map<String, String> allocatable)
    implements JsonSerializable {}
