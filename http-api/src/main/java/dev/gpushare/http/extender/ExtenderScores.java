package dev.gpushare.http.extender;

import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.GpuLoad;
import dev.gpushare.arbiter.Placement;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.fragmentation.FragmentationMeasure;
import dev.gpushare.arbiter.fragmentation.PodSpec;
import dev.gpushare.arbiter.fragmentation.TargetWorkload;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.ShareView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/**
 * The extender's node scores (SPEC §8 "score: fragmentation-aware"), pure: {@code 0} to {@link
 * #MAX_PRIORITY} (kube-scheduler's {@code MaxExtenderPriority}), higher is better, for a sharing
 * pod on a node that passed the filter.
 *
 * <p><b>The hypothetical placement.</b> The pod lands on the GPU the arbiter itself would choose
 * ({@link GpuChoice}: {@link Placement#bestFit} by default, SPEC §5/§6; the fragmentation-aware
 * {@link Placement#leastFragmenting} with {@code gpushare.placement = least-fragmenting}): the node
 * is scored on what would really happen to it. The share a GPU holds is the pod's limits in
 * share-pool, its requests in static ({@link ExtenderFilter#need}).
 *
 * <p><b>{@link Policy#FGD} (default)</b>: Fragmentation Gradient Descent with the replay's classes
 * ({@link FragmentationMeasure} against a {@link TargetWorkload}, Weng et al., ATC'23). The measure
 * is one-dimensional (thousandths of a GPU), so each share is projected on its larger dimension: a
 * GPU holding core {@code c}%, memory {@code m}% has {@code 1000 − 10 × max(c, m)} free; a share
 * class of core {@code c}%, memory {@code m}% asks for {@code 10 × max(c, m)}. For {@code c = m}
 * (the usual share) the projection is exact; otherwise it is conservative (a class the projection
 * says fits does fit). Only healthy GPUs count. The workload is the arbiter's own: the sharing pods
 * it knows of the pod's model (their limits in share-pool, requests in static), the most popular
 * classes up to 95 % ({@link TargetWorkload.Options#PAPER}); with fewer than {@link
 * #MIN_KNOWN_PODS} such pods it is {@link #TRACE_WORKLOAD}. With {@code Δ} the fragmentation
 * increase in GPU thousandths ({@code after − before}):
 *
 * <pre>score = clamp(5 − round(Δ / 100), 0, 10)</pre>
 *
 * 5 is a placement that leaves fragmentation unchanged; each point is a tenth of a GPU less (more)
 * expected-unusable capacity; 10 (0) is a decrease (increase) of 450 thousandths or more.
 *
 * <p><b>{@link Policy#BEST_FIT} (baseline)</b>: the paper's best fit on this node's GPUs — the less
 * free capacity the node keeps after the placement, the better: with {@code left} the free core
 * plus memory percent of the healthy GPUs after the placement over {@code 200 × healthy GPUs},
 * {@code score = round(10 × (1 − left))}.
 */
public final class ExtenderScores {
  private ExtenderScores() {}

  /** kube-scheduler's {@code MaxExtenderPriority} (k8s.io/kube-scheduler/extender/v1). */
  public static final int MAX_PRIORITY = 10;

  /** Below this many known sharing pods of the model, the trace's workload is used instead. */
  public static final int MIN_KNOWN_PODS = 10;

  /** A score with fragmentation unchanged. */
  static final int NEUTRAL = 5;

  /** Thousandths of a GPU of fragmentation change per score point. */
  static final double MILLI_PER_POINT = 100;

  /** How nodes are scored: {@code ?policy=fgd} (default) or {@code ?policy=bestfit}. */
  public enum Policy {
    FGD("fgd"),
    BEST_FIT("bestfit");

    private final String key;

    Policy(String key) {
      this.key = key;
    }

    public String key() {
      return key;
    }

    public static Optional<Policy> byKey(String key) {
      String k = key.strip().toLowerCase(Locale.ROOT);
      return Arrays.stream(values()).filter(p -> p.key.equals(k)).findFirst();
    }

    public static String keys() {
      return Arrays.stream(values()).map(Policy::key).collect(Collectors.joining(", "));
    }
  }

  /**
   * The default workload, from the public Alibaba GPU trace v2023 ({@code
   * openb_pod_list_default.csv}, the replay's trace): its 6989 one-GPU pods by {@code gpu_milli},
   * the most popular classes until they cover 95 % of those pods (the paper's threshold), as
   * percent of a GPU to pod count. Whole-GPU (100 %) pods are the most common class there, which is
   * why FGD keeps whole GPUs free.
   */
  static final Map<Integer, Integer> TRACE_CLASSES = traceClasses();

  public static final TargetWorkload TRACE_WORKLOAD = traceWorkload();

  private static Map<Integer, Integer> traceClasses() {
    Map<Integer, Integer> m = new LinkedHashMap<>();
    m.put(100, 3911);
    m.put(81, 1078);
    m.put(47, 750);
    m.put(32, 328);
    m.put(65, 253);
    m.put(23, 140);
    m.put(46, 128);
    m.put(59, 75);
    return Collections.unmodifiableMap(m);
  }

  private static TargetWorkload traceWorkload() {
    Map<PodSpec, Double> weights = new LinkedHashMap<>();
    TRACE_CLASSES.forEach((percent, pods) -> weights.put(spec(percent * 10), (double) pods));
    return TargetWorkload.ofWeights(weights);
  }

  /** The workload for scoring {@code pod}: the arbiter's pods of its model, or the trace's. */
  public static TargetWorkload workload(PodSharing.Shared pod, List<PodView> known) {
    List<PodSpec> specs = new ArrayList<>();
    for (PodView p : known) {
      if (pod.policy() != p.policy()) {
        continue;
      }
      ShareView share = pod.policy().held(p.requests(), p.limits());
      if (share != null) {
        specs.add(spec(milli(share.core(), share.memory())));
      }
    }
    if (specs.size() < MIN_KNOWN_PODS) {
      return TRACE_WORKLOAD;
    }
    return TargetWorkload.of(specs, TargetWorkload.Options.PAPER);
  }

  /**
   * The score of {@code node} (which passed the filter) for {@code pod} under {@code policy};
   * {@code measure} is against {@link #workload} (unused by best fit).
   */
  public static int score(
      Policy policy, PodSharing.Shared pod, NodeView node, FragmentationMeasure measure) {
    return score(policy, GpuChoice.BEST_FIT, pod, node, List.of(), measure);
  }

  /**
   * As above, the pod landing on the GPU {@code choice} (the arbiters' setting) picks; {@code pods}
   * (any, those of other nodes are skipped) tell what each pod on the node holds, which {@link
   * GpuChoice#LEAST_FRAGMENTING} weighs pod by pod as the arbiter does.
   */
  public static int score(
      Policy policy,
      GpuChoice choice,
      PodSharing.Shared pod,
      NodeView node,
      List<PodView> pods,
      FragmentationMeasure measure) {
    Share need = ExtenderFilter.need(pod);
    List<GpuLoad> gpus = loads(node, pods);
    OptionalInt chosen = choice.choose(gpus, need);
    if (chosen.isEmpty()) {
      return 0;
    }
    if (policy == Policy.BEST_FIT) {
      return bestFit(gpus, need, chosen.getAsInt());
    }
    return fgd(gpus, need, chosen.getAsInt(), measure);
  }

  /** The FGD score; {@code gpu} is the device index the share lands on. */
  static int fgd(List<GpuLoad> gpus, Share need, int gpu, FragmentationMeasure measure) {
    double delta = fragmentationIncrease(gpus, need, gpu, measure);
    long points = Math.round(-delta / MILLI_PER_POINT);
    return (int) Math.max(0, Math.min(MAX_PRIORITY, NEUTRAL + points));
  }

  /** {@code after − before} in GPU thousandths, over the healthy GPUs. */
  static double fragmentationIncrease(
      List<GpuLoad> gpus, Share need, int gpu, FragmentationMeasure measure) {
    List<GpuLoad> healthy = gpus.stream().filter(GpuLoad::healthy).toList();
    int[] before = new int[healthy.size()];
    int[] after = new int[healthy.size()];
    for (int i = 0; i < healthy.size(); i++) {
      GpuLoad g = healthy.get(i);
      Share used = g.used();
      before[i] = freeMilli(used);
      after[i] = g.index() == gpu ? freeMilli(used.plus(need)) : before[i];
    }
    return measure.of("", 0, 0, after, after.length) - measure.of("", 0, 0, before, before.length);
  }

  /** The best-fit score; {@code gpu} is the device index the share lands on. */
  static int bestFit(List<GpuLoad> gpus, Share need, int gpu) {
    long free = 0;
    int healthy = 0;
    for (GpuLoad g : gpus) {
      if (!g.healthy()) {
        continue;
      }
      healthy++;
      Share used = g.index() == gpu ? g.used().plus(need) : g.used();
      free += Math.max(0, 100 - used.core()) + Math.max(0, 100 - used.memory());
    }
    if (healthy == 0) {
      return 0;
    }
    double left = free / (200.0 * healthy);
    return (int) Math.max(0, Math.min(MAX_PRIORITY, Math.round(MAX_PRIORITY * (1 - left))));
  }

  /** Free thousandths of a GPU holding {@code used}, on its fuller dimension. */
  static int freeMilli(Share used) {
    return Math.max(0, PodSpec.MILLI - milli(used.core(), used.memory()));
  }

  /** A share of core/memory percent as thousandths of a GPU, on its larger dimension. */
  static int milli(int core, int memory) {
    return Math.max(0, Math.min(PodSpec.MILLI, 10 * Math.max(core, memory)));
  }

  /**
   * The node's GPUs with what each Running pod of {@code pods} on them holds (share-pool: limits;
   * static: requests), as the arbiter's book has it; whatever of a GPU's use no listed pod accounts
   * for is one more holding, so the totals are the node's own.
   */
  static List<GpuLoad> loads(NodeView node, List<PodView> pods) {
    Map<Integer, Map<String, Share>> held = new HashMap<>();
    for (PodView p : pods) {
      if (!node.name().equals(p.node()) || p.gpu() == null || p.state() != PodState.RUNNING) {
        continue;
      }
      var share =
          (p.policy() == null ? SharePolicy.SHARE_POOL : p.policy()).held(p.requests(), p.limits());
      if (share != null) {
        held.computeIfAbsent(p.gpu().index(), i -> new LinkedHashMap<>())
            .put(p.namespace() + "/" + p.name(), new Share(share.core(), share.memory()));
      }
    }
    List<GpuLoad> out = new ArrayList<>();
    for (GpuLoad total : loads(node)) {
      Map<String, Share> shares = new LinkedHashMap<>(held.getOrDefault(total.index(), Map.of()));
      Share listed = shares.values().stream().reduce(Share.NONE, Share::plus);
      Share used = total.used();
      if (listed.core() > used.core() || listed.memory() > used.memory()) {
        // The pod list is older or newer than the node's view: trust the node's totals.
        shares = Map.of("held", used);
      } else if (!listed.equals(used)) {
        shares.put("held", new Share(used.core() - listed.core(), used.memory() - listed.memory()));
      }
      out.add(new GpuLoad(total.index(), total.healthy(), shares));
    }
    return out;
  }

  /** The GPUs of {@code node} as placement sees them: each GPU's use as one holding. */
  static List<GpuLoad> loads(NodeView node) {
    List<GpuLoad> out = new ArrayList<>();
    for (GpuView gpu : node.gpus() == null ? List.<GpuView>of() : node.gpus()) {
      out.add(
          new GpuLoad(
              gpu.index(), ExtenderFilter.healthy(gpu), Map.of("held", ExtenderFilter.used(gpu))));
    }
    return out;
  }

  private static PodSpec spec(int milli) {
    return PodSpec.of(0, 0, 1, Math.max(1, milli));
  }
}
