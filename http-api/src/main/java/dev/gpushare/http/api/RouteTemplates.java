package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.http.extender.SchedulerExtenderRoutes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The bounded {@code route} label of the HTTP metrics: a request's path as the template of the API
 * path it addresses ({@code /v1/namespaces/{namespace}/pods/{name}/grant}), or {@value #OTHER} for
 * a path the API does not have, so that no client can make the label set grow.
 *
 * <p>The templates are the paths of the OpenAPI document the server serves ({@link OpenApiRoutes},
 * one home for the list of endpoints) and the scheduler extender's two paths, which that document
 * leaves out. A {@code {…}} segment stands for any one non-empty segment; one trailing slash is
 * ignored ({@code /dashboard/} is {@code /dashboard}).
 */
public final class RouteTemplates {
  /** The label of every path that is no template's. */
  public static final String OTHER = "other";

  private final List<List<String>> templates;

  private RouteTemplates(List<String> paths) {
    List<List<String>> parsed = new ArrayList<>();
    for (String path : paths) {
      parsed.add(segments(path));
    }
    this.templates = List.copyOf(parsed);
  }

  /** The API's templates: the OpenAPI document's paths and the scheduler extender's. */
  public static RouteTemplates ofApi() {
    List<String> paths = new ArrayList<>(openApiPaths());
    paths.add(SchedulerExtenderRoutes.FILTER_PATH);
    paths.add(SchedulerExtenderRoutes.PRIORITIZE_PATH);
    return new RouteTemplates(paths);
  }

  /** Templates from these paths (for tests). */
  static RouteTemplates of(List<String> paths) {
    return new RouteTemplates(paths);
  }

  /** Every path of the OpenAPI document, in its order. */
  static List<String> openApiPaths() {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(OpenApiRoutes.load());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot parse " + OpenApiRoutes.RESOURCE, e);
    }
    JsonNode paths = root.path("paths");
    if (!paths.isObject() || paths.isEmpty()) {
      throw new IllegalStateException(OpenApiRoutes.RESOURCE + " has no paths");
    }
    List<String> out = new ArrayList<>();
    for (Iterator<String> names = paths.fieldNames(); names.hasNext(); ) {
      out.add(names.next());
    }
    return out;
  }

  /** The template {@code path} matches, written as in the OpenAPI document, or {@value #OTHER}. */
  public String of(String path) {
    List<String> given = segments(path);
    for (List<String> template : templates) {
      if (matches(template, given)) {
        return "/" + String.join("/", template);
      }
    }
    return OTHER;
  }

  private static boolean matches(List<String> template, List<String> given) {
    if (template.size() != given.size()) {
      return false;
    }
    for (int i = 0; i < template.size(); i++) {
      String t = template.get(i);
      String g = given.get(i);
      boolean variable = t.startsWith("{") && t.endsWith("}");
      if (variable ? g.isEmpty() : !t.equals(g)) {
        return false;
      }
    }
    return true;
  }

  /** {@code /a/b/} → {@code [a, b]}; empty inner segments are kept (they match no template). */
  private static List<String> segments(String path) {
    String p = path.startsWith("/") ? path.substring(1) : path;
    if (p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    if (p.isEmpty()) {
      return List.of();
    }
    return List.of(p.split("/", -1));
  }
}
