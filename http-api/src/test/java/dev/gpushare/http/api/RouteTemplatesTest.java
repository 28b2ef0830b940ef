package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code route} label of the HTTP metrics: bounded templates, unknown paths as other. */
class RouteTemplatesTest {
  private static final RouteTemplates API = RouteTemplates.ofApi();

  @Test
  void everyPathOfTheOpenApiDocumentIsATemplateOfItself() {
    List<String> paths = RouteTemplates.openApiPaths();
    assertTrue(paths.contains("/v1/namespaces/{namespace}/pods/{name}/grant"), paths.toString());
    for (String path : paths) {
      assertEquals(path, API.of(path));
    }
  }

  @Test
  void concretePathsMapToTheirTemplate() {
    assertEquals("/metrics", API.of("/metrics"));
    assertEquals("/v1/nodes/{node}", API.of("/v1/nodes/node-1"));
    assertEquals("/v1/nodes/{node}/queue", API.of("/v1/nodes/node-1/queue"));
    assertEquals("/v1/nodes/{node}/gpus/{index}/health", API.of("/v1/nodes/n/gpus/3/health"));
    assertEquals("/v1/namespaces/{namespace}/pods/{name}", API.of("/v1/namespaces/default/pods/a"));
    assertEquals(
        "/v1/namespaces/{namespace}/pods/{name}/watch",
        API.of("/v1/namespaces/default/pods/a/watch"));
    assertEquals("/dashboard", API.of("/dashboard/"));
    assertEquals("/dashboard/{file}", API.of("/dashboard/app.js"));
    assertEquals("/scheduler/filter", API.of("/scheduler/filter"));
    assertEquals("/scheduler/prioritize", API.of("/scheduler/prioritize"));
  }

  @Test
  void pathsTheApiDoesNotHaveAreOther() {
    assertEquals("other", API.of("/"));
    assertEquals("other", API.of("/wp-login.php"));
    assertEquals("other", API.of("/v1/nodes/n/unknown"));
    assertEquals("other", API.of("/v1/namespaces/default/pods/a/b/c"));
    assertEquals("other", API.of("/v1//nodes"));
    assertEquals("other", API.of("/v1/nodes//queue"));
  }

  @Test
  void aVariableMatchesOneNonEmptySegment() {
    RouteTemplates t = RouteTemplates.of(List.of("/a/{x}", "/a/{x}/b"));
    assertEquals("/a/{x}", t.of("/a/1"));
    assertEquals("/a/{x}/b", t.of("/a/1/b"));
    assertEquals("other", t.of("/a"));
    assertEquals("other", t.of("/a/1/c"));
  }
}
