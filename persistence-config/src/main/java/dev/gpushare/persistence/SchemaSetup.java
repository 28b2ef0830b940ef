package dev.gpushare.persistence;

import com.typesafe.config.Config;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.persistence.jdbc.db.SlickExtension;
import org.apache.pekko.persistence.jdbc.db.SlickExtensionImpl;
import org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils;
import slick.jdbc.H2Profile;
import slick.jdbc.JdbcProfile;
import slick.jdbc.PostgresProfile;

/**
 * Creates the journal, tag, snapshot and durable-state tables of {@code pekko-persistence-jdbc} if
 * they are absent, then checks that the journal, tag and snapshot tables exist. Safe to run at
 * every start, on an empty or a populated database, and before any persistent actor starts.
 *
 * <p>It applies the plugin's own {@code CREATE ... IF NOT EXISTS} script for the configured Slick
 * profile (H2 or PostgreSQL), always the current (non-legacy) schema: Pekko's {@code
 * SchemaUtils.createIfNotExists} would pick the legacy one because the H2 profile configures its
 * own journal DAO. {@code SchemaUtils} only logs failing statements at debug level (statements that
 * exist already fail on purpose); the check afterwards turns a real failure into an error. The
 * returned stage fails with {@link IllegalStateException} when the database cannot be opened or the
 * tables are missing; for an H2 file held by another process the message says so.
 */
public final class SchemaSetup {

  /** H2's {@code ErrorCode.DATABASE_ALREADY_OPEN_1}: the file is locked by another process. */
  private static final int H2_DATABASE_IN_USE = 90020;

  private static final String JOURNAL = "jdbc-journal";

  private SchemaSetup() {}

  /** Creates the missing tables of the configured JDBC database; see the class comment. */
  public static CompletionStage<Done> ensure(ActorSystem<?> system) {
    Config config = system.settings().config();
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    CompletionStage<Done> created;
    try {
      created = SchemaUtils.applyScript(createScript(system, config), ";", JOURNAL, system);
    } catch (RuntimeException e) {
      created = CompletableFuture.failedFuture(e);
    }
    return created
        .thenApplyAsync(done -> verifyTables(system, config), blocking)
        .handle(
            (done, error) -> {
              if (error == null) {
                return done;
              }
              Throwable cause = unwrap(error);
              if (cause instanceof IllegalStateException) {
                throw (IllegalStateException) cause;
              }
              throw new IllegalStateException(describe(cause, databaseUrl(config)), cause);
            });
  }

  private static String createScript(ActorSystem<?> system, Config config) {
    JdbcProfile profile = slick(system).database(config.getConfig(JOURNAL)).profile();
    String resource;
    if (profile instanceof H2Profile) {
      resource = "schema/h2/h2-create-schema.sql";
    } else if (profile instanceof PostgresProfile) {
      resource = "schema/postgres/postgres-create-schema.sql";
    } else {
      throw new IllegalStateException(
          "journal database "
              + databaseUrl(config)
              + ": Slick profile "
              + profile
              + " has no schema here; give slick.jdbc.H2Profile$ or slick.jdbc.PostgresProfile$");
    }
    try (InputStream script = SchemaUtils.class.getClassLoader().getResourceAsStream(resource)) {
      if (script == null) {
        throw new IllegalStateException(
            "schema script "
                + resource
                + " is not on the class path; give a class path with pekko-persistence-jdbc");
      }
      return new String(script.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading schema script " + resource, e);
    }
  }

  private static SlickExtensionImpl slick(ActorSystem<?> system) {
    return (SlickExtensionImpl) SlickExtension.get(system);
  }

  private static Done verifyTables(ActorSystem<?> system, Config config) {
    List<String[]> expected = new ArrayList<>();
    expected.add(table(config, "jdbc-journal.tables.event_journal"));
    expected.add(table(config, "jdbc-journal.tables.event_tag"));
    expected.add(table(config, "jdbc-snapshot-store.tables.snapshot"));
    List<String> missing = new ArrayList<>();
    try (Connection connection =
        slick(system).database(config.getConfig(JOURNAL)).database().source().createConnection()) {
      DatabaseMetaData metaData = connection.getMetaData();
      for (String[] schemaAndTable : expected) {
        if (!exists(metaData, schemaAndTable[0], schemaAndTable[1])) {
          missing.add(
              schemaAndTable[0] == null
                  ? schemaAndTable[1]
                  : schemaAndTable[0] + "." + schemaAndTable[1]);
        }
      }
    } catch (SQLException e) {
      throw new CompletionException(e);
    }
    if (!missing.isEmpty()) {
      throw new IllegalStateException(
          "journal database "
              + databaseUrl(config)
              + ": tables "
              + missing
              + " are missing after creating the schema (DEBUG logging for"
              + " org.apache.pekko.persistence.jdbc.testkit shows the failed statements);"
              + " give a database where the configured user may create tables");
    }
    return Done.getInstance();
  }

  private static String[] table(Config config, String path) {
    String schema = config.getString(path + ".schemaName");
    return new String[] {schema.isEmpty() ? null : schema, config.getString(path + ".tableName")};
  }

  private static boolean exists(DatabaseMetaData metaData, String schema, String table)
      throws SQLException {
    try (ResultSet tables = metaData.getTables(null, schema, table, null)) {
      while (tables.next()) {
        if (tables.getString("TABLE_NAME").equals(table)) {
          return true;
        }
      }
      return false;
    }
  }

  private static Throwable unwrap(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  private static String describe(Throwable error, String url) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLException && ((SQLException) t).getErrorCode() == H2_DATABASE_IN_USE) {
        return "journal database "
            + url
            + " is in use by another process ("
            + t.getMessage()
            + "); stop the other gpushare server that uses this --data directory, or give"
            + " another --data directory";
      }
    }
    return "journal database " + url + " cannot be used: " + error;
  }

  /** The URL of the journal's database without settings (which might carry credentials). */
  private static String databaseUrl(Config config) {
    String sharedName = "jdbc-journal.use-shared-db";
    String path =
        config.hasPath(sharedName) && !config.getString(sharedName).isEmpty()
            ? "pekko-persistence-jdbc.shared-databases." + config.getString(sharedName) + ".db.url"
            : "jdbc-journal.slick.db.url";
    if (!config.hasPath(path)) {
      return "(no " + path + " configured)";
    }
    String url = config.getString(path);
    int settings = url.indexOf(';');
    int query = url.indexOf('?');
    int end = url.length();
    if (settings >= 0) {
      end = Math.min(end, settings);
    }
    if (query >= 0) {
      end = Math.min(end, query);
    }
    return url.substring(0, end);
  }
}
