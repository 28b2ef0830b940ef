package dev.gpushare.gpu.nvml;

import dev.gpushare.gpu.GpuBackendUnavailable;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuBackends.Mode;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import java.io.PrintStream;
import java.util.List;
import java.util.OptionalInt;

/**
 * The GPU check: discovery and telemetry through {@link NvmlBackend}, printed for people. Run on a
 * GPU machine from the bundle that {@code gpu-actors/gpu-check/build.sh} makes ({@code run.sh}).
 *
 * <p>Usage: {@code GpuCheck [samples [intervalMillis]]} (default: 1 sample; per-process SM
 * utilisation needs a second sample to cover a period). Exit status 0 when NVML works, 2 with the
 * reason on standard error when it is unavailable, 3 when a call fails after start.
 */
public final class GpuCheck {
  private GpuCheck() {}

  /** Runs the check. */
  public static void main(String[] args) throws InterruptedException {
    int samples = args.length > 0 ? Integer.parseInt(args[0]) : 1;
    long intervalMillis = args.length > 1 ? Long.parseLong(args[1]) : 1000;
    PrintStream out = System.out;
    GpuBackends.Selected selected;
    try {
      selected =
          GpuBackends.select(
              Mode.NVML,
              () -> {
                throw new IllegalStateException("the GPU check never simulates");
              },
              line -> out.println("backend: " + line));
    } catch (GpuBackendUnavailable e) {
      System.err.println("GPU check FAILED: " + e.getMessage());
      System.exit(2);
      return;
    }
    try (NvmlBackend nvml = (NvmlBackend) selected.backend()) {
      out.println("libraries: " + nvml.libraries());
      out.println(
          "driver: "
              + nvml.driverVersion()
              + nvml.cudaDriverVersion().map(v -> ", CUDA " + v).orElse(", CUDA version unknown"));
      for (String note : nvml.notes()) {
        out.println("note: " + note);
      }
      List<GpuDevice> devices = nvml.devices();
      out.println("devices: " + devices.size());
      for (GpuDevice d : devices) {
        out.printf(
            "  GPU %d  %s  %s  %,d MiB  %s%n",
            d.index(),
            d.uuid(),
            d.model(),
            d.memoryMiB(),
            nvml.healthy(d.uuid()) ? "healthy" : "UNHEALTHY");
      }
      for (int s = 1; s <= samples; s++) {
        if (s > 1) {
          Thread.sleep(intervalMillis);
        }
        out.println("sample " + s + ":");
        for (GpuSample g : nvml.sample()) {
          print(out, g);
        }
      }
      out.println("GPU check OK");
    } catch (NvmlException e) {
      System.err.println("GPU check FAILED: " + e.getMessage());
      System.exit(3);
    }
  }

  private static void print(PrintStream out, GpuSample g) {
    out.printf(
        "  GPU %d  %s  memory %,d / %,d MiB  utilisation %s  MIG %s  %s%n",
        g.index(),
        g.uuid(),
        g.memoryUsedMiB(),
        g.memoryTotalMiB(),
        percent(g.utilizationPercent()),
        g.migEnabled().map(m -> m ? "enabled" : "disabled").orElse("n/a"),
        g.health().healthy()
            ? "healthy"
            : "UNHEALTHY: " + g.health().reason().orElse("no reason given"));
    if (g.processes().isEmpty()) {
      out.println("    no compute processes");
    }
    for (GpuProcessSample p : g.processes()) {
      out.printf(
          "    pid %d  %,d MiB  SM %s%n",
          p.pid(), p.usedMemoryMiB(), percent(p.smUtilizationPercent()));
    }
  }

  private static String percent(OptionalInt value) {
    return value.isPresent() ? value.getAsInt() + "%" : "n/a";
  }
}
