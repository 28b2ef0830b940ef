package dev.gpushare.persistence;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValueFactory;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Complete persistence configuration for the two deployments: an embedded H2 file database (the
 * zero-setup default) and PostgreSQL (cluster mode).
 *
 * <p>Both profiles select the JDBC journal, snapshot store and read journal ({@code jdbc-journal},
 * {@code jdbc-snapshot-store}, {@code jdbc-read-journal}), make them share the one connection pool
 * {@code pekko-persistence-jdbc.shared-databases.gpushare}, and bind {@link
 * dev.gpushare.arbiter.JsonSerializable} to Pekko's uncompressed {@code jackson-json} serializer.
 * The H2 profile also installs {@link H2CheckpointingJournalDao}, which makes every acknowledged
 * persist survive a killed process. Durable state ({@code DurableStateBehavior}) is not configured.
 * The static part lives in the resource {@code gpushare-persistence.conf}; only the connection
 * settings are computed here.
 *
 * <p>The returned config is resolved and holds only these settings; layer it over the rest of the
 * application's configuration, e.g. {@code embeddedH2(dir).withFallback(ConfigFactory.load())}.
 */
public final class PersistenceProfiles {

  /** The resource that holds the static part of every profile. */
  public static final String RESOURCE = "gpushare-persistence.conf";

  /** Config path of the database every JDBC plugin shares. */
  public static final String SHARED_DATABASE = "pekko-persistence-jdbc.shared-databases.gpushare";

  private static final String PROFILES = "gpushare.persistence.profiles";

  private PersistenceProfiles() {}

  /**
   * The embedded default: an H2 file database {@code <dataDir>/journal.mv.db}, crash safe (every
   * acknowledged persist is in the file even if the process is killed) and locked against a second
   * process. {@code dataDir} should come from {@link DataDirectory#prepare(Path)}.
   */
  public static Config embeddedH2(Path dataDir) {
    Objects.requireNonNull(dataDir, "dataDir");
    Config base = staticPart();
    Config h2 = base.getConfig(PROFILES + ".h2");
    String file = dataDir.toAbsolutePath().normalize().resolve("journal").toString();
    if (file.contains(";")) {
      throw new IllegalArgumentException(
          "--data "
              + dataDir
              + ": the path contains ';', which ends an H2 database URL; give a directory"
              + " whose path has no ';'");
    }
    String url = "jdbc:h2:file:" + file + h2.getString("url-settings");
    return assemble(base, h2, h2.getConfig("database"), url);
  }

  /**
   * Cluster mode: PostgreSQL at {@code jdbcUrl} (e.g. {@code jdbc:postgresql://db:5432/gpushare}).
   * The PostgreSQL JDBC driver ({@code org.postgresql:postgresql}) must be on the class path.
   */
  public static Config postgres(String jdbcUrl, String user, String password) {
    Objects.requireNonNull(jdbcUrl, "jdbcUrl");
    Objects.requireNonNull(user, "user");
    Objects.requireNonNull(password, "password");
    if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
      throw new IllegalArgumentException(
          "jdbcUrl "
              + jdbcUrl
              + ": not a PostgreSQL JDBC URL; give one like jdbc:postgresql://host:5432/database");
    }
    Config base = staticPart();
    Config postgres = base.getConfig(PROFILES + ".postgres");
    Config database =
        postgres
            .getConfig("database")
            .withValue("db.user", ConfigValueFactory.fromAnyRef(user))
            .withValue("db.password", ConfigValueFactory.fromAnyRef(password));
    return assemble(base, postgres, database, jdbcUrl);
  }

  private static Config staticPart() {
    return ConfigFactory.parseResources(
            PersistenceProfiles.class.getClassLoader(),
            RESOURCE,
            ConfigParseOptions.defaults().setAllowMissing(false))
        .resolve();
  }

  private static Config assemble(Config base, Config profile, Config database, String url) {
    Config shared =
        database
            .withValue("db.url", ConfigValueFactory.fromAnyRef(url))
            .withFallback(base.getConfig(SHARED_DATABASE))
            .atPath(SHARED_DATABASE);
    return shared
        .withFallback(profile.getConfig("config"))
        .withFallback(base.withoutPath(PROFILES))
        .resolve();
  }
}
