package dev.gpushare.node.kube;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.arbiter.InputJson;
import dev.gpushare.arbiter.JsonMappers;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.Quantity;
import dev.gpushare.arbiter.ShareRequestRules;
import io.fabric8.kubernetes.api.model.Node;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The node's <em>own</em> allocatable on virtual nodes ({@link NodeStatusMode#VIRTUAL}), kept in
 * the node annotation {@value #ANNOTATION} as a JSON object of resource name to quantity ({@code
 * {"cpu":"176","ephemeral-storage":"4608Gi","memory":"1800Gi"}}).
 *
 * <p>On a virtual node gpushare itself writes allocatable CPU, memory and ephemeral storage, so
 * {@code status.allocatable} stops being the node's own value once sharing is on. {@link
 * KubeWriter} records the values of {@link #RECORDED} in this annotation <em>before</em> its first
 * status write changes them, and removes the annotation once the node's own values are back in the
 * status (sharing off). Whoever reads the node (the informers) takes its own allocatable from
 * {@link #read}, never from the status alone, so our output is never read back as input. To change
 * a virtual node's own allocatable while sharing is on, edit the annotation.
 */
public final class OwnAllocatable {
  private OwnAllocatable() {}

  public static final String ANNOTATION = "gpushare.dev/own-allocatable";

  /** The resources gpushare writes on virtual nodes, and therefore records. */
  public static final List<String> RECORDED =
      List.of(
          NodeStatusCalculator.CPU,
          NodeStatusCalculator.MEMORY,
          NodeStatusCalculator.EPHEMERAL_STORAGE);

  static final String FIELD = "metadata.annotations[" + ANNOTATION + "]";
  static final String ACCEPTED =
      "a JSON object of resource name to quantity text, such as"
          + " {\"cpu\":\"176\",\"memory\":\"1800Gi\"}; each quantity "
          + Quantity.ACCEPTED;

  private static final ObjectMapper MAPPER = JsonMappers.plain();

  /**
   * The node's own allocatable when the annotation is present: {@code status.allocatable} without
   * the percentage resources, with the recorded values over it. Empty when the annotation is absent
   * (then {@code status.allocatable} is the node's own).
   *
   * @throws IllegalArgumentException when the annotation is not {@link #ACCEPTED}; the message
   *     names the annotation, the value and what is accepted
   */
  public static Optional<Map<String, String>> read(Node node) {
    Optional<Map<String, String>> recorded = recorded(node);
    if (recorded.isEmpty()) {
      return Optional.empty();
    }
    Map<String, String> own = new TreeMap<>();
    if (node.getStatus() != null && node.getStatus().getAllocatable() != null) {
      node.getStatus().getAllocatable().forEach((k, q) -> own.put(k, q.toString()));
    }
    own.remove(ShareRequestRules.CORE);
    own.remove(ShareRequestRules.MEMORY);
    own.putAll(recorded.get());
    return Optional.of(own);
  }

  /**
   * Just what the annotation holds, or empty when it is absent.
   *
   * @throws IllegalArgumentException as {@link #read} does
   */
  public static Optional<Map<String, String>> recorded(Node node) {
    Map<String, String> annotations =
        node.getMetadata() == null ? null : node.getMetadata().getAnnotations();
    String text = annotations == null ? null : annotations.get(ANNOTATION);
    return text == null ? Optional.empty() : Optional.of(parse(text));
  }

  /**
   * What to record for {@code node}: the {@link #RECORDED} resources of its current {@code
   * status.allocatable} (those it has).
   */
  public static Map<String, String> ofStatus(Node node) {
    Map<String, String> own = new TreeMap<>();
    if (node.getStatus() != null && node.getStatus().getAllocatable() != null) {
      for (String resource : RECORDED) {
        io.fabric8.kubernetes.api.model.Quantity q =
            node.getStatus().getAllocatable().get(resource);
        if (q != null) {
          own.put(resource, q.toString());
        }
      }
    }
    return own;
  }

  /** The annotation's text for {@code own}, keys sorted. */
  public static String write(Map<String, String> own) {
    try {
      return MAPPER.writeValueAsString(new TreeMap<>(own));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a map of strings always serializes", e);
    }
  }

  /**
   * Parses the annotation's text; a resource named twice is refused, not read as the last value.
   *
   * @throws IllegalArgumentException when it is not {@link #ACCEPTED}
   */
  public static Map<String, String> parse(String text) {
    JsonNode json;
    try {
      json = InputJson.tree().readTree(text);
    } catch (JsonProcessingException e) {
      Optional<FieldError> duplicate = InputJson.duplicateKey(e);
      if (duplicate.isPresent()) {
        // "cpu: the key \"cpu\" appears again …" under the annotation's own path
        throw new IllegalArgumentException(FIELD + "." + duplicate.get().message());
      }
      throw invalid(text);
    }
    if (json == null || !json.isObject()) {
      throw invalid(text);
    }
    Map<String, String> own = new TreeMap<>();
    for (Map.Entry<String, JsonNode> e : json.properties()) {
      if (!e.getValue().isTextual()) {
        throw new IllegalArgumentException(
            FieldErrors.ofJson(FIELD + "." + e.getKey(), e.getValue().toString(), ACCEPTED)
                .message());
      }
      String quantity = e.getValue().asText();
      try {
        Quantity.parse(quantity);
      } catch (IllegalArgumentException bad) {
        throw new IllegalArgumentException(
            FieldErrors.of(FIELD + "." + e.getKey(), quantity, Quantity.ACCEPTED).message());
      }
      own.put(e.getKey(), quantity);
    }
    return own;
  }

  private static IllegalArgumentException invalid(String text) {
    return new IllegalArgumentException(FieldErrors.of(FIELD, text, ACCEPTED).message());
  }
}
