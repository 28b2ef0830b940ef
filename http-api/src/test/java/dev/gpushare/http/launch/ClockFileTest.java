package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClockFileTest {
  @TempDir Path dir;

  @Test
  void aFreshDirectoryHasNoRecordedInstant() {
    assertEquals(Optional.empty(), new ClockFile(dir).read());
  }

  @Test
  void aRecordedInstantIsReadBackByTheNextProcess() throws Exception {
    Instant t = Instant.parse("2026-01-01T05:00:00Z");
    new ClockFile(dir).record(t);
    assertEquals("2026-01-01T05:00:00Z\n", Files.readString(dir.resolve("clock.txt")));
    assertEquals(Optional.of(t), new ClockFile(dir).read());
    assertTrue(Files.notExists(dir.resolve("clock.txt.tmp")));
  }

  @Test
  void anEarlierInstantNeverReplacesALaterOne() {
    ClockFile file = new ClockFile(dir);
    file.record(Instant.parse("2026-01-02T00:00:00Z"));
    file.record(Instant.parse("2026-01-01T00:00:00Z"));
    assertEquals(Optional.of(Instant.parse("2026-01-02T00:00:00Z")), new ClockFile(dir).read());
  }

  @Test
  void garbageIsReportedWithTheFileAndItsContent() throws Exception {
    Files.writeString(dir.resolve("clock.txt"), "yesterday\n");
    String message =
        assertThrows(LaunchException.class, () -> new ClockFile(dir).read()).getMessage();
    assertTrue(message.contains("clock.txt"), message);
    assertTrue(message.contains("'yesterday'"), message);
    assertTrue(message.contains("2026-01-01T00:00:00Z"), message);
  }

  @Test
  void theFileIsTheOwnersAloneEvenOverALooseLeftover() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        Files.getFileAttributeView(dir, java.nio.file.attribute.PosixFileAttributeView.class)
            != null,
        "no POSIX permissions on " + dir);
    Path leftover = Files.writeString(dir.resolve("clock.txt.tmp"), "old");
    Files.setPosixFilePermissions(
        leftover, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
    new ClockFile(dir).record(Instant.parse("2026-01-01T05:00:00Z"));
    assertEquals(
        "rw-------",
        java.nio.file.attribute.PosixFilePermissions.toString(
            Files.getPosixFilePermissions(dir.resolve("clock.txt"))));
  }
}
