package dev.gpushare.arbiter.bench;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PreemptionMode;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * What waiting for its own GPU costs a checkpointed pod, and the pods behind it (issue 16): the
 * CUDA 12.9 driver restores a process only on the GPU it had, so the arbiter grants a held pod that
 * GPU and no other, head-of-line. One node's book is driven through the same seeded workload twice
 * — every pod {@code signal}, then every pod {@code checkpoint} with the member reporting at once —
 * and the time pods spend Ready is compared: all pods, and the preempted ones.
 *
 * <p>Workload: 8 GPUs, preemption after 30 minutes Running; pods arrive (Poisson, one every {@code
 * gap}) with limits of 25, 50 or 100 %, each working for an exponential time (mean 60 min) in
 * total, however often it is preempted; a signalled pod loses nothing here either (the simulation
 * counts waiting, not lost work). A simulation of the decision rules, not of a cluster: run with
 * {@code main}, printed as a Markdown table; no timing is asserted anywhere.
 */
public final class CheckpointWaitSimulation {
  private CheckpointWaitSimulation() {}

  record Stats(double meanWaitMin, double p95WaitMin, double preemptedMeanWaitMin, int preempted) {}

  public static void main(String[] args) {
    System.out.println(
        "| arrival gap | pods | mode | mean Ready min | p95 Ready min | preempted |"
            + " their mean Ready min |");
    System.out.println("|---|---|---|---|---|---|---|");
    for (int gapSeconds : new int[] {600, 450, 360}) {
      for (PreemptionMode mode : PreemptionMode.values()) {
        Stats s = run(mode, gapSeconds, 2000, 7);
        System.out.printf(
            "| %d s | 2000 | %s | %.1f | %.1f | %d | %.1f |%n",
            gapSeconds,
            mode.value(),
            s.meanWaitMin(),
            s.p95WaitMin(),
            s.preempted(),
            s.preemptedMeanWaitMin());
      }
    }
  }

  static Stats run(PreemptionMode mode, int gapSeconds, int podCount, long seed) {
    Random random = new Random(seed);
    List<ShareBook.GpuSlot> gpus = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      gpus.add(new ShareBook.GpuSlot(i, "GPU-" + i, true));
    }
    ShareBook book =
        ShareBook.empty("sim")
            .withGpus(gpus)
            .withPolicy(SharePolicy.SHARE_POOL, new QosConfig(true, 30, "0"));
    Instant t0 = Instant.parse("2026-01-01T00:00:00Z");
    long[] arrive = new long[podCount];
    long[] work = new long[podCount];
    int[] limit = new int[podCount];
    long at = 0;
    for (int i = 0; i < podCount; i++) {
      at += (long) (-Math.log(1 - random.nextDouble()) * gapSeconds);
      arrive[i] = at;
      work[i] = Math.max(60, (long) (-Math.log(1 - random.nextDouble()) * 3600));
      limit[i] = new int[] {25, 50, 100}[random.nextInt(3)];
    }
    long[] worked = new long[podCount];
    long[] waited = new long[podCount];
    boolean[] preempted = new boolean[podCount];
    Map<String, Integer> index = new HashMap<>();
    int next = 0;
    int done = 0;
    long now = 0;
    long step = 10;
    while (done < podCount) {
      Instant instant = t0.plusSeconds(now);
      while (next < podCount && arrive[next] <= now) {
        PodKey key = new PodKey("default", "p" + next, "u" + next);
        book =
            book.addPod(
                key,
                PodSharing.shared(
                    SharePolicy.SHARE_POOL,
                    new Share(1, 1),
                    new Share(limit[next], limit[next]),
                    "c",
                    mode));
        book = book.enqueue(key.entityId(), instant);
        index.put(key.entityId(), next);
        next++;
      }
      for (Map.Entry<String, Integer> e : Map.copyOf(index).entrySet()) {
        String pod = e.getKey();
        int i = e.getValue();
        PodState state = book.state(pod);
        ShareBook.Checkpoint c = book.members().get(pod).checkpoint();
        if (state == PodState.RUNNING) {
          if (c != null && c.phase() == ShareBook.Checkpoint.Phase.HELD) {
            book = book.checkpointCleared(pod); // restored at once
          }
          worked[i] += step;
          if (worked[i] >= work[i]) {
            book = book.removePod(pod);
            index.remove(pod);
            done++;
          }
        } else if (state == PodState.READY) {
          waited[i] += step;
        }
      }
      for (String pod : book.suspending()) {
        preempted[index.get(pod)] = true;
        book =
            book.suspended(pod, true, List.of(1), 1 << 30, instant); // the member reports at once
      }
      ShareBook before = book;
      book = book.settle(instant);
      for (String pod : index.keySet()) {
        if (before.state(pod) == PodState.RUNNING && book.state(pod) == PodState.READY) {
          preempted[index.get(pod)] = true;
        }
      }
      now += step;
    }
    double[] minutes = Arrays.stream(waited).mapToDouble(w -> w / 60.0).sorted().toArray();
    double mean = Arrays.stream(minutes).average().orElse(0);
    double p95 = minutes[(int) Math.floor(0.95 * (minutes.length - 1))];
    int n = 0;
    double sum = 0;
    for (int i = 0; i < podCount; i++) {
      if (preempted[i]) {
        n++;
        sum += waited[i] / 60.0;
      }
    }
    return new Stats(mean, p95, n == 0 ? 0 : sum / n, n);
  }
}
