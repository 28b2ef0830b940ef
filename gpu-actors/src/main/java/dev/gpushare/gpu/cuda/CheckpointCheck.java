package dev.gpushare.gpu.cuda;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The checkpoint check: the member's own {@link Checkpointer} over the real {@link CudaDriver},
 * against running processes, printed for people. The GPU check script runs it against a small CUDA
 * program ({@code gpu-check/checkpoint/}); the fake-driver test runs it against a fake {@code
 * libcuda.so.1}.
 *
 * <p>Usage: {@code CheckpointCheck PID[,PID...] [--bytes N] [--lock-timeout-ms N] [--hold-ms N]
 * [--between COMMAND] [--restore-attempts N] [--restore-backoff-ms N]}. It checkpoints the
 * processes (lock, checkpoint), runs {@code COMMAND} with {@code sh -c} (to look at the GPU while
 * the state is in host memory), waits {@code --hold-ms}, then restores and unlocks them, retrying
 * as the member does. Exit status 0 when both steps succeed, 2 when the checkpoint API is
 * unavailable (the reason on standard error), 3 when a step fails.
 */
public final class CheckpointCheck {
  private CheckpointCheck() {}

  public static void main(String[] args) throws Exception {
    System.exit(run(args, System.out, System.err));
  }

  static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
    if (args.length == 0) {
      err.println(
          "usage: CheckpointCheck PID[,PID...] [--bytes N] [--lock-timeout-ms N] [--hold-ms N]"
              + " [--between COMMAND] [--restore-attempts N] [--restore-backoff-ms N]");
      return 1;
    }
    List<Integer> pids = new ArrayList<>();
    for (String p : args[0].split(",")) {
      pids.add(Integer.parseInt(p.strip()));
    }
    long bytes = 0;
    long lockMs = 10_000;
    long holdMs = 0;
    String between = null;
    int attempts = 5;
    long backoffMs = 1_000;
    for (int i = 1; i + 1 < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--bytes" -> bytes = Long.parseLong(value);
        case "--lock-timeout-ms" -> lockMs = Long.parseLong(value);
        case "--hold-ms" -> holdMs = Long.parseLong(value);
        case "--between" -> between = value;
        case "--restore-attempts" -> attempts = Integer.parseInt(value);
        case "--restore-backoff-ms" -> backoffMs = Long.parseLong(value);
        default -> {
          err.println("unknown option " + args[i]);
          return 1;
        }
      }
    }
    CudaDriver driver;
    try {
      driver = CudaDriver.load();
    } catch (CheckpointUnavailable e) {
      err.println("checkpoint check FAILED: " + e.getMessage());
      return 2;
    }
    out.println("using " + driver.describe());
    Checkpointer checkpointer =
        new Checkpointer(
            driver,
            ProcessKiller.forcibly(),
            Clock.systemUTC(),
            new Checkpointer.Settings(
                Duration.ofMillis(lockMs), attempts, Duration.ofMillis(backoffMs)));
    states(driver, pids, out);

    long started = System.nanoTime();
    Checkpointer.SuspendResult suspended = checkpointer.suspend("check", pids, bytes);
    long suspendNanos = System.nanoTime() - started;
    out.printf("suspend: %s in %.1f ms%n", suspended, suspendNanos / 1e6);
    if (!(suspended instanceof Checkpointer.Held)) {
      err.println("checkpoint check FAILED: " + suspended);
      return 3;
    }
    states(driver, pids, out);
    if (between != null) {
      runBetween(between, out);
    }
    if (holdMs > 0) {
      Thread.sleep(holdMs);
    }

    started = System.nanoTime();
    Checkpointer.ResumeResult resumed = checkpointer.resume("check");
    int said = 0;
    while (resumed instanceof Checkpointer.RetryAt retry) {
      if (retry.attempt() != said) {
        out.println("resume: " + retry);
        said = retry.attempt();
      }
      Thread.sleep(Math.max(1, Duration.between(Instant.now(), retry.when()).toMillis() + 1));
      resumed = checkpointer.resume("check");
    }
    long resumeNanos = System.nanoTime() - started;
    out.printf("resume: %s in %.1f ms%n", resumed, resumeNanos / 1e6);
    states(driver, pids, out);
    if (!(resumed instanceof Checkpointer.Resumed)) {
      err.println("checkpoint check FAILED: " + resumed);
      return 3;
    }
    if (bytes > 0) {
      double gib = bytes / (double) (1L << 30);
      out.printf(
          "per GiB: checkpoint %.1f ms, restore %.1f ms (%.2f GiB)%n",
          suspendNanos / 1e6 / gib, resumeNanos / 1e6 / gib, gib);
    }
    out.println("checkpoint check OK");
    return 0;
  }

  private static void states(CheckpointDriver driver, List<Integer> pids, PrintStream out) {
    for (int pid : pids) {
      String state;
      try {
        state = driver.state(pid).toString();
      } catch (CudaException e) {
        state = e.getMessage();
      }
      out.println("pid " + pid + ": " + state);
    }
  }

  private static void runBetween(String command, PrintStream out)
      throws IOException, InterruptedException {
    Process p = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    int rc = p.waitFor();
    out.print(output.lines().map(l -> "between: " + l + "\n").reduce("", String::concat));
    out.println("between: exit " + rc);
  }
}
