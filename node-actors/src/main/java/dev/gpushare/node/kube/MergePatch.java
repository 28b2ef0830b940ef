package dev.gpushare.node.kube;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.JsonMappers;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A JSON merge patch (RFC 7386) or strategic merge patch, built as nested maps: it carries only the
 * fields gpushare owns, and no resource version unless a read-modify-write needs one, so that it
 * lands whatever else changed in the object meanwhile (as kube-scheduler's and the kubelet's status
 * patches do). A {@code null} value removes a key; in a strategic merge patch, an entry {@code
 * {"type": T, "$patch": "delete"}} removes the list element of that type.
 */
final class MergePatch {
  private static final ObjectMapper MAPPER = JsonMappers.plain();

  private final Map<String, Object> root = new LinkedHashMap<>();
  private boolean changes;

  /** The map at {@code path} ({@code "metadata", "annotations"}), made on the way. */
  @SuppressWarnings("unchecked")
  Map<String, Object> at(String... path) {
    Map<String, Object> m = root;
    for (String key : path) {
      m = (Map<String, Object>) m.computeIfAbsent(key, k -> new LinkedHashMap<String, Object>());
    }
    return m;
  }

  /** Sets a field that changes the object. */
  MergePatch set(Object value, String... path) {
    String[] parent = java.util.Arrays.copyOf(path, path.length - 1);
    at(parent).put(path[path.length - 1], value);
    changes = true;
    return this;
  }

  /** Sets a field that only guards the write (the uid, the resource version). */
  MergePatch precondition(Object value, String... path) {
    String[] parent = java.util.Arrays.copyOf(path, path.length - 1);
    at(parent).put(path[path.length - 1], value);
    return this;
  }

  boolean changes() {
    return changes;
  }

  String json() {
    try {
      return MAPPER.writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("nested maps of plain values always serialize", e);
    }
  }

  /** A model object (a condition) as the map the API server would store. */
  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object model) {
    Map<String, Object> out = MAPPER.convertValue(model, Map.class);
    out.values().removeIf(v -> v == null);
    return out;
  }

  /** The strategic merge patch's entry that removes the list element of {@code type}. */
  static Map<String, Object> deleteByType(String type) {
    Map<String, Object> delete = new LinkedHashMap<>();
    delete.put("type", type);
    delete.put("$patch", "delete");
    return delete;
  }

  @Override
  public String toString() {
    return json();
  }
}
