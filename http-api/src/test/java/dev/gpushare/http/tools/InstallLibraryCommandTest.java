package dev.gpushare.http.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code install-library}'s failures that the launcher's own test cannot arrange. */
class InstallLibraryCommandTest {
  @TempDir Path dir;

  private record Outcome(int status, String out, String err) {}

  private static Outcome run(String resource, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status =
        InstallLibraryCommand.run(
            List.of(args),
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8),
            resource);
    return new Outcome(
        status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void aJarBuiltWithoutACCompilerSaysSoWithStatusOne() throws IOException {
    Outcome outcome = run("dev/gpushare/native/no-such-library.so", dir.toString());
    assertEquals(1, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertEquals(
        "gpushare install-library: this jar holds no library"
            + " (dev/gpushare/native/no-such-library.so): it was built without a C compiler;"
            + " build it on a machine with gcc (gpu-actors/src/main/native/build.sh)\n",
        outcome.err());
    try (Stream<Path> files = Files.list(dir)) {
      assertEquals(0, files.count(), "nothing written");
    }
  }

  @Test
  void aDirectoryThatCannotBeWrittenIsABadArgument() throws IOException {
    Path locked = Files.createDirectory(dir.resolve("locked"));
    Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("r-xr-xr-x"));
    Path unwritable = locked;
    if (Files.isWritable(locked)) {
      // root writes anywhere; sysfs refuses new files even to root
      unwritable = Path.of("/sys/fs");
      assumeTrue(Files.isDirectory(unwritable), "no directory this user cannot write");
    }
    try {
      Outcome outcome = run(InstallLibraryCommand.RESOURCE, unwritable.toString());
      assertEquals(2, outcome.status(), outcome.err());
      assertTrue(
          outcome.err().startsWith("gpushare install-library: DIR " + unwritable + ": "),
          outcome.err());
      assertTrue(
          outcome.err().contains("not writable") || outcome.err().contains("cannot create"),
          outcome.err());
    } finally {
      Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }
}
