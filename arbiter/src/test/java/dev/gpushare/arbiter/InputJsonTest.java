package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class InputJsonTest {

  private static FieldError duplicate(String json) {
    JsonProcessingException e =
        assertThrows(JsonProcessingException.class, () -> InputJson.tree().readTree(json));
    return InputJson.duplicateKey(e).orElseThrow(() -> new AssertionError("not a duplicate: " + e));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"a\":1,\"a\":2}| a| a",
        "{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}| metadata.name| name",
        "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"name\":\"c\"}]}}"
            + "| spec.containers[1].name| name",
        "{\"spec\":{\"containers\":[{\"resources\":{\"limits\":{\"alibabacloud.com/gpu-core.percentage\":"
            + "50,\"alibabacloud.com/gpu-core.percentage\":100}}}]}}"
            + "| spec.containers[0].resources.limits[alibabacloud.com/gpu-core.percentage]"
            + "| alibabacloud.com/gpu-core.percentage",
        "{\"spec\":{},\"spec\":{}}| spec| spec"
      })
  void aKeyThatAppearsTwiceIsRefusedNamingItsPath(String json, String field, String key) {
    FieldError e = duplicate(json);
    assertEquals(field, e.field());
    assertEquals(key, e.value());
    assertTrue(
        e.message().startsWith(field + ": the key \"" + key + "\" appears again"), e.message());
    assertTrue(e.message().contains("line 1, column"), e.message());
    assertTrue(e.message().contains("at most once"), e.message());
  }

  @Test
  void equalKeysInDifferentObjectsAreFine() throws Exception {
    JsonNode tree =
        InputJson.tree()
            .readTree(
                "{\"name\":\"pod\",\"metadata\":{\"name\":\"a\"},\"items\":[{\"name\":1},{\"name\":2}]}");
    assertEquals("a", tree.path("metadata").path("name").asText());
    assertEquals(2, tree.path("items").get(1).path("name").asInt());
  }

  @Test
  void keysAreComparedExactly() throws Exception {
    JsonNode tree = InputJson.tree().readTree("{\"name\":1,\"Name\":2,\"name \":3}");
    assertEquals(3, tree.size());
  }

  @Test
  void otherErrorsAreNotDuplicates() {
    JsonProcessingException trailing =
        assertThrows(JsonProcessingException.class, () -> InputJson.tree().readTree("{} {}"));
    assertTrue(InputJson.duplicateKey(trailing).isEmpty());
    JsonProcessingException broken =
        assertThrows(JsonProcessingException.class, () -> InputJson.tree().readTree("{\"a\":"));
    assertTrue(InputJson.duplicateKey(broken).isEmpty());
  }

  @Test
  void numbersWithoutADecimalValueHaveNoDecimalText() throws Exception {
    JsonNode n = InputJson.tree().readTree("[1e400, -1e400, 1.50, 2, \"3\"]");
    assertTrue(InputJson.decimalText(n.get(0)).isEmpty());
    assertTrue(InputJson.decimalText(n.get(1)).isEmpty());
    assertEquals("1.5", InputJson.decimalText(n.get(2)).orElseThrow());
    assertEquals("2", InputJson.decimalText(n.get(3)).orElseThrow());
    assertTrue(InputJson.decimalText(n.get(4)).isEmpty());
  }
}
