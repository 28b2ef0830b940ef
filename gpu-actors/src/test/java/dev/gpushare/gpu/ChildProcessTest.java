package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nothing a test started outlives it: {@link ChildProcess#killTree} ends a process and its
 * grandchildren, also on a thread that was interrupted (what a JUnit timeout does), and {@link
 * ChildProcess#run} interrupted in its wait (a test timing out) leaves nothing running.
 */
class ChildProcessTest {
  @TempDir Path dir;
  final List<Long> pids = new ArrayList<>();

  @AfterEach
  void nothingLeft() {
    for (long pid : pids) {
      ProcessHandle.of(pid).ifPresent(ChildProcess::killTree);
    }
  }

  /** A shell that starts a grandchild and waits for it; answers the shell's and its pid. */
  static List<String> shellWithGrandchild(Path pids) {
    return List.of(
        "sh",
        "-c",
        "sleep 300 & echo $$ $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; wait");
  }

  List<Long> awaitPids(Path file) throws Exception {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!Files.exists(file)) {
      assertTrue(System.nanoTime() < end, "the shell never wrote its pids");
      Thread.sleep(10);
    }
    List<Long> found = new ArrayList<>();
    for (String p : Files.readString(file).trim().split("\\s+")) {
      found.add(Long.parseLong(p));
    }
    pids.addAll(found);
    return found;
  }

  static boolean gone(long pid) {
    return ProcessHandle.of(pid).map(h -> !ChildProcess.running(h)).orElse(true);
  }

  @Test
  void killTreeEndsTheProcessAndItsGrandchildren() throws Exception {
    Path file = dir.resolve("pids");
    Process p = new ProcessBuilder(shellWithGrandchild(file)).start();
    List<Long> found = awaitPids(file);
    assertEquals(p.pid(), found.get(0));
    assertTrue(ProcessHandle.of(found.get(1)).isPresent(), "the grandchild runs");
    assertEquals(List.of(), ChildProcess.killTree(p.toHandle()));
    assertTrue(gone(found.get(0)), "the shell is gone");
    assertTrue(gone(found.get(1)), "the grandchild is gone");
  }

  @Test
  void killTreeOnAnInterruptedThreadStillEndsAllAndKeepsTheInterrupt() throws Exception {
    Path file = dir.resolve("pids");
    Process p = new ProcessBuilder(shellWithGrandchild(file)).start();
    List<Long> found = awaitPids(file);
    Thread.currentThread().interrupt();
    List<ProcessHandle> left = ChildProcess.killTree(p.toHandle());
    assertTrue(Thread.interrupted(), "the interrupt is kept");
    assertEquals(List.of(), left);
    assertTrue(gone(found.get(0)) && gone(found.get(1)), "nothing left running");
  }

  /** As a test whose JUnit timeout interrupts it while it waits for its command. */
  @Test
  void runInterruptedWhileWaitingLeavesNothingRunning() throws Exception {
    Path file = dir.resolve("pids");
    Thread[] runner = new Thread[1];
    CompletableFuture<ChildProcess.Result> result = new CompletableFuture<>();
    runner[0] =
        new Thread(
            () -> {
              try {
                result.complete(ChildProcess.run(shellWithGrandchild(file), Map.of()));
              } catch (Throwable t) {
                result.completeExceptionally(t);
              }
            },
            "a test timing out");
    runner[0].start();
    List<Long> found = awaitPids(file);
    runner[0].interrupt();
    runner[0].join(TimeUnit.SECONDS.toMillis(30));
    assertFalse(runner[0].isAlive(), "run returned");
    assertTrue(result.isCompletedExceptionally(), "run was interrupted");
    assertTrue(gone(found.get(0)), "the shell is gone");
    assertTrue(gone(found.get(1)), "the grandchild is gone");
  }
}
