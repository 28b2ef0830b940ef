package dev.gpushare.arbiter;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Who gives way when the queue head fits nowhere (SPEC §5 "Preemption"). A Running pod is a
 * candidate only when it has been Running continuously for <em>more</em> than {@code
 * podMaxDurationMinutes}. The arbiter chooses one GPU and the smallest set of candidates on it
 * whose removal lets the head fit; among sets of equal size, the one whose pods have run longest in
 * total; then the lowest device index. Victims are listed longest-running first, the order in which
 * they rejoin the queue's tail.
 */
public final class Preemption {
  private Preemption() {}

  /** Victims on one GPU, longest-running first. */
  public record Plan(int gpu, List<String> victims) {}

  /**
   * Subsets examined per GPU before the search settles for the greedy answer (longest-running first
   * until the head fits). Real GPUs hold a handful of pods, far below this bound.
   */
  static final int SEARCH_BUDGET = 200_000;

  /**
   * How long after a pod reaches {@code podMaxDurationMinutes} the arbiter looks again: a pod
   * becomes a candidate only when it has run <em>more</em> than the limit, and Kubernetes shows
   * times to the second, so one second later.
   */
  public static final Duration LOOK_AGAIN_AFTER = Duration.ofSeconds(1);

  public static boolean isCandidate(Instant runningSince, Instant now, Duration maxDuration) {
    return Duration.between(runningSince, now).compareTo(maxDuration) > 0;
  }

  /**
   * When the arbiter must look again, if ever: {@link #LOOK_AGAIN_AFTER} past the earliest moment
   * at which a Running pod reaches the limit, and after {@code now}.
   */
  public static Optional<Instant> nextCandidateAt(
      Map<String, Instant> runningSince, Instant now, Duration maxDuration) {
    return runningSince.values().stream()
        .map(since -> since.plus(maxDuration).plus(LOOK_AGAIN_AFTER))
        .filter(at -> at.isAfter(now))
        .min(Comparator.naturalOrder());
  }

  public static Optional<Plan> choose(
      List<GpuLoad> gpus,
      Map<String, Instant> runningSince,
      Share head,
      Instant now,
      Duration maxDuration) {
    Best best = null;
    for (GpuLoad gpu : gpus) {
      if (!gpu.healthy() || !head.withinWhole()) {
        continue;
      }
      Share used = gpu.used();
      int needCore = used.core() + head.core() - 100;
      int needMemory = used.memory() + head.memory() - 100;
      List<Candidate> candidates = new ArrayList<>();
      for (Map.Entry<String, Share> held : gpu.held().entrySet()) {
        Instant since = runningSince.get(held.getKey());
        if (since != null && isCandidate(since, now, maxDuration)) {
          candidates.add(
              new Candidate(
                  held.getKey(), held.getValue(), Duration.between(since, now).toNanos()));
        }
      }
      candidates.sort(
          Comparator.comparingLong(Candidate::ranNanos).reversed().thenComparing(Candidate::pod));
      Best onGpu = smallestSet(gpu.index(), candidates, needCore, needMemory);
      if (onGpu != null && (best == null || onGpu.betterThan(best))) {
        best = onGpu;
      }
    }
    return Optional.ofNullable(best).map(b -> new Plan(b.gpu, b.victims()));
  }

  private record Candidate(String pod, Share share, long ranNanos) {}

  private record Best(int gpu, List<Candidate> set, long ranNanos) {
    boolean betterThan(Best other) {
      if (set.size() != other.set.size()) {
        return set.size() < other.set.size();
      }
      if (ranNanos != other.ranNanos) {
        return ranNanos > other.ranNanos;
      }
      return gpu < other.gpu;
    }

    List<String> victims() {
      return set.stream().map(Candidate::pod).toList();
    }
  }

  private static Best smallestSet(int gpu, List<Candidate> c, int needCore, int needMemory) {
    if (needCore <= 0 && needMemory <= 0) {
      return new Best(gpu, List.of(), 0);
    }
    int totalCore = c.stream().mapToInt(x -> x.share().core()).sum();
    int totalMemory = c.stream().mapToInt(x -> x.share().memory()).sum();
    if (totalCore < needCore || totalMemory < needMemory) {
      return null;
    }
    int[] budget = {SEARCH_BUDGET};
    for (int k = 1; k <= c.size(); k++) {
      Search search = new Search(c, k, needCore, needMemory, budget);
      search.run(0, 0, 0, 0, new ArrayList<>());
      if (search.best != null) {
        return new Best(gpu, search.best, search.bestRan);
      }
      if (budget[0] <= 0) {
        return greedy(gpu, c, needCore, needMemory);
      }
    }
    return null;
  }

  private static Best greedy(int gpu, List<Candidate> c, int needCore, int needMemory) {
    List<Candidate> set = new ArrayList<>();
    int core = 0;
    int memory = 0;
    long ran = 0;
    for (Candidate x : c) {
      if (core >= needCore && memory >= needMemory) {
        break;
      }
      set.add(x);
      core += x.share().core();
      memory += x.share().memory();
      ran += x.ranNanos();
    }
    return core >= needCore && memory >= needMemory ? new Best(gpu, set, ran) : null;
  }

  /** Exhaustive search over the k-subsets, best total running time kept. */
  private static final class Search {
    private final List<Candidate> c;
    private final int k;
    private final int needCore;
    private final int needMemory;
    private final int[] budget;
    List<Candidate> best;
    long bestRan = -1;

    Search(List<Candidate> c, int k, int needCore, int needMemory, int[] budget) {
      this.c = c;
      this.k = k;
      this.needCore = needCore;
      this.needMemory = needMemory;
      this.budget = budget;
    }

    void run(int from, int core, int memory, long ran, List<Candidate> chosen) {
      if (budget[0]-- <= 0) {
        return;
      }
      if (chosen.size() == k) {
        if (core >= needCore && memory >= needMemory && ran > bestRan) {
          best = List.copyOf(chosen);
          bestRan = ran;
        }
        return;
      }
      int left = k - chosen.size();
      for (int i = from; i <= c.size() - left; i++) {
        Candidate x = c.get(i);
        chosen.add(x);
        run(
            i + 1,
            core + x.share().core(),
            memory + x.share().memory(),
            ran + x.ranNanos(),
            chosen);
        chosen.remove(chosen.size() - 1);
      }
    }
  }
}
