package dev.gpushare.http.server;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.InputJson;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Reads the Pod and Node manifests that users give {@code kubectl apply -f}, in JSON or YAML, into
 * {@link PodManifest} / {@link NodeManifest}. Pure: no I/O beyond the given bytes.
 *
 * <p>A body that cannot be parsed is a {@code 400} whose detail gives the parser's line and column.
 * A body that parses but is not an acceptable manifest is a {@code 422} listing every field at
 * fault by its path ({@code spec.containers[0].resources.limits[cpu]}), the value given and what
 * would be accepted. Fields that sharing does not use ({@code image}, {@code command}, …) are
 * ignored. Resource quantities keep the text the user wrote: {@code 100}, {@code "50Gi"}, {@code
 * '5'} become {@code "100"}, {@code "50Gi"}, {@code "5"}, and {@code " 50"} stays {@code " 50"}
 * (which the rules refuse: a Kubernetes quantity has no surrounding whitespace). A key that appears
 * twice in one object is a {@code 400} naming it ({@link InputJson}), in JSON and in YAML alike.
 */
public final class ManifestReader {

  /** The body formats a manifest may come in. */
  public enum Format {
    JSON,
    YAML
  }

  /** The media types accepted for manifests, for 415 answers. */
  public static final List<String> ACCEPTED_MEDIA_TYPES =
      List.of("application/json", "application/yaml", "application/x-yaml", "text/yaml");

  public static final String DEFAULT_NAMESPACE = "default";

  private static final ObjectReader JSON_READER = InputJson.tree();
  private static final ObjectReader YAML_READER =
      YAMLMapper.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build()
          .readerFor(JsonNode.class);

  private ManifestReader() {}

  /** The format of a body of media type {@code type/subtype} (parameters ignored), if accepted. */
  public static Optional<Format> formatOf(String mainType, String subType) {
    String media = (mainType + "/" + subType).toLowerCase(Locale.ROOT);
    return switch (media) {
      case "application/json" -> Optional.of(Format.JSON);
      case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml" ->
          Optional.of(Format.YAML);
      default -> Optional.empty();
    };
  }

  /** A Pod manifest; the namespace defaults to {@code default}. */
  public static PodManifest pod(byte[] body, Format format) {
    return pod(parse(body, format, "a Pod manifest"));
  }

  /**
   * A Node manifest for the node named in the path: {@code metadata.name}, when given, must be
   * {@code pathName}; when absent the path's name is taken.
   */
  public static NodeManifest node(byte[] body, Format format, String pathName) {
    return node(parse(body, format, "a Node manifest"), pathName);
  }

  /** Parses one JSON value or one YAML document; {@code 400} with the location if malformed. */
  public static JsonNode parse(byte[] body, Format format, String expected) {
    if (body.length == 0 || new String(body, StandardCharsets.UTF_8).isBlank()) {
      throw ServiceException.of(
          Kind.MALFORMED, new FieldError("body", "", "the body is empty; expected " + expected));
    }
    try {
      return switch (format) {
        case JSON -> JSON_READER.readTree(body);
        case YAML -> oneDocument(body, expected);
      };
    } catch (JsonProcessingException e) {
      throw malformed(format, e, expected);
    } catch (IOException e) {
      throw ServiceException.of(
          Kind.MALFORMED,
          new FieldError("body", null, "the body could not be read: " + e.getMessage()));
    }
  }

  public static PodManifest pod(JsonNode root) {
    Fields f = new Fields();
    requireObject(root, f, "a Pod manifest");
    checkKind(root, "Pod", f);
    JsonNode metadata = f.object(root, "metadata", "metadata", true);
    String name = metadata == null ? null : f.string(metadata, "name", "metadata.name", true);
    if (name != null) {
      f.dnsSubdomain(name, "metadata.name");
    }
    String namespace =
        metadata == null ? null : f.string(metadata, "namespace", "metadata.namespace", false);
    if (namespace == null) {
      namespace = DEFAULT_NAMESPACE;
    } else if (!KubernetesNames.isDns1123Label(namespace)) {
      f.add(
          "metadata.namespace",
          namespace,
          "a namespace is a DNS-1123 label: at most 63 lowercase letters, digits or '-',"
              + " starting and ending with a letter or digit");
    }
    String uid = metadata == null ? null : f.string(metadata, "uid", "metadata.uid", false);
    Map<String, String> labels = f.stringMap(metadata, "labels", "metadata.labels");
    Map<String, String> annotations = f.stringMap(metadata, "annotations", "metadata.annotations");

    JsonNode spec = f.object(root, "spec", "spec", true);
    String nodeName = spec == null ? null : f.string(spec, "nodeName", "spec.nodeName", false);
    List<ContainerResources> containers = spec == null ? List.of() : containers(spec, f);
    f.throwIfAny();
    return new PodManifest(namespace, name, uid, nodeName, labels, annotations, containers);
  }

  public static NodeManifest node(JsonNode root, String pathName) {
    Fields f = new Fields();
    requireObject(root, f, "a Node manifest");
    checkKind(root, "Node", f);
    JsonNode metadata = f.object(root, "metadata", "metadata", false);
    String name = metadata == null ? null : f.string(metadata, "name", "metadata.name", false);
    if (name != null && !name.equals(pathName)) {
      f.add(
          "metadata.name",
          name,
          "must equal the node named in the path, '" + pathName + "' (or be left out)");
    } else {
      f.dnsSubdomain(pathName, "metadata.name");
    }
    Map<String, String> labels = f.stringMap(metadata, "labels", "metadata.labels");
    Map<String, String> annotations = f.stringMap(metadata, "annotations", "metadata.annotations");
    JsonNode status = f.object(root, "status", "status", false);
    Map<String, String> capacity = f.quantities(status, "capacity", "status.capacity");
    Map<String, String> allocatable = f.quantities(status, "allocatable", "status.allocatable");
    f.throwIfAny();
    return new NodeManifest(pathName, labels, annotations, capacity, allocatable);
  }

  private static List<ContainerResources> containers(JsonNode spec, Fields f) {
    JsonNode list = spec.get("containers");
    if (list == null || list.isNull()) {
      f.add("spec.containers", (String) null, "required: a list of at least one container");
      return List.of();
    }
    if (!list.isArray() || list.isEmpty()) {
      f.add("spec.containers", list, "must be a list of at least one container");
      return List.of();
    }
    List<ContainerResources> containers = new ArrayList<>();
    for (int i = 0; i < list.size(); i++) {
      String at = "spec.containers[" + i + "]";
      JsonNode c = list.get(i);
      if (!c.isObject()) {
        f.add(at, c, "must be a container object with name and resources");
        continue;
      }
      String name = f.string(c, "name", at + ".name", true);
      JsonNode resources = f.object(c, "resources", at + ".resources", false);
      Map<String, String> requests =
          f.quantities(resources, "requests", at + ".resources.requests");
      Map<String, String> limits = f.quantities(resources, "limits", at + ".resources.limits");
      containers.add(new ContainerResources(name, requests, limits));
    }
    return containers;
  }

  private static void requireObject(JsonNode root, Fields f, String expected) {
    if (root == null || !root.isObject()) {
      f.add("body", root, "must be " + expected + ": a JSON or YAML object");
      f.throwIfAny();
    }
  }

  private static void checkKind(JsonNode root, String kind, Fields f) {
    JsonNode k = root.get("kind");
    if (k == null || !k.isTextual() || !k.asText().equals(kind)) {
      f.add("kind", k, "must be " + kind + " (apiVersion v1)");
    }
    JsonNode apiVersion = root.get("apiVersion");
    if (apiVersion != null && !(apiVersion.isTextual() && apiVersion.asText().equals("v1"))) {
      f.add("apiVersion", apiVersion, "must be v1 (the core API group of " + kind + ")");
    }
  }

  private static JsonNode oneDocument(byte[] body, String expected) throws IOException {
    List<JsonNode> documents = new ArrayList<>();
    try (MappingIterator<JsonNode> it = YAML_READER.readValues(body)) {
      while (it.hasNextValue()) {
        JsonNode document = it.nextValue();
        if (document != null && !document.isNull() && !document.isMissingNode()) {
          documents.add(document);
        }
      }
    }
    if (documents.isEmpty()) {
      throw ServiceException.of(
          Kind.MALFORMED,
          new FieldError("body", "", "the YAML has no document; expected " + expected));
    }
    if (documents.size() > 1) {
      throw ServiceException.of(
          Kind.INVALID,
          new FieldError(
              "body",
              documents.size() + " documents",
              "body: the YAML holds "
                  + documents.size()
                  + " documents; send one manifest per request"));
    }
    return documents.get(0);
  }

  private static ServiceException malformed(
      Format format, JsonProcessingException e, String expected) {
    Optional<FieldError> duplicate = InputJson.duplicateKey(e);
    if (duplicate.isPresent()) {
      return ServiceException.of(Kind.MALFORMED, duplicate.get());
    }
    JsonLocation at = e.getLocation();
    String where =
        at == null || at.getLineNr() < 1
            ? ""
            : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
    String message = e.getOriginalMessage().lines().findFirst().orElse("").strip();
    String detail =
        "the body is not valid " + format + where + ": " + message + "; expected " + expected;
    return ServiceException.of(Kind.MALFORMED, new FieldError("body", null, detail));
  }

  /** Collects every field error of one manifest, so that one answer lists them all. */
  private static final class Fields {
    private final List<FieldError> errors = new ArrayList<>();

    void add(String field, JsonNode value, String message) {
      add(field, shown(value), message);
    }

    void add(String field, String value, String message) {
      String given = value == null ? "missing" : "'" + value + "' given";
      errors.add(new FieldError(field, value, field + ": " + given + "; " + message));
    }

    void throwIfAny() {
      if (!errors.isEmpty()) {
        throw ServiceException.invalid(errors);
      }
    }

    JsonNode object(JsonNode parent, String key, String path, boolean required) {
      JsonNode node = parent.get(key);
      if (node == null || node.isNull()) {
        if (required) {
          add(path, (String) null, "required: an object");
        }
        return null;
      }
      if (!node.isObject()) {
        add(path, node, "must be an object (a map of fields)");
        return null;
      }
      return node;
    }

    String string(JsonNode parent, String key, String path, boolean required) {
      JsonNode node = parent.get(key);
      if (node == null || node.isNull()) {
        if (required) {
          add(path, (String) null, "required: a non-empty string");
        }
        return null;
      }
      if (!node.isTextual() || node.asText().isEmpty()) {
        add(path, node, "must be a non-empty string");
        return null;
      }
      return node.asText();
    }

    void dnsSubdomain(String name, String path) {
      if (!KubernetesNames.isDns1123Subdomain(name)) {
        add(
            path,
            name,
            "a name is a DNS-1123 subdomain: at most 253 lowercase letters, digits, '-' or '.',"
                + " starting and ending with a letter or digit");
      }
    }

    /** Labels or annotations: string to string, as Kubernetes requires. */
    Map<String, String> stringMap(JsonNode parent, String key, String path) {
      JsonNode map = parent == null ? null : object(parent, key, path, false);
      if (map == null) {
        return Map.of();
      }
      Map<String, String> result = new LinkedHashMap<>();
      map.properties()
          .forEach(
              e -> {
                JsonNode v = e.getValue();
                if (v.isTextual()) {
                  result.put(e.getKey(), v.asText());
                } else {
                  add(
                      path + "[" + e.getKey() + "]",
                      v,
                      "must be a string (quote it in YAML: \"" + shown(v) + "\")");
                }
              });
      return Collections.unmodifiableMap(result);
    }

    /** Resource quantities: numbers or strings, kept as the text written. */
    Map<String, String> quantities(JsonNode parent, String key, String path) {
      JsonNode map = parent == null ? null : object(parent, key, path, false);
      if (map == null) {
        return Map.of();
      }
      Map<String, String> result = new LinkedHashMap<>();
      map.properties()
          .forEach(
              e -> {
                JsonNode v = e.getValue();
                String text = quantityText(v);
                if (text == null) {
                  add(
                      path + "[" + e.getKey() + "]",
                      v,
                      "must be a quantity: a number or a string such as 100, \"5\", \"500m\" or"
                          + " \"50Gi\"");
                } else {
                  result.put(e.getKey(), text);
                }
              });
      return Collections.unmodifiableMap(result);
    }

    /** The text as written: {@code " 50"} stays {@code " 50"}, for the rules to refuse. */
    private static String quantityText(JsonNode v) {
      if (v.isTextual() && !v.asText().isBlank()) {
        return v.asText();
      }
      if (v.isIntegralNumber()) {
        return v.asText();
      }
      if (v.isNumber()) {
        return InputJson.decimalText(v).orElse(null);
      }
      return null;
    }

    private static String shown(JsonNode value) {
      if (value == null || value.isMissingNode()) {
        return null;
      }
      return value.isValueNode() ? value.asText() : value.toString();
    }
  }
}
