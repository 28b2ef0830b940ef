package dev.gpushare.arbiter;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The share-pool QoS config, from the node annotation {@code alibabacloud.com/gpu-share-qos-config}
 * (SPEC §2).
 *
 * @param preemptEnabled whether a queued pod may preempt a running one
 * @param podMaxDurationMinutes a pod Running continuously longer than this is a preemption
 *     candidate
 * @param reservedEphemeralStorage a Kubernetes quantity, as written ({@code "1.5Ti"})
 */
public record QosConfig(
    boolean preemptEnabled, int podMaxDurationMinutes, String reservedEphemeralStorage)
    implements JsonSerializable {

  public static final String ANNOTATION = "alibabacloud.com/gpu-share-qos-config";

  /** The defaults (design): no preemption, 120 minutes, nothing reserved. */
  public static final QosConfig DEFAULT = new QosConfig(false, 120, "0");

  /** Where errors in the annotation point: {@code metadata.annotations[…qos-config]}. */
  public static final String FIELD = "metadata.annotations[" + ANNOTATION + "]";

  private static final String EXAMPLE =
      "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
          + " \"reservedEphemeralStorage\": \"1.5Ti\"}";

  private static final ObjectMapper MAPPER = JsonMappers.plain();

  public Duration podMaxDuration() {
    return Duration.ofMinutes(podMaxDurationMinutes);
  }

  /**
   * Reads the annotation's JSON (SPEC §2): an object with at most the fields {@code preemptEnabled}
   * (a JSON boolean), {@code podMaxDurationMinutes} (a JSON integer from 1 to 2147483647) and
   * {@code reservedEphemeralStorage} (a JSON string holding a non-negative quantity), each at most
   * once; missing fields take their {@link #DEFAULT}. Every bad field is reported; malformed JSON
   * is reported once, with the parser's location.
   */
  public static Parsed<QosConfig> parse(String json) {
    Objects.requireNonNull(json, "json");
    try (JsonParser parser = MAPPER.createParser(json)) {
      return parseObject(parser, json);
    } catch (JsonProcessingException e) {
      return Parsed.failed(List.of(malformed(json, e.getOriginalMessage(), e.getLocation())));
    } catch (IOException e) {
      throw new UncheckedIOException("reading JSON from a string cannot fail on I/O", e);
    }
  }

  private static Parsed<QosConfig> parseObject(JsonParser parser, String json) throws IOException {
    JsonToken token = parser.nextToken();
    if (token == null) {
      return Parsed.failed(List.of(malformed(json, "no content", parser.currentLocation())));
    }
    if (token != JsonToken.START_OBJECT) {
      String given = valueText(parser, token);
      return trailing(parser, json)
          .orElse(
              Parsed.failed(
                  List.of(FieldErrors.ofJson(FIELD, given, "a JSON object such as " + EXAMPLE))));
    }
    boolean preemptEnabled = DEFAULT.preemptEnabled;
    int podMaxDurationMinutes = DEFAULT.podMaxDurationMinutes;
    String reservedEphemeralStorage = DEFAULT.reservedEphemeralStorage;
    List<FieldError> errors = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String name = parser.currentName();
      String field = FIELD + "." + name;
      JsonToken value = parser.nextToken();
      String given = valueText(parser, value);
      if (!seen.add(name)) {
        errors.add(FieldErrors.ofJson(field, given, "each field at most once; it appears again"));
        continue;
      }
      switch (name) {
        case "preemptEnabled" -> {
          if (value == JsonToken.VALUE_TRUE || value == JsonToken.VALUE_FALSE) {
            preemptEnabled = value == JsonToken.VALUE_TRUE;
          } else {
            errors.add(FieldErrors.ofJson(field, given, "a JSON boolean, true or false"));
          }
        }
        case "podMaxDurationMinutes" -> {
          if (value == JsonToken.VALUE_NUMBER_INT
              && parser.getNumberType() == JsonParser.NumberType.INT
              && parser.getIntValue() >= 1) {
            podMaxDurationMinutes = parser.getIntValue();
          } else {
            errors.add(
                FieldErrors.ofJson(
                    field, given, "a JSON integer from 1 to " + Integer.MAX_VALUE + " (minutes)"));
          }
        }
        case "reservedEphemeralStorage" -> {
          if (value == JsonToken.VALUE_STRING && isQuantity(parser.getText())) {
            reservedEphemeralStorage = parser.getText();
          } else {
            errors.add(
                FieldErrors.ofJson(
                    field,
                    given,
                    "a JSON string holding " + Quantity.ACCEPTED + ", such as \"1.5Ti\""));
          }
        }
        default ->
            errors.add(
                FieldErrors.ofJson(
                    field,
                    given,
                    "no such field; the accepted fields are preemptEnabled,"
                        + " podMaxDurationMinutes and reservedEphemeralStorage"));
      }
    }
    Optional<Parsed<QosConfig>> trailing = trailing(parser, json);
    if (trailing.isPresent()) {
      return trailing.get();
    }
    return errors.isEmpty()
        ? Parsed.ok(new QosConfig(preemptEnabled, podMaxDurationMinutes, reservedEphemeralStorage))
        : Parsed.failed(errors);
  }

  private static boolean isQuantity(String text) {
    try {
      Quantity.parse(text);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** The current value as JSON text, consuming it whole when it is an object or an array. */
  private static String valueText(JsonParser parser, JsonToken token) throws IOException {
    return switch (token) {
      case START_OBJECT, START_ARRAY -> MAPPER.readTree(parser).toString();
      case VALUE_STRING -> MAPPER.writeValueAsString(parser.getText());
      default -> parser.getText();
    };
  }

  /** A failure when anything follows the one JSON value; an annotation holds exactly one. */
  private static Optional<Parsed<QosConfig>> trailing(JsonParser parser, String json)
      throws IOException {
    if (parser.nextToken() == null) {
      return Optional.empty();
    }
    return Optional.of(
        Parsed.failed(
            List.of(
                malformed(
                    json,
                    "content after the end of the JSON value",
                    parser.currentTokenLocation()))));
  }

  private static FieldError malformed(String json, String problem, JsonLocation location) {
    String where =
        location == null
            ? ""
            : " at line " + location.getLineNr() + ", column " + location.getColumnNr();
    return new FieldError(
        FIELD,
        json,
        FIELD
            + " is not valid JSON ("
            + problem
            + where
            + "): "
            + json
            + "; want a JSON object such as "
            + EXAMPLE);
  }
}
