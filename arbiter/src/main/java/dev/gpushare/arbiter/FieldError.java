package dev.gpushare.arbiter;

/**
 * One rejected input field: where it is ({@code field}, a JSON-path-like location such as {@code
 * spec.containers[0].resources.limits[alibabacloud.com/gpu-core.percentage]}), what was given
 * ({@code value}, {@code null} when absent) and a message that says what would be accepted.
 */
public record FieldError(String field, String value, String message) {}
