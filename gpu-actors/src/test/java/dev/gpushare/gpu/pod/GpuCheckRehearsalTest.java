package dev.gpushare.gpu.pod;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gpushare.gpu.ChildProcess;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The pod-side GPU check ({@code gpu-check/pod-side/run.sh}) in its rehearsal on the fake drivers
 * (gpu-check/README.md, "The pod side"), so that the script a GPU machine runs keeps working
 * between the sessions that are lent one: the stand-in data plane, the grant, the view, the limit,
 * the checkpoint and the wake, the compute limit with kernels and with CUDA graphs, the driver's
 * entry points, a PID 1 preempted; each step's {@code OK} line.
 */
class GpuCheckRehearsalTest {

  @Test
  void theGpuCheckPassesItsRehearsalOnTheFakeDrivers() throws Exception {
    assumeTrue(NativeBuild.hasCompiler(), "no C compiler");
    assumeTrue(onPath("python3"), "no python3 (the check's stand-in data plane)");
    Path root = NativeBuild.module().getParent();
    Path log = Files.createTempFile("gpu-check-rehearsal", ".log");
    try {
      ProcessBuilder pb =
          new ProcessBuilder("bash", "gpu-actors/gpu-check/pod-side/run.sh", "--rehearse")
              .directory(root.toFile())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile());
      pb.environment().keySet().removeIf(k -> k.startsWith("LD_") || k.startsWith("GPUSHARE_"));
      Process p = pb.start();
      boolean ended = false;
      try {
        ended = p.waitFor(200, TimeUnit.SECONDS); // the script's own watchdog is 170 s
      } finally {
        // the script's processes too (its data plane, its workloads), on every path
        ChildProcess.killTree(p.toHandle());
      }
      String out = Files.readString(log, StandardCharsets.UTF_8);
      assertTrue(ended, "the rehearsal did not end:\n" + out);
      assertEquals(0, p.exitValue(), out);
      for (String step :
          new String[] {
            "OK   1 grant",
            "OK   2 view",
            "OK   3 memory",
            "OK   4 wake",
            "OK   5 compute",
            "OK   6 graphs",
            "OK   7 entry points"
          }) {
        assertTrue(out.contains(step), step + ":\n" + out);
      }
      // PID 1 needs a user namespace: where unshare may not make one, the script says SKIP
      assertTrue(
          out.contains("OK   8 pid 1")
              || (out.contains("SKIP 8 pid 1") && PodProcess.pid1Problem() != null),
          "8 pid 1:\n" + out);
      assertTrue(out.contains("pod-side check: all OK"), out);
    } finally {
      Files.deleteIfExists(log);
    }
  }

  private static boolean onPath(String command) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (Files.isExecutable(Path.of(dir, command))) {
        return true;
      }
    }
    return false;
  }
}
