package dev.gpushare.http.extender;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.InputJson;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What kube-scheduler sends an extender's filter and prioritize verbs: {@code ExtenderArgs} of
 * {@code k8s.io/kube-scheduler/extender/v1}. Its Go fields carry no {@code json} tags, so {@code
 * encoding/json} writes them under their Go names, capitalised: {@code {"Pod": v1.Pod, "Nodes":
 * v1.NodeList, "NodeNames": [string]}} — {@code Nodes} when the extender is not {@code
 * nodeCacheCapable} ({@code NodeNames} is then {@code null}), {@code NodeNames} when it is. The
 * objects inside ({@code v1.Pod}, {@code v1.NodeList}) have the usual lowercase Kubernetes names.
 * Keys are matched as Go's decoder matches them: the exact name first, else the first key equal
 * ignoring case.
 *
 * <p>The pod is read as a {@link PodManifest} (metadata and the containers' resources; the rest of
 * {@code v1.Pod} is ignored; {@code kind}/{@code apiVersion} may be absent, as in the scheduler's
 * cache). A body that is not JSON, not an object, or lacks a readable {@code Pod} or any node list
 * is a {@code 400} naming every such field; whether the pod may share a GPU is decided later (SPEC
 * §3), and answered in the filter's {@code Error}.
 *
 * @param pod the pod's sharing-relevant parts
 * @param nodes the {@code Nodes} object as sent ({@code metadata}, {@code items}), {@code null}
 *     when the scheduler sent {@code NodeNames}
 * @param nodeNames the candidate nodes in the order sent (from {@code Nodes.items[].metadata.name}
 *     or {@code NodeNames})
 * @param items the node objects by name, as sent; empty with {@code NodeNames}
 */
public record ExtenderArgs(
    PodManifest pod, ObjectNode nodes, List<String> nodeNames, Map<String, JsonNode> items) {

  /** What a body must be, for 400 answers. */
  static final String EXPECTED =
      "kube-scheduler's ExtenderArgs: {\"Pod\": a v1.Pod, \"Nodes\": a v1.NodeList} or"
          + " {\"Pod\": …, \"NodeNames\": [\"node\", …]}";

  /** The Go field names of {@code ExtenderArgs} (k8s.io/kube-scheduler/extender/v1). */
  static final String POD = "Pod";

  static final String NODES = "Nodes";
  static final String NODE_NAMES = "NodeNames";

  /** Whether the scheduler sent whole nodes (not {@code nodeCacheCapable}). */
  public boolean withNodeObjects() {
    return nodes != null;
  }

  /** {@code pod.namespace/pod.name}. */
  public String podRef() {
    return pod.namespace() + "/" + pod.name();
  }

  /** Parses a request body; {@code 400} naming every unreadable field. */
  public static ExtenderArgs read(byte[] body) {
    JsonNode root = ManifestReader.parse(body, ManifestReader.Format.JSON, EXPECTED);
    List<FieldError> errors = new ArrayList<>();
    if (!root.isObject()) {
      throw malformed(List.of(error("body", root, "must be a JSON object: " + EXPECTED)));
    }
    JsonNode podNode = field(root, POD);
    PodManifest pod = null;
    if (podNode == null || podNode.isNull()) {
      errors.add(error(POD, null, "required: the v1.Pod being scheduled"));
    } else if (!podNode.isObject()) {
      errors.add(error(POD, podNode, "must be a v1.Pod object"));
    } else {
      pod = pod(podNode, errors);
    }
    ObjectNode nodes = null;
    List<String> names = new ArrayList<>();
    Map<String, JsonNode> items = new LinkedHashMap<>();
    JsonNode nodesNode = field(root, NODES);
    JsonNode namesNode = field(root, NODE_NAMES);
    if (nodesNode != null && !nodesNode.isNull()) {
      if (!nodesNode.isObject()) {
        errors.add(error(NODES, nodesNode, "must be a v1.NodeList object with items"));
      } else {
        nodes = (ObjectNode) nodesNode;
        readItems(nodes, names, items, errors);
      }
    } else if (namesNode != null && !namesNode.isNull()) {
      if (!namesNode.isArray()) {
        errors.add(error(NODE_NAMES, namesNode, "must be a list of node names"));
      } else {
        for (int i = 0; i < namesNode.size(); i++) {
          JsonNode n = namesNode.get(i);
          if (n.isTextual() && !n.asText().isEmpty()) {
            names.add(n.asText());
          } else {
            errors.add(error(NODE_NAMES + "[" + i + "]", n, "must be a non-empty node name"));
          }
        }
      }
    } else {
      errors.add(
          error(
              NODES,
              null,
              "required: the candidate nodes, as Nodes (a v1.NodeList) or NodeNames (when the"
                  + " extender is nodeCacheCapable)"));
    }
    if (!errors.isEmpty()) {
      throw malformed(errors);
    }
    return new ExtenderArgs(pod, nodes, List.copyOf(names), Collections.unmodifiableMap(items));
  }

  private static void readItems(
      ObjectNode nodes, List<String> names, Map<String, JsonNode> items, List<FieldError> errors) {
    JsonNode list = nodes.get("items");
    if (list == null || list.isNull()) {
      return; // an empty NodeList: Go writes "items": null for a nil slice
    }
    if (!list.isArray()) {
      errors.add(error(NODES + ".items", list, "must be a list of v1.Node objects"));
      return;
    }
    for (int i = 0; i < list.size(); i++) {
      JsonNode item = list.get(i);
      JsonNode name = item.path("metadata").path("name");
      if (!name.isTextual() || name.asText().isEmpty()) {
        errors.add(
            error(
                NODES + ".items[" + i + "].metadata.name",
                name.isMissingNode() ? null : name,
                "required: every node has a name"));
        continue;
      }
      names.add(name.asText());
      items.put(name.asText(), item);
    }
  }

  /** The parts of a v1.Pod that sharing reads, lenient about everything else. */
  private static PodManifest pod(JsonNode pod, List<FieldError> errors) {
    JsonNode metadata = pod.path("metadata");
    String name = text(metadata, "name", POD + ".metadata.name", true, errors);
    String namespace = text(metadata, "namespace", POD + ".metadata.namespace", false, errors);
    String uid = text(metadata, "uid", POD + ".metadata.uid", false, errors);
    Map<String, String> labels = strings(metadata, "labels", POD + ".metadata.labels", errors);
    Map<String, String> annotations =
        strings(metadata, "annotations", POD + ".metadata.annotations", errors);
    JsonNode spec = pod.path("spec");
    String nodeName = text(spec, "nodeName", POD + ".spec.nodeName", false, errors);
    List<ContainerResources> containers = new ArrayList<>();
    JsonNode list = spec.path("containers");
    if (!list.isArray()) {
      errors.add(
          error(
              POD + ".spec.containers",
              list.isMissingNode() ? null : list,
              "required: the pod's containers, a list"));
    } else {
      for (int i = 0; i < list.size(); i++) {
        String at = POD + ".spec.containers[" + i + "]";
        JsonNode c = list.get(i);
        if (!c.isObject()) {
          errors.add(error(at, c, "must be a container object"));
          continue;
        }
        String cname = text(c, "name", at + ".name", false, errors);
        JsonNode resources = c.path("resources");
        containers.add(
            new ContainerResources(
                cname,
                quantities(resources, "requests", at + ".resources.requests", errors),
                quantities(resources, "limits", at + ".resources.limits", errors)));
      }
    }
    return new PodManifest(
        namespace == null ? ManifestReader.DEFAULT_NAMESPACE : namespace,
        name,
        uid,
        nodeName,
        labels,
        annotations,
        containers);
  }

  private static String text(
      JsonNode parent, String key, String path, boolean required, List<FieldError> errors) {
    JsonNode v = parent.path(key);
    if (v.isMissingNode() || v.isNull() || (v.isTextual() && v.asText().isEmpty())) {
      if (required) {
        errors.add(error(path, null, "required: a non-empty string"));
      }
      return null;
    }
    if (!v.isTextual()) {
      errors.add(error(path, v, "must be a string"));
      return null;
    }
    return v.asText();
  }

  private static Map<String, String> strings(
      JsonNode parent, String key, String path, List<FieldError> errors) {
    JsonNode map = parent.path(key);
    if (map.isMissingNode() || map.isNull()) {
      return Map.of();
    }
    if (!map.isObject()) {
      errors.add(error(path, map, "must be a map of strings"));
      return Map.of();
    }
    Map<String, String> out = new LinkedHashMap<>();
    map.properties()
        .forEach(
            e -> {
              if (e.getValue().isTextual()) {
                out.put(e.getKey(), e.getValue().asText());
              } else {
                errors.add(error(path + "[" + e.getKey() + "]", e.getValue(), "must be a string"));
              }
            });
    return Collections.unmodifiableMap(out);
  }

  /** Quantities as Kubernetes writes them: strings ({@code "10"}, {@code "50Gi"}) or numbers. */
  private static Map<String, String> quantities(
      JsonNode parent, String key, String path, List<FieldError> errors) {
    JsonNode map = parent.path(key);
    if (map.isMissingNode() || map.isNull()) {
      return Map.of();
    }
    if (!map.isObject()) {
      errors.add(error(path, map, "must be a map of resource name to quantity"));
      return Map.of();
    }
    Map<String, String> out = new LinkedHashMap<>();
    map.properties()
        .forEach(
            e -> {
              JsonNode v = e.getValue();
              if (v.isTextual() && !v.asText().isBlank()) {
                out.put(e.getKey(), v.asText());
              } else if (v.isIntegralNumber()) {
                out.put(e.getKey(), v.asText());
              } else if (v.isNumber() && InputJson.decimalText(v).isPresent()) {
                out.put(e.getKey(), InputJson.decimalText(v).get());
              } else {
                errors.add(
                    error(
                        path + "[" + e.getKey() + "]",
                        v,
                        "must be a quantity such as \"10\" or \"50Gi\""));
              }
            });
    return Collections.unmodifiableMap(out);
  }

  /** Go's {@code encoding/json} match: the exact key, else the first key equal ignoring case. */
  static JsonNode field(JsonNode object, String name) {
    JsonNode exact = object.get(name);
    if (exact != null) {
      return exact;
    }
    for (Iterator<String> it = object.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (key.equalsIgnoreCase(name)) {
        return object.get(key);
      }
    }
    return null;
  }

  private static FieldError error(String field, JsonNode value, String accepted) {
    String shown = value == null ? null : value.isValueNode() ? value.asText() : value.toString();
    if (shown != null && shown.length() > 200) {
      shown = shown.substring(0, 200) + "…";
    }
    String given = shown == null ? "missing" : "'" + shown + "' given";
    return new FieldError(field, shown, field + ": " + given + "; " + accepted);
  }

  private static ServiceException malformed(List<FieldError> errors) {
    String detail =
        errors.size() == 1
            ? errors.get(0).message()
            : errors.size() + " fields are unreadable: " + errors.get(0).message() + " …";
    return new ServiceException(Kind.MALFORMED, detail + " (expected " + EXPECTED + ")", errors);
  }
}
