package dev.gpushare.e2e;

import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the launcher makes of its {@code --data} directory: the owner's alone (0700, every file
 * 0600) whatever the umask or the modes found there.
 */
class DataDirectoryTest {

  @TempDir Path temp;

  @Test
  void underUmask000TheDirectoryAndEveryFileInItAreTheOwnersAlone() throws Exception {
    assumeTrue(
        Files.getFileAttributeView(temp, PosixFileAttributeView.class) != null,
        "the file system of " + temp + " has no POSIX permissions");
    Path data = temp.resolve("data");
    ServerProcess server = ServerProcess.startWithUmask("DataDirectoryTest-umask", data, "000");
    try {
      server.api().createPod(sharePod("a", "node-1", 10, 100));
      server.api().advance(60); // clock.txt written again
      List<String> files = assertOwnerOnly(data);
      assertTrue(
          files.containsAll(List.of("admin-token", "clock.txt", "journal.mv.db")),
          files.toString());
      assertFalse(files.contains("journal.trace.db"), "H2 writes no trace file: " + files);

      // What umask 000 made of them in earlier versions (or a careless copy): loose modes.
      server.stop();
      Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxrwxrwx"));
      for (String file : files) {
        Files.setPosixFilePermissions(
            data.resolve(file), PosixFilePermissions.fromString("rw-rw-rw-"));
      }
      server.restart();
      assertEquals("Hibernation", server.api().pod("a").path("state").asText());
      assertEquals(files, assertOwnerOnly(data));
      String log = Files.readString(server.logFile());
      assertTrue(
          log.contains("--data " + data + ": mode 0777 let other users in; set to 0700"), log);
      assertTrue(
          log.contains("--data " + data + ": files made readable by their owner only (0600): "),
          log);
      assertTrue(log.contains("journal.mv.db (was 0666)"), log);
    } finally {
      server.stop();
    }
  }

  /** Asserts 0700 on {@code dir} and 0600 on each file in it; answers the files' names. */
  private static List<String> assertOwnerOnly(Path dir) throws IOException {
    assertEquals(
        "rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)),
        "mode of " + dir);
    List<String> names = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path file : files) {
        if (Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
          assertEquals(
              "rw-------",
              PosixFilePermissions.toString(
                  Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS)),
              "mode of " + file);
          names.add(file.getFileName().toString());
        }
      }
    }
    names.sort(null);
    return names;
  }
}
