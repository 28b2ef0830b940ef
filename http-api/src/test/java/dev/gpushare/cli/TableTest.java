package dev.gpushare.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.TypeConversionException;

class TableTest {

  @Test
  void columnsAreLeftAlignedThreeSpacesApartWithoutTrailingBlanks() {
    String t =
        new Table("NAME", "POLICY", "QUEUE")
            .row("node-1", "share-pool", 0)
            .row("n", null, 12)
            .render();
    assertEquals(
        "NAME     POLICY       QUEUE\n"
            + "node-1   share-pool   0\n"
            + "n        -            12\n",
        t);
  }

  @Test
  void anIndentGoesBeforeEveryLine() {
    assertEquals("  A   B\n  x   y\n", new Table("A", "B").row("x", "y").render("  "));
  }

  @Test
  void aRowMustHaveOneCellPerColumn() {
    assertThrows(IllegalArgumentException.class, () -> new Table("A", "B").row("x"));
  }

  @Test
  void durationsAreWrittenTheKubectlWay() {
    assertEquals("0s", Durations.human(0));
    assertEquals("59s", Durations.human(59));
    assertEquals("1m", Durations.human(60));
    assertEquals("3m20s", Durations.human(200));
    assertEquals("1h", Durations.human(3600));
    assertEquals("2h5m", Durations.human(2 * 3600 + 5 * 60 + 9));
    assertEquals("3d4h", Durations.human(3 * 86400 + 4 * 3600 + 59));
    assertEquals("-", Durations.human(-1));
  }

  @Test
  void durationsAreParsedWithAUnitOrAsSeconds() {
    assertEquals(Duration.ofSeconds(10), Durations.parse("10s"));
    assertEquals(Duration.ofSeconds(10), Durations.parse("10"));
    assertEquals(Duration.ofMillis(500), Durations.parse("500ms"));
    assertEquals(Duration.ofMinutes(2), Durations.parse("2m"));
    assertEquals(Duration.ofHours(1), Durations.parse("1H"));
    assertThrows(TypeConversionException.class, () -> Durations.parse("ten seconds"));
    assertThrows(TypeConversionException.class, () -> Durations.parse("-1s"));
    assertThrows(TypeConversionException.class, () -> Durations.parse(" 10s"));
    assertThrows(TypeConversionException.class, () -> Durations.parse("10s "));
  }

  @Test
  void theWaitingLineIsExactlyTheSpecs() {
    assertEquals(
        "You have been waiting for 12 seconds. Approximate position: 3",
        WorkloadRunner.waitingLine(12, 3));
  }
}
