package dev.gpushare.persistence;

import com.typesafe.config.Config;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Which journal the server uses: the checked form of the configuration switch {@code
 * gpushare.journal} ({@code kind = h2 | postgres}). {@link #profile(Path)} gives the matching
 * persistence configuration of {@link PersistenceProfiles}.
 *
 * <p>The schema policy differs on purpose. The embedded H2 file belongs to the server alone, so the
 * server creates its tables at every start. A PostgreSQL database belongs to its operators: they
 * decide who may run DDL and when (a migration tool, a DBA, a role without {@code CREATE}), so the
 * server only checks that the tables are there and refuses to start without them, unless {@link
 * Postgres#createSchema()} says that it may create them itself.
 */
public sealed interface JournalSettings permits JournalSettings.H2, JournalSettings.Postgres {

  /** The default: {@code kind = h2}. */
  JournalSettings DEFAULT = new H2(H2.DEFAULT_MIN_FREE_SPACE);

  /** The persistence configuration of this journal; {@code dataDir} matters for H2 only. */
  Config profile(Path dataDir);

  /** {@code h2} or {@code postgres}, as in {@code gpushare.journal.kind}. */
  String kind();

  /** Whether the server may create missing tables at start (always for H2). */
  boolean createsSchemaAtStart();

  /**
   * {@code gpushare.journal.kind = h2}: the file {@code <data dir>/journal.mv.db}.
   *
   * @param minFreeSpace {@code gpushare.journal.min-free-space} in bytes: while the data
   *     directory's file system has less free, writes are refused and the server is not ready
   *     ({@link JournalHealth}); {@code 0} turns the check off
   */
  record H2(long minFreeSpace) implements JournalSettings {

    /** 16 MiB: room for H2 to finish what it writes and compacts. */
    public static final long DEFAULT_MIN_FREE_SPACE = 16L * 1024 * 1024;

    public H2 {
      if (minFreeSpace < 0) {
        throw new IllegalArgumentException(
            "minFreeSpace " + minFreeSpace + ": give 0 (off) or more bytes");
      }
    }

    @Override
    public Config profile(Path dataDir) {
      return PersistenceProfiles.embeddedH2(dataDir);
    }

    @Override
    public String kind() {
      return "h2";
    }

    @Override
    public boolean createsSchemaAtStart() {
      return true;
    }
  }

  /**
   * {@code gpushare.journal.kind = postgres}.
   *
   * @param url a {@code jdbc:postgresql://HOST:PORT/DATABASE} URL
   * @param user the database user
   * @param password its password; empty when none is configured (trust or certificate
   *     authentication); never shown by {@link #toString()}
   * @param createSchema {@code gpushare.journal.postgres.create-schema}: create missing tables at
   *     start (default {@code false})
   */
  record Postgres(String url, String user, String password, boolean createSchema)
      implements JournalSettings {

    public Postgres {
      Objects.requireNonNull(url, "url");
      Objects.requireNonNull(user, "user");
      Objects.requireNonNull(password, "password");
    }

    @Override
    public Config profile(Path dataDir) {
      return PersistenceProfiles.postgres(url, user, password);
    }

    @Override
    public String kind() {
      return "postgres";
    }

    @Override
    public boolean createsSchemaAtStart() {
      return createSchema;
    }

    /** Without the password. */
    @Override
    public String toString() {
      return "Postgres[url="
          + url
          + ", user="
          + user
          + ", password="
          + (password.isEmpty() ? "(none)" : "(hidden)")
          + ", createSchema="
          + createSchema
          + "]";
    }
  }
}
