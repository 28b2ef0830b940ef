package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.Config;
import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PostgreSQL profile against a real server (PostgreSQL 17, started once for this class): the
 * schema is created by {@link SchemaSetup} (idempotent, race free) and checked without creating; a
 * first system persists events and is terminated, a second one (kept for the tests, because
 * starting one costs seconds) recovers and inspects them. Each schema test uses a fresh database on
 * the same server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresJournalTest {

  private static final Instant AT = Instant.parse("2026-01-02T03:04:05Z");
  private static final int[] C1_AMOUNTS = {1, 2, 3, 4, 5, 6, 7};
  private static final List<String> ALL_TABLES =
      List.of("event_journal", "event_tag", "snapshot", "durable_state");

  private PostgresServer server;
  private String journalUrl;
  private SchemaSetup.Report firstReport;
  private Instant before;
  private Instant written;
  private ActorTestKit restarted;

  @BeforeAll
  void startServerPersistEventsThenRestart(@TempDir Path temp) throws Exception {
    server = PostgresServer.start(temp.resolve("pgdata"));
    journalUrl = server.createDatabase("journal");
    before = Instant.now().minusSeconds(1);
    ActorTestKit first = JournalTestKits.postgres("first", journalUrl);
    try {
      firstReport = await(SchemaSetup.create(first.system()));
      ActorRef<Counter.Command> c1 = first.spawn(Counter.create("c-1"));
      ActorRef<Counter.Command> c2 = first.spawn(Counter.create("c-2"));
      TestProbe<Counter.State> probe = first.createTestProbe();
      for (int amount : C1_AMOUNTS) {
        c1.tell(new Counter.Add(amount, AT, probe.ref()));
        probe.receiveMessage(JournalTestKits.TIMEOUT);
      }
      c2.tell(new Counter.Add(100, AT, probe.ref()));
      assertEquals(new Counter.State(100, 1), probe.receiveMessage(JournalTestKits.TIMEOUT));
    } finally {
      first.shutdownTestKit();
    }
    written = Instant.now().plusSeconds(1);
    restarted = JournalTestKits.postgres("restarted", journalUrl);
    await(SchemaSetup.verify(restarted.system()));
  }

  @AfterAll
  void stop() {
    try {
      if (restarted != null) {
        restarted.shutdownTestKit();
      }
    } finally {
      if (server != null) {
        server.close();
      }
    }
  }

  @Test
  void theProfileSelectsPostgresAndItsDriverConnects() throws Exception {
    Config config = restarted.system().settings().config();
    String shared = PersistenceProfiles.SHARED_DATABASE;
    assertEquals("slick.jdbc.PostgresProfile$", config.getString(shared + ".profile"));
    assertEquals(journalUrl, config.getString(shared + ".db.url"));
    assertEquals(journalUrl, SchemaSetup.databaseUrl(config));
    try (Connection connection = JournalTestKits.connection(restarted.system())) {
      assertEquals("PostgreSQL", connection.getMetaData().getDatabaseProductName());
      assertEquals(17, connection.getMetaData().getDatabaseMajorVersion());
      assertEquals("org.postgresql.Driver", config.getString(shared + ".db.driver"));
    }
  }

  @Test
  void theFirstCreateReportsEveryTableCreated() {
    assertEquals(journalUrl, firstReport.database());
    assertEquals(SchemaSetup.POSTGRES_SCRIPT, firstReport.script());
    assertEquals(ALL_TABLES, firstReport.created());
    assertEquals(List.of(), firstReport.present());
    assertEquals(List.of(), firstReport.widened());
  }

  @Test
  void aPersistenceIdAsWideAsTheColumnIsWrittenAndReadBack() throws Exception {
    String url = server.createDatabase("wide");
    String id = H2PersistenceIdWidthTest.LONG_ID;
    ActorTestKit writer = JournalTestKits.postgres("wide", url);
    try {
      await(SchemaSetup.create(writer.system()));
      await(SchemaSetup.verifyWritable(writer.system()));
      assertEquals(List.of(512, 512, 512), H2PersistenceIdWidthTest.widths(writer));
      // Five events: the fourth takes a snapshot, so both tables hold the 512-character id.
      H2PersistenceIdWidthTest.add(writer, id, 5);
    } finally {
      writer.shutdownTestKit();
    }
    ActorTestKit reader = JournalTestKits.postgres("wide-reader", url);
    try {
      assertEquals(new Counter.State(15, 5), H2PersistenceIdWidthTest.get(reader, id));
      assertEquals(List.of(Counter.ENTITY_TYPE + "|" + id), H2PersistenceIdWidthTest.ids(reader));
      assertEquals(512, (Counter.ENTITY_TYPE + "|" + id).length());
      assertEquals(1, H2PersistenceIdWidthTest.rows(reader, "snapshot"));
    } finally {
      reader.shutdownTestKit();
    }
  }

  /**
   * A pod's history by tag on PostgreSQL, whose {@code event_tag.tag} is {@code VARCHAR(256)}: the
   * tags of the longest names fit ({@link HistoryScenario}).
   */
  @Test
  void aPodsHistoryIsReadByTagAndTheLongestNamesTagsFit() throws Exception {
    String url = server.createDatabase("history");
    ActorTestKit kit = JournalTestKits.postgres("history", url);
    try {
      await(SchemaSetup.create(kit.system()));
      new HistoryScenario(kit).run();
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void aJournalMadeWithThePluginsSchemaIsWidenedKeepingItsRows() throws Exception {
    String url = server.createDatabase("narrow");
    // The schema of an older gpushare: the plugin's own script, persistence_id VARCHAR(255).
    try (Connection connection = PostgresServer.connect(url);
        java.sql.Statement ddl = connection.createStatement()) {
      for (String statement : SchemaSetup.statements(pluginScript())) {
        ddl.execute(statement);
      }
    }
    ActorTestKit old = JournalTestKits.postgres("narrow-old", url);
    try {
      assertEquals(List.of(255, 255, 255), H2PersistenceIdWidthTest.widths(old));
      assertEquals(List.of(), H2PersistenceIdWidthTest.tagIndex(old), "no index by tag yet");
      H2PersistenceIdWidthTest.add(old, "c-1", 6);
      H2PersistenceIdWidthTest.add(old, "c-2", 1);
      ExecutionException e =
          assertThrows(
              ExecutionException.class, () -> await(SchemaSetup.verifyWritable(old.system())));
      SchemaSetup.NarrowColumnsException narrow =
          assertInstanceOf(SchemaSetup.NarrowColumnsException.class, e.getCause());
      assertEquals(
          List.of(
              "event_journal.persistence_id VARCHAR(255)",
              "snapshot.persistence_id VARCHAR(255)",
              "durable_state.persistence_id VARCHAR(255)"),
          narrow.narrow());
      assertTrue(narrow.getMessage().contains("init-schema"), narrow.getMessage());
    } finally {
      old.shutdownTestKit();
    }
    ActorTestKit upgraded = JournalTestKits.postgres("narrow-upgraded", url);
    try {
      SchemaSetup.Report report = await(SchemaSetup.create(upgraded.system()));
      assertEquals(H2PersistenceIdWidthTest.WIDENED, report.widened());
      assertEquals(List.of(), report.created());
      assertEquals(ALL_TABLES, report.present());
      assertEquals(List.of(512, 512, 512), H2PersistenceIdWidthTest.widths(upgraded));
      assertEquals(
          List.of("tag", "event_id"),
          H2PersistenceIdWidthTest.tagIndex(upgraded),
          "init-schema adds the history's index");
      assertEquals(7, H2PersistenceIdWidthTest.rows(upgraded, "event_journal"));
      assertEquals(1, H2PersistenceIdWidthTest.rows(upgraded, "snapshot"));
      assertEquals(new Counter.State(21, 6), H2PersistenceIdWidthTest.get(upgraded, "c-1"));
      assertEquals(new Counter.State(1, 1), H2PersistenceIdWidthTest.get(upgraded, "c-2"));
      H2PersistenceIdWidthTest.add(upgraded, H2PersistenceIdWidthTest.LONG_ID, 5);
      await(SchemaSetup.verifyWritable(upgraded.system()));
      SchemaSetup.Report again = await(SchemaSetup.create(upgraded.system()));
      assertEquals(List.of(), again.widened(), "a second run widens nothing");
      assertEquals(
          new Counter.State(15, 5),
          H2PersistenceIdWidthTest.get(upgraded, H2PersistenceIdWidthTest.LONG_ID));
      assertEquals(12, H2PersistenceIdWidthTest.rows(upgraded, "event_journal"));
    } finally {
      upgraded.shutdownTestKit();
    }
  }

  private static String pluginScript() throws Exception {
    try (var in =
        org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils.class
            .getClassLoader()
            .getResourceAsStream("schema/postgres/postgres-create-schema.sql")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void verifyRefusesADatabaseWithoutTheSchemaAndCreatesNothing() throws Exception {
    String url = server.createDatabase("empty");
    ActorTestKit kit = JournalTestKits.postgres("empty", url);
    try {
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> await(SchemaSetup.verify(kit.system())));
      SchemaSetup.MissingTablesException missing =
          assertInstanceOf(SchemaSetup.MissingTablesException.class, e.getCause());
      assertEquals(List.of("event_journal", "event_tag", "snapshot"), missing.missing());
      assertEquals(url, missing.database());
      assertTrue(missing.getMessage().startsWith("journal database " + url + ": tables ["));
    } finally {
      kit.shutdownTestKit();
    }
    assertEquals(List.of(), tablesIn(url));
  }

  @Test
  void createSchemaIsIdempotent() throws Exception {
    String url = server.createDatabase("idempotent");
    ActorTestKit kit = JournalTestKits.postgres("idempotent", url);
    try {
      SchemaSetup.Report first = await(SchemaSetup.create(kit.system()));
      assertEquals(ALL_TABLES, first.created());
      SchemaSetup.Report second = await(SchemaSetup.create(kit.system()));
      assertEquals(List.of(), second.created());
      assertEquals(ALL_TABLES, second.present());
      await(SchemaSetup.ensure(kit.system()));
      await(SchemaSetup.verify(kit.system()));
    } finally {
      kit.shutdownTestKit();
    }
    assertEquals(new TreeSet<>(ALL_TABLES), new TreeSet<>(tablesIn(url)));
    List<String> indexes = new ArrayList<>();
    try (Connection connection = PostgresServer.connect(url);
        PreparedStatement query =
            connection.prepareStatement(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1");
        ResultSet rows = query.executeQuery()) {
      while (rows.next()) {
        indexes.add(rows.getString(1));
      }
    }
    assertTrue(
        indexes.containsAll(
            List.of("event_journal_ordering_idx", "state_global_offset_idx", "state_tag_idx")),
        "indexes: " + indexes);
  }

  @Test
  void membersCreatingTheSchemaAtOnceDoNotRace() throws Exception {
    String url = server.createDatabase("race");
    ActorTestKit a = JournalTestKits.postgres("race-a", url);
    ActorTestKit b = JournalTestKits.postgres("race-b", url);
    try {
      CompletableFuture<SchemaSetup.Report> ra =
          SchemaSetup.create(a.system()).toCompletableFuture();
      CompletableFuture<SchemaSetup.Report> rb =
          SchemaSetup.create(b.system()).toCompletableFuture();
      SchemaSetup.Report reportA = await(ra);
      SchemaSetup.Report reportB = await(rb);
      List<String> created = new ArrayList<>(reportA.created());
      created.addAll(reportB.created());
      assertEquals(new TreeSet<>(ALL_TABLES), new TreeSet<>(created), "each table created once");
      assertEquals(ALL_TABLES.size(), created.size(), "each table created once: " + created);
    } finally {
      a.shutdownTestKit();
      b.shutdownTestKit();
    }
  }

  @Test
  void entityRecoversItsStateAfterTheSystemRestarts() {
    TestProbe<Counter.State> probe = restarted.createTestProbe();
    restarted.spawn(Counter.create("c-1")).tell(new Counter.Get(probe.ref()));
    assertEquals(new Counter.State(28, 7), probe.receiveMessage(JournalTestKits.TIMEOUT));
  }

  @Test
  void recoveredEntityContinuesItsSequence() {
    TestProbe<Counter.State> probe = restarted.createTestProbe();
    restarted.spawn(Counter.create("c-2")).tell(new Counter.Add(5, AT, probe.ref()));
    assertEquals(new Counter.State(105, 2), probe.receiveMessage(JournalTestKits.TIMEOUT));
  }

  @Test
  void journalAndSnapshotHoldPlainJson() throws Exception {
    try (Connection connection = JournalTestKits.connection(restarted.system());
        PreparedStatement events =
            connection.prepareStatement(
                "SELECT event_ser_manifest, event_payload FROM event_journal"
                    + " WHERE persistence_id = 'Counter|c-1' AND sequence_number = 1");
        PreparedStatement snapshots =
            connection.prepareStatement(
                "SELECT snapshot_payload FROM snapshot"
                    + " WHERE persistence_id = 'Counter|c-1' AND sequence_number = 4")) {
      try (ResultSet row = events.executeQuery()) {
        assertTrue(row.next(), "event 1 of Counter|c-1 is in event_journal");
        assertEquals(Counter.Added.class.getName(), row.getString(1));
        assertEquals(
            "{\"amount\":1,\"at\":\"2026-01-02T03:04:05Z\"}",
            new String(row.getBytes(2), StandardCharsets.UTF_8));
      }
      try (ResultSet row = snapshots.executeQuery()) {
        assertTrue(row.next(), "the snapshot after event 4 of Counter|c-1 is in snapshot");
        assertEquals(
            "{\"total\":10,\"events\":4}", new String(row.getBytes(1), StandardCharsets.UTF_8));
      }
    }
  }

  @Test
  void inspectorListsPersistenceIdsSorted() throws Exception {
    JournalInspector inspector = JdbcJournalInspector.create(restarted.system());
    assertEquals(List.of("Counter|c-1", "Counter|c-2"), await(inspector.persistenceIds()));
  }

  @Test
  void inspectorReturnsEventsWithTypeJsonAndTimestamp() throws Exception {
    List<JournalEntry> events = c1Events(1, 100);
    assertEquals(C1_AMOUNTS.length, events.size());
    for (int i = 0; i < events.size(); i++) {
      JournalEntry entry = events.get(i);
      assertEquals("Counter|c-1", entry.persistenceId());
      assertEquals(i + 1, entry.sequenceNr());
      assertEquals("Counter.Added", entry.type());
      JsonNode event = entry.event();
      assertEquals(C1_AMOUNTS[i], event.get("amount").asInt());
      assertEquals("2026-01-02T03:04:05Z", event.get("at").asText());
      assertEquals(2, event.size());
      assertTrue(
          entry.timestamp().isAfter(before) && entry.timestamp().isBefore(written),
          "timestamp " + entry.timestamp() + " is the write time");
    }
  }

  @Test
  void inspectorPagesFromSequenceNrWithLimit() throws Exception {
    assertEquals(List.of(3L, 4L), c1Events(3, 2).stream().map(JournalEntry::sequenceNr).toList());
    assertEquals(List.of(6L, 7L), c1Events(6, 100).stream().map(JournalEntry::sequenceNr).toList());
    assertEquals(List.of(), c1Events(8, 100));
    JournalInspector inspector = JdbcJournalInspector.create(restarted.system());
    assertEquals(List.of(), await(inspector.events("Counter|nobody", 1, 10)));
  }

  private List<JournalEntry> c1Events(long from, int limit) throws Exception {
    return await(
        JdbcJournalInspector.create(restarted.system()).events("Counter|c-1", from, limit));
  }

  /** The tables of the public schema of the database at {@code url}. */
  private static List<String> tablesIn(String url) throws SQLException {
    List<String> tables = new ArrayList<>();
    try (Connection connection = PostgresServer.connect(url);
        PreparedStatement query =
            connection.prepareStatement(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
        ResultSet rows = query.executeQuery()) {
      while (rows.next()) {
        tables.add(rows.getString(1));
      }
    }
    return tables;
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(JournalTestKits.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }
}
