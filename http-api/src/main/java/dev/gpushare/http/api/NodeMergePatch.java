package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.node.api.ServiceException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A JSON merge patch (RFC 7396) of a node's {@code metadata.labels} and {@code
 * metadata.annotations}, what {@code kubectl label} and {@code kubectl annotate} send. A string
 * value sets the key, {@code null} removes it, and {@code "labels": null} removes every label.
 * Nothing else of a node may be patched: any other field ({@code spec}, {@code status}, {@code
 * metadata.name}, …) is refused with a {@code 422} naming it.
 *
 * @param labels key to new value, {@code null} value = remove
 * @param clearLabels whether every label not set by {@code labels} is to be removed
 * @param annotations key to new value, {@code null} value = remove
 * @param clearAnnotations whether every annotation not set by {@code annotations} is to be removed
 */
public record NodeMergePatch(
    Map<String, String> labels,
    boolean clearLabels,
    Map<String, String> annotations,
    boolean clearAnnotations) {

  private static final Set<String> PATCHABLE = Set.of("labels", "annotations");

  /** Reads a parsed patch body; {@code 422} listing every field that may not be patched. */
  public static NodeMergePatch of(JsonNode root) {
    List<FieldError> errors = new ArrayList<>();
    if (!root.isObject()) {
      errors.add(
          BodyErrors.error(
              "body", root, "must be a JSON object such as {\"metadata\":{\"labels\":{…}}}"));
      throw ServiceException.invalid(errors);
    }
    root.fieldNames()
        .forEachRemaining(
            name -> {
              if (!name.equals("metadata")) {
                errors.add(
                    BodyErrors.error(
                        name,
                        root.get(name),
                        "cannot be patched; only metadata.labels and metadata.annotations can"));
              }
            });
    JsonNode metadata = root.get("metadata");
    Section labels = Section.EMPTY;
    Section annotations = Section.EMPTY;
    if (metadata != null) {
      if (!metadata.isObject()) {
        errors.add(
            BodyErrors.error(
                "metadata", metadata, "must be an object with labels and/or annotations"));
      } else {
        metadata
            .fieldNames()
            .forEachRemaining(
                name -> {
                  if (!PATCHABLE.contains(name)) {
                    errors.add(
                        BodyErrors.error(
                            "metadata." + name,
                            metadata.get(name),
                            "cannot be patched; only metadata.labels and metadata.annotations"
                                + " can"));
                  }
                });
        labels = Section.of(metadata.get("labels"), "metadata.labels", errors);
        annotations = Section.of(metadata.get("annotations"), "metadata.annotations", errors);
      }
    }
    if (!errors.isEmpty()) {
      throw ServiceException.invalid(errors);
    }
    return new NodeMergePatch(labels.changes, labels.clear, annotations.changes, annotations.clear);
  }

  /**
   * The changes to hand to the service, given the keys the node has now: with {@code clear}, every
   * current key not set by the patch is removed.
   */
  public static Map<String, String> changes(
      Map<String, String> patch, boolean clear, Set<String> current) {
    Map<String, String> result = new LinkedHashMap<>();
    if (clear) {
      current.forEach(key -> result.put(key, null));
    }
    result.putAll(patch);
    return Collections.unmodifiableMap(result);
  }

  private record Section(Map<String, String> changes, boolean clear) {
    static final Section EMPTY = new Section(Map.of(), false);

    static Section of(JsonNode node, String path, List<FieldError> errors) {
      if (node == null) {
        return EMPTY;
      }
      if (node.isNull()) {
        return new Section(Map.of(), true);
      }
      if (!node.isObject()) {
        errors.add(
            BodyErrors.error(
                path, node, "must be an object of key to string value (null removes)"));
        return EMPTY;
      }
      Map<String, String> changes = new LinkedHashMap<>();
      node.properties()
          .forEach(
              e -> {
                JsonNode v = e.getValue();
                if (v.isNull()) {
                  changes.put(e.getKey(), null);
                } else if (v.isTextual()) {
                  changes.put(e.getKey(), v.asText());
                } else {
                  errors.add(
                      BodyErrors.error(
                          path + "[" + e.getKey() + "]",
                          v,
                          "must be a string (quote it: \""
                              + v.asText()
                              + "\"), or null to remove"));
                }
              });
      return new Section(Collections.unmodifiableMap(changes), false);
    }
  }
}
