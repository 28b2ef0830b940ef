package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.http.tools.JournalCommand;
import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's commands {@code init-schema} and {@code journal} on the embedded H2 journal (the
 * PostgreSQL journal and a running server are covered end to end in src-test).
 */
class LauncherCommandsTest {
  @TempDir Path dir;

  private record Outcome(int status, String out, String err) {}

  private static Outcome run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status =
        Main.launch(
            args,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Outcome(
        status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  private static void assertRefused(Outcome outcome, String command, String expected) {
    assertEquals(2, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(outcome.err().startsWith("gpushare " + command + ": " + expected), outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void eachCommandHasItsHelp() {
    Outcome schema = run("init-schema", "--help");
    assertEquals(0, schema.status());
    assertTrue(schema.out().startsWith("Usage: java -jar gpushare.jar init-schema"));
    Outcome journal = run("journal", "--help");
    assertEquals(0, journal.status());
    assertTrue(journal.out().startsWith("Usage: java -jar gpushare.jar journal PERSISTENCE_ID"));
    assertTrue(LauncherOptions.usage().contains("java -jar gpushare.jar init-schema"));
    assertTrue(LauncherOptions.usage().contains("java -jar gpushare.jar journal"));
  }

  @Test
  void badArgumentsAreRefusedNamingTheFlagAndValue() {
    assertRefused(run("journal"), "journal", "missing PERSISTENCE_ID");
    assertRefused(run("journal", "a", "b"), "journal", "unexpected argument 'b'");
    assertRefused(run("journal", "a", "--from", "0"), "journal", "--from: '0' given; expected");
    assertRefused(run("journal", "a", "--limit=x"), "journal", "--limit: 'x' given; expected");
    assertRefused(run("journal", "a", "--limit= 5"), "journal", "--limit: ' 5' given; expected");
    assertRefused(run("journal", "--ids", "a"), "journal", "--ids lists every persistence id");
    assertRefused(run("journal", "--ids", "--from", "2"), "journal", "--from: applies to events");
    assertRefused(run("journal", "a", "--verbose"), "journal", "unknown flag '--verbose'");
    assertRefused(run("journal", "a", "--data"), "journal", "--data: missing value");
    assertRefused(run("init-schema", "x"), "init-schema", "unexpected argument 'x'");
    assertRefused(
        run("init-schema", "--config", "a", "--config", "b"),
        "init-schema",
        "--config: given more than once");
  }

  @Test
  void aBadConfigurationIsRefusedLikeTheLaunchersOwn() throws Exception {
    Path conf = dir.resolve("bad.conf");
    Files.writeString(conf, "gpushare.journal.kind = oracle\n");
    Outcome outcome = run("init-schema", "--config", conf.toString());
    assertRefused(outcome, "init-schema", "invalid configuration (1 error)");
    assertTrue(outcome.err().contains("gpushare.journal.kind: 'oracle' given at "), outcome.err());
  }

  @Test
  void readingNeverCreatesAnH2Journal() {
    Path empty = dir.resolve("no-journal");
    Outcome outcome = run("journal", "--ids", "--data", empty.toString());
    assertRefused(outcome, "journal", "--data " + empty + ": no H2 journal in it");
    assertFalse(Files.exists(empty), "nothing created");
  }

  @Test
  void initSchemaCreatesTheH2TablesOnceThenTheJournalReadsEmpty() {
    Path data = dir.resolve("data");
    Outcome first = run("init-schema", "--data", data.toString());
    assertEquals(0, first.status(), first.err());
    assertTrue(
        first
            .out()
            .startsWith(
                "init-schema: h2 journal database jdbc:h2:file:"
                    + data.toAbsolutePath().resolve("journal")
                    + ", schema script schema/h2/h2-create-schema.sql\n"),
        first.out());
    assertTrue(
        first
            .out()
            .contains("  created:         event_journal, event_tag, snapshot, durable_state"),
        first.out());
    assertTrue(first.out().contains("  already present: (none)\n"), first.out());
    Outcome second = run("init-schema", "--data", data.toString());
    assertEquals(0, second.status(), second.err());
    assertTrue(second.out().contains("  created:         (none)\n"), second.out());
    assertTrue(second.out().contains("  widened:         (none)\n"), second.out());
    assertTrue(second.out().contains("nothing to do: every table exists"), second.out());

    Outcome ids = run("journal", "--ids", "--data", data.toString());
    assertEquals(0, ids.status(), ids.err());
    assertEquals("", ids.out());
    Outcome events = run("journal", "Pod|default/a", "--data", data.toString());
    assertEquals(0, events.status(), events.err());
    assertEquals("", events.out());
    assertTrue(events.err().contains("no events for Pod|default/a"), events.err());
  }

  @Test
  void initSchemaWidensTheNarrowPersistenceIdsOfAnOlderH2Journal() throws Exception {
    Path data = dir.resolve("old");
    // An H2 journal as gpushare made it before: the plugin's script, persistence_id VARCHAR(255).
    try (var connection =
            java.sql.DriverManager.getConnection(
                "jdbc:h2:file:" + data.toAbsolutePath().resolve("journal"), "sa", "");
        var ddl = connection.createStatement();
        var script =
            org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils.class
                .getClassLoader()
                .getResourceAsStream("schema/h2/h2-create-schema.sql")) {
      for (String statement :
          new String(script.readAllBytes(), StandardCharsets.UTF_8).split(";")) {
        if (!statement.isBlank()) {
          ddl.execute(statement);
        }
      }
    }
    Outcome first = run("init-schema", "--data", data.toString());
    assertEquals(0, first.status(), first.err());
    assertTrue(first.out().contains("  created:         (none)\n"), first.out());
    assertTrue(
        first
            .out()
            .contains(
                "  widened:         event_journal.persistence_id, snapshot.persistence_id,"
                    + " durable_state.persistence_id (to VARCHAR(512), every row kept)\n"),
        first.out());
    assertTrue(
        first.out().contains("  done: 0 table(s) created, 3 column(s) widened"), first.out());
    Outcome second = run("init-schema", "--data", data.toString());
    assertEquals(0, second.status(), second.err());
    assertTrue(second.out().contains("  widened:         (none)\n"), second.out());
    assertTrue(second.out().contains("nothing to do: every table exists"), second.out());
  }

  @Test
  void aTimelineLineHasSequenceTimeTypeAndCompactJson() {
    JournalEntry entry =
        new JournalEntry(
            "Pod|default/a",
            7,
            Instant.parse("2026-01-02T03:04:05Z"),
            "PodActor.Granted",
            JsonNodeFactory.instance.objectNode().put("gpu", 1).put("uuid", "GPU-x"));
    assertEquals(
        "  7  2026-01-02T03:04:05.000Z  PodActor.Granted    {\"gpu\":1,\"uuid\":\"GPU-x\"}",
        JournalCommand.line(entry, 3, 18));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    JournalCommand.print(List.of(entry), new PrintStream(out, true, StandardCharsets.UTF_8));
    assertEquals(
        "7  2026-01-02T03:04:05.000Z  PodActor.Granted  {\"gpu\":1,\"uuid\":\"GPU-x\"}\n",
        out.toString(StandardCharsets.UTF_8));
  }
}
