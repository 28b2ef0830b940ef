package dev.gpushare.node.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/**
 * What the real API server does and fabric8's CRUD mock server does not, where gpushare depends on
 * it: merge patches (RFC 7386) and strategic merge patches, the uid and resourceVersion
 * preconditions a patch carries, and Events selected by {@code reportingController}. A dispatcher
 * built on {@code KubernetesCrudDispatcher} asks {@link #answer} first; shared by the writer's
 * tests (node-actors) and the end-to-end mock API server (src-test).
 */
public final class ApiServerSemantics {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ApiServerSemantics() {}

  /**
   * The API server's answer to {@code request} where the mock's would differ, or {@code null}.
   *
   * @param get the mock's current object at a path ({@code handleGet})
   * @param dispatch the mock's own dispatch, for the request rewritten into one it handles right
   */
  public static MockResponse answer(
      RecordedRequest request,
      Function<String, MockResponse> get,
      Function<RecordedRequest, MockResponse> dispatch) {
    String path = request.getPath();
    String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
    if ("PATCH".equals(request.getMethod())) {
      String type = request.getHeader("Content-Type");
      if (type != null && type.contains("merge-patch")) {
        return mergePatch(request, bare, type.contains("strategic"), get, dispatch);
      }
    }
    if ("GET".equals(request.getMethod())
        && bare.startsWith("/apis/events.k8s.io/v1/")
        && path.contains("fieldSelector=reportingController")) {
      return eventsOf(request, path, dispatch);
    }
    return null;
  }

  /**
   * The API server's merge patches where gpushare uses them (RFC 7386, and strategic merge): maps
   * merge, {@code null} removes a key, and in a strategic merge patch a list of conditions merges
   * by {@code type} ({@code "$patch": "delete"} removes one). The stock mock appends lists and
   * stores nulls, so the patch is turned into the JSON patch that has the API server's effect. A
   * patch that would change the uid is refused as the API server refuses it (422), one carrying a
   * stale resource version with 409.
   */
  private static MockResponse mergePatch(
      RecordedRequest request,
      String bare,
      boolean strategic,
      Function<String, MockResponse> get,
      Function<RecordedRequest, MockResponse> dispatch) {
    String object = bare.endsWith("/status") ? bare.substring(0, bare.length() - 7) : bare;
    try {
      JsonNode patch = JSON.readTree(request.getBody().getBytes());
      MockResponse current = get.apply(object);
      if (current.code() != 200) {
        return current;
      }
      JsonNode stored =
          JSON.readTree(new String(current.getBody().getBytes(), StandardCharsets.UTF_8));
      JsonNode uid = patch.path("metadata").path("uid");
      if (uid.isTextual() && !uid.asText().equals(stored.path("metadata").path("uid").asText())) {
        return status(422, "metadata.uid: Invalid value: field is immutable");
      }
      JsonNode rv = patch.path("metadata").path("resourceVersion");
      if (rv.isTextual()
          && !rv.asText().equals(stored.path("metadata").path("resourceVersion").asText())) {
        return status(
            409,
            "Operation cannot be fulfilled: the object has been modified; please apply"
                + " your changes to the latest version and try again");
      }
      com.fasterxml.jackson.databind.node.ArrayNode ops = JSON.createArrayNode();
      toOps(patch, stored, "", strategic, ops);
      io.fabric8.mockwebserver.http.Headers headers =
          request
              .getHeaders()
              .newBuilder()
              .set("Content-Type", "application/json-patch+json")
              .build();
      RecordedRequest asJsonPatch =
          new RecordedRequest(
              request.getHttpVersion(),
              request.method(),
              request.getPath(),
              headers,
              new io.fabric8.mockwebserver.http.Buffer().writeUtf8(JSON.writeValueAsString(ops)));
      return dispatch.apply(asJsonPatch);
    } catch (java.io.IOException e) {
      return status(400, e.toString());
    }
  }

  private static void toOps(
      JsonNode patch,
      JsonNode stored,
      String path,
      boolean strategic,
      com.fasterxml.jackson.databind.node.ArrayNode ops) {
    patch
        .fields()
        .forEachRemaining(
            e -> {
              String key = e.getKey();
              String at = path + "/" + key.replace("~", "~0").replace("/", "~1");
              if (path.equals("/metadata")
                  && (key.equals("uid") || key.equals("resourceVersion"))) {
                return;
              }
              JsonNode was = stored == null ? null : stored.get(key);
              JsonNode v = e.getValue();
              if (v.isNull()) {
                if (was != null) {
                  ops.addObject().put("op", "remove").put("path", at);
                }
              } else if (v.isObject() && was != null && was.isObject()) {
                toOps(v, was, at, strategic, ops);
              } else {
                JsonNode value =
                    strategic && v.isArray() && key.equals("conditions")
                        ? mergeByType(v, was)
                        : withoutNulls(v);
                ops.addObject().put("op", "add").put("path", at).set("value", value);
              }
            });
  }

  private static JsonNode withoutNulls(JsonNode v) {
    if (!v.isObject()) {
      return v;
    }
    com.fasterxml.jackson.databind.node.ObjectNode out = JSON.createObjectNode();
    v.fields()
        .forEachRemaining(
            e -> {
              if (!e.getValue().isNull()) {
                out.set(e.getKey(), withoutNulls(e.getValue()));
              }
            });
    return out;
  }

  /**
   * A list of Events by {@code reportingController}, a field the API server selects on and the
   * stock mock does not know: listed without the selector, then filtered.
   */
  private static MockResponse eventsOf(
      RecordedRequest request, String path, Function<RecordedRequest, MockResponse> dispatch) {
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("fieldSelector=reportingController(?:%3D|=)([^&]*)")
            .matcher(path);
    if (!m.find()) {
      return null;
    }
    String controller = java.net.URLDecoder.decode(m.group(1), StandardCharsets.UTF_8);
    String without = path.replaceAll("fieldSelector=[^&]*&?", "").replaceAll("[?&]$", "");
    MockResponse all =
        dispatch.apply(
            new RecordedRequest(
                request.getHttpVersion(),
                request.method(),
                without,
                request.getHeaders(),
                request.getBody()));
    if (all.code() != 200) {
      return all;
    }
    try {
      com.fasterxml.jackson.databind.node.ObjectNode list =
          (com.fasterxml.jackson.databind.node.ObjectNode)
              JSON.readTree(new String(all.getBody().getBytes(), StandardCharsets.UTF_8));
      com.fasterxml.jackson.databind.node.ArrayNode kept = JSON.createArrayNode();
      list.path("items")
          .forEach(
              e -> {
                if (controller.equals(e.path("reportingController").asText())) {
                  kept.add(e);
                }
              });
      list.set("items", kept);
      return new MockResponse().setResponseCode(200).setBody(JSON.writeValueAsString(list));
    } catch (java.io.IOException e) {
      return status(500, e.toString());
    }
  }

  /**
   * A list merged by {@code type} as the API server merges it: elements new to the list first (in
   * the patch's order), then the stored ones, replaced where the patch has them and removed where
   * it says {@code "$patch": "delete"}.
   */
  private static JsonNode mergeByType(JsonNode patch, JsonNode stored) {
    java.util.LinkedHashMap<String, JsonNode> byType = new java.util.LinkedHashMap<>();
    if (stored != null && stored.isArray()) {
      stored.forEach(c -> byType.put(c.path("type").asText(), c));
    }
    com.fasterxml.jackson.databind.node.ArrayNode out = JSON.createArrayNode();
    for (JsonNode c : patch) {
      String type = c.path("type").asText();
      if ("delete".equals(c.path("$patch").asText())) {
        byType.remove(type);
      } else if (byType.containsKey(type)) {
        byType.put(type, c);
      } else {
        out.add(c);
      }
    }
    byType.values().forEach(out::add);
    return out;
  }

  /** The API server's {@code Status} answer with {@code code} and {@code message}. */
  public static MockResponse status(int code, String message) {
    String body =
        "{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Failure\",\"code\":"
            + code
            + ",\"message\":\""
            + message
            + "\"}";
    return new MockResponse().setResponseCode(code).setBody(body);
  }
}
