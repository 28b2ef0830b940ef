package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Crash safety of the PostgreSQL profile, with a real process kill: a child JVM ({@link
 * CrashWriter}) persists to a real PostgreSQL server as fast as it can and reports every
 * acknowledged sequence number; it gets SIGKILL in the middle of its writes, and every event it
 * reported must be in the journal, without gaps, when another system reads it. Its last
 * transactions, cut off by the kill, are rolled back by the server and leave nothing behind.
 */
class PostgresCrashDurabilityTest {

  private static final int ACKS_BEFORE_KILL = 300;

  @TempDir Path temp;

  @Test
  void everyAcknowledgedEventSurvivesSigkillOfTheWriter() throws Exception {
    try (PostgresServer server = PostgresServer.start(temp.resolve("pgdata"))) {
      String url = server.createDatabase("crash");
      Path childErrors = temp.resolve("child-stderr.log");
      Process child =
          new ProcessBuilder(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-Xmx256m",
                  "-XX:TieredStopAtLevel=1",
                  "-XX:+UseSerialGC",
                  "-cp",
                  System.getProperty("java.class.path"),
                  CrashWriter.class.getName(),
                  "--postgres",
                  url)
              .redirectError(childErrors.toFile())
              .start();
      Map<String, Long> acknowledged = new TreeMap<>();
      try {
        BlockingQueue<String> lines = CrashDurabilityTest.readLines(child);
        CrashDurabilityTest.expect(lines, "READY", childErrors);
        CrashDurabilityTest.collectAcks(lines, ACKS_BEFORE_KILL, acknowledged, childErrors);
        assertTrue(child.isAlive(), "the child is still writing when it is killed");
        // SIGKILL through the handle: Process.destroyForcibly() would also close the pipe that
        // still holds the child's last acknowledgements.
        child.toHandle().destroyForcibly();
        assertTrue(
            child.waitFor(CrashDurabilityTest.STEP_SECONDS, TimeUnit.SECONDS), "the child died");
        assertEquals(128 + 9, child.exitValue(), "the child ended by SIGKILL");
        CrashDurabilityTest.collectAcks(lines, Integer.MAX_VALUE, acknowledged, childErrors);
      } finally {
        child.destroyForcibly();
        child.waitFor(CrashDurabilityTest.STEP_SECONDS, TimeUnit.SECONDS);
      }

      assertEquals(CrashWriter.WRITERS, acknowledged.size(), "every writer acknowledged events");
      ActorTestKit reader = JournalTestKits.postgres("reader", url);
      try {
        await(SchemaSetup.verify(reader.system()));
        JournalInspector inspector = JdbcJournalInspector.create(reader.system());
        for (Map.Entry<String, Long> ack : acknowledged.entrySet()) {
          List<JournalEntry> events = await(inspector.events(ack.getKey(), 1, Integer.MAX_VALUE));
          for (int i = 0; i < events.size(); i++) {
            assertEquals(i + 1, events.get(i).sequenceNr(), ack.getKey() + " has no gaps");
          }
          assertTrue(
              events.size() >= ack.getValue(),
              ack.getKey()
                  + ": acknowledged up to "
                  + ack.getValue()
                  + " but the journal holds "
                  + events.size());
          assertEquals("CrashWriter.Written", events.get(0).type());
          System.out.printf(
              "%s: %d acknowledged before SIGKILL, %d in the journal after it%n",
              ack.getKey(), ack.getValue(), events.size());
        }
      } finally {
        reader.shutdownTestKit();
      }
    }
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(CrashDurabilityTest.STEP_SECONDS, TimeUnit.SECONDS);
  }
}
