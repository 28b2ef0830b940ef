package dev.gpushare.persistence;

import com.typesafe.config.Config;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * The tables of {@code pekko-persistence-jdbc} (journal, tags, snapshots, durable state) in the
 * configured database: {@link #create} makes the missing ones and says what it did, {@link #verify}
 * only checks. Both work before any persistent actor starts, on an empty or a populated database.
 *
 * <p><b>H2</b> (embedded): the plugin's own {@code CREATE ... IF NOT EXISTS} script, always the
 * current (non-legacy) schema: Pekko's {@code SchemaUtils.createIfNotExists} would pick the legacy
 * one because the H2 profile configures its own journal DAO. {@code SchemaUtils} only logs failing
 * statements at debug level (its index statement fails on purpose when the index exists); the check
 * afterwards turns a real failure into an error.
 *
 * <p><b>PostgreSQL</b>: gpushare's copy of the plugin's script, {@value #POSTGRES_SCRIPT} (see its
 * header), every statement idempotent, all of them in one transaction under an advisory lock, so
 * that members of a cluster starting together with {@code create-schema = true} do not race and a
 * failure leaves nothing half made. Tables are looked up through the {@code search_path}, as the
 * plugin's queries find them.
 *
 * <p>The returned stages fail with {@link IllegalStateException} when the database cannot be opened
 * or tables are missing ({@link MissingTablesException} from {@link #verify}); for an H2 file held
 * by another process the message says so. Messages show the database URL without its settings or
 * query (which might carry credentials).
 */
public final class SchemaSetup {

  /** The resource that holds gpushare's PostgreSQL DDL. */
  public static final String POSTGRES_SCRIPT = "gpushare-postgres-schema.sql";

  /** The plugin's H2 DDL (class path of pekko-persistence-jdbc). */
  static final String H2_SCRIPT = "schema/h2/h2-create-schema.sql";

  /** H2's {@code ErrorCode.DATABASE_ALREADY_OPEN_1}: the file is locked by another process. */
  private static final int H2_DATABASE_IN_USE = 90020;

  /** Serializes schema creation across processes: {@code pg_advisory_xact_lock} key. */
  private static final long POSTGRES_SCHEMA_LOCK = 0x6770_7573_6861_7265L; // "gpushare"

  private static final String JOURNAL = "jdbc-journal";

  /** Config path of each table's name, in creation order; the first three are required. */
  private static final List<String> TABLES =
      List.of(
          "jdbc-journal.tables.event_journal",
          "jdbc-journal.tables.event_tag",
          "jdbc-snapshot-store.tables.snapshot",
          "jdbc-durable-state-store.tables.durable_state");

  private static final int REQUIRED_TABLES = 3;

  private SchemaSetup() {}

  /**
   * What {@link #create} did.
   *
   * @param database the database URL without settings or query
   * @param script the DDL applied (a resource name)
   * @param created tables that did not exist before and do now, in creation order
   * @param present tables that existed already
   */
  public record Report(String database, String script, List<String> created, List<String> present) {
    public Report {
      created = List.copyOf(created);
      present = List.copyOf(present);
    }
  }

  /** {@link #verify} found tables missing: the database has no (complete) gpushare schema. */
  public static final class MissingTablesException extends IllegalStateException {
    private final String database;
    private final List<String> missing;

    MissingTablesException(String database, List<String> missing) {
      super(
          "journal database "
              + database
              + ": tables "
              + missing
              + " are missing; create them with the schema script "
              + POSTGRES_SCRIPT
              + " (gpushare's init-schema command)");
      this.database = database;
      this.missing = List.copyOf(missing);
    }

    /** The database URL without settings or query. */
    public String database() {
      return database;
    }

    /** The missing tables (schema-qualified when the configuration names a schema). */
    public List<String> missing() {
      return missing;
    }
  }

  /** Creates the missing tables of the configured JDBC database; see the class comment. */
  public static CompletionStage<Done> ensure(ActorSystem<?> system) {
    return create(system).thenApply(report -> Done.getInstance());
  }

  /** Creates the missing tables and reports what existed and what was created. */
  public static CompletionStage<Report> create(ActorSystem<?> system) {
    Config config = system.settings().config();
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    CompletionStage<Report> report;
    try {
      JdbcProfile profile = profile(system, config);
      if (profile instanceof PostgresProfile) {
        report = CompletableFuture.supplyAsync(() -> createPostgres(system, config), blocking);
      } else {
        String script = resource(SchemaUtils.class.getClassLoader(), H2_SCRIPT);
        report =
            CompletableFuture.supplyAsync(() -> existing(system, config), blocking)
                .thenCompose(
                    before ->
                        SchemaUtils.applyScript(script, ";", JOURNAL, system)
                            .thenApplyAsync(
                                done -> report(system, config, before, H2_SCRIPT), blocking));
      }
    } catch (RuntimeException e) {
      report = CompletableFuture.failedFuture(e);
    }
    return failWithContext(report, config);
  }

  /**
   * Checks that the journal, tag and snapshot tables exist, without creating anything; fails with
   * {@link MissingTablesException} when some do not.
   */
  public static CompletionStage<Done> verify(ActorSystem<?> system) {
    Config config = system.settings().config();
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    CompletionStage<Done> verified;
    try {
      profile(system, config);
      verified =
          CompletableFuture.supplyAsync(
              () -> {
                List<String> missing = missingRequired(existing(system, config), config);
                if (!missing.isEmpty()) {
                  throw new MissingTablesException(databaseUrl(config), missing);
                }
                return Done.getInstance();
              },
              blocking);
    } catch (RuntimeException e) {
      verified = CompletableFuture.failedFuture(e);
    }
    return failWithContext(verified, config);
  }

  /** The text of gpushare's PostgreSQL DDL ({@value #POSTGRES_SCRIPT}). */
  public static String postgresScript() {
    return resource(SchemaSetup.class.getClassLoader(), POSTGRES_SCRIPT);
  }

  /** The statements of a script: {@code --} comment lines dropped, split at semicolons. */
  static List<String> statements(String script) {
    StringBuilder code = new StringBuilder();
    for (String line : script.split("\n", -1)) {
      if (!line.strip().startsWith("--")) {
        code.append(line).append('\n');
      }
    }
    List<String> statements = new ArrayList<>();
    for (String statement : code.toString().split(";")) {
      if (!statement.isBlank()) {
        statements.add(statement.strip());
      }
    }
    return statements;
  }

  private static Report createPostgres(ActorSystem<?> system, Config config) {
    List<String> statements = statements(postgresScript());
    Map<String, Boolean> before;
    try (Connection connection = connection(system, config)) {
      connection.setAutoCommit(false);
      try {
        try (PreparedStatement lock =
            connection.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
          lock.setLong(1, POSTGRES_SCHEMA_LOCK);
          lock.execute();
        }
        before = existing(connection, config);
        try (Statement ddl = connection.createStatement()) {
          for (String statement : statements) {
            ddl.execute(statement);
          }
        }
        connection.commit();
      } catch (SQLException | RuntimeException e) {
        connection.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new CompletionException(e);
    }
    return report(system, config, before, POSTGRES_SCRIPT);
  }

  private static Report report(
      ActorSystem<?> system, Config config, Map<String, Boolean> before, String script) {
    Map<String, Boolean> after = existing(system, config);
    List<String> missing = missingRequired(after, config);
    if (!missing.isEmpty()) {
      throw new IllegalStateException(
          "journal database "
              + databaseUrl(config)
              + ": tables "
              + missing
              + " are missing after creating the schema ("
              + script
              + "; DEBUG logging for org.apache.pekko.persistence.jdbc.testkit shows failed H2"
              + " statements); give a database where the configured user may create tables");
    }
    List<String> created = new ArrayList<>();
    List<String> present = new ArrayList<>();
    for (Map.Entry<String, Boolean> table : after.entrySet()) {
      if (before.getOrDefault(table.getKey(), false)) {
        present.add(table.getKey());
      } else if (table.getValue()) {
        created.add(table.getKey());
      }
    }
    return new Report(databaseUrl(config), script, created, present);
  }

  private static List<String> missingRequired(Map<String, Boolean> existing, Config config) {
    List<String> missing = new ArrayList<>();
    for (int i = 0; i < REQUIRED_TABLES; i++) {
      String table = qualifiedName(config, TABLES.get(i));
      if (!existing.getOrDefault(table, false)) {
        missing.add(table);
      }
    }
    return missing;
  }

  /** Every table of {@link #TABLES}, qualified name to whether it exists. */
  private static Map<String, Boolean> existing(ActorSystem<?> system, Config config) {
    try (Connection connection = connection(system, config)) {
      return existing(connection, config);
    } catch (SQLException e) {
      throw new CompletionException(e);
    }
  }

  private static Map<String, Boolean> existing(Connection connection, Config config)
      throws SQLException {
    Map<String, Boolean> existing = new LinkedHashMap<>();
    boolean postgres = connection.getMetaData().getURL().startsWith("jdbc:postgresql:");
    for (String path : TABLES) {
      String schema = config.getString(path + ".schemaName");
      String table = config.getString(path + ".tableName");
      existing.put(
          qualifiedName(config, path),
          postgres
              ? existsOnSearchPath(connection, qualifiedName(config, path))
              : exists(connection.getMetaData(), schema.isEmpty() ? null : schema, table));
    }
    return existing;
  }

  /** PostgreSQL: resolves the name as the plugin's unqualified queries do (search_path). */
  private static boolean existsOnSearchPath(Connection connection, String name)
      throws SQLException {
    try (PreparedStatement query = connection.prepareStatement("SELECT to_regclass(?)")) {
      query.setString(1, name);
      try (ResultSet result = query.executeQuery()) {
        return result.next() && result.getString(1) != null;
      }
    }
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

  private static String qualifiedName(Config config, String path) {
    String schema = config.getString(path + ".schemaName");
    String table = config.getString(path + ".tableName");
    return schema.isEmpty() ? table : schema + "." + table;
  }

  private static JdbcProfile profile(ActorSystem<?> system, Config config) {
    JdbcProfile profile = slick(system).database(config.getConfig(JOURNAL)).profile();
    if (profile instanceof H2Profile || profile instanceof PostgresProfile) {
      return profile;
    }
    throw new IllegalStateException(
        "journal database "
            + databaseUrl(config)
            + ": Slick profile "
            + profile
            + " has no schema here; give slick.jdbc.H2Profile$ or slick.jdbc.PostgresProfile$");
  }

  private static Connection connection(ActorSystem<?> system, Config config) throws SQLException {
    return slick(system).database(config.getConfig(JOURNAL)).database().source().createConnection();
  }

  private static String resource(ClassLoader loader, String resource) {
    try (InputStream script = loader.getResourceAsStream(resource)) {
      if (script == null) {
        throw new IllegalStateException(
            "schema script "
                + resource
                + " is not on the class path; give a class path with pekko-persistence-jdbc and"
                + " gpushare's persistence-config");
      }
      return new String(script.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("reading schema script " + resource, e);
    }
  }

  private static SlickExtensionImpl slick(ActorSystem<?> system) {
    return (SlickExtensionImpl) SlickExtension.get(system);
  }

  private static <T> CompletionStage<T> failWithContext(CompletionStage<T> stage, Config config) {
    return stage.handle(
        (value, error) -> {
          if (error == null) {
            return value;
          }
          Throwable cause = unwrap(error);
          if (cause instanceof IllegalStateException) {
            throw (IllegalStateException) cause;
          }
          throw new IllegalStateException(describe(cause, databaseUrl(config)), cause);
        });
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
      if (isInUse(t)) {
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

  /** Whether {@code error} (or a cause) is H2's "database in use by another process". */
  public static boolean isDatabaseInUse(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (isInUse(t)) {
        return true;
      }
    }
    return false;
  }

  private static boolean isInUse(Throwable t) {
    return t instanceof SQLException && ((SQLException) t).getErrorCode() == H2_DATABASE_IN_USE;
  }

  /** The URL of the journal's database without settings (which might carry credentials). */
  public static String databaseUrl(Config config) {
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
