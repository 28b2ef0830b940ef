package dev.gpushare.persistence;

import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.db.SlickExtension;
import org.apache.pekko.persistence.jdbc.db.SlickExtensionImpl;

/** Test systems on the embedded H2 and the PostgreSQL profile, as the server builds them. */
final class JournalTestKits {

  static final Duration TIMEOUT = Duration.ofSeconds(30);

  private JournalTestKits() {}

  /** A test kit whose system journals to the H2 database in {@code dataDir}. */
  static ActorTestKit embedded(String name, Path dataDir) {
    return ActorTestKit.create(
        name, PersistenceProfiles.embeddedH2(dataDir).withFallback(ConfigFactory.load()));
  }

  /** A test kit whose system journals to the PostgreSQL database at {@code url}. */
  static ActorTestKit postgres(String name, String url) {
    return ActorTestKit.create(
        name,
        PersistenceProfiles.postgres(url, PostgresServer.USER, PostgresServer.PASSWORD)
            .withFallback(ConfigFactory.load()));
  }

  /** A connection from the pool the journal uses, for looking at the raw tables. */
  static Connection connection(ActorSystem<?> system) throws SQLException {
    SlickExtensionImpl slick = (SlickExtensionImpl) SlickExtension.get(system);
    return slick
        .database(system.settings().config().getConfig("jdbc-journal"))
        .database()
        .source()
        .createConnection();
  }
}
