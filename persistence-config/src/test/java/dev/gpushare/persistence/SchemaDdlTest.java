package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * gpushare's PostgreSQL DDL ({@value SchemaSetup#POSTGRES_SCRIPT}) against the plugin's own script:
 * the same tables and columns (an upgrade of pekko-persistence-jdbc that changes them fails here),
 * and only idempotent statements that may run in one transaction.
 */
class SchemaDdlTest {

  private static final String PLUGIN_SCRIPT = "schema/postgres/postgres-create-schema.sql";

  @Test
  void theTablesAreThePluginsOwn() throws IOException {
    List<String> ours = tables(SchemaSetup.postgresScript());
    List<String> plugin = tables(pluginScript());
    assertEquals(4, plugin.size(), "the plugin's script has four tables: " + plugin);
    assertEquals(plugin, ours);
  }

  @Test
  void everyStatementIsIdempotentAndTransactional() {
    List<String> statements = SchemaSetup.statements(SchemaSetup.postgresScript());
    assertEquals(7, statements.size(), "four tables and three indexes: " + statements);
    for (String statement : statements) {
      String normalized = normalize(statement);
      assertTrue(
          normalized.startsWith("create table if not exists ")
              || normalized.startsWith("create unique index if not exists ")
              || normalized.startsWith("create index if not exists "),
          statement);
      assertFalse(normalized.contains("concurrently"), statement);
      assertFalse(normalized.contains("public."), statement);
    }
  }

  @Test
  void statementsSkipCommentsAndBlankParts() {
    assertEquals(
        List.of("CREATE TABLE a (x INT)", "CREATE INDEX b ON a (x)"),
        SchemaSetup.statements(
            "-- a comment\nCREATE TABLE a (x INT);\n\n  -- more\nCREATE INDEX b ON a (x);\n"));
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
