package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JournalSettingsTest {

  private static final String SHARED_DB = PersistenceProfiles.SHARED_DATABASE;

  @TempDir Path temp;

  @Test
  void theDefaultIsTheEmbeddedH2FileThatCreatesItsSchema() {
    JournalSettings journal = JournalSettings.DEFAULT;
    assertEquals("h2", journal.kind());
    assertTrue(journal.createsSchemaAtStart());
    assertEquals(
        PersistenceProfiles.embeddedH2(temp).getString(SHARED_DB + ".db.url"),
        journal.profile(temp).getString(SHARED_DB + ".db.url"));
  }

  @Test
  void postgresSelectsThePostgresProfileAndLeavesDdlToOperators() {
    JournalSettings journal =
        new JournalSettings.Postgres("jdbc:postgresql://db:5432/gpushare", "arbiter", "s3", false);
    assertEquals("postgres", journal.kind());
    assertFalse(journal.createsSchemaAtStart());
    Config profile = journal.profile(temp);
    assertEquals("slick.jdbc.PostgresProfile$", profile.getString(SHARED_DB + ".profile"));
    assertEquals("jdbc:postgresql://db:5432/gpushare", profile.getString(SHARED_DB + ".db.url"));
    assertEquals("arbiter", profile.getString(SHARED_DB + ".db.user"));
    assertEquals("s3", profile.getString(SHARED_DB + ".db.password"));
    assertTrue(
        new JournalSettings.Postgres("jdbc:postgresql://db/x", "u", "", true)
            .createsSchemaAtStart());
  }

  @Test
  void thePasswordIsNeverShown() {
    String shown =
        new JournalSettings.Postgres("jdbc:postgresql://db/x", "u", "hunter2", false).toString();
    assertFalse(shown.contains("hunter2"), shown);
    assertTrue(shown.contains("password=(hidden)"), shown);
    assertTrue(
        new JournalSettings.Postgres("jdbc:postgresql://db/x", "u", "", false)
            .toString()
            .contains("password=(none)"));
  }
}
