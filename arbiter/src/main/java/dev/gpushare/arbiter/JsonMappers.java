package dev.gpushare.arbiter;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The one place JSON mappers are made. Each mapper is configured once here and shared (Jackson's
 * mappers are thread-safe once configured); nobody else makes a JSON mapper.
 *
 * <ul>
 *   <li>{@link #plain()}: Jackson's defaults, for the small JSON texts gpushare writes itself (a
 *       JSON patch, an annotation's value, a policy's normalised text);
 *   <li>{@link #input()}: for JSON that users write: a key twice in one object and anything after
 *       the one value are errors ({@link InputJson} reads through it);
 *   <li>{@link #indented()}: {@link #plain()} pretty-printed, as the CLI prints an answer.
 * </ul>
 *
 * The HTTP API's wire mapper ({@code dev.gpushare.http.Json}: ISO-8601 instants, the JDK 8 types)
 * and the YAML readers and writers are built from the same rules in http-api, which has the modules
 * they need; Pekko's cluster and journal serializer is configured by {@code
 * pekko.serialization.jackson} (persistence-config), not here.
 */
public final class JsonMappers {
  private JsonMappers() {}

  private static final ObjectMapper PLAIN = new ObjectMapper();

  private static final ObjectMapper INPUT =
      JsonMapper.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  private static final ObjectMapper INDENTED =
      JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

  /** Jackson's defaults; for JSON that gpushare writes and reads itself. */
  public static ObjectMapper plain() {
    return PLAIN;
  }

  /** For user input: duplicate keys and trailing tokens are refused. */
  public static ObjectMapper input() {
    return INPUT;
  }

  /** {@link #plain()}, but writing pretty-printed. */
  public static ObjectMapper indented() {
    return INDENTED;
  }
}
