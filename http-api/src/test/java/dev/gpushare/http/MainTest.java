package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.NoNvidiaDriver;
import dev.gpushare.http.launch.ExitStatus;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The launcher's refusals: status 2, one clear message on stderr, nothing on stdout. */
class MainTest {
  @TempDir Path dir;

  private record Outcome(int status, String out, String err) {}

  private static Outcome launch(String... args) {
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

  private static void assertRefused(Outcome outcome, String expected) {
    assertEquals(2, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(outcome.err().startsWith("gpushare: " + expected), outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void helpPrintsUsageAndExitsZero() {
    Outcome outcome = launch("--help");
    assertEquals(0, outcome.status());
    assertTrue(outcome.out().startsWith("Usage: java -jar gpushare.jar"), outcome.out());
    assertEquals("", outcome.err());
  }

  @Test
  void aBadFlagIsRefused() {
    assertRefused(launch("--port", "http"), "--port: 'http' given");
    assertRefused(launch("--verbose"), "unknown flag '--verbose'");
    assertRefused(launch("--clock", "slow"), "--clock: 'slow' given");
    assertRefused(launch("--data"), "--data: missing value");
  }

  @Test
  void anUnreadableConfigIsRefused() {
    assertRefused(
        launch("--config", dir.resolve("none.conf").toString(), "--data", dir.toString()),
        "--config " + dir.resolve("none.conf"));
  }

  @Test
  void anInvalidConfigIsRefusedBeforeTheDataDirectoryIsCreated() throws Exception {
    Path conf = dir.resolve("bad.conf");
    Files.writeString(conf, "gpushare.ask-timeout = never\n");
    Path data = dir.resolve("data");
    Outcome outcome = launch("--config", conf.toString(), "--data", data.toString());
    assertRefused(outcome, "invalid configuration (1 error):");
    assertTrue(outcome.err().contains("gpushare.ask-timeout: 'never' given"), outcome.err());
    assertFalse(Files.exists(data));
  }

  @Test
  void anUnusableDataDirectoryIsRefused() throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "x");
    assertRefused(launch("--data", file.toString()), "--data " + file);
  }

  @Test
  void aCorruptClockFileIsRefusedWithAManualClock() throws Exception {
    Files.writeString(dir.resolve("clock.txt"), "noon");
    assertRefused(
        launch("--data", dir.toString(), "--clock", "manual"), dir.resolve("clock.txt").toString());
  }

  @Test
  void aBadGpuValueIsRefusedNamingTheKey() throws Exception {
    Path conf = dir.resolve("gpu.conf");
    Files.writeString(conf, "gpushare.gpu.backend = cuda\n");
    Path data = dir.resolve("data");
    Outcome outcome = launch("--config", conf.toString(), "--data", data.toString());
    assertRefused(outcome, "invalid configuration (1 error):");
    assertTrue(outcome.err().contains("gpushare.gpu.backend: 'cuda' given"), outcome.err());
    assertTrue(outcome.err().contains("auto | nvml | simulated"), outcome.err());
    assertFalse(Files.exists(data));
  }

  @Test
  void nvmlWithoutTheDriverStopsTheLauncherNamingTheLibrary() throws Exception {
    NoNvidiaDriver.assume();
    Path conf = dir.resolve("nvml.conf");
    Files.writeString(conf, "gpushare.gpu.backend = nvml\ngpushare.nodes = []\n");
    Outcome outcome =
        launch(
            "--config", conf.toString(), "--data", dir.resolve("data").toString(), "--port", "0");
    assertEquals(ExitStatus.FAILED, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(
        outcome
            .err()
            .startsWith("gpushare: startup failed: gpushare.gpu.backend=nvml: NVML unavailable: "),
        outcome.err());
    assertTrue(outcome.err().contains("libnvidia-ml.so.1"), outcome.err());
    assertTrue(outcome.err().contains("simulated"), "says what else to do: " + outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void aWebhookThatInjectsNeedsTheDataPlaneSocket() throws Exception {
    Path data = dir.resolve("data");
    Outcome outcome =
        launch(
            "--data",
            data.toString(),
            "--webhook-port",
            "8443",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem");
    assertRefused(outcome, "gpushare.pod-side.socket: off, with --webhook-port 8443");
    assertTrue(
        outcome.err().contains("set gpushare.pod-side.socket to the socket's absolute path"),
        outcome.err());
    assertTrue(outcome.err().contains("or gpushare.pod-side.inject = off"), outcome.err());
    assertFalse(Files.exists(data), "refused before anything is created");

    Path conf =
        Files.writeString(dir.resolve("no-inject.conf"), "gpushare.pod-side.inject = off\n");
    Outcome noInject =
        launch(
            "--config",
            conf.toString(),
            "--data",
            data.toString(),
            "--webhook-port",
            "8443",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem");
    assertRefused(noInject, "--tls-cert c.pem");
  }

  @Test
  void theSocketsDirectoryMustExistAndThePathHoldNoOtherFile() throws Exception {
    Path data = dir.resolve("data");
    Path missing = dir.resolve("no-such-dir");
    Path conf = dir.resolve("socket.conf");
    Files.writeString(
        conf, "gpushare.pod-side.socket = \"" + missing.resolve("gpushare.sock") + "\"\n");
    Outcome outcome = launch("--config", conf.toString(), "--data", data.toString());
    assertRefused(
        outcome,
        "gpushare.pod-side.socket: the socket's directory " + missing + " does not exist; create");
    assertFalse(Files.exists(missing), "not created");

    Path file = Files.writeString(dir.resolve("gpushare.sock"), "not a socket");
    Files.writeString(conf, "gpushare.pod-side.socket = \"" + file + "\"\n");
    assertRefused(
        launch("--config", conf.toString(), "--data", data.toString()),
        "gpushare.pod-side.socket: " + file + " exists and is not a socket");
    assertEquals("not a socket", Files.readString(file));
    assertFalse(Files.exists(data), "refused before anything is created");
  }

  @Test
  void ipv6HostsAreBracketedInTheUrl() {
    assertEquals("[::1]", Main.urlHost("::1"));
    assertEquals("127.0.0.1", Main.urlHost("127.0.0.1"));
  }

  private static void assertLostJournalRefused(Outcome outcome, Path data, String state) {
    assertEquals(ExitStatus.FAILED, outcome.status(), outcome.err());
    assertEquals("", outcome.out());
    assertTrue(
        outcome
            .err()
            .startsWith(
                "gpushare: --data "
                    + data
                    + ": the journal "
                    + data.resolve("journal.mv.db")
                    + " "
                    + state
                    + ", but "
                    + data.resolve("admin-token")
                    + " shows that this directory has served before;"),
        outcome.err());
    assertTrue(
        outcome
            .err()
            .contains(
                "Restore journal.mv.db (e.g. from a backup, with the server stopped),"
                    + " or start once with --fresh-start to begin anew on purpose"),
        outcome.err());
    assertFalse(outcome.err().contains("\tat "), "no stack trace: " + outcome.err());
  }

  @Test
  void aDataDirectoryThatServedBeforeIsRefusedWithoutItsJournal() throws Exception {
    Path data = Files.createDirectory(dir.resolve("served"));
    Files.writeString(data.resolve("admin-token"), "t\n");
    assertLostJournalRefused(launch("--data", data.toString()), data, "is missing");
    assertFalse(Files.exists(data.resolve("journal.mv.db")), "a refused start creates nothing");
    Files.createFile(data.resolve("journal.mv.db"));
    assertLostJournalRefused(launch("--data", data.toString()), data, "is empty (0 bytes)");
  }

  @Test
  void aFirstStartMakesTheJournalFileTheOwnersAlone() throws Exception {
    Path data = Files.createDirectory(dir.resolve("first"));
    Main.checkJournalFile(data, false);
    assertEquals(0, Files.size(data.resolve("journal.mv.db")));
    if (Files.getFileAttributeView(data, java.nio.file.attribute.PosixFileAttributeView.class)
        != null) {
      assertEquals(
          "rw-------",
          java.nio.file.attribute.PosixFilePermissions.toString(
              Files.getPosixFilePermissions(data.resolve("journal.mv.db"))));
    }
    Main.checkJournalFile(data, false); // an empty journal without a token: still a first start
  }
}
