package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion.VersionFlag;
import com.networknt.schema.ValidationMessage;
import dev.gpushare.http.server.Json;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.ComputeLimitView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The OpenAPI document ({@link OpenApiRoutes#RESOURCE}) on its own: strict JSON, the OpenAPI 3.1
 * structure (what the specification requires of the objects it uses), every {@code $ref} resolving,
 * every schema valid against the JSON Schema 2020-12 meta-schema, and the conventions of this API
 * (views closed with {@code additionalProperties: false}, errors as problem+json, bearer security
 * on everything but the public endpoints). The end-to-end {@code OpenApiTest} checks it against the
 * running server.
 */
class OpenApiDocumentTest {
  private static final Set<String> PATH_ITEM_KEYS =
      Set.of(
          "$ref",
          "summary",
          "description",
          "get",
          "put",
          "post",
          "delete",
          "options",
          "head",
          "patch",
          "trace",
          "servers",
          "parameters");
  private static final Set<String> METHODS =
      Set.of("get", "put", "post", "delete", "options", "head", "patch", "trace");
  private static final Set<String> OPERATION_KEYS =
      Set.of(
          "tags",
          "summary",
          "description",
          "externalDocs",
          "operationId",
          "parameters",
          "requestBody",
          "responses",
          "callbacks",
          "deprecated",
          "security",
          "servers");
  private static final Set<String> PUBLIC =
      Set.of(
          "GET /healthz",
          "GET /readyz",
          "GET /v1/openapi.json",
          "GET /dashboard",
          "GET /dashboard/{file}");

  /** Request manifests ignore fields sharing does not use, as kubectl files carry them. */
  private static final Set<String> OPEN_SCHEMAS = Set.of("NodeManifest", "PodManifest");

  private static JsonNode doc;

  @BeforeAll
  static void read() throws Exception {
    JsonMapper strict =
        JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(JsonParser.Feature.ALLOW_COMMENTS)
            .build();
    doc = strict.readTree(OpenApiRoutes.load());
  }

  @Test
  void isAnOpenApi31Document() {
    assertTrue(doc.isObject());
    assertTrue(doc.path("openapi").asText().matches("3\\.1\\.\\d+"), "openapi: 3.1.x");
    assertTrue(doc.path("info").path("title").isTextual(), "info.title");
    assertEquals("v1", doc.path("info").path("version").asText(), "info.version");
    assertTrue(doc.path("paths").isObject() && !doc.path("paths").isEmpty(), "paths");
    assertEquals(
        Set.of("openapi", "info", "jsonSchemaDialect", "security", "tags", "paths", "components"),
        names(doc),
        "top-level fields of an OpenAPI 3.1 document");
    assertEquals(
        "https://json-schema.org/draft/2020-12/schema", doc.path("jsonSchemaDialect").asText());
  }

  @Test
  void everyOperationIsWellFormed() {
    List<String> wrong = new ArrayList<>();
    Set<String> operationIds = new TreeSet<>();
    doc.path("paths")
        .properties()
        .forEach(
            p -> {
              String path = p.getKey();
              JsonNode item = p.getValue();
              if (!path.startsWith("/")) {
                wrong.add(path + ": a path starts with /");
              }
              for (String key : names(item)) {
                if (!PATH_ITEM_KEYS.contains(key)) {
                  wrong.add(path + ": " + key + " is not a field of a Path Item");
                }
              }
              Set<String> templated = new LinkedHashSet<>();
              for (Matcher m = Pattern.compile("\\{([^}]+)}").matcher(path); m.find(); ) {
                templated.add(m.group(1));
              }
              for (String method : names(item)) {
                if (!METHODS.contains(method)) {
                  continue;
                }
                String op = method.toUpperCase() + " " + path;
                JsonNode operation = item.get(method);
                for (String key : names(operation)) {
                  if (!OPERATION_KEYS.contains(key)) {
                    wrong.add(op + ": " + key + " is not a field of an Operation");
                  }
                }
                if (!operationIds.add(operation.path("operationId").asText(""))) {
                  wrong.add(op + ": operationId missing or not unique");
                }
                Set<String> pathParams = new TreeSet<>();
                List<JsonNode> params = new ArrayList<>();
                item.path("parameters").forEach(params::add);
                operation.path("parameters").forEach(params::add);
                for (JsonNode raw : params) {
                  JsonNode param = resolve(raw);
                  String in = param.path("in").asText();
                  if (!Set.of("path", "query", "header", "cookie").contains(in)
                      || !param.path("name").isTextual()
                      || !param.path("schema").isObject()) {
                    wrong.add(op + ": parameter needs name, in and schema: " + param);
                  }
                  if (in.equals("path")) {
                    pathParams.add(param.path("name").asText());
                    if (!param.path("required").asBoolean(false)) {
                      wrong.add(op + ": path parameter " + param.path("name") + " is required");
                    }
                  }
                }
                if (!pathParams.equals(new TreeSet<>(templated))) {
                  wrong.add(op + ": path parameters " + pathParams + " ≠ template " + templated);
                }
                JsonNode body = operation.path("requestBody");
                if (!body.isMissingNode() && resolve(body).path("content").isEmpty()) {
                  wrong.add(op + ": a requestBody has content");
                }
                JsonNode responses = operation.path("responses");
                if (!responses.isObject() || responses.isEmpty()) {
                  wrong.add(op + ": responses");
                }
                responses
                    .properties()
                    .forEach(
                        r -> {
                          String status = r.getKey();
                          JsonNode response = resolve(r.getValue());
                          if (!status.matches("[1-5]\\d\\d") && !status.equals("default")) {
                            wrong.add(op + ": response key " + status);
                          }
                          if (!response.path("description").isTextual()) {
                            wrong.add(op + " " + status + ": a response has a description");
                          }
                          response
                              .path("content")
                              .properties()
                              .forEach(
                                  c -> {
                                    if (!c.getKey().matches("[a-z]+/[a-z0-9.+-]+")) {
                                      wrong.add(op + " " + status + ": media type " + c.getKey());
                                    }
                                    if (!c.getValue().path("schema").isObject()) {
                                      wrong.add(op + " " + status + " " + c.getKey() + ": schema");
                                    }
                                  });
                          boolean problem =
                              response.path("content").has("application/problem+json");
                          if (status.startsWith("4") || status.startsWith("5")) {
                            if (!problem
                                || !response
                                    .path("content")
                                    .path("application/problem+json")
                                    .path("schema")
                                    .path("$ref")
                                    .asText()
                                    .equals("#/components/schemas/Problem")) {
                              wrong.add(op + " " + status + ": errors are problem+json Problem");
                            }
                          }
                        });
              }
            });
    assertTrue(wrong.isEmpty(), () -> String.join("\n", wrong));
  }

  @Test
  void everyRefResolves() {
    List<String> refs = new ArrayList<>();
    collectRefs(doc, refs);
    assertFalse(refs.isEmpty());
    List<String> broken = new ArrayList<>();
    for (String ref : refs) {
      if (!ref.startsWith("#/") || doc.at(ref.substring(1)).isMissingNode()) {
        broken.add(ref);
      }
    }
    assertTrue(broken.isEmpty(), () -> "unresolved $ref: " + broken);
  }

  @Test
  void everySchemaIsValidJsonSchema202012() {
    JsonSchemaFactory factory = JsonSchemaFactory.getInstance(VersionFlag.V202012);
    JsonSchema meta =
        factory.getSchema(SchemaLocation.of("https://json-schema.org/draft/2020-12/schema"));
    List<String> wrong = new ArrayList<>();
    List<JsonNode> all = new ArrayList<>();
    collectSchemas(doc, false, all);
    assertTrue(all.size() > 40, "schemas found: " + all.size());
    for (JsonNode schema : all) {
      Set<ValidationMessage> messages = meta.validate(schema);
      if (!messages.isEmpty()) {
        wrong.add(schema + ": " + messages);
      }
    }
    // A meta-schema that accepts anything would prove nothing.
    assertFalse(
        meta.validate(JsonMapper.builder().build().createObjectNode().put("type", "strin"))
            .isEmpty());
    assertTrue(wrong.isEmpty(), () -> String.join("\n", wrong));
  }

  @Test
  void theViewsAreClosedAndSayExactlyWhatIsRequired() {
    List<String> wrong = new ArrayList<>();
    doc.path("components")
        .path("schemas")
        .properties()
        .forEach(
            e -> {
              String name = e.getKey();
              JsonNode schema = e.getValue();
              if (!schema.path("description").isTextual()) {
                wrong.add(name + ": a description");
              }
              if (!schema.has("properties") || OPEN_SCHEMAS.contains(name)) {
                return;
              }
              if (!schema.path("additionalProperties").isBoolean()
                  || schema.path("additionalProperties").asBoolean()) {
                wrong.add(name + ": additionalProperties false");
              }
              if (name.endsWith("View") || name.endsWith("List") || name.equals("Problem")) {
                Set<String> required = new TreeSet<>();
                schema.path("required").forEach(r -> required.add(r.asText()));
                if (!required.equals(new TreeSet<>(names(schema.path("properties"))))) {
                  wrong.add(name + ": every field of a view is written, so every one is required");
                }
              }
            });
    for (String view : List.of("NodeView", "PodView", "Problem", "ClockView", "ChangeNotice")) {
      if (!doc.path("components").path("schemas").has(view)) {
        wrong.add(view + " missing");
      }
    }
    assertTrue(wrong.isEmpty(), () -> String.join("\n", wrong));
  }

  @Test
  void theComputeReportAndThePodsComputeLimitAreDocumented() {
    JsonNode op = doc.path("paths").path("/v1/namespaces/{namespace}/pods/{name}/compute");
    assertEquals(Set.of("parameters", "post"), names(op), "POST only");
    JsonNode post = op.path("post");
    assertEquals("reportCompute", post.path("operationId").asText());
    assertEquals("data plane", post.path("tags").path(0).asText());
    assertEquals(
        "#/components/schemas/ComputeReport",
        post.at("/requestBody/content/application~1json/schema/$ref").asText());
    assertEquals(
        Set.of("200", "400", "401", "403", "404", "409", "415", "422", "500", "503"),
        names(post.path("responses")));
    assertEquals(
        "#/components/schemas/PodView",
        post.at("/responses/200/content/application~1json/schema/$ref").asText());
    JsonNode report = doc.at("/components/schemas/ComputeReport");
    assertEquals(
        Set.of("aimPercent", "measuredPercent", "heldSeconds"),
        new TreeSet<>(List.of(strings(report.path("required")))));
    assertEquals(100, report.at("/properties/measuredPercent/maximum").asInt());
    assertEquals(
        "#/components/schemas/ComputeLimitView",
        doc.at("/components/schemas/PodView/properties/computeLimit/anyOf/0/$ref").asText());
    assertEquals(
        "[\"library\",\"mps\",\"off\"]",
        doc.at("/components/schemas/ComputeLimitView/properties/mode/enum").toString());
  }

  /** Views as the server writes them (its own mapper) are valid against the document's schema. */
  @Test
  void aPodViewWithAndWithoutAComputeLimitIsValid() throws Exception {
    ObjectNode root = doc.deepCopy();
    root.put("$ref", "#/components/schemas/PodView");
    SchemaValidatorsConfig config =
        SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build();
    JsonSchema podView =
        JsonSchemaFactory.getInstance(VersionFlag.V202012)
            .getSchema(SchemaLocation.of("https://gpushare.dev/v1/openapi.json"), root, config);
    PodView pod = FakeGpuShareService.pod("default", "a", "n1", "Running");
    PodView[] views = {
      pod,
      pod.withComputeLimit(new ComputeLimitView(ComputeLimitMode.LIBRARY, 30, 0.0, null, null)),
      pod.withComputeLimit(
          new ComputeLimitView(
              ComputeLimitMode.MPS, null, 12.5, 29.4, Instant.parse("2026-01-01T00:00:05Z")))
    };
    JsonMapper plain = JsonMapper.builder().build();
    for (PodView view : views) {
      JsonNode written = plain.readTree(Json.text(view));
      assertEquals(Set.of(), podView.validate(written), written::toString);
    }
    ObjectNode bad = (ObjectNode) plain.readTree(Json.text(views[1]));
    ((ObjectNode) bad.path("computeLimit")).put("mode", "kernel");
    assertFalse(podView.validate(bad).isEmpty(), "a mode the document does not list fails");
    ((ObjectNode) bad.path("computeLimit")).put("mode", "library").remove("reportedAt");
    assertFalse(podView.validate(bad).isEmpty(), "a field missing fails");
  }

  private static String[] strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out.toArray(String[]::new);
  }

  @Test
  void bearerSecurityOnEverythingButThePublicEndpoints() {
    JsonNode bearer = doc.path("components").path("securitySchemes").path("bearer");
    assertEquals("http", bearer.path("type").asText());
    assertEquals("bearer", bearer.path("scheme").asText());
    assertEquals("[{\"bearer\":[]}]", doc.path("security").toString());
    List<String> wrong = new ArrayList<>();
    Set<String> publicOps = new TreeSet<>();
    doc.path("paths")
        .properties()
        .forEach(
            p ->
                p.getValue()
                    .properties()
                    .forEach(
                        m -> {
                          if (!METHODS.contains(m.getKey())) {
                            return;
                          }
                          String op = m.getKey().toUpperCase() + " " + p.getKey();
                          JsonNode security = m.getValue().path("security");
                          JsonNode responses = m.getValue().path("responses");
                          if (security.isArray() && security.isEmpty()) {
                            publicOps.add(op);
                            if (responses.has("401") || responses.has("403")) {
                              wrong.add(op + ": public, so never 401/403");
                            }
                          } else if (!security.isMissingNode()) {
                            wrong.add(op + ": security is the document's or []");
                          } else if (!responses.has("401") || !responses.has("403")) {
                            wrong.add(op + ": secured, so 401 and 403 documented");
                          }
                        }));
    assertEquals(PUBLIC, publicOps, "the public operations");
    assertTrue(wrong.isEmpty(), () -> String.join("\n", wrong));
  }

  @Test
  void manifestsAreAcceptedAsJsonAndYaml() {
    for (String op : List.of("/v1/nodes/{node}:put", "/v1/pods:post")) {
      String[] at = op.split(":");
      JsonNode content =
          doc.path("paths").path(at[0]).path(at[1]).path("requestBody").path("content");
      Set<String> types = names(content);
      assertTrue(
          types.containsAll(Set.copyOf(ManifestReader.ACCEPTED_MEDIA_TYPES)),
          () -> op + " request types " + types);
    }
  }

  // ---- helpers

  private static JsonNode resolve(JsonNode node) {
    JsonNode n = node;
    while (n.has("$ref")) {
      n = doc.at(n.get("$ref").asText().substring(1));
    }
    return n;
  }

  private static void collectRefs(JsonNode node, List<String> out) {
    if (node.isObject()) {
      node.properties()
          .forEach(
              e -> {
                if (e.getKey().equals("$ref")) {
                  out.add(e.getValue().asText());
                } else {
                  collectRefs(e.getValue(), out);
                }
              });
    } else if (node.isArray()) {
      node.forEach(n -> collectRefs(n, out));
    }
  }

  /** Every schema object: values of "schema", "x-sse-data" and components.schemas entries. */
  private static void collectSchemas(JsonNode node, boolean isSchema, List<JsonNode> out) {
    if (isSchema) {
      out.add(node);
      return;
    }
    if (node.isObject()) {
      for (Iterator<Map.Entry<String, JsonNode>> it = node.properties().iterator();
          it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (e.getKey().equals("schema") || e.getKey().equals("x-sse-data")) {
          collectSchemas(e.getValue(), true, out);
        } else if (e.getKey().equals("schemas") && node == doc.path("components")) {
          e.getValue().forEach(s -> collectSchemas(s, true, out));
        } else {
          collectSchemas(e.getValue(), false, out);
        }
      }
    } else if (node.isArray()) {
      node.forEach(n -> collectSchemas(n, false, out));
    }
  }

  private static Set<String> names(JsonNode node) {
    Set<String> names = new LinkedHashSet<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
