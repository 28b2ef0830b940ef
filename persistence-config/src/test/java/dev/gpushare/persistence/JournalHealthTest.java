package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.sql.SQLNonTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * When the journal can write: free space under the minimum, a failed write until a checkpoint
 * succeeds, and for good once H2 has closed the database. Driven by {@link JournalHealth#check()}
 * with a scripted free space and checkpoint, no timers.
 */
class JournalHealthTest {

  private static final long MIB = 1024 * 1024;

  private ActorTestKit kit;
  private JournalHealth health;
  private final AtomicLong free = new AtomicLong(100 * MIB);
  private final AtomicReference<CompletableFuture<Object>> checkpoint =
      new AtomicReference<>(CompletableFuture.completedFuture(null));
  private final List<String> failures = new CopyOnWriteArrayList<>();
  private final List<String> closes = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() {
    kit = ActorTestKit.create("journal-health");
    health = JournalHealth.get(kit.system());
    health.listen(
        new JournalHealth.Listener() {
          @Override
          public void writeFailed(String reason) {
            failures.add(reason);
          }

          @Override
          public void databaseClosed(String reason) {
            closes.add(reason);
          }
        });
    health.attach(() -> checkpoint.get());
    health.watchFreeSpace("/data", free::get, 16 * MIB, Duration.ZERO);
  }

  @AfterEach
  void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void writesAreRefusedWhileFreeSpaceIsUnderTheMinimumAndResumeWhenItReturns() {
    assertEquals(Optional.empty(), health.unwritable());
    free.set(3 * MIB / 2);
    health.check();
    assertEquals(
        Optional.of(
            "the file system of /data has 1.5 MiB free, less than"
                + " gpushare.journal.min-free-space (16 MiB); free space there (or lower the"
                + " setting)"),
        health.unwritable());
    free.set(16 * MIB);
    health.check();
    assertEquals(Optional.empty(), health.unwritable());
    assertEquals(List.of(), failures, "no write failed");
  }

  @Test
  void aFailedWriteIsToldAtOnceAndLastsUntilACheckpointSucceeds() {
    checkpoint.set(new CompletableFuture<>()); // the probe after the failure is still running
    health.writeFailed(
        new IllegalStateException("commit", new IOException("No space left on device")));
    String reason = "a journal write failed in /data: no space left on device";
    assertEquals(List.of(reason), failures);
    assertEquals(Optional.of(reason), health.unwritable());

    checkpoint.get().completeExceptionally(new IOException("No space left on device"));
    assertEquals(Optional.of(reason), health.unwritable(), "the probe failed: still unwritable");

    checkpoint.set(CompletableFuture.completedFuture(null));
    health.check();
    assertEquals(Optional.empty(), health.unwritable(), "a checkpoint succeeded: writes again");
    assertEquals(List.of(), closes);
    assertFalse(health.databaseClosed());
  }

  @Test
  void onceH2HasClosedTheDatabaseTheJournalNeverWritesAgainAndTheLauncherIsTold() {
    // H2's first failure names the file system's complaint; the database is closed by then,
    // which the checkpoint after it shows (error 90098).
    checkpoint.set(
        CompletableFuture.failedFuture(
            new SQLNonTransientConnectionException(
                "The database has been closed", "90098", JournalHealth.H2_DATABASE_CLOSED)));
    health.writeFailed(new IOException("No space left on device"));
    assertTrue(health.databaseClosed());
    String why =
        "a journal write failed in /data: no space left on device; H2 has closed the journal"
            + " database, so nothing more can be written by this process (the file keeps every"
            + " acknowledged write)";
    assertEquals(List.of(why), closes);
    assertEquals(Optional.of(why), health.unwritable());

    free.set(100 * MIB);
    checkpoint.set(CompletableFuture.completedFuture(null));
    health.writeSucceeded();
    health.check();
    assertEquals(Optional.of(why), health.unwritable(), "closed for good");
    health.writeFailed(new IOException("No space left on device"));
    assertEquals(1, failures.size(), "nothing more is told once closed");
    assertEquals(1, closes.size());
  }

  @Test
  void describesTheCommonFaultsInAFewWords() {
    assertEquals(
        "H2 has closed the database after an earlier write error",
        JournalHealth.describe(
            new RuntimeException(
                new SQLNonTransientConnectionException(
                    "The database has been closed", "90098", 90098))));
    assertEquals(
        "disk quota exceeded", JournalHealth.describe(new IOException("Disk quota exceeded")));
    assertEquals(
        "IllegalStateException: pool exhausted",
        JournalHealth.describe(new IllegalStateException("pool exhausted\nmore lines")));
    assertEquals("812 KiB", JournalHealth.size(812 * 1024));
    assertEquals("0 bytes", JournalHealth.size(0));
    assertEquals("16 MiB", JournalHealth.size(16 * MIB));
  }
}
