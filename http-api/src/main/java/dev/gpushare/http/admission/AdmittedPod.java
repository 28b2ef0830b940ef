package dev.gpushare.http.admission;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.InputJson;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Pod of an AdmissionReview's {@code request.object}, read into the {@link PodManifest} that
 * {@link ShareRequestRules} judges, beside the JSON itself (which the patch addresses).
 *
 * <p>The namespace is {@code metadata.namespace}, else the review's {@code request.namespace}. A
 * pod created with {@code metadata.generateName} reaches a mutating webhook before the API server
 * has named it: its manifest then carries a stand-in name, the prefix followed by five characters
 * of the kind the API server appends, so that the name rule judges the prefix; {@link
 * #generateName} is set in that case only. Quantities keep their text ({@code "10"}, {@code
 * "50Gi"}); the API server sends them in canonical form. JSON of a shape the API server never sends
 * (labels that are not strings, containers that are not objects, …) is a {@link
 * MalformedReviewException} naming the field under {@code request.object}.
 *
 * @param generateName the name prefix when the API server has not yet generated the name, else
 *     {@code null}
 * @param initContainers what {@link PodManifest} leaves out: {@code spec.initContainers}'
 *     resources, which the webhook checks itself
 * @param annotated whether {@code metadata.annotations} is an object with at least one entry (a
 *     patch then adds single keys rather than the whole map)
 */
record AdmittedPod(
    JsonNode object,
    PodManifest manifest,
    String generateName,
    List<ContainerResources> initContainers,
    boolean annotated) {

  /** The API server cuts a longer {@code generateName} to this length before appending. */
  static final int GENERATE_NAME_PREFIX_MAX = 58;

  /** Five characters of the alphabet the API server draws generated name suffixes from. */
  static final String GENERATED_SUFFIX = "bbbbb";

  private static final String AT = "request.object";

  static AdmittedPod read(JsonNode object, String requestNamespace) {
    if (!object.isObject()) {
      throw malformed(AT, object, "a Pod object");
    }
    JsonNode metadata = object(object, "metadata", AT + ".metadata");
    String name = text(metadata, "name", AT + ".metadata.name");
    String generateName = text(metadata, "generateName", AT + ".metadata.generateName");
    String namespace = text(metadata, "namespace", AT + ".metadata.namespace");
    if (namespace == null || namespace.isEmpty()) {
      namespace = requestNamespace == null || requestNamespace.isEmpty() ? null : requestNamespace;
    }
    String uid = text(metadata, "uid", AT + ".metadata.uid");
    JsonNode annotationsNode = object(metadata, "annotations", AT + ".metadata.annotations");
    Map<String, String> labels = strings(metadata, "labels", AT + ".metadata.labels");
    Map<String, String> annotations =
        strings(metadata, "annotations", AT + ".metadata.annotations");
    JsonNode spec = object(object, "spec", AT + ".spec");
    String nodeName = text(spec, "nodeName", AT + ".spec.nodeName");

    boolean generated =
        (name == null || name.isEmpty()) && generateName != null && !generateName.isEmpty();
    String judgedName =
        generated
            ? generateName.substring(0, Math.min(generateName.length(), GENERATE_NAME_PREFIX_MAX))
                + GENERATED_SUFFIX
            : name;
    PodManifest manifest =
        new PodManifest(
            namespace,
            judgedName,
            uid == null || uid.isEmpty() ? null : uid,
            nodeName == null || nodeName.isEmpty() ? null : nodeName,
            labels,
            annotations,
            containers(spec, "containers"));
    return new AdmittedPod(
        object,
        manifest,
        generated ? generateName : null,
        containers(spec, "initContainers"),
        annotationsNode != null && !annotationsNode.isEmpty());
  }

  /**
   * Whether the pod is one the webhook judges: the criterion of {@link ShareRequestRules} (a
   * container mentions either percentage resource, or the pod carries the {@code gpu-share-policy}
   * label or a limit annotation), extended to init containers.
   */
  boolean marksSharing() {
    Map<String, String> annotations = manifest.annotations();
    return manifest.labels().containsKey(SharePolicy.LABEL)
        || annotations.containsKey(ShareRequestRules.CORE_LIMIT_ANNOTATION)
        || annotations.containsKey(ShareRequestRules.MEMORY_LIMIT_ANNOTATION)
        || manifest.containers().stream().anyMatch(AdmittedPod::mentionsShare)
        || initContainers.stream().anyMatch(AdmittedPod::mentionsShare);
  }

  /**
   * What {@link ShareRequestRules} and the webhook read of the pod, apart from its identity: equal
   * views are judged alike.
   */
  List<Object> sharingView() {
    Map<String, String> labels = manifest.labels();
    Map<String, String> annotations = manifest.annotations();
    return Arrays.asList(
        labels.get(ShareRequestRules.COMPUTE_CLASS_LABEL),
        labels.get(SharePolicy.LABEL),
        annotations.get(ShareRequestRules.CORE_LIMIT_ANNOTATION),
        annotations.get(ShareRequestRules.MEMORY_LIMIT_ANNOTATION),
        manifest.containers(),
        initContainers);
  }

  /**
   * The index in {@code spec.containers} of the container named {@code name} (names are unique).
   */
  int containerIndex(String name) {
    List<ContainerResources> containers = manifest.containers();
    for (int i = 0; i < containers.size(); i++) {
      if (containers.get(i).name() != null && containers.get(i).name().equals(name)) {
        return i;
      }
    }
    throw new IllegalStateException("no container named " + name + " in " + ref());
  }

  /** {@code namespace/name} for messages and logs; a generated name shows as {@code prefix*}. */
  String ref() {
    String ns = manifest.namespace() == null ? "" : manifest.namespace() + "/";
    return ns + (generateName != null ? generateName + "*" : manifest.name());
  }

  static boolean mentionsShare(ContainerResources c) {
    return c.requests().containsKey(ShareRequestRules.CORE)
        || c.requests().containsKey(ShareRequestRules.MEMORY)
        || c.limits().containsKey(ShareRequestRules.CORE)
        || c.limits().containsKey(ShareRequestRules.MEMORY);
  }

  private static List<ContainerResources> containers(JsonNode spec, String key) {
    String path = AT + ".spec." + key;
    JsonNode list = spec == null ? null : spec.get(key);
    if (list == null || list.isNull()) {
      return List.of();
    }
    if (!list.isArray()) {
      throw malformed(path, list, "a list of containers");
    }
    List<ContainerResources> containers = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      String at = path + "[" + i + "]";
      JsonNode c = list.get(i);
      if (!c.isObject()) {
        throw malformed(at, c, "a container object");
      }
      JsonNode resources = object(c, "resources", at + ".resources");
      containers.add(
          new ContainerResources(
              text(c, "name", at + ".name"),
              quantities(resources, "requests", at + ".resources.requests"),
              quantities(resources, "limits", at + ".resources.limits")));
    }
    return List.copyOf(containers);
  }

  private static JsonNode object(JsonNode parent, String key, String path) {
    JsonNode node = parent == null ? null : parent.get(key);
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isObject()) {
      throw malformed(path, node, "an object");
    }
    return node;
  }

  private static String text(JsonNode parent, String key, String path) {
    JsonNode node = parent == null ? null : parent.get(key);
    if (node == null || node.isNull()) {
      return null;
    }
    if (!node.isTextual()) {
      throw malformed(path, node, "a string");
    }
    return node.asText();
  }

  private static Map<String, String> strings(JsonNode parent, String key, String path) {
    JsonNode map = object(parent, key, path);
    if (map == null) {
      return Map.of();
    }
    Map<String, String> result = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : map.properties()) {
      if (!e.getValue().isTextual()) {
        throw malformed(path + "[" + e.getKey() + "]", e.getValue(), "a string");
      }
      result.put(e.getKey(), e.getValue().asText());
    }
    return Collections.unmodifiableMap(result);
  }

  /** Resource quantities as text: the API server sends strings; numbers are read as written. */
  private static Map<String, String> quantities(JsonNode parent, String key, String path) {
    JsonNode map = object(parent, key, path);
    if (map == null) {
      return Map.of();
    }
    Map<String, String> result = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> e : map.properties()) {
      JsonNode v = e.getValue();
      String text;
      if (v.isTextual()) {
        text = v.asText();
      } else if (v.isIntegralNumber()) {
        text = v.asText();
      } else if (v.isNumber() && InputJson.decimalText(v).isPresent()) {
        text = InputJson.decimalText(v).get();
      } else {
        throw malformed(
            path + "[" + e.getKey() + "]", v, "a quantity, a string such as \"10\" or \"50Gi\"");
      }
      result.put(e.getKey(), text);
    }
    return Collections.unmodifiableMap(result);
  }

  static MalformedReviewException malformed(String field, JsonNode given, String accepted) {
    String shown = given == null || given.isMissingNode() ? null : given.toString();
    String what = shown == null ? "is missing" : "is " + shown;
    return new MalformedReviewException(
        new FieldError(
            field,
            shown,
            field + " " + what + "; want " + accepted + " (as the API server sends it)"));
  }
}
