package dev.gpushare.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.gpushare.arbiter.JsonMappers;
import java.io.UncheckedIOException;

/** {@code -o json|yaml}: the API's answer as it came, pretty-printed, or the same as YAML. */
enum Output {
  json,
  yaml;

  static final ObjectMapper JSON = JsonMappers.indented();
  static final ObjectMapper YAML =
      new ObjectMapper(
          YAMLFactory.builder()
              .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
              .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
              // "2" stays a string ("nvidia.com/gpu": "2"), as kubectl writes it
              .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS)
              .build());

  String write(JsonNode answer) {
    try {
      String text =
          this == json ? JSON.writeValueAsString(answer) : YAML.writeValueAsString(answer);
      return text.endsWith("\n") ? text : text + "\n";
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
