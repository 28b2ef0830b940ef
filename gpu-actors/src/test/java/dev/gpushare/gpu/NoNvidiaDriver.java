package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** For tests of the no-driver path: skips them where an NVIDIA driver is installed. */
public final class NoNvidiaDriver {
  private NoNvidiaDriver() {}

  /** Skips the calling test when {@code libnvidia-ml.so.1} can be found on this machine. */
  public static void assume() {
    for (String dir :
        List.of(
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/nvidia/lib64",
            "/usr/local/cuda/lib64",
            "/usr/local/cuda-12.9/lib64")) {
      assumeFalse(
          Files.exists(Path.of(dir, "libnvidia-ml.so.1")), "an NVIDIA driver is installed: " + dir);
    }
    for (String dir : System.getenv().getOrDefault("LD_LIBRARY_PATH", "").split(":")) {
      assumeFalse(
          !dir.isEmpty() && Files.exists(Path.of(dir, "libnvidia-ml.so.1")),
          "libnvidia-ml.so.1 on LD_LIBRARY_PATH: " + dir);
    }
    assumeFalse(ldconfigKnowsNvml(), "ldconfig knows libnvidia-ml.so.1");
  }

  private static boolean ldconfigKnowsNvml() {
    for (String ldconfig : List.of("/sbin/ldconfig", "/usr/sbin/ldconfig")) {
      if (!Files.isExecutable(Path.of(ldconfig))) {
        continue;
      }
      try {
        Process p = new ProcessBuilder(ldconfig, "-p").redirectErrorStream(true).start();
        try {
          String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
          p.waitFor(10, TimeUnit.SECONDS);
          return out.contains("libnvidia-ml.so.1");
        } finally {
          p.destroyForcibly();
        }
      } catch (IOException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }
}
