package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import dev.gpushare.gpu.cuda.CheckpointDriver;
import dev.gpushare.gpu.cuda.CheckpointUnavailable;
import dev.gpushare.gpu.cuda.Checkpointer;
import dev.gpushare.gpu.cuda.CudaDriver;
import dev.gpushare.gpu.cuda.ProcessKiller;
import dev.gpushare.gpu.cuda.SimulatedCheckpointDriver;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The member's side of {@code gpushare.dev/preemption: checkpoint} (issue 16): it follows each
 * node's book as its telemetry reads it, level-triggered, so that nothing is lost across a crash of
 * either side — a pod the book says is being checkpointed is checkpointed (its CUDA processes found
 * on its GPU by their cgroup, the simulator's script in simulation) and reported; a pod the book
 * holds checkpointed and Running again is restored and reported; after a member restart, a pod the
 * book holds is found again by its pids ({@link Checkpointer#recover}) or reported lost. Every
 * refusal has a safe end: the report says why and the arbiter frees the share as the signal
 * contract does.
 *
 * <p>Blocking (driver calls wait up to the lock timeout): {@link #follow} runs on the blocking
 * executor, one round at a time per node.
 */
final class NodeCheckpoints {

  /** A report to the node's arbiter. */
  sealed interface Report permits Suspended, Restored {
    String pod();
  }

  /** On a pod being checkpointed: held ({@code pids}, {@code bytes}) or not ({@code message}). */
  record Suspended(String pod, boolean held, List<Integer> pids, long bytes, String message)
      implements Report {}

  /** On a held pod: restored ({@code reason} null) or given up. */
  record Restored(String pod, String reason) implements Report {}

  private final GpuSettings.Checkpoints settings;
  private final Clock clock;
  private final Map<String, NodeState> nodes = new ConcurrentHashMap<>();

  private record NodeState(GpuBackend backend, Checkpointer checkpointer, String unavailable) {}

  NodeCheckpoints(GpuSettings.Checkpoints settings, ArbiterClock clock) {
    this.settings = settings;
    this.clock =
        new Clock() {
          @Override
          public ZoneOffset getZone() {
            return ZoneOffset.UTC;
          }

          @Override
          public Clock withZone(java.time.ZoneId zone) {
            return this;
          }

          @Override
          public Instant instant() {
            return clock.now();
          }
        };
  }

  /** What to report for {@code node} now, after acting on its book (blocking). */
  List<Report> follow(String node, ShareBook book, List<GpuSample> samples, GpuBackend backend) {
    List<Report> reports = new ArrayList<>();
    NodeState state = stateOf(node, backend);
    Checkpointer checkpointer = state.checkpointer();
    for (Map.Entry<String, ShareBook.Member> e : book.members().entrySet()) {
      String pod = e.getKey();
      ShareBook.Checkpoint c = e.getValue().checkpoint();
      if (c == null) {
        if (checkpointer != null && checkpointer.held(pod).isPresent()) {
          // The book let it go (a report refused as late, the pod's own release): bring the
          // processes back, retrying while the GPU has no room (the Checkpointer kills them after
          // its last attempt), so that none stays checkpointed forever.
          if (!(checkpointer.resume(pod) instanceof Checkpointer.RetryAt)) {
            checkpointer.forget(pod);
          }
        }
        continue;
      }
      if (c.phase() == ShareBook.Checkpoint.Phase.SUSPENDING) {
        reports.add(suspend(node, pod, e.getValue(), c, samples, state));
      } else {
        Report r = followHeld(pod, c, book.holdings().containsKey(pod), state);
        if (r != null) {
          reports.add(r);
        }
      }
    }
    if (checkpointer != null) {
      for (Checkpointer.Held h : checkpointer.held()) {
        if (!book.members().containsKey(h.pod())) {
          checkpointer.forget(h.pod()); // deleted: its processes went with it
        }
      }
    }
    return reports;
  }

  private Report suspend(
      String node,
      String pod,
      ShareBook.Member member,
      ShareBook.Checkpoint c,
      List<GpuSample> samples,
      NodeState state) {
    Checkpointer checkpointer = state.checkpointer();
    if (checkpointer != null) {
      Optional<Checkpointer.Held> already = checkpointer.held(pod);
      if (already.isPresent()) {
        return new Suspended(pod, true, already.get().pids(), already.get().bytes(), null);
      }
    }
    if (!settings.enabled()) {
      return refused(pod, "checkpointing is off on node " + node + " (gpushare.gpu.checkpoint)");
    }
    if (checkpointer == null) {
      return refused(pod, state.unavailable());
    }
    List<Integer> pids = new ArrayList<>();
    long bytes = 0;
    for (GpuSample g : samples) {
      if (g.index() != c.gpu()) {
        continue;
      }
      for (GpuProcessSample p : g.processes()) {
        if (state.backend().podUidOf(p.pid()).map(member.key().uid()::equals).orElse(false)) {
          pids.add((int) p.pid());
          bytes += p.usedMemoryMiB() << 20;
        }
      }
    }
    if (pids.isEmpty()) {
      return refused(pod, "no CUDA process of the pod was found on GPU " + c.gpu());
    }
    long after = checkpointer.heldBytes() + bytes;
    if (after > settings.hostMemoryLimitBytes()) {
      return refused(
          pod,
          "its "
              + mib(bytes)
              + " MiB would bring the node's checkpoints to "
              + mib(after)
              + " MiB of host memory, above gpushare.gpu.checkpoint-host-memory-limit ("
              + mib(settings.hostMemoryLimitBytes())
              + " MiB)");
    }
    Checkpointer.SuspendResult r = checkpointer.suspend(pod, pids, bytes);
    if (r instanceof Checkpointer.Held h) {
      return new Suspended(pod, true, h.pids(), h.bytes(), null);
    }
    if (r instanceof Checkpointer.Failed f) {
      return refused(pod, f.reason());
    }
    return refused(pod, "none of its processes uses CUDA");
  }

  private Report followHeld(String pod, ShareBook.Checkpoint c, boolean running, NodeState state) {
    Checkpointer checkpointer = state.checkpointer();
    if (checkpointer == null) {
      return new Restored(pod, "the member can no longer checkpoint: " + state.unavailable());
    }
    if (checkpointer.held(pod).isEmpty()) {
      Checkpointer.RecoverResult r = checkpointer.recover(pod, c.pids(), c.bytes());
      if (r instanceof Checkpointer.Lost lost) {
        return new Restored(pod, lost.reason());
      }
    }
    if (!running) {
      return null; // Ready or in Hibernation: the state waits in host memory
    }
    Checkpointer.ResumeResult r = checkpointer.resume(pod);
    if (r instanceof Checkpointer.Resumed) {
      return new Restored(pod, null);
    }
    if (r instanceof Checkpointer.RetryAt) {
      return null;
    }
    if (r instanceof Checkpointer.Abandoned a) {
      return new Restored(pod, a.reason());
    }
    if (r instanceof Checkpointer.Gone g) {
      return new Restored(pod, g.reason());
    }
    return new Restored(pod, "the member holds no checkpoint of it");
  }

  private NodeState stateOf(String node, GpuBackend backend) {
    return nodes.compute(
        node,
        (n, was) -> {
          if (was != null && was.backend() == backend) {
            return was;
          }
          CheckpointDriver driver;
          String unavailable = null;
          if (backend.scriptable().isPresent()) {
            driver = new SimulatedCheckpointDriver(backend);
          } else {
            try {
              driver = CudaDriver.load();
            } catch (CheckpointUnavailable e) {
              driver = null;
              unavailable = e.getMessage();
            } catch (RuntimeException | LinkageError e) {
              driver = null;
              unavailable = "CUDA checkpoint unavailable: " + e;
            }
          }
          Checkpointer checkpointer =
              driver == null
                  ? null
                  : new Checkpointer(
                      driver,
                      ProcessKiller.forcibly(),
                      clock,
                      new Checkpointer.Settings(
                          settings.lockTimeout(),
                          Checkpointer.Settings.DEFAULTS.restoreAttempts(),
                          Checkpointer.Settings.DEFAULTS.restoreBackoff()));
          return new NodeState(backend, checkpointer, unavailable);
        });
  }

  private static Suspended refused(String pod, String why) {
    return new Suspended(pod, false, List.of(), 0, why);
  }

  private static long mib(long bytes) {
    return bytes >> 20;
  }
}
