package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DecimalNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.gpushare.http.server.ManifestReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * Generators for the adversarial suite: valid samples (the reference pod of the product
 * documentation, a share-pool node) and mutations of them — wrong types, out-of-range and
 * whitespace-padded numbers, odd and over-long names, unicode, {@code |} and {@code /}, missing
 * fields, unknown fields and label values, duplicate keys, broken syntax.
 */
final class AdversarialInputs {
  static final ObjectMapper JSON = new ObjectMapper();
  static final YAMLMapper YAML = new YAMLMapper();

  static final String CORE = "alibabacloud.com/gpu-core.percentage";
  static final String MEMORY = "alibabacloud.com/gpu-memory.percentage";
  static final String POLICY = "alibabacloud.com/gpu-share-policy";
  static final String COMPUTE_CLASS = "alibabacloud.com/compute-class";
  static final String QOS = "alibabacloud.com/gpu-share-qos-config";
  static final String CORE_LIMIT = "alibabacloud.com/gpu-core-limit";
  static final String MEMORY_LIMIT = "alibabacloud.com/gpu-memory-limit";

  /** The reference pod (deploy/examples/gpu-share-demo.yaml), as a tree. */
  static final ObjectNode REFERENCE_POD = referencePod();

  private AdversarialInputs() {}

  private static ObjectNode referencePod() {
    try (InputStream in =
        AdversarialInputs.class.getResourceAsStream("/examples/gpu-share-demo.yaml")) {
      return (ObjectNode) YAML.readTree(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A share-pool node manifest with {@code gpus} GPUs, as a tree. */
  static ObjectNode node(String name, int gpus) {
    ObjectNode n = JSON.createObjectNode();
    n.put("apiVersion", "v1").put("kind", "Node");
    ObjectNode metadata = n.putObject("metadata");
    metadata.put("name", name);
    metadata.putObject("labels").put(POLICY, "share-pool");
    metadata
        .putObject("annotations")
        .put(QOS, "{\"preemptEnabled\":true,\"podMaxDurationMinutes\":60}");
    ObjectNode capacity = n.putObject("status").putObject("capacity");
    capacity.put("cpu", "64").put("memory", "512Gi").put("nvidia.com/gpu", Integer.toString(gpus));
    capacity.put("ephemeral-storage", "2Ti");
    return n;
  }

  // ------------------------------------------------------------------ values

  /** Names: valid DNS-1123 ones up to and beyond 63 and 253 characters, and odd ones. */
  static Arbitrary<String> names() {
    return Arbitraries.oneOf(
        Arbitraries.strings()
            .withCharRange('a', 'z')
            .withCharRange('0', '9')
            .withChars('-', '.')
            .ofMinLength(1)
            .ofMaxLength(300),
        Arbitraries.strings()
            .withCharRange('a', 'z')
            .ofMinLength(1)
            .ofMaxLength(12)
            .map(s -> s + "-" + s.length()),
        Arbitraries.of(
            "a|b",
            "a/b",
            "..",
            ".",
            "%2F",
            "A",
            "Upper",
            "a_b",
            "-a",
            "a-",
            "a..b",
            "a b",
            " a",
            "a\tb",
            "a\u0000b",
            "ünï",
            "名前",
            "😀",
            "x".repeat(63),
            "x".repeat(64),
            "x".repeat(253),
            "x".repeat(254),
            "a.".repeat(126) + "a",
            "null",
            "true",
            "0"),
        Arbitraries.strings().withCharRange(' ', '\uD7FF').ofMaxLength(40));
  }

  /** Any JSON value a field might be given instead of the right one. */
  static Arbitrary<JsonNode> oddValues() {
    return Arbitraries.oneOf(
        Arbitraries.integers().between(-5, 205).map(i -> (JsonNode) IntNode.valueOf(i)),
        Arbitraries.integers().between(-5, 205).map(i -> (JsonNode) TextNode.valueOf("" + i)),
        Arbitraries.of(0L, -1L, 2147483648L, Long.MAX_VALUE, Long.MIN_VALUE)
            .map(l -> (JsonNode) LongNode.valueOf(l)),
        Arbitraries.of("50.5", "1e2", "100.0", "0.5", "1E+400", "-0")
            .map(s -> (JsonNode) DecimalNode.valueOf(new BigDecimal(s))),
        Arbitraries.of(
                "50",
                " 50",
                "50 ",
                "\t50",
                "5\n0",
                "",
                " ",
                "ten",
                "1e2",
                "0x10",
                "+50",
                "050",
                "５０",
                "5O",
                "100%",
                "50m",
                "1Gi",
                "-10",
                "99999999999999999999999",
                "null",
                "true",
                "1.5Ti",
                "0",
                "5",
                "500m",
                "50Gi",
                "Infinity",
                "NaN",
                "1_0")
            .map(s -> (JsonNode) TextNode.valueOf(s)),
        Arbitraries.of(
            NullNode.instance,
            BooleanNode.TRUE,
            BooleanNode.FALSE,
            JSON.createArrayNode(),
            JSON.createObjectNode(),
            JSON.createArrayNode().add(50),
            JSON.createObjectNode().put("value", 50)),
        names().map(s -> (JsonNode) TextNode.valueOf(s)));
  }

  /** Label values: the accepted ones, near misses and odd strings. */
  static Arbitrary<JsonNode> labelValues() {
    return Arbitraries.oneOf(
        Arbitraries.of(
                "share-pool",
                "static",
                "none",
                "Share-Pool",
                "share-pool ",
                " static",
                "shared",
                "",
                "gpu-hpn",
                "gpu-a100",
                "SHARE_POOL",
                "share pool",
                "share-pool|static")
            .map(s -> (JsonNode) TextNode.valueOf(s)),
        oddValues());
  }

  /** QoS config annotation texts: valid ones, mutated ones and broken JSON. */
  static Arbitrary<String> qosTexts() {
    Arbitrary<String> fieldValue =
        Arbitraries.oneOf(
            Arbitraries.of(
                "true",
                "false",
                "1",
                "0",
                "-1",
                "120",
                "2147483647",
                "2147483648",
                "1.5",
                "1e2",
                "\"60\"",
                "\" 60\"",
                "null",
                "[]",
                "{}",
                "\"1.5Ti\"",
                "\"0\"",
                "\"-1Gi\"",
                "\" 1Ti\"",
                "\"1.5TB\"",
                "\"9999999999Ei\"",
                "\"500m\"",
                "\"\"",
                "\"true\"",
                "99999999999999999999"),
            Arbitraries.integers().between(-3, 100000).map(Object::toString));
    Arbitrary<String> field =
        Arbitraries.of(
            "preemptEnabled",
            "podMaxDurationMinutes",
            "reservedEphemeralStorage",
            "preemptenabled",
            "extra",
            "",
            "préempt");
    Arbitrary<String> member = Combinators.combine(field, fieldValue).as((k, v) -> q(k) + ":" + v);
    Arbitrary<String> object =
        member.list().ofMaxSize(5).map(ms -> "{" + String.join(",", ms) + "}");
    Arbitrary<String> valid =
        Combinators.combine(
                Arbitraries.of(true, false),
                Arbitraries.integers().between(1, 100000),
                Arbitraries.of("0", "1.5Ti", "100Gi", "1", "500M", "1e3"))
            .as(
                (p, m, r) ->
                    "{\"preemptEnabled\":"
                        + p
                        + ",\"podMaxDurationMinutes\":"
                        + m
                        + ",\"reservedEphemeralStorage\":"
                        + q(r)
                        + "}");
    Arbitrary<String> broken =
        Arbitraries.of(
            "",
            " ",
            "{",
            "}",
            "{\"preemptEnabled\":true",
            "{\"preemptEnabled\":true}}",
            "{\"preemptEnabled\":true} x",
            "[]",
            "null",
            "true",
            "\"{}\"",
            "{'preemptEnabled':true}",
            "{preemptEnabled:true}",
            "{\"preemptEnabled\":true,}",
            "{\"preemptEnabled\":true,\"preemptEnabled\":false}",
            "{\"podMaxDurationMinutes\":1,\"podMaxDurationMinutes\":2}",
            "\uFEFF{}",
            "{} {}",
            "{\"a\":" + "[".repeat(2000));
    return Arbitraries.oneOf(valid, object, broken, valid.map(v -> truncate(v)));
  }

  private static String truncate(String text) {
    return text.substring(0, text.length() / 2);
  }

  static String q(String text) {
    try {
      return JSON.writeValueAsString(text);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ------------------------------------------------------------------ pod mutations

  /** Where a mutation of a pod manifest applies. */
  enum PodField {
    NAME,
    NAMESPACE,
    UID,
    COMPUTE_CLASS_LABEL,
    POLICY_LABEL,
    OTHER_LABEL,
    NODE_NAME,
    CONTAINER_NAME,
    REQUEST_CORE,
    REQUEST_MEMORY,
    LIMIT_CORE,
    LIMIT_MEMORY,
    REQUEST_CPU,
    LIMIT_MEMORY_BYTES,
    REQUEST_NVIDIA_GPU,
    CORE_LIMIT_ANNOTATION,
    MEMORY_LIMIT_ANNOTATION,
    QOS_ANNOTATION,
    KIND,
    API_VERSION,
    LABELS,
    ANNOTATIONS,
    METADATA,
    SPEC,
    CONTAINERS,
    RESOURCES,
    REQUESTS,
    LIMITS,
    UNKNOWN_ROOT_FIELD,
    UNKNOWN_CONTAINER_FIELD
  }

  /** Set ({@code value} non-null) or remove ({@code value == null}) one field. */
  record Mutation(PodField field, JsonNode value) {
    @Override
    public String toString() {
      return field + (value == null ? " removed" : " := " + value);
    }
  }

  /** A second container: a sidecar (CPU only) or a second one asking for a share. */
  enum Extra {
    NONE,
    SIDECAR,
    SECOND_SHARING_CONTAINER
  }

  static Arbitrary<Mutation> podMutations() {
    Arbitrary<PodField> field = Arbitraries.of(PodField.class);
    return field.flatMap(
        f -> {
          Arbitrary<JsonNode> value =
              switch (f) {
                case NAME, NAMESPACE, NODE_NAME, CONTAINER_NAME, UID ->
                    Arbitraries.oneOf(
                        names().map(s -> (JsonNode) TextNode.valueOf(s)), oddValues());
                case COMPUTE_CLASS_LABEL, POLICY_LABEL, OTHER_LABEL -> labelValues();
                case REQUEST_CORE, REQUEST_MEMORY, LIMIT_CORE, LIMIT_MEMORY ->
                    Arbitraries.oneOf(
                        Arbitraries.integers()
                            .between(1, 100)
                            .map(i -> (JsonNode) IntNode.valueOf(i)),
                        oddValues());
                case QOS_ANNOTATION -> qosTexts().map(s -> (JsonNode) TextNode.valueOf(s));
                default -> oddValues();
              };
          return Arbitraries.oneOf(
              value.map(v -> new Mutation(f, v)), Arbitraries.just(new Mutation(f, null)));
        });
  }

  /** The reference pod, renamed, with the given mutations. */
  static ObjectNode mutatedPod(
      String namespace, String name, String nodeName, List<Mutation> mutations, Extra extra) {
    ObjectNode pod = REFERENCE_POD.deepCopy();
    ObjectNode metadata = (ObjectNode) pod.get("metadata");
    metadata.put("name", name).put("namespace", namespace);
    if (nodeName != null) {
      ((ObjectNode) pod.get("spec")).put("nodeName", nodeName);
    }
    switch (extra) {
      case SIDECAR -> {
        ObjectNode sidecar = containers(pod).addObject().put("name", "sidecar");
        sidecar.putObject("resources").putObject("requests").put("cpu", "1").put("memory", "1Gi");
      }
      case SECOND_SHARING_CONTAINER -> {
        ObjectNode second = container(pod).deepCopy().put("name", "second");
        containers(pod).add(second);
      }
      case NONE -> {}
    }
    for (Mutation m : mutations) {
      apply(pod, m);
    }
    return pod;
  }

  private static void apply(ObjectNode pod, Mutation m) {
    JsonNode v = m.value();
    switch (m.field()) {
      case NAME -> set(obj(pod, "metadata"), "name", v);
      case NAMESPACE -> set(obj(pod, "metadata"), "namespace", v);
      case UID -> set(obj(pod, "metadata"), "uid", v);
      case COMPUTE_CLASS_LABEL -> set(obj(obj(pod, "metadata"), "labels"), COMPUTE_CLASS, v);
      case POLICY_LABEL -> set(obj(obj(pod, "metadata"), "labels"), POLICY, v);
      case OTHER_LABEL -> set(obj(obj(pod, "metadata"), "labels"), "example.com/odd|/key", v);
      case NODE_NAME -> set(obj(pod, "spec"), "nodeName", v);
      case CONTAINER_NAME -> set(container(pod), "name", v);
      case REQUEST_CORE -> set(requests(pod), CORE, v);
      case REQUEST_MEMORY -> set(requests(pod), MEMORY, v);
      case LIMIT_CORE -> set(limits(pod), CORE, v);
      case LIMIT_MEMORY -> set(limits(pod), MEMORY, v);
      case REQUEST_CPU -> set(requests(pod), "cpu", v);
      case LIMIT_MEMORY_BYTES -> set(limits(pod), "memory", v);
      case REQUEST_NVIDIA_GPU -> set(requests(pod), "nvidia.com/gpu", v);
      case CORE_LIMIT_ANNOTATION ->
          set(obj(obj(pod, "metadata"), "annotations"), CORE_LIMIT, textual(v));
      case MEMORY_LIMIT_ANNOTATION ->
          set(obj(obj(pod, "metadata"), "annotations"), MEMORY_LIMIT, textual(v));
      case QOS_ANNOTATION -> set(obj(obj(pod, "metadata"), "annotations"), QOS, v);
      case KIND -> set(pod, "kind", v);
      case API_VERSION -> set(pod, "apiVersion", v);
      case LABELS -> set(obj(pod, "metadata"), "labels", v);
      case ANNOTATIONS -> set(obj(pod, "metadata"), "annotations", v);
      case METADATA -> set(pod, "metadata", v);
      case SPEC -> set(pod, "spec", v);
      case CONTAINERS -> set(obj(pod, "spec"), "containers", v);
      case RESOURCES -> set(container(pod), "resources", v);
      case REQUESTS -> set(obj(container(pod), "resources"), "requests", v);
      case LIMITS -> set(obj(container(pod), "resources"), "limits", v);
      case UNKNOWN_ROOT_FIELD -> set(pod, "unknownField", v);
      case UNKNOWN_CONTAINER_FIELD -> set(container(pod), "unknownField", v);
    }
  }

  /** Annotations are strings: most mutations keep them one, as the webhook would write them. */
  private static JsonNode textual(JsonNode v) {
    return v == null || v.isTextual() || v.isContainerNode() || v.isNull()
        ? v
        : TextNode.valueOf(v.asText());
  }

  private static void set(ObjectNode parent, String key, JsonNode value) {
    if (value == null) {
      parent.remove(key);
    } else {
      parent.set(key, value.deepCopy());
    }
  }

  /** The object under {@code key}, made one if a previous mutation broke it. */
  private static ObjectNode obj(ObjectNode parent, String key) {
    JsonNode child = parent.get(key);
    if (child instanceof ObjectNode o) {
      return o;
    }
    return parent.putObject(key);
  }

  private static ArrayNode containers(ObjectNode pod) {
    ObjectNode spec = obj(pod, "spec");
    JsonNode list = spec.get("containers");
    if (list instanceof ArrayNode a && !a.isEmpty() && a.get(0).isObject()) {
      return a;
    }
    ArrayNode fresh = spec.putArray("containers");
    fresh.add(((ObjectNode) REFERENCE_POD.path("spec").path("containers").get(0)).deepCopy());
    return fresh;
  }

  private static ObjectNode container(ObjectNode pod) {
    return (ObjectNode) containers(pod).get(0);
  }

  private static ObjectNode requests(ObjectNode pod) {
    return obj(obj(container(pod), "resources"), "requests");
  }

  private static ObjectNode limits(ObjectNode pod) {
    return obj(obj(container(pod), "resources"), "limits");
  }

  // ------------------------------------------------------------------ bodies

  /** How a manifest tree becomes the bytes sent. */
  enum Encoding {
    JSON,
    YAML,
    /** JSON text sent as YAML (YAML is a superset of JSON). */
    JSON_AS_YAML,
    /** JSON with a key repeated in one object. */
    JSON_DUPLICATE_KEY,
    /** YAML with a key repeated in one mapping. */
    YAML_DUPLICATE_KEY,
    /** The JSON cut in the middle. */
    JSON_TRUNCATED,
    /** Two YAML documents. */
    YAML_TWO_DOCUMENTS
  }

  static ManifestReader.Format format(Encoding e) {
    return switch (e) {
      case JSON, JSON_DUPLICATE_KEY, JSON_TRUNCATED -> ManifestReader.Format.JSON;
      default -> ManifestReader.Format.YAML;
    };
  }

  static byte[] encode(JsonNode tree, Encoding e) {
    try {
      String json = JSON.writeValueAsString(tree);
      String text =
          switch (e) {
            case JSON -> json;
            case YAML -> YAML.writeValueAsString(tree);
            case JSON_AS_YAML -> json;
            case JSON_DUPLICATE_KEY ->
                json.startsWith("{") ? "{\"kind\":\"Pod\"," + json.substring(1) : json;
            case YAML_DUPLICATE_KEY -> YAML.writeValueAsString(tree) + "kind: Pod\n";
            case JSON_TRUNCATED -> json.substring(0, json.length() / 2);
            case YAML_TWO_DOCUMENTS ->
                YAML.writeValueAsString(tree) + "---\n" + YAML.writeValueAsString(tree);
          };
      return text.getBytes(StandardCharsets.UTF_8);
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }
}
