package dev.gpushare.http.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.http.server.Json;
import dev.gpushare.node.api.ServiceException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class NodeMergePatchTest {

  private static NodeMergePatch patch(String json) throws Exception {
    return NodeMergePatch.of(Json.mapper().readTree(json));
  }

  private static List<String> refusedFields(String json) {
    ServiceException e = assertThrows(ServiceException.class, () -> patch(json));
    assertEquals(ServiceException.Kind.INVALID, e.kind());
    return e.errors().stream().map(FieldError::field).toList();
  }

  @Test
  void stringsSetAndNullsRemove() throws Exception {
    NodeMergePatch p =
        patch("{\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":null},\"annotations\":{\"c\":\"2\"}}}");
    Map<String, String> labels = new HashMap<>();
    labels.put("a", "1");
    labels.put("b", null);
    assertEquals(labels, p.labels());
    assertEquals(Map.of("c", "2"), p.annotations());
    assertEquals(false, p.clearLabels());
  }

  @Test
  void aNullMapRemovesEveryCurrentKey() throws Exception {
    NodeMergePatch p = patch("{\"metadata\":{\"labels\":null}}");
    assertTrue(p.clearLabels());
    Map<String, String> expected = new HashMap<>();
    expected.put("x", null);
    expected.put("y", null);
    assertEquals(expected, NodeMergePatch.changes(p.labels(), true, Set.of("x", "y")));
  }

  @Test
  void anEmptyPatchChangesNothing() throws Exception {
    NodeMergePatch p = patch("{}");
    assertEquals(Map.of(), p.labels());
    assertEquals(Map.of(), p.annotations());
  }

  @Test
  void everythingElseIsRefusedByName() {
    assertEquals(List.of("spec", "status"), refusedFields("{\"spec\":{},\"status\":{}}"));
    assertEquals(List.of("metadata.name"), refusedFields("{\"metadata\":{\"name\":\"x\"}}"));
    assertEquals(List.of("metadata"), refusedFields("{\"metadata\":[]}"));
    assertEquals(List.of("metadata.labels"), refusedFields("{\"metadata\":{\"labels\":\"a\"}}"));
    assertEquals(
        List.of("metadata.annotations[n]"),
        refusedFields("{\"metadata\":{\"annotations\":{\"n\":5}}}"));
    assertEquals(List.of("body"), refusedFields("[]"));
  }
}
