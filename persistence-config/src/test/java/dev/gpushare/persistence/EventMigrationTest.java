package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Versioned JSON events (EVENTS.md): a journal written by older code, whose payloads have the
 * version-1 shape of {@link ShareGranted}, is read by the current code into the version-2 shape,
 * through the real serializer and the real journal, with {@link ShareGrantedMigration} registered
 * as gpushare registers migrations ({@code pekko.serialization.jackson.migrations}).
 */
class EventMigrationTest {

  private static final String CLASS = ShareGranted.class.getName();

  /** Exactly what version-1 code wrote: a flat core, no decisionId. */
  private static final String V1_JSON = "{\"pod\":\"default/a\",\"gpu\":1,\"core\":50}";

  private static final Config MIGRATIONS =
      ConfigFactory.parseString(
          "pekko.serialization.jackson.migrations {\n  \""
              + CLASS
              + "\" = \""
              + ShareGrantedMigration.class.getName()
              + "\"\n}");

  @TempDir Path dataDir;

  @Test
  void aVersion1PayloadIsReadIntoTheVersion2Shape() throws Exception {
    ActorTestKit kit = kit("serialization");
    try {
      Serialization serialization = SerializationExtension.get(kit.system());
      Serializer serializer = serialization.serializerFor(ShareGranted.class);
      Object event =
          serialization
              .deserialize(V1_JSON.getBytes(StandardCharsets.UTF_8), serializer.identifier(), CLASS)
              .get();
      assertEquals(new ShareGranted("default/a", 1, new ShareGranted.Limits(50, 50), ""), event);
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void newEventsAreWrittenAsVersion2AndReadBackUnchanged() throws Exception {
    ActorTestKit kit = kit("version-2");
    try {
      Serialization serialization = SerializationExtension.get(kit.system());
      ShareGranted event = new ShareGranted("default/b", 0, new ShareGranted.Limits(30, 40), "d-7");
      SerializerWithStringManifest serializer =
          (SerializerWithStringManifest) serialization.serializerFor(ShareGranted.class);
      assertEquals(CLASS + "#2", serializer.manifest(event));
      byte[] bytes = serializer.toBinary(event);
      assertEquals(
          "{\"pod\":\"default/b\",\"gpu\":0,\"limits\":{\"core\":30,\"memory\":40},\"decisionId\":\"d-7\"}",
          new String(bytes, StandardCharsets.UTF_8));
      assertEquals(event, serializer.fromBinary(bytes, CLASS + "#2"));
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void aJournalOfVersion1EventsRecoversIntoVersion2AndGoesOnInVersion2() throws Exception {
    ActorTestKit old = kit("old-journal");
    try {
      await(SchemaSetup.ensure(old.system()));
      int serializerId =
          SerializationExtension.get(old.system()).serializerFor(ShareGranted.class).identifier();
      insertVersion1(old, "Grants|log", 1, V1_JSON, serializerId);
      insertVersion1(
          old, "Grants|log", 2, "{\"pod\":\"default/c\",\"gpu\":0,\"core\":25}", serializerId);
    } finally {
      old.shutdownTestKit();
    }

    ShareGranted a = new ShareGranted("default/a", 1, new ShareGranted.Limits(50, 50), "");
    ShareGranted c = new ShareGranted("default/c", 0, new ShareGranted.Limits(25, 25), "");
    ShareGranted d = new ShareGranted("default/d", 1, new ShareGranted.Limits(10, 20), "d-9");
    ActorTestKit current = kit("current");
    try {
      TestProbe<List<ShareGranted>> probe = current.createTestProbe();
      ActorRef<GrantLog.Command> log = current.spawn(GrantLog.create("log"));
      log.tell(new GrantLog.Get(probe.ref()));
      assertEquals(List.of(a, c), probe.receiveMessage(JournalTestKits.TIMEOUT));
      log.tell(new GrantLog.Grant(d, probe.ref()));
      assertEquals(List.of(a, c, d), probe.receiveMessage(JournalTestKits.TIMEOUT));

      List<JournalEntry> entries =
          await(JdbcJournalInspector.create(current.system()).events("Grants|log", 1, 10));
      assertEquals(3, entries.size());
      JsonNode first = entries.get(0).event();
      assertEquals("ShareGranted", entries.get(0).type());
      assertEquals(50, first.path("limits").path("memory").asInt(), first::toString);
      assertEquals("default/a", first.path("pod").asText(), first::toString);
      assertEquals(List.of(CLASS, CLASS, CLASS + "#2"), manifests(current, "Grants|log"));
    } finally {
      current.shutdownTestKit();
    }

    ActorTestKit restarted = kit("restarted");
    try {
      TestProbe<List<ShareGranted>> probe = restarted.createTestProbe();
      restarted.spawn(GrantLog.create("log")).tell(new GrantLog.Get(probe.ref()));
      assertEquals(List.of(a, c, d), probe.receiveMessage(JournalTestKits.TIMEOUT));
    } finally {
      restarted.shutdownTestKit();
    }
  }

  private ActorTestKit kit(String name) {
    return ActorTestKit.create(
        name,
        MIGRATIONS
            .withFallback(PersistenceProfiles.embeddedH2(dataDir))
            .withFallback(ConfigFactory.load()));
  }

  /** A row as the journal stored it before version 2 existed. */
  private static void insertVersion1(
      ActorTestKit kit, String persistenceId, long sequenceNr, String json, int serializerId)
      throws Exception {
    try (Connection connection = JournalTestKits.connection(kit.system());
        PreparedStatement insert =
            connection.prepareStatement(
                "INSERT INTO \"event_journal\" (\"persistence_id\", \"sequence_number\","
                    + " \"writer\", \"write_timestamp\", \"adapter_manifest\","
                    + " \"event_payload\", \"event_ser_id\", \"event_ser_manifest\")"
                    + " VALUES (?, ?, 'version-1-writer', ?, '', ?, ?, ?)")) {
      insert.setString(1, persistenceId);
      insert.setLong(2, sequenceNr);
      insert.setLong(3, System.currentTimeMillis());
      insert.setBytes(4, json.getBytes(StandardCharsets.UTF_8));
      insert.setInt(5, serializerId);
      insert.setString(6, CLASS);
      insert.executeUpdate();
    }
  }

  private static List<String> manifests(ActorTestKit kit, String persistenceId) throws Exception {
    List<String> manifests = new ArrayList<>();
    try (Connection connection = JournalTestKits.connection(kit.system());
        PreparedStatement query =
            connection.prepareStatement(
                "SELECT \"event_ser_manifest\" FROM \"event_journal\""
                    + " WHERE \"persistence_id\" = ? ORDER BY \"sequence_number\"")) {
      query.setString(1, persistenceId);
      try (ResultSet rows = query.executeQuery()) {
        while (rows.next()) {
          manifests.add(rows.getString(1));
        }
      }
    }
    return manifests;
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(JournalTestKits.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }

  /** An entity whose state is every grant it has recorded. */
  static final class GrantLog
      extends EventSourcedBehavior<GrantLog.Command, ShareGranted, List<ShareGranted>> {

    sealed interface Command permits Grant, Get {}

    record Grant(ShareGranted event, ActorRef<List<ShareGranted>> replyTo) implements Command {}

    record Get(ActorRef<List<ShareGranted>> replyTo) implements Command {}

    static Behavior<Command> create(String id) {
      return new GrantLog(PersistenceId.of("Grants", id));
    }

    private GrantLog(PersistenceId persistenceId) {
      super(persistenceId);
    }

    @Override
    public List<ShareGranted> emptyState() {
      return List.of();
    }

    @Override
    public CommandHandler<Command, ShareGranted, List<ShareGranted>> commandHandler() {
      return newCommandHandlerBuilder()
          .forAnyState()
          .onCommand(
              Grant.class,
              grant -> Effect().persist(grant.event()).thenReply(grant.replyTo(), s -> s))
          .onCommand(Get.class, (state, get) -> Effect().reply(get.replyTo(), state))
          .build();
    }

    @Override
    public EventHandler<List<ShareGranted>, ShareGranted> eventHandler() {
      return newEventHandlerBuilder()
          .forAnyState()
          .onEvent(
              ShareGranted.class,
              (state, event) -> {
                List<ShareGranted> next = new ArrayList<>(state);
                next.add(event);
                return List.copyOf(next);
              })
          .build();
    }
  }
}
