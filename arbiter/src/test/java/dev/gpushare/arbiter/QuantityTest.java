package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class QuantityTest {

  private static Quantity q(String text) {
    return Quantity.parse(text);
  }

  @ParameterizedTest
  @CsvSource({
    "176, 176",
    "500m, 0.5",
    "0.5, 0.5",
    "+2, 2",
    ".5, 0.5",
    "1., 1",
    "1Ki, 1024",
    "10Gi, 10737418240",
    "1.5Ti, 1649267441664",
    "1k, 1000",
    "1M, 1000000",
    "2G, 2000000000",
    "1E, 1000000000000000000",
    "5n, 0.000000005",
    "5u, 0.000005",
    "1e3, 1000",
    "1E3, 1000",
    "5e-1, 0.5",
    "25e+2, 2500",
    "+1.5Gi, 1610612736",
    "1e0, 1",
    "1E-3, 0.001",
    "0e9, 0",
    "007, 7",
    "0, 0"
  })
  void parsesEveryKubernetesNotation(String text, String value) {
    assertEquals(0, q(text).value().compareTo(new BigDecimal(value)), text);
  }

  @Test
  void reproducesTheReferenceNodeFigures() {
    assertEquals("4608Gi", q("6Ti").minus(q("1.5Ti")).format());
    assertEquals("1640Gi", q("1800Gi").minus(q("10Gi").times(16)).format());
    assertEquals("144", q("176").minus(q("2").times(16)).format());
    assertEquals("6Ti", q("6Ti").format());
    assertEquals("1800Gi", q("1800Gi").format());
    assertEquals("16", q("16").format());
  }

  @ParameterizedTest
  @CsvSource({
    "1.5Ti, 1536Gi",
    "1024Mi, 1Gi",
    "1536Mi, 1536Mi",
    "0.5Ki, 512",
    "1.5Ki, 1536",
    "0.001Ki, 1024m",
    "0.5, 500m",
    "1500m, 1500m",
    "2000m, 2",
    "1000, 1k",
    "1500, 1500",
    "0.000000001, 1n",
    "0.0000000001, 1n",
    "1e3, 1e3",
    "15e2, 1500",
    "5e-1, 500e-3",
    "0Gi, 0",
    "1024Pi, 1Ei",
    "7Ei, 7Ei"
  })
  void printsWhatKubernetesPrints(String text, String canonical) {
    assertEquals(canonical, q(text).format());
  }

  @Test
  void keepsTheFormatOfTheFirstOperand() {
    assertEquals(Quantity.Format.BINARY_SI, q("1Gi").plus(q("1000")).suffixFormat());
    assertEquals("1073742824", q("1000").plus(q("1Gi")).format());
    assertEquals("2Gi", q("1Gi").plus(q("1073741824")).format());
  }

  @Test
  void sumsFromZeroTakeTheFormatOfWhatIsAdded() {
    assertEquals("3Gi", Quantity.ZERO.plus(q("1Gi")).plus(q("2Gi")).format());
  }

  @Test
  void comparesAndEqualsByValueAcrossNotations() {
    assertEquals(q("1Ki"), q("1024"));
    assertEquals(q("1Ki").hashCode(), q("1024.000").hashCode());
    assertEquals(q("1"), q("1000m"));
    assertNotEquals(q("1"), q("1001m"));
    assertTrue(q("1Gi").compareTo(q("1G")) > 0);
  }

  @Test
  void minKeepsTheSmallerOperandAsItIs() {
    Quantity binary = q("4608Gi");
    Quantity decimal = q("5e12");
    assertSame(binary, binary.min(decimal));
    assertSame(binary, binary.min(q("4.5Ti")));
    assertEquals("4Ti", q("6Ti").min(q("4Ti")).format());
  }

  @Test
  void subtractionBelowZeroIsNegative() {
    Quantity negative = q("1").minus(q("3"));
    assertTrue(negative.isNegative());
    assertEquals("-2", negative.format());
    assertFalse(Quantity.ZERO.isNegative());
    assertEquals("-1Gi", q("1Gi").minus(q("2Gi")).format());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "-1",
        "-1Gi",
        "abc",
        "1K",
        "1Gb",
        "1.2.3",
        "1e",
        "1e3.5",
        " 1",
        "1 ",
        " 50",
        "50 ",
        "\t50",
        "50\t",
        "50\n",
        "\u00a050",
        "1 Gi",
        "1Gi ",
        "+ 1",
        "++1",
        "+-1",
        "-0",
        "1e 3",
        "1e3 ",
        "1.5e3Gi",
        "1Gi1",
        "Gi",
        ".",
        "1ki",
        "0x10",
        "9223372036854775808",
        "8Ei",
        "1e19",
        "1e99999",
        "1e-99999"
      })
  void rejectsWhatIsNotANonNegativeQuantity(String text) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Quantity.parse(text));
    assertTrue(e.getMessage().contains("\"" + text + "\""), e.getMessage());
    assertTrue(e.getMessage().contains("Ki, Mi, Gi, Ti, Pi, Ei"), e.getMessage());
    assertTrue(e.getMessage().contains("n, u, m, k, M, G, T, P, E"), e.getMessage());
  }

  @Test
  void acceptsTheLargestSignedLong() {
    assertEquals("9223372036854775807", q("9223372036854775807").format());
  }

  @Test
  void rejectsAMissingText() {
    assertThrows(IllegalArgumentException.class, () -> Quantity.parse(null));
  }
}
