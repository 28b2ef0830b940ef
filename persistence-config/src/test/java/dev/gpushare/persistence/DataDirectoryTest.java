package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
}
