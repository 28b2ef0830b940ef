package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded journal stays proportional to its data while it runs and across SIGKILLs (issue 13):
 * a child JVM ({@link CrashWriter}) persists through the server's own H2 profile, one {@code
 * CHECKPOINT} per acknowledged write, and is killed several times. After each kill — before any
 * graceful open, which compacts — the file is compared with the same file compacted (a copy closed
 * with {@code SHUTDOWN COMPACT}: what its live data need), and every acknowledged event must be in
 * the journal. With H2's default retention of freed space (45 s) the file grew by tens of kilobytes
 * per checkpoint, dozens of times its data.
 */
class H2JournalSizeTest {

  private static final int ROUNDS = 4;
  private static final int ACKS_PER_ROUND = 600;
  private static final double MAX_RATIO = 10;

  /** What a small file holds besides its data whatever it does: headers, the last chunks. */
  private static final long SLACK = 1 << 20;

  @TempDir Path temp;

  @Test
  void repeatedSigkillsLoseNothingAndTheFileStaysWithinTenTimesItsCompactedSize() throws Exception {
    Path dataDir = temp.resolve("data");
    Path file = dataDir.resolve("journal.mv.db");
    for (int round = 1; round <= ROUNDS; round++) {
      Map<String, Long> acknowledged = writeAndKill(dataDir, round);
      long killed = Files.size(file);
      long compacted = compactedSize(file, temp.resolve("compact-" + round));
      System.out.printf(
          "round %d: %s; file after SIGKILL %,d bytes, compacted %,d bytes (%.1f x)%n",
          round, acknowledged, killed, compacted, killed / (double) compacted);
      assertTrue(
          killed <= MAX_RATIO * compacted + SLACK,
          "round "
              + round
              + ": the file after SIGKILL is "
              + killed
              + " bytes, more than "
              + MAX_RATIO
              + " x its compacted size "
              + compacted
              + " + "
              + SLACK);
      assertAllThere(dataDir, acknowledged, round);
    }
  }

  /** One child's life: READY, {@link #ACKS_PER_ROUND} acknowledgements, SIGKILL; its acks. */
  private Map<String, Long> writeAndKill(Path dataDir, int round) throws Exception {
    Path childErrors = temp.resolve("child-stderr-" + round + ".log");
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-cp",
                System.getProperty("java.class.path"),
                CrashWriter.class.getName(),
                dataDir.toString())
            .redirectError(childErrors.toFile())
            .start();
    Map<String, Long> acknowledged = new TreeMap<>();
    try {
      BlockingQueue<String> lines = CrashDurabilityTest.readLines(child);
      CrashDurabilityTest.expect(lines, "READY", childErrors);
      CrashDurabilityTest.collectAcks(lines, ACKS_PER_ROUND, acknowledged, childErrors);
      child.toHandle().destroyForcibly();
      assertTrue(
          child.waitFor(CrashDurabilityTest.STEP_SECONDS, TimeUnit.SECONDS), "the child died");
      assertEquals(128 + 9, child.exitValue(), "the child ended by SIGKILL");
      CrashDurabilityTest.collectAcks(lines, Integer.MAX_VALUE, acknowledged, childErrors);
    } finally {
      child.destroyForcibly();
      child.waitFor(CrashDurabilityTest.STEP_SECONDS, TimeUnit.SECONDS);
    }
    return acknowledged;
  }

  private static void assertAllThere(Path dataDir, Map<String, Long> acknowledged, int round)
      throws Exception {
    ActorTestKit reopened = JournalTestKits.embedded("reopened-" + round, dataDir);
    try {
      SchemaSetup.ensure(reopened.system()).toCompletableFuture().get(60, TimeUnit.SECONDS);
      JournalInspector inspector = JdbcJournalInspector.create(reopened.system());
      for (Map.Entry<String, Long> ack : acknowledged.entrySet()) {
        List<JournalEntry> events =
            inspector
                .events(ack.getKey(), 1, Integer.MAX_VALUE)
                .toCompletableFuture()
                .get(60, TimeUnit.SECONDS);
        assertTrue(
            events.size() >= ack.getValue(),
            "round "
                + round
                + ": "
                + ack.getKey()
                + " acknowledged up to "
                + ack.getValue()
                + " but the journal holds "
                + events.size());
      }
    } finally {
      reopened.shutdownTestKit();
    }
  }

  /** The size {@code file} has once compacted: a copy opened and closed with SHUTDOWN COMPACT. */
  static long compactedSize(Path file, Path scratch) throws Exception {
    Files.createDirectories(scratch);
    Path copy = scratch.resolve("journal.mv.db");
    Files.copy(file, copy);
    try (Connection c =
        DriverManager.getConnection("jdbc:h2:file:" + scratch.resolve("journal"), "sa", "")) {
      c.createStatement().execute("SHUTDOWN COMPACT");
    }
    return Files.size(copy);
  }
}
