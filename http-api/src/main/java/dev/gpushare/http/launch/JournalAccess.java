package dev.gpushare.http.launch;

import ch.qos.logback.classic.Level;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.persistence.DataDirectory;
import dev.gpushare.persistence.JournalSettings;
import dev.gpushare.persistence.SchemaSetup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configured journal opened by a command ({@code init-schema}, {@code journal}) instead of a
 * server: the same configuration as the launcher ({@code --config} over the built-in one, every key
 * checked), the same persistence profile, but a local actor system (no cluster, no remoting port)
 * that logs warnings only, so that stdout carries just the command's output.
 */
public final class JournalAccess implements AutoCloseable {

  /** The file of the embedded H2 journal in a data directory. */
  public static final String H2_FILE = "journal.mv.db";

  private static final Logger LOG = LoggerFactory.getLogger(JournalAccess.class);

  private static final Config COMMAND_OVERRIDES =
      ConfigFactory.parseString(
          """
          pekko.actor.provider = local
          pekko.loglevel = WARNING
          pekko.coordinated-shutdown.exit-jvm = off
          """);

  private final ActorSystem<Void> system;
  private final JournalSettings settings;
  private final String database;
  private final Path dataDir;

  private JournalAccess(ActorSystem<Void> system, JournalSettings settings, Path dataDir) {
    this.system = system;
    this.settings = settings;
    this.dataDir = dataDir;
    this.database = SchemaSetup.databaseUrl(system.settings().config());
  }

  /**
   * Opens the journal of {@code configFile}; {@code data} is the H2 data directory. With {@code
   * mustExist} an H2 journal must already be there (reading never creates one); without, the
   * directory is prepared as the launcher prepares it.
   */
  public static JournalAccess open(
      String systemName, Optional<Path> configFile, Path data, boolean mustExist) {
    quietLogging();
    Config loaded = EmbeddedConfig.load(configFile);
    JournalSettings settings =
        EmbeddedConfig.from(EmbeddedConfig.resolve(loaded, ConfigFactory.load())).journal();
    Path dataDir;
    if (settings instanceof JournalSettings.H2 && mustExist) {
      dataDir = data.toAbsolutePath().normalize();
      if (!Files.isRegularFile(dataDir.resolve(H2_FILE))) {
        throw new LaunchException(
            "--data "
                + data
                + ": no H2 journal in it ("
                + H2_FILE
                + " is absent); give the --data directory of a gpushare server, or a --config"
                + " whose gpushare.journal selects PostgreSQL");
      }
    } else if (settings instanceof JournalSettings.H2) {
      dataDir = DataDirectory.prepare(data);
    } else {
      dataDir = data.toAbsolutePath().normalize();
    }
    Config config =
        COMMAND_OVERRIDES.withFallback(
            EmbeddedConfig.resolve(
                loaded, settings.profile(dataDir).withFallback(ConfigFactory.load())));
    return new JournalAccess(
        ActorSystem.create(Behaviors.empty(), systemName, config), settings, dataDir);
  }

  public ActorSystem<Void> system() {
    return system;
  }

  public JournalSettings settings() {
    return settings;
  }

  /** The database URL without settings or query. */
  public String database() {
    return database;
  }

  @Override
  public void close() {
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      LOG.warn("the actor system did not stop cleanly: {}", e.toString());
    }
    if (settings instanceof JournalSettings.H2) {
      // a journal this command created has the umask's mode; the server's files are 0600
      DataDirectory.restrictFiles(dataDir);
    }
  }

  /**
   * A command's stderr carries its own messages: library chatter below WARN is dropped, and the
   * pool's own line about a database it cannot open too, since the command's message says it.
   */
  private static void quietLogging() {
    if (LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME)
        instanceof ch.qos.logback.classic.Logger root) {
      if (root.getLevel() == null || !root.getLevel().isGreaterOrEqual(Level.WARN)) {
        root.setLevel(Level.WARN);
      }
    }
    if (LoggerFactory.getLogger("com.zaxxer.hikari")
        instanceof ch.qos.logback.classic.Logger pool) {
      pool.setLevel(Level.OFF);
    }
  }
}
