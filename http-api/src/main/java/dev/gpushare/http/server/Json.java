package dev.gpushare.http.server;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.UncheckedIOException;

/**
 * The one JSON mapper of the HTTP API, configured once: records as documented in API.md, instants
 * as ISO-8601 text ({@code "2026-01-01T00:00:00Z"}), {@code null} fields written as {@code null}
 * (PodView shows {@code "gpu":null}). Whatever reads through it refuses a key that appears twice in
 * one object; user input is read with {@link dev.gpushare.arbiter.InputJson}. Thread-safe; share
 * it.
 */
public final class Json {
  private static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .addModule(new JavaTimeModule())
          .addModule(new Jdk8Module())
          .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
          .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
          .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build();

  private Json() {}

  public static ObjectMapper mapper() {
    return MAPPER;
  }

  public static byte[] bytes(Object value) {
    try {
      return MAPPER.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("cannot write " + value.getClass().getName() + " as JSON", e);
    }
  }

  public static String text(Object value) {
    try {
      return MAPPER.writeValueAsString(value);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException("cannot write " + value.getClass().getName() + " as JSON", e);
    }
  }
}
