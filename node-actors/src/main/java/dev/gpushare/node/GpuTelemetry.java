package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.arbiter.UsageRules.PodUsage;
import dev.gpushare.arbiter.UsageRules.Verdict;
import dev.gpushare.arbiter.UsageRules.Watch;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuProcessSample;
import dev.gpushare.gpu.GpuSample;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Samples the GPUs this member sees ({@link LocalGpus}) every telemetry interval and puts the
 * samples to work (ISSUE 5 point 4, the rules in {@link UsageRules}): each Running pod's memory and
 * utilisation go to every member's views, a pod idle past the node's idle-release time is asked to
 * hibernate and then released, and a pod over its memory limit has its share revoked. Decisions go
 * through the node's arbiter like any release, so they are journaled and visible; samples are not
 * journaled.
 *
 * <p>Sampling is blocking (NVML calls into the driver) and runs on the dedicated blocking executor;
 * one round at a time, a tick that finds a round still running is skipped. What the rules remember
 * (since when a pod is idle) lives here, per member: after a fail-over or a restart a pod's idle
 * time counts again from the member's start, never from before it.
 */
final class GpuTelemetry {
  private GpuTelemetry() {}

  interface Msg {}

  private enum Tick implements Msg {
    INSTANCE
  }

  /** Stops sampling (coordinated shutdown, before the shard regions stop). */
  enum Stop implements Msg {
    INSTANCE
  }

  /** One round's samples, per node. */
  private record Sampled(List<NodeSample> nodes, Throwable failure) implements Msg {}

  /** One node's sample with what its arbiter held when it was taken. */
  record NodeSample(
      String node, GpuBackend backend, List<GpuSample> samples, NodeArbiter.BookView book) {}

  static Behavior<Msg> create(
      TelemetryPort service, GpuSettings settings, ArbiterClock clock, Executor blocking) {
    return Behaviors.setup(
        ctx ->
            Behaviors.withTimers(
                timers -> {
                  timers.startTimerWithFixedDelay(Tick.INSTANCE, settings.telemetryInterval());
                  return new GpuTelemetry.State(ctx, service, settings, clock, blocking).idle();
                }));
  }

  private static final class State {
    private final ActorContext<Msg> ctx;
    private final TelemetryPort service;
    private final GpuSettings settings;
    private final ArbiterClock clock;
    private final Executor blocking;
    private final Instant startedAt;
    private final NodeCheckpoints checkpoints;

    /** Per node, per pod (entity id): the rules' memory, and the grant it belongs to. */
    private final Map<String, Map<String, Watched>> watches = new HashMap<>();

    private record Watched(Instant grantedAt, Watch watch) {}

    /**
     * Per node, the ungranted use seen (key: pod entity id and GPU index): since when without a
     * break, and whether it was told (the Event of its episode).
     */
    private final Map<String, Map<String, Ungranted>> ungranted = new HashMap<>();

    private record Ungranted(Instant since, boolean told) {}

    State(
        ActorContext<Msg> ctx,
        TelemetryPort service,
        GpuSettings settings,
        ArbiterClock clock,
        Executor blocking) {
      this.ctx = ctx;
      this.service = service;
      this.settings = settings;
      this.clock = clock;
      this.blocking = blocking;
      this.startedAt = clock.now();
      this.checkpoints = new NodeCheckpoints(settings.checkpoints(), clock);
    }

    Behavior<Msg> idle() {
      return Behaviors.receive(Msg.class)
          .onMessageEquals(Tick.INSTANCE, this::round)
          .onMessage(Sampled.class, s -> idle())
          .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
          .build();
    }

    private Behavior<Msg> sampling() {
      return Behaviors.receive(Msg.class)
          .onMessageEquals(Tick.INSTANCE, Behaviors::same) // the round still runs: skip this tick
          .onMessage(Sampled.class, this::onSampled)
          .onMessageEquals(Stop.INSTANCE, Behaviors::stopped)
          .build();
    }

    private Behavior<Msg> round() {
      ctx.pipeToSelf(
          service
              .sampledNodes()
              .thenCompose(
                  nodes -> {
                    List<CompletableFuture<Optional<NodeSample>>> each = new ArrayList<>();
                    for (String node : nodes) {
                      each.add(sample(node).toCompletableFuture());
                    }
                    return CompletableFuture.allOf(each.toArray(new CompletableFuture<?>[0]))
                        .thenApply(
                            d ->
                                each.stream()
                                    .map(CompletableFuture::join)
                                    .flatMap(Optional::stream)
                                    .toList());
                  }),
          (nodes, failure) -> new Sampled(nodes == null ? List.of() : nodes, failure));
      return sampling();
    }

    /** One node's devices sampled on the blocking executor, with its arbiter's book. */
    private CompletionStage<Optional<NodeSample>> sample(String node) {
      return service
          .telemetryBackend(node)
          .thenCompose(
              backend -> {
                if (backend.isEmpty()) {
                  return CompletableFuture.completedFuture(Optional.<NodeSample>empty());
                }
                GpuBackend b = backend.get();
                return CompletableFuture.supplyAsync(b::sample, blocking)
                    .thenCombine(
                        service.bookOf(node),
                        (samples, book) -> new NodeSample(node, b, samples, book))
                    .thenApplyAsync(
                        s -> {
                          followCheckpoints(s);
                          return Optional.of(s);
                        },
                        blocking);
              })
          .exceptionally(
              e -> {
                ctx.getLog().warn("node {}: GPU telemetry not sampled: {}", node, e.toString());
                return Optional.empty();
              });
    }

    /**
     * The member's checkpoint work for the node ({@link NodeCheckpoints}), on the blocking
     * executor: driver calls wait up to the lock timeout.
     */
    private void followCheckpoints(NodeSample s) {
      for (NodeCheckpoints.Report r :
          checkpoints.follow(s.node(), s.book().book(), s.samples(), s.backend())) {
        org.slf4j.Logger log = ctx.getSystem().log();
        log.info("node {}: checkpoint of {}: {}", s.node(), r.pod(), r);
        service
            .reportCheckpoint(s.node(), r)
            .whenComplete(
                (o, e) -> {
                  if (e != null) {
                    log.warn("node {}: checkpoint report on {} failed: {}", s.node(), r.pod(), e);
                  }
                });
      }
    }

    private Behavior<Msg> onSampled(Sampled sampled) {
      if (sampled.failure() != null) {
        ctx.getLog().warn("GPU telemetry round failed: {}", sampled.failure().toString());
      }
      for (NodeSample s : sampled.nodes()) {
        judge(s);
      }
      return idle();
    }

    private void judge(NodeSample s) {
      Instant now = clock.now();
      ShareBook book = s.book().book();
      Map<Integer, GpuSample> byIndex = new HashMap<>();
      s.samples().forEach(g -> byIndex.put(g.index(), g));
      Map<String, Watched> mine = watches.computeIfAbsent(s.node(), n -> new HashMap<>());
      Map<String, Watched> kept = new HashMap<>();
      Map<String, Changes.PodUsageReport> reports = new HashMap<>();
      if (s.backend().scriptable().isEmpty()) {
        // Real devices: the driver's word on health goes to the node (capacity, no new shares);
        // a scripted GPU's health is what the node says (setGpuHealth).
        for (GpuSample g : s.samples()) {
          boolean wasHealthy = book.slot(g.index()).map(ShareBook.GpuSlot::healthy).orElse(true);
          if (g.health().healthy() != wasHealthy) {
            ctx.getLog()
                .warn(
                    "node {}: GPU {} ({}) {}",
                    s.node(),
                    g.index(),
                    g.uuid(),
                    g.health().healthy()
                        ? "is healthy again"
                        : "is unhealthy: " + g.health().reason().orElse("no reason given"));
            service.syncHealth(s.node(), g.index(), g.health().healthy());
          }
        }
      }
      for (Map.Entry<String, ShareBook.Holding> e : book.holdings().entrySet()) {
        String pod = e.getKey();
        ShareBook.Holding holding = e.getValue();
        GpuSample gpu = byIndex.get(holding.gpu());
        ShareBook.Member member = book.members().get(pod);
        if (gpu == null || member == null) {
          continue;
        }
        PodKey key = member.key();
        PodUsage usage = usageOf(gpu, key.uid(), s.backend());
        Share limits = member.shared().limits(); // only shared pods hold a share
        List<Long> hostPids = hostPidsOf(gpu, key.uid(), s.backend());
        reports.put(
            pod,
            Changes.PodUsageReport.of(
                usage,
                limits,
                gpu,
                hostPids,
                hostPids.stream().map(s.backend()::identityOf).flatMap(Optional::stream).toList()));
        if (!book.isSharePoolPod(pod)) {
          continue; // a static pod is pinned for its whole life: shown, never released
        }
        Watched was = mine.get(pod);
        Watch before =
            was != null && was.grantedAt().equals(holding.since())
                ? was.watch()
                : Watch.grantedAt(later(holding.since(), startedAt));
        Verdict v =
            UsageRules.judge(
                before,
                usage,
                limits,
                gpu.memoryTotalMiB(),
                settings.idle(),
                settings.enforceMemory(),
                now);
        kept.put(pod, new Watched(holding.since(), v.watch()));
        act(s.node(), pod, key, v);
      }
      watches.put(s.node(), kept);
      service.publishUsage(s.node(), reports);
      judgeUngranted(s, book, now);
    }

    /**
     * Ungranted use ({@link UsageRules#ungranted}): each process the sample lists on a GPU, mapped
     * to its pod (cgroup, or the simulator's script), against what the pod holds. Use seen for
     * {@link UsageRules#UNGRANTED_AFTER} gets a Warning Event once per episode and the metric, and
     * with {@code ungranted-processes = kill} its processes are killed (an Event each time).
     */
    private void judgeUngranted(NodeSample s, ShareBook book, Instant now) {
      Map<String, String> podByUid = new HashMap<>();
      book.members().forEach((id, m) -> podByUid.put(m.key().uid(), id));
      Map<String, List<Long>> found = new TreeMap<>(); // "pod@gpu" → pids
      Map<String, GpuSample> gpuOf = new HashMap<>();
      for (GpuSample g : s.samples()) {
        if (!g.processesListed()) {
          continue;
        }
        for (GpuProcessSample p : g.processes()) {
          String pod = s.backend().podUidOf(p.pid()).map(podByUid::get).orElse(null);
          if (pod == null) {
            continue; // not a pod of this node (the host's own, another node's)
          }
          ShareBook.Holding h = book.holdings().get(pod);
          if (UsageRules.ungranted(
              h == null ? OptionalInt.empty() : OptionalInt.of(h.gpu()), g.index())) {
            String episode = pod + "@" + g.index();
            found.computeIfAbsent(episode, e -> new ArrayList<>()).add(p.pid());
            gpuOf.put(episode, g);
          }
        }
      }
      Map<String, Ungranted> before = ungranted.getOrDefault(s.node(), Map.of());
      Map<String, Ungranted> seen = new HashMap<>();
      Map<PodKey, Map<Integer, Integer>> counts = new HashMap<>();
      boolean kill = settings.ungrantedProcesses() == UsageRules.UngrantedAction.KILL;
      for (Map.Entry<String, List<Long>> e : found.entrySet()) {
        String pod = e.getKey().substring(0, e.getKey().lastIndexOf('@'));
        GpuSample gpu = gpuOf.get(e.getKey());
        Ungranted was = before.get(e.getKey());
        Instant since = was == null ? now : was.since();
        boolean told = was != null && was.told();
        if (Duration.between(since, now).compareTo(UsageRules.UNGRANTED_AFTER) < 0) {
          seen.put(e.getKey(), new Ungranted(since, false)); // maybe still being stopped
          continue;
        }
        PodKey key = book.members().get(pod).key();
        ShareBook.Holding h = book.holdings().get(pod);
        int held = h == null ? -1 : h.gpu();
        List<Long> pids = e.getValue();
        counts.computeIfAbsent(key, k -> new TreeMap<>()).put(gpu.index(), pids.size());
        List<Long> killed = kill ? pids.stream().filter(s.backend()::kill).toList() : List.of();
        if (!killed.isEmpty()) {
          tellUngranted(s.node(), key, gpu, killed, held, true, now);
        }
        if (killed.size() < pids.size() && !told) {
          List<Long> left = pids.stream().filter(pid -> !killed.contains(pid)).toList();
          if (kill) {
            ctx.getLog()
                .warn(
                    "node {}: could not kill {} of {} (ungranted use of GPU {}): the member needs"
                        + " the host's PID namespace (hostPID) to signal them",
                    s.node(),
                    left,
                    key.ref(),
                    gpu.index());
          }
          tellUngranted(s.node(), key, gpu, left, held, false, now);
          told = true;
        }
        seen.put(e.getKey(), new Ungranted(since, told));
      }
      ungranted.put(s.node(), seen);
      service.ungrantedUse(s.node(), counts);
    }

    private void tellUngranted(
        String node,
        PodKey key,
        GpuSample gpu,
        List<Long> pids,
        int held,
        boolean killed,
        Instant now) {
      PodNotes.EventNote note =
          PodNotes.ungrantedUseEvent(gpu.index(), gpu.uuid(), pids, held, killed, now);
      ctx.getLog().warn("node {}: {} {}", node, key.ref(), note.message());
      service.tellPod(node, key, note);
    }

    private void act(String node, String pod, PodKey key, Verdict v) {
      switch (v.action()) {
        case NONE:
          return;
        case ASK_TO_HIBERNATE:
          ctx.getLog().info("node {}: {} {}", node, key.ref(), v.note().message());
          service.tellPod(node, key, v.note());
          return;
        case RELEASE_IDLE:
        case REVOKE_FOR_MEMORY:
          String reason = v.action() == UsageRules.Action.RELEASE_IDLE ? "idle" : "memory";
          ctx.getLog().info("node {}: {} {}", node, key.ref(), v.note().message());
          service
              .revoke(node, pod, reason, v.note())
              .whenComplete(
                  (o, e) -> {
                    if (e != null) {
                      ctx.getSystem()
                          .log()
                          .warn("node {}: revoking {} ({}) failed: {}", node, pod, reason, e);
                    }
                  });
          return;
        default:
          throw new IllegalStateException("unknown action " + v.action());
      }
    }

    private static Instant later(Instant a, Instant b) {
      return a.isAfter(b) ? a : b;
    }
  }

  /** The host PIDs of the pod with {@code uid}'s processes in the sample of that GPU, in order. */
  static List<Long> hostPidsOf(GpuSample gpu, String uid, GpuBackend backend) {
    List<Long> pids = new ArrayList<>();
    for (GpuProcessSample p : gpu.processes()) {
      if (backend.podUidOf(p.pid()).map(uid::equals).orElse(false) && !pids.contains(p.pid())) {
        pids.add(p.pid());
      }
    }
    return pids;
  }

  /**
   * What the sample says of the pod with {@code uid} on that GPU: its processes (by their cgroup,
   * or the simulator's script), their memory and SM use; unknown when the driver lists no
   * processes.
   */
  static PodUsage usageOf(GpuSample gpu, String uid, GpuBackend backend) {
    if (!gpu.processesListed()) {
      return PodUsage.UNKNOWN;
    }
    long memory = 0;
    int sm = 0;
    boolean smKnown = true;
    int count = 0;
    for (GpuProcessSample p : gpu.processes()) {
      if (!backend.podUidOf(p.pid()).map(uid::equals).orElse(false)) {
        continue;
      }
      count++;
      memory += p.usedMemoryMiB();
      if (p.smUtilizationPercent().isPresent()) {
        sm += p.smUtilizationPercent().getAsInt();
      } else {
        smKnown = false;
      }
    }
    return new PodUsage(memory, smKnown ? OptionalInt.of(sm) : OptionalInt.empty(), count);
  }
}
