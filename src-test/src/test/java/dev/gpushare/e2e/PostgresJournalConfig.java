package dev.gpushare.e2e;

import dev.gpushare.persistence.PostgresServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The {@code --config} of a launcher under test whose journal is a database of a {@link
 * PostgresServer}; the password comes from the environment variable {@link #PASSWORD_ENV}.
 */
final class PostgresJournalConfig {
  /** The environment variable that carries the password to the server under test. */
  static final String PASSWORD_ENV = "GPUSHARE_E2E_PGPASSWORD";

  private PostgresJournalConfig() {}

  /**
   * Writes {@code gpushare-postgres.conf} in {@code dir} (created) for the database at {@code url}.
   */
  static Path file(Path dir, String url) {
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
              + PostgresServer.USER
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
}
