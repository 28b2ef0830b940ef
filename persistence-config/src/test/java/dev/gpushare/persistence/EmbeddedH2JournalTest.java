package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.List;
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
 * The embedded profile end to end: a first system sets up the schema and persists events, is
 * terminated, and a second system on the same data directory (kept for all tests here, because
 * starting one costs seconds) recovers and inspects them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EmbeddedH2JournalTest {

  private static final Instant AT = Instant.parse("2026-01-02T03:04:05Z");
  private static final int[] C1_AMOUNTS = {1, 2, 3, 4, 5, 6, 7};

  @TempDir static Path dataDir;
  private Instant before;
  private Instant written;
  private ActorTestKit restarted;

  @BeforeAll
  void persistEventsThenRestart() throws Exception {
    before = Instant.now().minusSeconds(1);
    ActorTestKit first = JournalTestKits.embedded("first", dataDir);
    try {
      await(SchemaSetup.ensure(first.system()));
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
    restarted = JournalTestKits.embedded("restarted", dataDir);
    await(SchemaSetup.ensure(restarted.system()));
  }

  @AfterAll
  void stop() {
    if (restarted != null) {
      restarted.shutdownTestKit();
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
  void schemaSetupAgainKeepsTheJournal() throws Exception {
    await(SchemaSetup.ensure(restarted.system()));
    await(SchemaSetup.ensure(restarted.system()));
    List<JournalEntry> events = c1Events(1, 100);
    assertEquals(C1_AMOUNTS.length, events.size());
  }

  @Test
  void journalAndSnapshotHoldPlainJson() throws Exception {
    try (Connection connection = JournalTestKits.connection(restarted.system());
        PreparedStatement events =
            connection.prepareStatement(
                "SELECT \"event_ser_manifest\", \"event_payload\" FROM \"event_journal\""
                    + " WHERE \"persistence_id\" = 'Counter|c-1' AND \"sequence_number\" = 1");
        PreparedStatement snapshots =
            connection.prepareStatement(
                "SELECT \"snapshot_payload\" FROM \"snapshot\""
                    + " WHERE \"persistence_id\" = 'Counter|c-1' AND \"sequence_number\" = 4")) {
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
    List<Long> page = c1Events(3, 2).stream().map(JournalEntry::sequenceNr).toList();
    assertEquals(List.of(3L, 4L), page);
    List<Long> tail = c1Events(6, 100).stream().map(JournalEntry::sequenceNr).toList();
    assertEquals(List.of(6L, 7L), tail);
    assertEquals(List.of(), c1Events(8, 100));
  }

  @Test
  void inspectorReturnsNoEventsForAnUnknownId() throws Exception {
    JournalInspector inspector = JdbcJournalInspector.create(restarted.system());
    assertEquals(List.of(), await(inspector.events("Counter|nobody", 1, 10)));
  }

  @Test
  void inspectorRejectsInvalidArgumentsNamingTheParameter() {
    JournalInspector inspector = JdbcJournalInspector.create(restarted.system());
    assertRejected(inspector.events("Counter|c-1", 1, 0), "limit 0: give 1 or more");
    assertRejected(inspector.events("Counter|c-1", -1, 10), "fromSequenceNr -1: give 0 or more");
    assertRejected(inspector.events("", 1, 10), "persistenceId : give the id of a journal entity");
  }

  private List<JournalEntry> c1Events(long from, int limit) throws Exception {
    return await(
        JdbcJournalInspector.create(restarted.system()).events("Counter|c-1", from, limit));
  }

  private static void assertRejected(CompletionStage<?> stage, String message) {
    ExecutionException failure =
        assertThrows(
            ExecutionException.class, () -> stage.toCompletableFuture().get(5, TimeUnit.SECONDS));
    assertInstanceOf(IllegalArgumentException.class, failure.getCause());
    assertEquals(message, failure.getCause().getMessage());
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(JournalTestKits.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }
}
