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
 * <p><b>Width of persistence ids</b>: the plugin's scripts declare {@code persistence_id} as {@code
 * VARCHAR(255)}, too narrow for the ids of pods and nodes with the longest names Kubernetes accepts
 * (persistence-config/EVENTS.md, "Persistence ids"). Both databases get {@value
 * #PERSISTENCE_ID_WIDTH} characters in {@code event_journal}, {@code snapshot} and {@code
 * durable_state}: a new PostgreSQL table is made that wide, an existing column that is narrower is
 * widened in place (rows kept; {@link Report#widened}), on H2 at every start, on PostgreSQL by
 * {@link #create}. {@link #verifyWritable} refuses a PostgreSQL journal still narrower ({@link
 * NarrowColumnsException}).
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

  /**
   * The width in characters of every {@code persistence_id} column: the longest persistence id
   * gpushare writes is 450 characters (EVENTS.md, "Persistence ids"), and 512 characters of even
   * 4-byte UTF-8 stay below PostgreSQL's 2704-byte limit on a B-tree key.
   */
  public static final int PERSISTENCE_ID_WIDTH = 512;

  /** The {@code persistence_id} columns: config path of the table, then of the column's name. */
  private static final List<List<String>> PERSISTENCE_ID_COLUMNS =
      List.of(
          List.of(
              "jdbc-journal.tables.event_journal",
              "jdbc-journal.tables.event_journal.columnNames.persistenceId"),
          List.of(
              "jdbc-snapshot-store.tables.snapshot",
              "jdbc-snapshot-store.tables.snapshot.columnNames.persistenceId"),
          List.of(
              "jdbc-durable-state-store.tables.durable_state",
              "jdbc-durable-state-store.tables.durable_state.columnNames.persistenceId"));

  private SchemaSetup() {}

  /**
   * What {@link #create} did.
   *
   * @param database the database URL without settings or query
   * @param script the DDL applied (a resource name)
   * @param created tables that did not exist before and do now, in creation order
   * @param present tables that existed already
   * @param widened {@code table.column} of the existing {@code persistence_id} columns that were
   *     narrower than {@value #PERSISTENCE_ID_WIDTH} characters and are now that wide
   */
  public record Report(
      String database,
      String script,
      List<String> created,
      List<String> present,
      List<String> widened) {
    public Report {
      created = List.copyOf(created);
      present = List.copyOf(present);
      widened = List.copyOf(widened);
    }
  }

  /**
   * {@link #verifyWritable} found {@code persistence_id} columns narrower than {@value
   * #PERSISTENCE_ID_WIDTH} characters: a journal made by an older schema script.
   */
  public static final class NarrowColumnsException extends IllegalStateException {
    private final String database;
    private final List<String> narrow;

    NarrowColumnsException(String database, List<String> narrow) {
      super(
          "journal database "
              + database
              + ": columns "
              + narrow
              + " are narrower than the "
              + PERSISTENCE_ID_WIDTH
              + " characters that persistence ids of Kubernetes names need (pod and node names"
              + " of up to 253 characters); widen them with the schema script "
              + POSTGRES_SCRIPT
              + " (gpushare's init-schema command), which keeps every row");
      this.database = database;
      this.narrow = List.copyOf(narrow);
    }

    /** The database URL without settings or query. */
    public String database() {
      return database;
    }

    /** {@code table.column VARCHAR(n)} of each column that is too narrow. */
    public List<String> narrow() {
      return narrow;
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
                                done ->
                                    report(
                                        system,
                                        config,
                                        before,
                                        H2_SCRIPT,
                                        widenAndIndexH2(system, config)),
                                blocking));
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

  /**
   * {@link #verify}, and that every {@code persistence_id} column holds {@value
   * #PERSISTENCE_ID_WIDTH} characters: fails with {@link NarrowColumnsException} for a journal made
   * by an older script, before anything is written that it could not hold. A server on PostgreSQL
   * without {@code create-schema} checks this at start; on H2 {@link #create}, run at every start,
   * has widened the columns already.
   */
  public static CompletionStage<Done> verifyWritable(ActorSystem<?> system) {
    Config config = system.settings().config();
    Executor blocking = system.dispatchers().lookup(DispatcherSelector.blocking());
    CompletionStage<Done> verified =
        verify(system)
            .thenApplyAsync(
                done -> {
                  List<String> narrow = new ArrayList<>();
                  try (Connection connection = connection(system, config)) {
                    for (Map.Entry<String, Integer> column :
                        widths(connection, config).entrySet()) {
                      if (column.getValue() < PERSISTENCE_ID_WIDTH) {
                        narrow.add(column.getKey() + " VARCHAR(" + column.getValue() + ")");
                      }
                    }
                  } catch (SQLException e) {
                    throw new CompletionException(e);
                  }
                  if (!narrow.isEmpty()) {
                    throw new NarrowColumnsException(databaseUrl(config), narrow);
                  }
                  return done;
                },
                blocking);
    return failWithContext(verified, config);
  }

  /** The text of gpushare's PostgreSQL DDL ({@value #POSTGRES_SCRIPT}). */
  public static String postgresScript() {
    return resource(SchemaSetup.class.getClassLoader(), POSTGRES_SCRIPT);
  }

  /**
   * The statements of a script: {@code --} comment lines dropped, split at semicolons, except those
   * inside {@code $$} quotes (the body of a {@code DO} block).
   */
  static List<String> statements(String script) {
    StringBuilder code = new StringBuilder();
    for (String line : script.split("\n", -1)) {
      if (!line.strip().startsWith("--")) {
        code.append(line).append('\n');
      }
    }
    List<String> statements = new ArrayList<>();
    StringBuilder statement = new StringBuilder();
    boolean quoted = false;
    for (int i = 0; i < code.length(); i++) {
      char c = code.charAt(i);
      if (c == '$' && i + 1 < code.length() && code.charAt(i + 1) == '$') {
        quoted = !quoted;
        statement.append("$$");
        i++;
      } else if (c == ';' && !quoted) {
        addStatement(statements, statement);
      } else {
        statement.append(c);
      }
    }
    addStatement(statements, statement);
    return statements;
  }

  private static void addStatement(List<String> statements, StringBuilder statement) {
    if (!statement.toString().isBlank()) {
      statements.add(statement.toString().strip());
    }
    statement.setLength(0);
  }

  private static Report createPostgres(ActorSystem<?> system, Config config) {
    List<String> statements = statements(postgresScript());
    Map<String, Boolean> before;
    List<String> widened = new ArrayList<>();
    try (Connection connection = connection(system, config)) {
      connection.setAutoCommit(false);
      try {
        try (PreparedStatement lock =
            connection.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
          lock.setLong(1, POSTGRES_SCHEMA_LOCK);
          lock.execute();
        }
        before = existing(connection, config);
        Map<String, Integer> narrowBefore = widths(connection, config);
        try (Statement ddl = connection.createStatement()) {
          for (String statement : statements) {
            ddl.execute(statement);
          }
        }
        Map<String, Integer> after = widths(connection, config);
        for (Map.Entry<String, Integer> column : narrowBefore.entrySet()) {
          if (column.getValue() < PERSISTENCE_ID_WIDTH) {
            int now = after.getOrDefault(column.getKey(), column.getValue());
            if (now < PERSISTENCE_ID_WIDTH) {
              throw new IllegalStateException(
                  "journal database "
                      + databaseUrl(config)
                      + ": column "
                      + column.getKey()
                      + " is still VARCHAR("
                      + now
                      + ") after "
                      + POSTGRES_SCRIPT
                      + " (its DO blocks widen the plugin's default table and column names"
                      + " only); widen it to VARCHAR("
                      + PERSISTENCE_ID_WIDTH
                      + ") by hand");
            }
            widened.add(column.getKey());
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
    return report(system, config, before, POSTGRES_SCRIPT, widened);
  }

  /**
   * H2: widens each existing {@code persistence_id} column narrower than {@value
   * #PERSISTENCE_ID_WIDTH} characters ({@code ALTER COLUMN ... SET DATA TYPE}, which keeps NOT
   * NULL, the primary key and every row); answers the columns widened. H2 commits each DDL
   * statement on its own: each column is widened whole or not at all, and a start after a failure
   * widens the rest.
   */
  /**
   * The name of the index on {@code event_tag(tag, event_id)} that gpushare adds to the plugin's
   * schema, on H2 and in {@value #POSTGRES_SCRIPT}: a pod's history is read by tag ({@code
   * eventsByTag}, {@link JournalInspector#history}), and without it every page would read the whole
   * tag table.
   */
  public static final String TAG_INDEX = "event_tag_tag_idx";

  /** {@link #widenH2}, then the tag index ({@link #TAG_INDEX}) if it is missing. */
  private static List<String> widenAndIndexH2(ActorSystem<?> system, Config config) {
    List<String> widened = widenH2(system, config);
    String tags = "jdbc-journal.tables.event_tag";
    try (Connection connection = connection(system, config);
        Statement ddl = connection.createStatement()) {
      String schema = config.getString(tags + ".schemaName");
      ddl.execute(
          "CREATE INDEX IF NOT EXISTS "
              + (schema.isEmpty() ? "" : "\"" + schema + "\".")
              + "\""
              + TAG_INDEX
              + "\" ON "
              + quotedTable(qualifiedName(config, tags))
              + " (\""
              + config.getString(tags + ".columnNames.tag")
              + "\", \""
              + config.getString(tags + ".columnNames.eventId")
              + "\")");
    } catch (SQLException e) {
      throw new CompletionException(e);
    }
    return widened;
  }

  private static List<String> widenH2(ActorSystem<?> system, Config config) {
    List<String> widened = new ArrayList<>();
    try (Connection connection = connection(system, config);
        Statement ddl = connection.createStatement()) {
      for (Map.Entry<String, Integer> column : widths(connection, config).entrySet()) {
        if (column.getValue() < PERSISTENCE_ID_WIDTH) {
          String[] tableAndColumn = splitColumn(column.getKey());
          ddl.execute(
              "ALTER TABLE "
                  + quotedTable(tableAndColumn[0])
                  + " ALTER COLUMN \""
                  + tableAndColumn[1]
                  + "\" SET DATA TYPE VARCHAR("
                  + PERSISTENCE_ID_WIDTH
                  + ")");
          widened.add(column.getKey());
        }
      }
    } catch (SQLException e) {
      throw new CompletionException(e);
    }
    return widened;
  }

  /** {@code schema.table.column} or {@code table.column}: the table part and the column. */
  private static String[] splitColumn(String qualifiedColumn) {
    int dot = qualifiedColumn.lastIndexOf('.');
    return new String[] {qualifiedColumn.substring(0, dot), qualifiedColumn.substring(dot + 1)};
  }

  private static String quotedTable(String qualifiedTable) {
    int dot = qualifiedTable.indexOf('.');
    return dot < 0
        ? "\"" + qualifiedTable + "\""
        : "\""
            + qualifiedTable.substring(0, dot)
            + "\".\""
            + qualifiedTable.substring(dot + 1)
            + "\"";
  }

  /**
   * The declared width of each existing table's {@code persistence_id} column ({@code table.column}
   * to characters; {@link Integer#MAX_VALUE} when unbounded or not a VARCHAR). PostgreSQL resolves
   * tables through the search_path, as the plugin's queries do.
   */
  private static Map<String, Integer> widths(Connection connection, Config config)
      throws SQLException {
    Map<String, Integer> widths = new LinkedHashMap<>();
    boolean postgres = connection.getMetaData().getURL().startsWith("jdbc:postgresql:");
    for (List<String> paths : PERSISTENCE_ID_COLUMNS) {
      String table = qualifiedName(config, paths.get(0));
      String column = config.getString(paths.get(1));
      Integer width =
          postgres
              ? postgresWidth(connection, table, column)
              : h2Width(
                  connection.getMetaData(),
                  config.getString(paths.get(0) + ".schemaName"),
                  config.getString(paths.get(0) + ".tableName"),
                  column);
      if (width != null) {
        widths.put(table + "." + column, width);
      }
    }
    return widths;
  }

  private static Integer postgresWidth(Connection connection, String table, String column)
      throws SQLException {
    try (PreparedStatement query =
        connection.prepareStatement(
            "SELECT CASE WHEN atttypid = 'varchar'::regtype AND atttypmod >= 4"
                + " THEN atttypmod - 4 END FROM pg_attribute"
                + " WHERE attrelid = to_regclass(?) AND attname = ? AND NOT attisdropped")) {
      query.setString(1, table);
      query.setString(2, column);
      try (ResultSet result = query.executeQuery()) {
        if (!result.next()) {
          return null;
        }
        int width = result.getInt(1);
        return result.wasNull() ? Integer.MAX_VALUE : width;
      }
    }
  }

  private static Integer h2Width(
      DatabaseMetaData metaData, String schema, String table, String column) throws SQLException {
    try (ResultSet columns =
        metaData.getColumns(null, schema.isEmpty() ? null : schema, table, column)) {
      while (columns.next()) {
        if (columns.getString("TABLE_NAME").equals(table)
            && columns.getString("COLUMN_NAME").equals(column)) {
          return columns.getInt("DATA_TYPE") == java.sql.Types.VARCHAR
              ? columns.getInt("COLUMN_SIZE")
              : Integer.MAX_VALUE;
        }
      }
      return null;
    }
  }

  private static Report report(
      ActorSystem<?> system,
      Config config,
      Map<String, Boolean> before,
      String script,
      List<String> widened) {
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
    // H2's script makes new tables narrow and they are widened at once: only the columns of
    // tables that existed before count as widened.
    List<String> widenedExisting =
        widened.stream()
            .filter(column -> before.getOrDefault(splitColumn(column)[0], false))
            .toList();
    return new Report(databaseUrl(config), script, created, present, widenedExisting);
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
