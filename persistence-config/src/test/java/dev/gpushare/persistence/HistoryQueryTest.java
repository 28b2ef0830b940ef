package dev.gpushare.persistence;

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
      SchemaSetup.ensure(kit.system()).toCompletableFuture().get();
      new HistoryScenario(kit).run();
    } finally {
      kit.shutdownTestKit();
    }
  }
}
