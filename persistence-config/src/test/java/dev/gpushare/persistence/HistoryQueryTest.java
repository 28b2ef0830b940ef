package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pod's history read by tag from the embedded H2 journal, whose DAO ({@link
 * H2CheckpointingJournalDao}) writes the tags of each event with it: {@link HistoryScenario}.
 */
class HistoryQueryTest {

  @Test
  void aPodsHistoryIsItsRecordsAndEveryDecisionAboutItInJournalOrder(@TempDir Path dataDir)
      throws Exception {
    ActorTestKit kit = JournalTestKits.embedded("history", dataDir);
    try {
      assertEquals(
          H2CheckpointingJournalDao.class.getName(),
          kit.system().settings().config().getString("jdbc-journal.dao"),
          "the product's DAO writes the events and their tags");
      SchemaSetup.ensure(kit.system()).toCompletableFuture().get();
      new HistoryScenario(kit).run();
    } finally {
      kit.shutdownTestKit();
    }
  }
}
