package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Persistence ids of {@value SchemaSetup#PERSISTENCE_ID_WIDTH} characters on the embedded H2
 * journal: a new data directory takes them at once, and one made with the plugin's script ({@code
 * VARCHAR(255)}) is widened at the next start with every row kept.
 */
class H2PersistenceIdWidthTest {

  private static final Instant AT = Instant.parse("2026-01-02T03:04:05Z");

  /** {@code Counter|xxx…}, exactly as wide as the column. */
  static final String LONG_ID =
      "x".repeat(SchemaSetup.PERSISTENCE_ID_WIDTH - Counter.ENTITY_TYPE.length() - 1);

  static final List<String> WIDENED =
      List.of(
          "event_journal.persistence_id",
          "snapshot.persistence_id",
          "durable_state.persistence_id");

  @Test
  void aNewJournalTakesPersistenceIdsAsWideAsTheColumn(@TempDir Path data) throws Exception {
    ActorTestKit first = JournalTestKits.embedded("h2-new", data);
    try {
      SchemaSetup.Report report = await(SchemaSetup.create(first.system()));
      // The plugin's script makes VARCHAR(255), widened at once: new tables, nothing "widened".
      assertEquals(4, report.created().size());
      assertEquals(List.of(), report.widened());
      add(first, LONG_ID, 5);
      assertEquals(List.of(512, 512, 512), widths(first));
    } finally {
      first.shutdownTestKit();
    }
    ActorTestKit restarted = JournalTestKits.embedded("h2-new-again", data);
    try {
      assertEquals(List.of(), await(SchemaSetup.create(restarted.system())).widened());
      assertEquals(new Counter.State(15, 5), get(restarted, LONG_ID));
      assertEquals(List.of(Counter.ENTITY_TYPE + "|" + LONG_ID), ids(restarted));
    } finally {
      restarted.shutdownTestKit();
    }
  }

  @Test
  void aJournalMadeWithThePluginsSchemaIsWidenedAndKeepsItsRows(@TempDir Path data)
      throws Exception {
    ActorTestKit old = JournalTestKits.embedded("h2-old", data);
    try {
      // The schema before gpushare widened it: exactly the plugin's script.
      try (Connection connection = JournalTestKits.connection(old.system());
          Statement ddl = connection.createStatement()) {
        for (String statement : SchemaSetup.statements(pluginScript())) {
          ddl.execute(statement);
        }
      }
      assertEquals(List.of(255, 255, 255), widths(old));
      assertEquals(List.of(), tagIndex(old), "the plugin's schema has no index by tag");
      add(old, "c-1", 6);
      add(old, "c-2", 1);
    } finally {
      old.shutdownTestKit();
    }
    ActorTestKit upgraded = JournalTestKits.embedded("h2-upgraded", data);
    try {
      SchemaSetup.Report report = await(SchemaSetup.create(upgraded.system()));
      assertEquals(WIDENED, report.widened());
      assertEquals(List.of(), report.created());
      assertEquals(List.of(512, 512, 512), widths(upgraded));
      assertEquals(List.of("tag", "event_id"), tagIndex(upgraded), "the history's index");
      assertEquals(7, rows(upgraded, "event_journal"));
      assertEquals(1, rows(upgraded, "snapshot"));
      assertEquals(new Counter.State(21, 6), get(upgraded, "c-1"));
      assertEquals(new Counter.State(1, 1), get(upgraded, "c-2"));
      add(upgraded, LONG_ID, 5);
      await(SchemaSetup.verifyWritable(upgraded.system()));
    } finally {
      upgraded.shutdownTestKit();
    }
    ActorTestKit again = JournalTestKits.embedded("h2-upgraded-again", data);
    try {
      assertEquals(List.of(), await(SchemaSetup.create(again.system())).widened());
      assertEquals(new Counter.State(15, 5), get(again, LONG_ID));
      assertEquals(new Counter.State(21, 6), get(again, "c-1"));
    } finally {
      again.shutdownTestKit();
    }
  }

  /**
   * The columns, in order, of the index {@link SchemaSetup#TAG_INDEX} on {@code event_tag} (none
   * when it is missing).
   */
  static List<String> tagIndex(ActorTestKit kit) throws Exception {
    java.util.TreeMap<Integer, String> columns = new java.util.TreeMap<>();
    try (Connection connection = JournalTestKits.connection(kit.system());
        java.sql.ResultSet index =
            connection.getMetaData().getIndexInfo(null, null, "event_tag", false, false)) {
      while (index.next()) {
        if (SchemaSetup.TAG_INDEX.equalsIgnoreCase(index.getString("INDEX_NAME"))) {
          columns.put((int) index.getShort("ORDINAL_POSITION"), index.getString("COLUMN_NAME"));
        }
      }
    }
    return List.copyOf(columns.values());
  }

  /** Adds 1, 2, … {@code events} to counter {@code id}; the fourth event takes a snapshot. */
  static void add(ActorTestKit kit, String id, int events) {
    ActorRef<Counter.Command> counter = kit.spawn(Counter.create(id));
    TestProbe<Counter.State> probe = kit.createTestProbe();
    for (int i = 1; i <= events; i++) {
      counter.tell(new Counter.Add(i, AT, probe.ref()));
      probe.receiveMessage(JournalTestKits.TIMEOUT);
    }
    kit.stop(counter);
  }

  static Counter.State get(ActorTestKit kit, String id) {
    TestProbe<Counter.State> probe = kit.createTestProbe();
    kit.spawn(Counter.create(id)).tell(new Counter.Get(probe.ref()));
    return probe.receiveMessage(JournalTestKits.TIMEOUT);
  }

  static List<String> ids(ActorTestKit kit) throws Exception {
    return await(JdbcJournalInspector.create(kit.system()).persistenceIds());
  }

  /** The declared width of persistence_id in event_journal, snapshot and durable_state. */
  static List<Integer> widths(ActorTestKit kit) throws SQLException {
    List<Integer> widths = new ArrayList<>();
    try (Connection connection = JournalTestKits.connection(kit.system())) {
      for (String table : List.of("event_journal", "snapshot", "durable_state")) {
        try (PreparedStatement query =
            connection.prepareStatement(
                "SELECT character_maximum_length FROM information_schema.columns"
                    + " WHERE table_name = ? AND column_name = 'persistence_id'")) {
          query.setString(1, table);
          try (ResultSet row = query.executeQuery()) {
            row.next();
            widths.add(row.getInt(1));
          }
        }
      }
    }
    return widths;
  }

  static long rows(ActorTestKit kit, String table) throws SQLException {
    boolean postgres =
        kit.system()
            .settings()
            .config()
            .getString(PersistenceProfiles.SHARED_DATABASE + ".db.url")
            .startsWith("jdbc:postgresql:");
    String quoted = postgres ? table : "\"" + table + "\"";
    try (Connection connection = JournalTestKits.connection(kit.system());
        Statement query = connection.createStatement();
        ResultSet row = query.executeQuery("SELECT COUNT(*) FROM " + quoted)) {
      row.next();
      return row.getLong(1);
    }
  }

  private static String pluginScript() throws Exception {
    try (var in = SchemaUtils.class.getClassLoader().getResourceAsStream(SchemaSetup.H2_SCRIPT)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(JournalTestKits.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }
}
