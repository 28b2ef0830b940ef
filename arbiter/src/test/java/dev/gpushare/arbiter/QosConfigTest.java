package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class QosConfigTest {

  private static final String FIELD = "metadata.annotations[alibabacloud.com/gpu-share-qos-config]";

  private static FieldError onlyError(String json) {
    Parsed<QosConfig> parsed = QosConfig.parse(json);
    assertFalse(parsed.ok(), json);
    assertNull(parsed.value());
    assertEquals(1, parsed.errors().size(), parsed.errors().toString());
    return parsed.errors().get(0);
  }

  @Test
  void readsTheReferenceAnnotation() {
    Parsed<QosConfig> parsed =
        QosConfig.parse(
            "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
                + " \"reservedEphemeralStorage\": \"1.5Ti\"}");
    assertTrue(parsed.ok());
    assertEquals(new QosConfig(true, 120, "1.5Ti"), parsed.value());
  }

  @Test
  void anEmptyObjectIsTheDefault() {
    assertEquals(QosConfig.DEFAULT, QosConfig.parse("{}").value());
    assertEquals(new QosConfig(false, 120, "0"), QosConfig.DEFAULT);
  }

  @Test
  void missingFieldsTakeTheirDefaults() {
    assertEquals(
        new QosConfig(true, 120, "0"), QosConfig.parse("{\"preemptEnabled\":true}").value());
    assertEquals(
        new QosConfig(false, 30, "0"), QosConfig.parse("{\"podMaxDurationMinutes\":30}").value());
    assertEquals(
        new QosConfig(false, 120, "100Gi"),
        QosConfig.parse("{\"reservedEphemeralStorage\":\"100Gi\"}").value());
  }

  @Test
  void acceptsTheBoundsOfPodMaxDurationMinutes() {
    assertEquals(
        1, QosConfig.parse("{\"podMaxDurationMinutes\":1}").value().podMaxDurationMinutes());
    assertEquals(
        Integer.MAX_VALUE,
        QosConfig.parse("{\"podMaxDurationMinutes\":2147483647}").value().podMaxDurationMinutes());
  }

  @ParameterizedTest
  @ValueSource(strings = {"\"true\"", "1", "null", "{}", "[true]"})
  void preemptEnabledMustBeAJsonBoolean(String given) {
    FieldError e = onlyError("{\"preemptEnabled\": " + given + "}");
    assertEquals(FIELD + ".preemptEnabled", e.field());
    assertEquals(given.replace(" ", ""), e.value());
    assertTrue(e.message().contains("a JSON boolean, true or false"), e.message());
    assertTrue(e.message().contains(FIELD + ".preemptEnabled is " + e.value()), e.message());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "1.5",
        "\"120\"",
        "0",
        "-1",
        "120.0",
        "1e2",
        "2147483648",
        "99999999999999999999",
        "null",
        "true"
      })
  void podMaxDurationMinutesMustBeAnIntegerOfAtLeastOne(String given) {
    FieldError e = onlyError("{\"podMaxDurationMinutes\":" + given + "}");
    assertEquals(FIELD + ".podMaxDurationMinutes", e.field());
    assertEquals(given, e.value());
    assertTrue(e.message().contains("a JSON integer from 1 to 2147483647"), e.message());
  }

  @ParameterizedTest
  @ValueSource(strings = {"1", "\"-1Gi\"", "\"abc\"", "\"1.5TB\"", "\"\"", "null"})
  void reservedEphemeralStorageMustBeANonNegativeQuantityString(String given) {
    FieldError e = onlyError("{\"reservedEphemeralStorage\":" + given + "}");
    assertEquals(FIELD + ".reservedEphemeralStorage", e.field());
    assertEquals(given, e.value());
    assertTrue(e.message().contains("such as \"1.5Ti\""), e.message());
    assertTrue(e.message().contains("Ki, Mi, Gi"), e.message());
  }

  @Test
  void rejectsUnknownFieldsNamingTheAcceptedOnes() {
    FieldError e = onlyError("{\"preemptEnable\": true}");
    assertEquals(FIELD + ".preemptEnable", e.field());
    assertEquals("true", e.value());
    assertTrue(
        e.message().contains("preemptEnabled, podMaxDurationMinutes and reservedEphemeralStorage"),
        e.message());
  }

  @Test
  void rejectsDuplicateKeys() {
    FieldError e = onlyError("{\"podMaxDurationMinutes\": 30, \"podMaxDurationMinutes\": 60}");
    assertEquals(FIELD + ".podMaxDurationMinutes", e.field());
    assertEquals("60", e.value());
    assertTrue(e.message().contains("at most once"), e.message());
  }

  @Test
  void reportsEveryBadFieldInOrder() {
    Parsed<QosConfig> parsed =
        QosConfig.parse(
            "{\"preemptEnabled\": \"yes\", \"podMaxDurationMinutes\": 1.5,"
                + " \"reservedEphemeralStorage\": \"-1\", \"extra\": 1}");
    assertEquals(
        List.of(
            FIELD + ".preemptEnabled",
            FIELD + ".podMaxDurationMinutes",
            FIELD + ".reservedEphemeralStorage",
            FIELD + ".extra"),
        parsed.errors().stream().map(FieldError::field).toList());
    assertEquals(
        List.of("\"yes\"", "1.5", "\"-1\"", "1"),
        parsed.errors().stream().map(FieldError::value).toList());
    String summary = parsed.errorSummary();
    assertEquals(4, summary.split("; want ").length - 1, summary);
  }

  @Test
  void goodFieldsBesideABadOneDoNotHideIt() {
    FieldError e = onlyError("{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 0}");
    assertEquals(FIELD + ".podMaxDurationMinutes", e.field());
  }

  static Stream<Arguments> malformedJson() {
    return Stream.of(
        Arguments.of("{\"preemptEnabled\": true,}", "line 1, column 25"),
        Arguments.of("{\"preemptEnabled\": tru}", "line 1, column"),
        Arguments.of("{\"preemptEnabled\": true", "line 1, column 24"),
        Arguments.of("{preemptEnabled: true}", "line 1, column 2"),
        Arguments.of("{'a': 1}", "line 1, column 2"),
        Arguments.of("{}\n{}", "line 2, column 1"),
        Arguments.of("{} x", "line 1, column 5"));
  }

  @ParameterizedTest
  @MethodSource("malformedJson")
  void malformedJsonIsOneErrorWithTheParsersLocation(String json, String location) {
    FieldError e = onlyError(json);
    assertEquals(FIELD, e.field());
    assertEquals(json, e.value());
    assertTrue(e.message().contains("is not valid JSON"), e.message());
    assertTrue(e.message().contains(location), e.message());
    assertTrue(e.message().contains("want a JSON object such as {"), e.message());
  }

  @Test
  void anEmptyAnnotationIsMalformed() {
    FieldError e = onlyError("");
    assertEquals(FIELD, e.field());
    assertTrue(e.message().contains("no content"), e.message());
  }

  @ParameterizedTest
  @ValueSource(strings = {"[]", "\"share-pool\"", "5", "true", "null"})
  void theAnnotationMustHoldAnObject(String json) {
    FieldError e = onlyError(json);
    assertEquals(FIELD, e.field());
    assertEquals(json, e.value());
    assertTrue(e.message().contains("want a JSON object such as"), e.message());
  }
}
