package dev.gpushare.arbiter;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * How JSON that users write is read (HTTP bodies, admission reviews, annotations that hold JSON):
 * one value, nothing after it, and every key at most once per object. Jackson by default keeps the
 * last of two equal keys, so {@code {"name":"a","name":"b"}} would silently become {@code b} and a
 * second {@code limits} would replace the first; here it is an error that names the key.
 *
 * <p>A YAML reader gets the same rule by enabling {@link
 * StreamReadFeature#STRICT_DUPLICATE_DETECTION} on its factory; {@link #duplicateKey} reads the
 * failure of either.
 */
public final class InputJson {
  private InputJson() {}

  /** What a duplicate key breaks, for error messages. */
  public static final String ACCEPTED_KEYS =
      "each key at most once in an object (a second one would silently replace the first)";

  private static final ObjectMapper MAPPER = JsonMappers.input();

  private static final ObjectReader TREE = MAPPER.readerFor(JsonNode.class);

  /** Jackson's wording when {@link StreamReadFeature#STRICT_DUPLICATE_DETECTION} trips. */
  private static final String DUPLICATE_PREFIX = "Duplicate field '";

  private static final Pattern PLAIN_KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_-]*");

  /** The mapper for user input; share it (thread-safe). */
  public static ObjectMapper mapper() {
    return MAPPER;
  }

  /** Reads one JSON value as a tree. */
  public static ObjectReader tree() {
    return TREE;
  }

  /**
   * The error for a duplicate key, when {@code e} is one: the field is the key's path ({@code
   * metadata.name}, {@code
   * spec.containers[0].resources.limits[alibabacloud.com/gpu-core.percentage]}), the value the key,
   * and the message says where it appears again.
   */
  public static Optional<FieldError> duplicateKey(JsonProcessingException e) {
    String problem = e.getOriginalMessage();
    if (problem == null
        || !problem.startsWith(DUPLICATE_PREFIX)
        || !(e.getProcessor() instanceof JsonParser parser)) {
      return Optional.empty();
    }
    JsonStreamContext context = parser.getParsingContext();
    String key = context == null ? null : context.getCurrentName();
    if (key == null) {
      return Optional.empty();
    }
    String field = path(context);
    String where =
        e.getLocation() == null || e.getLocation().getLineNr() < 1
            ? ""
            : " (line "
                + e.getLocation().getLineNr()
                + ", column "
                + e.getLocation().getColumnNr()
                + ")";
    return Optional.of(
        new FieldError(
            field,
            key,
            field
                + ": the key \""
                + key
                + "\" appears again in the same object"
                + where
                + "; want "
                + ACCEPTED_KEYS));
  }

  /**
   * A JSON or YAML number as the plain decimal text a quantity is compared with ({@code 1.50} reads
   * {@code 1.5}), or empty when it has none: a float beyond the range of a double ({@code 1e400})
   * or YAML's {@code .inf} and {@code .nan} are read as infinite or NaN doubles, which have no
   * decimal value (and must be refused as a quantity, not fail the request).
   */
  public static Optional<String> decimalText(JsonNode number) {
    if (!number.isNumber()) {
      return Optional.empty();
    }
    if ((number.isDouble() || number.isFloat()) && !Double.isFinite(number.doubleValue())) {
      return Optional.empty();
    }
    return Optional.of(number.decimalValue().stripTrailingZeros().toPlainString());
  }

  /** The path of the parser's current key or element, in the style of Kubernetes field paths. */
  static String path(JsonStreamContext context) {
    Deque<String> parts = new ArrayDeque<>();
    for (JsonStreamContext c = context; c != null && !c.inRoot(); c = c.getParent()) {
      if (c.inArray()) {
        parts.push("[" + Math.max(c.getCurrentIndex(), 0) + "]");
      } else if (c.getCurrentName() != null) {
        String name = c.getCurrentName();
        parts.push(PLAIN_KEY.matcher(name).matches() ? "." + name : "[" + name + "]");
      }
    }
    String path = String.join("", parts);
    return path.startsWith(".") ? path.substring(1) : path;
  }
}
