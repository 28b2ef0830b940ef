package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.gpu.NoNvidiaDriver;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code gpushare.gpu.backend = auto} on a machine without the NVIDIA driver: the launcher starts
 * on the simulated backend and says so in one log line. Run as a child JVM (the server keeps its
 * actor system alive, which must not outlive the test), stopped with SIGTERM.
 */
class MainGpuBackendTest {
  @TempDir Path dir;

  @Test
  @Timeout(180)
  void autoFallsBackToTheSimulatedBackendAndStarts() throws Exception {
    NoNvidiaDriver.assume();
    Path conf = dir.resolve("auto.conf");
    Files.writeString(conf, "gpushare.gpu.backend = auto\n");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    // Under surefire java.class.path may be a manifest-only booter jar, which -cp takes as well.
    command.add(
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    String cache = System.getProperty("org.bytedeco.javacpp.cachedir");
    if (cache != null) {
      command.add("-Dorg.bytedeco.javacpp.cachedir=" + cache);
    }
    command.addAll(
        List.of(
            "dev.gpushare.http.Main",
            "--port",
            "0",
            "--data",
            dir.resolve("data").toString(),
            "--config",
            conf.toString()));
    Process process = new ProcessBuilder(command).start();
    StringBuffer err = new StringBuffer();
    CompletableFuture<Void> errDrained = CompletableFuture.runAsync(() -> drain(process, err));
    try (BufferedReader out =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String first = out.readLine();
      assertTrue(
          first != null && first.startsWith("gpushare listening on http://127.0.0.1:"),
          "the ready line, got " + first + "; stderr:\n" + err);
    } finally {
      process.destroy();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
      errDrained.get(10, TimeUnit.SECONDS);
    }
    String log = err.toString();
    assertTrue(
        log.contains("gpu.backend=auto: NVML unavailable (libnvidia-ml.so.1")
            && log.contains("using the simulated backend"),
        "the one line that says why: " + log);
    assertEquals(
        1, log.lines().filter(l -> l.contains("gpu.backend=auto")).count(), "one line: " + log);
  }

  private static void drain(Process process, StringBuffer into) {
    try (BufferedReader err =
        new BufferedReader(
            new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
      for (String line = err.readLine(); line != null; line = err.readLine()) {
        into.append(line).append('\n');
      }
    } catch (IOException e) {
      into.append("(stderr: ").append(e).append(")\n");
    }
  }
}
