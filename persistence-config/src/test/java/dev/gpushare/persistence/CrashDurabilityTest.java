package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gpushare.persistence.JournalInspector.JournalEntry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Crash safety of the embedded profile, with a real process kill: a child JVM ({@link CrashWriter})
 * persists as fast as it can and reports every acknowledged sequence number; while it writes, this
 * JVM must be refused the database with a clear message; then the child gets SIGKILL, and every
 * event it reported must be in the journal when the directory is opened again.
 */
class CrashDurabilityTest {

  private static final String EOF = "<eof>";
  static final long STEP_SECONDS = 60;
  private static final int ACKS_BEFORE_SECOND_OPEN = 50;
  private static final int ACKS_BEFORE_KILL = 200;

  @TempDir Path temp;

  @Test
  void everyAcknowledgedEventSurvivesSigkillAndASecondProcessIsRefused() throws Exception {
    Path dataDir = temp.resolve("data");
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
                dataDir.toString())
            .redirectError(childErrors.toFile())
            .start();
    Map<String, Long> acknowledged = new TreeMap<>();
    try {
      BlockingQueue<String> lines = readLines(child);
      expect(lines, "READY", childErrors);
      collectAcks(lines, ACKS_BEFORE_SECOND_OPEN, acknowledged, childErrors);

      assertSecondProcessIsRefused(dataDir);

      collectAcks(lines, ACKS_BEFORE_KILL, acknowledged, childErrors);
      assertTrue(child.isAlive(), "the child is still writing when it is killed");
      // SIGKILL through the handle: Process.destroyForcibly() would also close the pipe that
      // still holds the child's last acknowledgements.
      child.toHandle().destroyForcibly();
      assertTrue(child.waitFor(STEP_SECONDS, TimeUnit.SECONDS), "the child died");
      assertEquals(128 + 9, child.exitValue(), "the child ended by SIGKILL");
      collectAcks(lines, Integer.MAX_VALUE, acknowledged, childErrors);
    } finally {
      child.destroyForcibly();
      child.waitFor(STEP_SECONDS, TimeUnit.SECONDS);
    }

    assertEquals(CrashWriter.WRITERS, acknowledged.size(), "every writer acknowledged events");
    ActorTestKit reopened = JournalTestKits.embedded("reopened", dataDir);
    try {
      await(SchemaSetup.ensure(reopened.system()));
      JournalInspector inspector = JdbcJournalInspector.create(reopened.system());
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
      reopened.shutdownTestKit();
    }
  }

  private static void assertSecondProcessIsRefused(Path dataDir) {
    ActorTestKit second = JournalTestKits.embedded("second", dataDir);
    try {
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> await(SchemaSetup.ensure(second.system())));
      IllegalStateException refused = assertInstanceOf(IllegalStateException.class, e.getCause());
      String expected =
          "journal database jdbc:h2:file:"
              + dataDir.toAbsolutePath().resolve("journal")
              + " is in use by another process (";
      assertTrue(refused.getMessage().startsWith(expected), refused.getMessage());
      assertTrue(
          refused
              .getMessage()
              .endsWith(
                  "); stop the other gpushare server that uses this --data directory, or give"
                      + " another --data directory"),
          refused.getMessage());
    } finally {
      second.shutdownTestKit();
    }
  }

  /** Reads {@code ACK <id> <n>} lines until {@code count} more arrived or the child's EOF. */
  static int collectAcks(
      BlockingQueue<String> lines, int count, Map<String, Long> acknowledged, Path childErrors)
      throws Exception {
    int read = 0;
    while (read < count) {
      String line = next(lines, childErrors);
      if (line.equals(EOF)) {
        if (count == Integer.MAX_VALUE) {
          return read;
        }
        fail("the child ended early; its stderr:\n" + stderr(childErrors));
      }
      String[] parts = line.split(" ");
      if (parts.length != 3 || !parts[0].equals("ACK")) {
        fail("unexpected line from the child: " + line);
      }
      long sequenceNr = Long.parseLong(parts[2]);
      Long previous = acknowledged.put(parts[1], sequenceNr);
      assertTrue(previous == null || previous == sequenceNr - 1, "acks in order: " + line);
      read++;
    }
    return read;
  }

  static void expect(BlockingQueue<String> lines, String expected, Path childErrors)
      throws Exception {
    String line = next(lines, childErrors);
    assertEquals(
        expected, line, () -> "first line of the child; its stderr:\n" + stderr(childErrors));
  }

  static String next(BlockingQueue<String> lines, Path childErrors) throws Exception {
    String line = lines.poll(STEP_SECONDS, TimeUnit.SECONDS);
    assertNotNull(line, () -> "no output from the child; its stderr:\n" + stderr(childErrors));
    return line;
  }

  static String stderr(Path childErrors) {
    try {
      return Files.readString(childErrors);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /** The child's stdout, line by line, then {@link #EOF}; read on a daemon thread. */
  static BlockingQueue<String> readLines(Process child) {
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader in =
                  new BufferedReader(
                      new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                  lines.add(line);
                }
              } catch (IOException e) {
                lines.add("reading the child's stdout failed: " + e);
              } finally {
                lines.add(EOF);
              }
            },
            "crash-writer-stdout");
    reader.setDaemon(true);
    reader.start();
    return lines;
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(STEP_SECONDS, TimeUnit.SECONDS);
  }
}
