package dev.gpushare.node.kube;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.JsonMappers;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A JSON Patch (RFC 6902) on an object's metadata. Unlike a merge patch it removes a key exactly,
 * and its {@code test} operation is a precondition the API server checks atomically with the change
 * (used on {@code metadata.uid}, so that a patch never lands on a pod recreated under the same
 * name).
 */
final class JsonPatch {
  private static final ObjectMapper MAPPER = JsonMappers.plain();

  private final List<Map<String, Object>> ops = new ArrayList<>();

  JsonPatch test(String path, Object value) {
    return op("test", path, value);
  }

  JsonPatch add(String path, Object value) {
    return op("add", path, value);
  }

  JsonPatch remove(String path) {
    Map<String, Object> op = new LinkedHashMap<>();
    op.put("op", "remove");
    op.put("path", path);
    ops.add(op);
    return this;
  }

  /** Whether any operation other than {@code test} is in the patch. */
  boolean changes() {
    return ops.stream().anyMatch(op -> !"test".equals(op.get("op")));
  }

  String json() {
    try {
      return MAPPER.writeValueAsString(ops);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a list of maps of strings always serializes", e);
    }
  }

  /** The JSON Pointer (RFC 6901) of an annotation. */
  static String annotation(String key) {
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1");
  }

  private JsonPatch op(String name, String path, Object value) {
    Map<String, Object> op = new LinkedHashMap<>();
    op.put("op", name);
    op.put("path", path);
    op.put("value", value);
    ops.add(op);
    return this;
  }

  @Override
  public String toString() {
    return json();
  }
}
