package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * gpushare's PostgreSQL DDL ({@value SchemaSetup#POSTGRES_SCRIPT}) against the plugin's own script:
 * the same tables and columns (an upgrade of pekko-persistence-jdbc that changes them fails here)
 * but for exactly one change, {@code persistence_id VARCHAR(255)} made {@code VARCHAR(512)} in
 * {@code event_journal}, {@code snapshot} and {@code durable_state} (persistence ids of Kubernetes
 * names of up to 253 characters, EVENTS.md "Persistence ids"); and only idempotent statements that
 * may run in one transaction, with one conditional widening per widened column for journals made by
 * the older script.
 */
class SchemaDdlTest {

  private static final String PLUGIN_SCRIPT = "schema/postgres/postgres-create-schema.sql";

  /** The tables whose {@code persistence_id} gpushare widens, in the script's order. */
  private static final List<String> WIDENED = List.of("event_journal", "snapshot", "durable_state");

  private static final String NARROW = normalize("persistence_id VARCHAR(255) NOT NULL");
  private static final String WIDE = normalize("persistence_id VARCHAR(512) NOT NULL");

  @Test
  void theTablesAreThePluginsOwnButForTheWidthOfPersistenceIds() throws IOException {
    List<String> ours = tables(SchemaSetup.postgresScript());
    List<String> plugin = tables(pluginScript());
    assertEquals(4, plugin.size(), "the plugin's script has four tables: " + plugin);
    assertEquals(4, ours.size(), "four tables: " + ours);
    List<String> widened = new ArrayList<>();
    for (int i = 0; i < plugin.size(); i++) {
      String theirs = plugin.get(i);
      if (theirs.contains(NARROW)) {
        assertEquals(1, count(theirs, NARROW), theirs);
        widened.add(tableOf(theirs));
        theirs = theirs.replace(NARROW, WIDE);
      }
      assertEquals(theirs, ours.get(i), "only persistence_id is wider");
    }
    assertEquals(WIDENED, widened, "the plugin's tables with persistence_id VARCHAR(255)");
    assertEquals(512, SchemaSetup.PERSISTENCE_ID_WIDTH);
  }

  @Test
  void everyStatementIsIdempotentAndTransactional() {
    List<String> statements = SchemaSetup.statements(SchemaSetup.postgresScript());
    assertEquals(
        11,
        statements.size(),
        "four tables, three indexes, three widenings, the tag index: " + statements);
    List<String> widenings = new ArrayList<>();
    for (String statement : statements) {
      String normalized = normalize(statement);
      if (normalized.startsWith("do $$")) {
        widenings.add(normalized);
      } else {
        assertTrue(
            normalized.startsWith("create table if not exists ")
                || normalized.startsWith("create unique index if not exists ")
                || normalized.startsWith("create index if not exists "),
            statement);
      }
      assertFalse(normalized.contains("concurrently"), statement);
      assertFalse(normalized.contains("public."), statement);
    }
    // Each DO block alters one widened column, and only while it is a VARCHAR narrower than 512
    // (atttypmod = length + 4): a wider or unbounded column, or a second run, changes nothing.
    assertEquals(WIDENED.size(), widenings.size(), "one widening per column: " + widenings);
    for (int i = 0; i < WIDENED.size(); i++) {
      String table = WIDENED.get(i);
      String block = widenings.get(i);
      assertTrue(block.endsWith("end $$"), block);
      assertTrue(
          block.contains(
              normalize(
                  "IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('"
                      + table
                      + "') AND attname = 'persistence_id' AND NOT attisdropped AND atttypid ="
                      + " 'varchar'::regtype AND atttypmod BETWEEN 0 AND 515) THEN ALTER TABLE "
                      + table
                      + " ALTER COLUMN persistence_id TYPE VARCHAR(512);")),
          block);
      assertEquals(1, count(block, "alter table"), block);
    }
  }

  @Test
  void dollarQuotedBlocksAreOneStatement() {
    assertEquals(
        List.of("CREATE TABLE a (x INT)", "DO $$\nBEGIN\n  SELECT 1;\n  SELECT 2;\nEND\n$$"),
        SchemaSetup.statements(
            "CREATE TABLE a (x INT);\n-- a; comment\nDO $$\nBEGIN\n  SELECT 1;\n  SELECT 2;\nEND\n$$;\n"));
  }

  @Test
  void statementsSkipCommentsAndBlankParts() {
    assertEquals(
        List.of("CREATE TABLE a (x INT)", "CREATE INDEX b ON a (x)"),
        SchemaSetup.statements(
            "-- a comment\nCREATE TABLE a (x INT);\n\n  -- more\nCREATE INDEX b ON a (x);\n"));
  }

  private static int count(String text, String part) {
    return text.split(java.util.regex.Pattern.quote(part), -1).length - 1;
  }

  private static String tableOf(String createTable) {
    String rest = createTable.substring("create table if not exists ".length());
    return rest.substring(0, rest.indexOf('('));
  }

  private static List<String> tables(String script) {
    return SchemaSetup.statements(script).stream()
        .map(SchemaDdlTest::normalize)
        .filter(s -> s.startsWith("create table"))
        .toList();
  }

  /** Lower case, one space between tokens, without {@code public.}. */
  private static String normalize(String statement) {
    return statement
        .toLowerCase(Locale.ROOT)
        .replace("public.", "")
        .replaceAll("\\s+", " ")
        .replaceAll("\\s*([(),])\\s*", "$1")
        .strip();
  }

  private static String pluginScript() throws IOException {
    try (InputStream in = SchemaUtilsHolder.loader().getResourceAsStream(PLUGIN_SCRIPT)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static final class SchemaUtilsHolder {
    static ClassLoader loader() {
      return org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils.class.getClassLoader();
    }
  }
}
