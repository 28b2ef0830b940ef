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
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the launcher makes of its {@code --data} directory: the owner's alone (0700, every file
 * 0600) whatever the umask or the modes found there, and a directory that served before is not
 * taken for a new cluster when its journal is gone ({@code --fresh-start} says so on purpose).
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

  @Test
  void aDirectoryThatServedBeforeDoesNotStartWithoutItsJournalUnlessToldFreshStart()
      throws Exception {
    Path data = temp.resolve("data");
    Path journal = data.resolve("journal.mv.db");
    ServerProcess server = ServerProcess.start("DataDirectoryTest-lost", data);
    server.api().createPod(sharePod("kept", "node-1", 10, 100));
    server.stop();

    Files.delete(journal);
    CommandProcess.Result deleted = launch(data);
    assertEquals(1, deleted.status(), deleted.toString());
    assertEquals("", deleted.out(), deleted.toString());
    assertTrue(
        deleted
            .err()
            .startsWith(
                "gpushare: --data "
                    + data
                    + ": the journal "
                    + journal
                    + " is missing, but "
                    + data.resolve("admin-token")
                    + " shows that this directory has served before"),
        deleted.toString());
    assertTrue(deleted.err().contains("or start once with --fresh-start"), deleted.toString());
    assertFalse(Files.exists(journal), "a refused start creates no journal");

    Files.createFile(journal);
    CommandProcess.Result empty = launch(data);
    assertEquals(1, empty.status(), empty.toString());
    assertTrue(
        empty.err().contains("the journal " + journal + " is empty (0 bytes)"), empty.toString());

    server = ServerProcess.start("DataDirectoryTest-fresh", data, "--fresh-start");
    try {
      Api.problem(server.api().get(Api.podPath("kept")), 404); // a new cluster, on purpose
      server.api().createPod(sharePod("new", "node-1", 10, 100));
      assertTrue(
          Files.readString(server.logFile()).contains("--fresh-start: the journal " + journal),
          "the log says it started anew");
      server.stop();
      server = ServerProcess.start("DataDirectoryTest-after", data); // no flag needed now
      assertEquals("Hibernation", server.api().pod("new").path("state").asText());
    } finally {
      server.stop();
    }
  }

  private static CommandProcess.Result launch(Path data) {
    return CommandProcess.run(
        Map.of(), "--port", "0", "--data", data.toString(), "--clock", "manual");
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
