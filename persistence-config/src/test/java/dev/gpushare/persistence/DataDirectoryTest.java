package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DataDirectoryTest {

  @TempDir Path temp;

  @Test
  void createsMissingDirectoriesAndReturnsThemAbsoluteAndNormalized() {
    Path requested = temp.resolve("a/./b/../c");
    Path prepared = DataDirectory.prepare(requested);
    assertEquals(temp.resolve("a/c").toAbsolutePath(), prepared);
    assertTrue(Files.isDirectory(prepared));
  }

  @Test
  void acceptsAnExistingDirectoryAndLeavesNoFilesBehind() throws Exception {
    assertEquals(temp.toAbsolutePath().normalize(), DataDirectory.prepare(temp));
    try (var files = Files.list(temp)) {
      assertEquals(0, files.count());
    }
  }

  @Test
  void resolvesARelativePathAgainstTheWorkingDirectory() {
    Path relative = Path.of("").toAbsolutePath().relativize(temp.resolve("rel"));
    assertEquals(temp.resolve("rel").toAbsolutePath(), DataDirectory.prepare(relative));
  }

  @Test
  void rejectsAFile() throws Exception {
    Path file = Files.writeString(temp.resolve("journal.txt"), "x");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> DataDirectory.prepare(file));
    assertEquals(
        "--data " + file + ": exists and is not a directory; give a writable directory",
        e.getMessage());
  }

  @Test
  void rejectsAPathBelowAFile() throws Exception {
    Path file = Files.writeString(temp.resolve("plain"), "x");
    Path below = file.resolve("data");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> DataDirectory.prepare(below));
    assertTrue(e.getMessage().startsWith("--data " + below + ": "), e.getMessage());
    assertTrue(e.getMessage().endsWith("; give a writable directory"), e.getMessage());
  }

  @Test
  void rejectsAReadOnlyDirectory() throws Exception {
    Path readOnly = Files.createDirectory(temp.resolve("ro"));
    Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("r-xr-xr-x"));
    try {
      assumeFalse(Files.isWritable(readOnly), "the user (root?) may write anyway");
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> DataDirectory.prepare(readOnly));
      assertEquals(
          "--data " + readOnly + ": is not writable; give a writable directory", e.getMessage());
    } finally {
      Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }

  private void assumePosix() {
    assumeFalse(
        Files.getFileAttributeView(temp, PosixFileAttributeView.class) == null,
        "the file system of " + temp + " has no POSIX permissions");
  }

  private static String mode(Path path) throws Exception {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }

  @Test
  void aNewDirectoryIsTheOwnersAlone() throws Exception {
    assumePosix();
    List<String> log = new ArrayList<>();
    Path prepared = DataDirectory.prepare(temp.resolve("parent/data"), log::add);
    assertEquals("rwx------", mode(prepared));
    assertEquals(List.of(), log, "nothing to say about a directory made so");
  }

  @Test
  void anExistingDirectoryAndItsFilesThatOthersMayReadAreTightenedWithOneLineEach()
      throws Exception {
    assumePosix();
    Path data = Files.createDirectory(temp.resolve("loose"));
    Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path journal = Files.writeString(data.resolve("journal.mv.db"), "x");
    Files.setPosixFilePermissions(journal, PosixFilePermissions.fromString("rw-rw-rw-"));
    Path token = Files.writeString(data.resolve("admin-token"), "t");
    Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
    Path clock = Files.writeString(data.resolve("clock.txt"), "c");
    Files.setPosixFilePermissions(clock, PosixFilePermissions.fromString("rw-r--r--"));
    Path sub = Files.createDirectory(data.resolve("backup"));
    Files.setPosixFilePermissions(sub, PosixFilePermissions.fromString("rwxr-xr-x"));

    List<String> log = new ArrayList<>();
    DataDirectory.prepare(data, log::add);

    assertEquals("rwx------", mode(data));
    assertEquals("rw-------", mode(journal));
    assertEquals("rw-------", mode(token));
    assertEquals("rw-------", mode(clock));
    assertEquals("rwxr-xr-x", mode(sub), "directories below are the operator's");
    assertEquals(2, log.size(), log.toString());
    assertEquals(
        "--data "
            + data
            + ": mode 0777 let other users in; set to 0700 (the journal and the admin token are"
            + " the owner's alone)",
        log.get(0));
    assertTrue(
        log.get(1)
            .startsWith("--data " + data + ": files made readable by their owner only (0600): "),
        log.get(1));
    assertTrue(log.get(1).contains("journal.mv.db (was 0666)"), log.get(1));
    assertTrue(log.get(1).contains("clock.txt (was 0644)"), log.get(1));
    assertFalse(log.get(1).contains("admin-token"), "already 0600: " + log.get(1));

    log.clear();
    DataDirectory.prepare(data, log::add);
    assertEquals(List.of(), log, "nothing left to tighten");
  }

  @Test
  void aPrivateFileIsCreatedOwnerOnly() throws Exception {
    assumePosix();
    Path file = temp.resolve("journal.mv.db");
    DataDirectory.createPrivateFile(file);
    assertEquals("rw-------", mode(file));
    assertEquals(0, Files.size(file));
  }
}
