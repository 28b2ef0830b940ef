package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.http.tools.InstallLibraryCommand;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code java -jar gpushare.jar install-library DIR}, run through the launcher's entry as the
 * webhook's init container runs it: the library the jar holds lands in {@code DIR} whole, {@code
 * 0755}, with one line saying so; bad arguments are refused naming them.
 */
class InstallLibraryTest {
  @TempDir Path dir;

  private record Outcome(int status, String out, String err) {}

  private static Outcome run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status =
        Main.launch(
            args,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Outcome(
        status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  /** The library as the jar on the class path holds it (gpu-actors' build of it). */
  private static byte[] shipped() throws IOException {
    try (InputStream in =
        InstallLibraryTest.class
            .getClassLoader()
            .getResourceAsStream(InstallLibraryCommand.RESOURCE)) {
      assumeTrue(in != null, "gpu-actors was built without a C compiler: no library to install");
      return in.readAllBytes();
    }
  }

  private static void assertRefused(Outcome outcome, String expected) {
    assertEquals(2, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(outcome.err().startsWith("gpushare install-library: " + expected), outcome.err());
    assertTrue(
        outcome.err().contains("run `java -jar gpushare.jar install-library --help`"),
        outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void theLibraryIsCopiedWholeExecutableAndNamed() throws Exception {
    byte[] expected = shipped();
    assertTrue(expected.length > 10_000, "a real library: " + expected.length + " bytes");
    assertArrayEquals(
        new byte[] {0x7f, 'E', 'L', 'F'},
        java.util.Arrays.copyOf(expected, 4),
        "an ELF shared object");
    Outcome outcome = run("install-library", dir.toString());
    assertEquals(0, outcome.status(), outcome.err());
    assertEquals("", outcome.err());
    Path installed = dir.resolve("libgpushare.so");
    String sha256 = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(expected));
    assertEquals(
        "installed " + installed + " (" + expected.length + " bytes, sha256 " + sha256 + ")\n",
        outcome.out());
    assertArrayEquals(expected, Files.readAllBytes(installed));
    assertEquals(
        "rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(installed)));
    try (Stream<Path> files = Files.list(dir)) {
      assertEquals(1, files.count(), "no temporary file is left");
    }
  }

  @Test
  void aSecondRunReplacesTheCopyWhole() throws Exception {
    byte[] expected = shipped();
    Path installed = dir.resolve("libgpushare.so");
    Files.writeString(installed, "an older, shorter library");
    Files.setPosixFilePermissions(installed, PosixFilePermissions.fromString("rw-------"));
    Outcome outcome = run("install-library", dir.toString());
    assertEquals(0, outcome.status(), outcome.err());
    assertArrayEquals(expected, Files.readAllBytes(installed));
    assertEquals(
        "rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(installed)));
    assertEquals(0, run("install-library", dir.toString()).status(), "and again");
  }

  @Test
  void badArgumentsAreRefusedNamingThem() throws Exception {
    assertRefused(run("install-library"), "missing DIR");
    assertRefused(run("install-library", dir.toString(), "extra"), "unexpected argument 'extra'");
    assertRefused(run("install-library", dir.toString(), "--force"), "unknown flag '--force'");
    Path missing = dir.resolve("missing");
    assertRefused(
        run("install-library", missing.toString()),
        "DIR " + missing + ": no such directory; it must exist (it is not created)");
    assertFalse(Files.exists(missing), "not created");
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    assertRefused(run("install-library", file.toString()), "DIR " + file + ": not a directory");
    assertRefused(run("install-library", " "), "DIR ' ': not a valid path");
  }

  @Test
  void itHasItsHelpAndTheLaunchersUsageNamesIt() {
    Outcome help = run("install-library", "--help");
    assertEquals(0, help.status());
    assertTrue(help.out().startsWith("Usage: java -jar gpushare.jar install-library DIR"));
    assertTrue(LauncherOptions.usage().contains("java -jar gpushare.jar install-library DIR"));
  }
}
