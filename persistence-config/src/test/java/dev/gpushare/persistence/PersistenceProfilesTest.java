package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PersistenceProfilesTest {

  private static final String SHARED_DB = PersistenceProfiles.SHARED_DATABASE;

  @TempDir Path temp;

  @Test
  void embeddedH2SelectsTheJdbcPluginsOnOneSharedPool() {
    Config config = PersistenceProfiles.embeddedH2(temp);
    assertEquals("jdbc-journal", config.getString("pekko.persistence.journal.plugin"));
    assertEquals(
        "jdbc-snapshot-store", config.getString("pekko.persistence.snapshot-store.plugin"));
    for (String plugin :
        new String[] {"jdbc-journal", "jdbc-snapshot-store", "jdbc-read-journal"}) {
      assertEquals("gpushare", config.getString(plugin + ".use-shared-db"), plugin);
    }
    assertEquals("slick.jdbc.H2Profile$", config.getString(SHARED_DB + ".profile"));
    assertEquals("org.h2.Driver", config.getString(SHARED_DB + ".db.driver"));
    assertEquals(4, config.getInt(SHARED_DB + ".db.numThreads"));
    assertEquals(4, config.getInt(SHARED_DB + ".db.maxConnections"));
    assertFalse(config.hasPath("gpushare.persistence.profiles"));
  }

  @Test
  void embeddedH2IsALockedFileDatabaseInTheDataDirectory() {
    String url = PersistenceProfiles.embeddedH2(temp).getString(SHARED_DB + ".db.url");
    assertEquals(
        "jdbc:h2:file:"
            + temp.toAbsolutePath().resolve("journal")
            + ";DB_CLOSE_ON_EXIT=FALSE;FILE_LOCK=FS;RETENTION_TIME=0",
        url);
  }

  @Test
  void embeddedH2AcknowledgesWritesOnlyAfterTheyAreInTheFile() {
    assertEquals(
        H2CheckpointingJournalDao.class.getName(),
        PersistenceProfiles.embeddedH2(temp).getString("jdbc-journal.dao"));
  }

  @Test
  void embeddedH2MakesARelativeDataDirectoryAbsolute() {
    Path relative = Path.of("data/../data2");
    String url = PersistenceProfiles.embeddedH2(relative).getString(SHARED_DB + ".db.url");
    assertTrue(
        url.startsWith("jdbc:h2:file:" + Path.of("data2").toAbsolutePath().resolve("journal")),
        url);
  }

  @Test
  void embeddedH2RejectsADirectoryWhosePathEndsTheUrl() {
    Path odd = temp.resolve("a;b");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> PersistenceProfiles.embeddedH2(odd));
    assertTrue(e.getMessage().startsWith("--data " + odd + ": "), e.getMessage());
  }

  @Test
  void jsonSerializableIsBoundToUncompressedJacksonJson() {
    Config config = PersistenceProfiles.embeddedH2(temp).withFallback(ConfigFactory.load());
    assertEquals(
        "jackson-json",
        config.getString(
            "pekko.actor.serialization-bindings.\"dev.gpushare.arbiter.JsonSerializable\""));
    assertEquals(
        "off", config.getString("pekko.serialization.jackson.jackson-json.compression.algorithm"));
    assertFalse(
        config.getBoolean(
            "pekko.serialization.jackson.serialization-features.WRITE_DATES_AS_TIMESTAMPS"));
  }

  @Test
  void profilesLayerOverTheDefaultsAndResolve() {
    Config config = PersistenceProfiles.embeddedH2(temp).withFallback(ConfigFactory.load());
    assertTrue(config.isResolved());
    assertEquals(
        "org.apache.pekko.persistence.jdbc.journal.JdbcAsyncWriteJournal",
        config.getString("jdbc-journal.class"));
    assertEquals("event_journal", config.getString("jdbc-journal.tables.event_journal.tableName"));
  }

  @Test
  void postgresUsesTheGivenServerAndCredentials() {
    Config config =
        PersistenceProfiles.postgres("jdbc:postgresql://db:5432/gpushare", "arbiter", "secret");
    assertEquals("slick.jdbc.PostgresProfile$", config.getString(SHARED_DB + ".profile"));
    assertEquals("org.postgresql.Driver", config.getString(SHARED_DB + ".db.driver"));
    assertEquals("jdbc:postgresql://db:5432/gpushare", config.getString(SHARED_DB + ".db.url"));
    assertEquals("arbiter", config.getString(SHARED_DB + ".db.user"));
    assertEquals("secret", config.getString(SHARED_DB + ".db.password"));
    assertEquals("HikariCP", config.getString(SHARED_DB + ".db.connectionPool"));
    assertEquals("jdbc-journal", config.getString("pekko.persistence.journal.plugin"));
    assertEquals("gpushare", config.getString("jdbc-read-journal.use-shared-db"));
    assertFalse(config.hasPath("jdbc-journal.dao"), "PostgreSQL keeps the default journal DAO");
  }

  @Test
  void postgresRejectsAnotherDatabaseUrl() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> PersistenceProfiles.postgres("jdbc:h2:mem:x", "u", "p"));
    assertEquals(
        "jdbcUrl jdbc:h2:mem:x: not a PostgreSQL JDBC URL; give one like"
            + " jdbc:postgresql://host:5432/database",
        e.getMessage());
  }
}
