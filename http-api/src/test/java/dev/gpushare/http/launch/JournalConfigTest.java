package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.persistence.JournalSettings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code gpushare.journal}: the switch between the H2 and the PostgreSQL journal. */
class JournalConfigTest {

  private static final Map<String, String> ENV = Map.of("GPUSHARE_PG_PASSWORD", "from-env");

  private static final String PG =
      "gpushare.journal { kind = postgres, postgres { url = \"jdbc:postgresql://db:5432/gs\","
          + " user = arbiter";

  /** The user's text over the built-in configuration, as the launcher reads it. */
  private static JournalSettings read(String userConf) {
    Config user = ConfigFactory.parseString(userConf);
    return EmbeddedConfig.from(user.withFallback(EmbeddedConfig.builtIn()).resolve(), ENV::get)
        .journal();
  }

  private static String refused(String userConf) {
    return assertThrows(LaunchException.class, () -> read(userConf)).getMessage();
  }

  @Test
  void h2IsTheDefault() {
    assertEquals(JournalSettings.DEFAULT, read(""));
    assertEquals(JournalSettings.DEFAULT, read("gpushare.journal.kind = h2"));
    assertEquals(
        JournalSettings.DEFAULT,
        EmbeddedConfig.from(EmbeddedConfig.builtIn().resolve()).journal(),
        "the built-in configuration");
  }

  @Test
  void postgresWithAPassword() {
    assertEquals(
        new JournalSettings.Postgres("jdbc:postgresql://db:5432/gs", "arbiter", "pw", false),
        read(PG + ", password = pw } }"));
  }

  @Test
  void postgresWithThePasswordFromTheEnvironment() {
    assertEquals(
        new JournalSettings.Postgres("jdbc:postgresql://db:5432/gs", "arbiter", "from-env", false),
        read(PG + ", password-env = GPUSHARE_PG_PASSWORD } }"));
  }

  @Test
  void postgresWithoutAPasswordAndWithCreateSchema() {
    assertEquals(
        new JournalSettings.Postgres("jdbc:postgresql://db:5432/gs", "arbiter", "", true),
        read(PG + ", create-schema = true } }"));
  }

  @Test
  void aPostgresBlockIsKeptButUnusedWhileKindIsH2() {
    assertEquals(
        JournalSettings.DEFAULT,
        read("gpushare.journal { kind = h2, postgres { password-env = NOT_SET_ANYWHERE } }"));
    String message = refused("gpushare.journal { postgres { passwort = x } }");
    assertTrue(message.contains("gpushare.journal.postgres.passwort: 'x' given at "), message);
    assertTrue(
        message.contains(
            "unknown key; accepted keys: create-schema, password, password-env, url, user"),
        message);
  }

  @Test
  void aBadKindNamesTheAcceptedOnes() {
    String message = refused("gpushare.journal.kind = mysql");
    assertTrue(message.contains("gpushare.journal.kind: 'mysql' given at "), message);
    assertTrue(message.contains("expected h2 (the embedded H2 file under --data"), message);
    assertTrue(message.contains("or postgres (a PostgreSQL server"), message);
  }

  @Test
  void anUnknownJournalKeyIsNamed() {
    String message = refused("gpushare.journal.knd = postgres");
    assertTrue(message.contains("gpushare.journal.knd: 'postgres' given at "), message);
    assertTrue(
        message.contains("unknown key; accepted keys: kind, min-free-space, postgres"), message);
    message = refused("gpushare.journal = postgres");
    assertTrue(message.contains("gpushare.journal: 'postgres' given"), message);
    assertTrue(message.contains("expected an object"), message);
  }

  @Test
  void postgresNeedsItsBlockWithUrlAndUser() {
    String message = refused("gpushare.journal.kind = postgres");
    assertTrue(
        message.contains(
            "gpushare.journal.postgres: missing; required when gpushare.journal.kind = postgres"),
        message);
    message = refused("gpushare.journal { kind = postgres, postgres {} }");
    assertTrue(message.contains("gpushare.journal.postgres.url: missing; required"), message);
    assertTrue(message.contains("gpushare.journal.postgres.user: missing; required"), message);
    assertTrue(message.contains("(2 errors)"), message);
  }

  @Test
  void aUrlOfAnotherDatabaseIsRefused() {
    String message =
        refused(
            "gpushare.journal { kind = postgres, postgres { url = \"jdbc:mysql://db/gs\","
                + " user = u } }");
    assertTrue(
        message.contains("gpushare.journal.postgres.url: 'jdbc:mysql://db/gs' given at "), message);
    assertTrue(message.contains("expected a PostgreSQL JDBC URL such as"), message);
  }

  @Test
  void anUnsetPasswordVariableIsNamed() {
    String message = refused(PG + ", password-env = NOT_SET_ANYWHERE } }");
    assertTrue(
        message.contains("gpushare.journal.postgres.password-env: 'NOT_SET_ANYWHERE' given at "),
        message);
    assertTrue(message.contains("the environment variable NOT_SET_ANYWHERE is not set"), message);
    message = refused(PG + ", password-env = \"not a name\" } }");
    assertTrue(message.contains("expected the name of an environment variable"), message);
  }

  @Test
  void passwordAndPasswordEnvExcludeEachOtherAndThePasswordIsNotShown() {
    String message = refused(PG + ", password = hunter2, password-env = GPUSHARE_PG_PASSWORD } }");
    assertTrue(message.contains("gpushare.journal.postgres.password: given at "), message);
    assertTrue(message.contains("give either password or password-env"), message);
    assertFalse(message.contains("hunter2"), message);
    message = refused(PG + ", password { secret = hunter2 } } }");
    assertTrue(message.contains("gpushare.journal.postgres.password: given at "), message);
    assertFalse(message.contains("hunter2"), message);
  }

  @Test
  void aBadCreateSchemaIsNamed() {
    String message = refused(PG + ", create-schema = maybe } }");
    assertTrue(
        message.contains("gpushare.journal.postgres.create-schema: 'maybe' given at "), message);
    assertTrue(message.contains("true (create missing tables at start) or false"), message);
  }

  @Test
  void minFreeSpaceIsASizeWith16MiBByDefault() {
    assertEquals(new JournalSettings.H2(16L * 1024 * 1024), read(""));
    assertEquals(
        new JournalSettings.H2(2L * 1024 * 1024), read("gpushare.journal.min-free-space = 2 MiB"));
    assertEquals(
        new JournalSettings.H2(512L * 1024), read("gpushare.journal.min-free-space = 512K"));
    assertEquals(new JournalSettings.H2(0), read("gpushare.journal.min-free-space = 0"));
  }

  @Test
  void aBadMinFreeSpaceIsNamed() {
    String message = refused("gpushare.journal.min-free-space = lots");
    assertTrue(message.contains("gpushare.journal.min-free-space: 'lots' given"), message);
    assertTrue(message.contains("such as 16 MiB (the default), 512 KiB or 0 (off)"), message);
    assertTrue(
        refused("gpushare.journal.min-free-space = -1")
            .contains("gpushare.journal.min-free-space: '-1' given"));
  }
}
