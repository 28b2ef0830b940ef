package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;

/**
 * The arbiter's book for one node: the pods bound to it, the ready queue, who holds which share of
 * which GPU, and the policy in force. Pure and immutable: each change returns a new book with a
 * higher {@link #revision}, and {@link #next} says what the arbiter should decide now. The node's
 * {@code NodeArbiter} actor persists each change as an event and replays it through the same
 * methods, so recovery rebuilds exactly this value.
 *
 * <p>Pods are named by entity id ({@code ns/name/uid}) throughout.
 */
public record ShareBook(
    String node,
    SharePolicy policy,
    QosConfig qos,
    List<GpuSlot> gpus,
    Map<String, Member> members,
    ReadyQueue queue,
    Map<String, Holding> holdings,
    List<String> pendingPins,
    long decisions,
    long revision)
    implements JsonSerializable {

  /** One GPU as the arbiter knows it. */
  public record GpuSlot(int index, String uuid, boolean healthy) implements JsonSerializable {}

  /**
   * A pod bound to the node. {@code fragmentedReported}: static pod told it cannot be pinned.
   * {@code events} and {@code conditions}: what the arbiter's latest decisions made visible on the
   * pod (SPEC §7), at most {@link #RECENT_EVENTS} Events and the latest condition of each type —
   * the pod's actor records them, and catches up from here after a crash of either side (absent in
   * books written before 0.2: empty).
   */
  public record Member(
      PodKey key,
      PodSharing spec,
      boolean fragmentedReported,
      List<PodNotes.EventNote> events,
      List<PodNotes.ConditionNote> conditions,
      @JsonInclude(JsonInclude.Include.NON_NULL) Checkpoint checkpoint)
      implements JsonSerializable {
    public Member {
      events = events == null ? List.of() : List.copyOf(events);
      conditions = conditions == null ? List.of() : List.copyOf(conditions);
    }

    public Member(
        PodKey key,
        PodSharing spec,
        boolean fragmentedReported,
        List<PodNotes.EventNote> events,
        List<PodNotes.ConditionNote> conditions) {
      this(key, spec, fragmentedReported, events, conditions, null);
    }

    public Member(PodKey key, PodSharing spec, boolean fragmentedReported) {
      this(key, spec, fragmentedReported, List.of(), List.of(), null);
    }

    /** Whether the pod asked for {@code gpushare.dev/preemption: checkpoint}. */
    public boolean wantsCheckpoint() {
      return spec instanceof PodSharing.Shared s && s.preemption() == PreemptionMode.CHECKPOINT;
    }

    Member withCheckpoint(Checkpoint c) {
      return new Member(key, spec, fragmentedReported, events, conditions, c);
    }

    /**
     * The sharing of a member that shares a GPU: every pod queued, holding or waiting for a pin is
     * one (only {@link PodSharing.Shared} pods get there).
     */
    public PodSharing.Shared shared() {
      if (spec instanceof PodSharing.Shared s) {
        return s;
      }
      throw new IllegalStateException(
          "pod " + key.ref() + " does not share a GPU (" + spec.kind() + ")");
    }

    Member fragmented() {
      return new Member(key, spec, true, events, conditions, checkpoint);
    }

    Member noted(List<PodNotes.EventNote> newEvents, List<PodNotes.ConditionNote> newConditions) {
      List<PodNotes.EventNote> e = new ArrayList<>(events);
      e.addAll(newEvents);
      if (e.size() > RECENT_EVENTS) {
        e = e.subList(e.size() - RECENT_EVENTS, e.size());
      }
      List<PodNotes.ConditionNote> c = new ArrayList<>();
      for (PodNotes.ConditionNote old : conditions) {
        if (newConditions.stream().noneMatch(n -> n.type().equals(old.type()))) {
          c.add(old);
        }
      }
      c.addAll(newConditions);
      return new Member(key, spec, fragmentedReported, e, c, checkpoint);
    }
  }

  /** Events kept per member for the pod's actor to catch up from. */
  public static final int RECENT_EVENTS = 10;

  /**
   * A share held on a GPU: Running share-pool pods hold their limits, pinned static pods their
   * requests.
   */
  public record Holding(String decisionId, int gpu, Share share, Instant since, boolean pinned)
      implements JsonSerializable {}

  /**
   * A pod whose CUDA processes the node's member checkpoints ({@link Phase#SUSPENDING}: it still
   * holds its share, which is freed when the member reports) or holds checkpointed in host memory
   * ({@link Phase#HELD}: Ready or in Hibernation, restored on {@code gpu} at its next grant, since
   * the driver restores onto the GPU it had).
   *
   * @param pids the pod's CUDA processes the checkpoint holds (none while suspending): after a
   *     restart the member finds them by these
   * @param bytes host memory the checkpoint holds (0 while suspending)
   * @param by the preemptor the share is freed for; null for an idle release
   * @param reason {@code preempt} or {@code idle}
   */
  public record Checkpoint(
      Phase phase, int gpu, List<Integer> pids, long bytes, Instant since, String by, String reason)
      implements JsonSerializable {
    public Checkpoint {
      pids = pids == null ? List.of() : List.copyOf(pids);
    }

    public enum Phase {
      SUSPENDING,
      HELD
    }

    public static final String PREEMPT = "preempt";
    public static final String IDLE = "idle";
  }

  /**
   * How long the arbiter waits for the member to checkpoint a pod before it frees the share as the
   * signal contract does (the member's lock timeout is 10 s by default, a checkpoint of tens of GiB
   * takes seconds).
   */
  public static final java.time.Duration SUSPEND_TIMEOUT = java.time.Duration.ofSeconds(60);

  /** What the arbiter should do next. */
  public sealed interface Decision {}

  /**
   * Preempt {@code victims} on {@code gpu} for {@code pod}, checkpointing first the victims that
   * asked for it ({@code checkpointed}); the others are preempted at once.
   */
  public record Suspend(String pod, int gpu, List<String> victims, List<String> checkpointed)
      implements Decision {}

  /** The member did not report in time: free these suspending pods' shares (signal contract). */
  public record ExpireSuspend(List<String> pods) implements Decision {}

  /** Give the queue head a share of {@code gpu}. */
  public record Grant(String pod, int gpu) implements Decision {}

  /** Take {@code gpu} from {@code victims} (longest-running first) for the queue head. */
  public record Preempt(String pod, int gpu, List<String> victims) implements Decision {}

  /** Pin a static pod to {@code gpu} by its requests. */
  public record Pin(String pod, int gpu) implements Decision {}

  /** Tell a static pod, once, that no single GPU has room for it. */
  public record ReportFragmented(String pod, String message) implements Decision {}

  public ShareBook {
    gpus = List.copyOf(gpus);
    // Persistent maps: a change shares everything but one path with the book before it, so that a
    // decision costs O(log n) in the number of pods, not a copy of them all.
    members = PersistentSortedMap.copyOf(members);
    holdings = PersistentSortedMap.copyOf(holdings);
    pendingPins = List.copyOf(pendingPins);
  }

  private PersistentSortedMap<String, Member> memberMap() {
    return (PersistentSortedMap<String, Member>) members;
  }

  private PersistentSortedMap<String, Holding> holdingMap() {
    return (PersistentSortedMap<String, Holding>) holdings;
  }

  public static ShareBook empty(String node) {
    return new ShareBook(
        node,
        SharePolicy.NONE,
        QosConfig.DEFAULT,
        List.of(),
        Map.of(),
        ReadyQueue.EMPTY,
        Map.of(),
        List.of(),
        0,
        0);
  }

  // ---- changes (each one is an arbiter event) ----

  public ShareBook withGpus(List<GpuSlot> slots) {
    return new ShareBook(
        node, policy, qos, slots, members, queue, holdings, pendingPins, decisions, revision + 1);
  }

  public ShareBook withPolicy(SharePolicy newPolicy, QosConfig newQos) {
    return new ShareBook(
        node,
        newPolicy,
        newQos,
        gpus,
        members,
        queue,
        holdings,
        pendingPins,
        decisions,
        revision + 1);
  }

  public ShareBook addPod(PodKey key, PodSharing spec) {
    String pod = key.entityId();
    if (members.containsKey(pod)) {
      return this;
    }
    Map<String, Member> m = memberMap().plus(pod, new Member(key, spec, false));
    List<String> pins = pendingPins;
    if (isStaticShared(spec)) {
      pins = append(pendingPins, pod);
    }
    return new ShareBook(
        node, policy, qos, gpus, m, queue, holdings, pins, decisions, revision + 1);
  }

  public ShareBook removePod(String pod) {
    if (!members.containsKey(pod)) {
      return this;
    }
    Map<String, Member> m = memberMap().minus(pod);
    Map<String, Holding> h = holdingMap().minus(pod);
    return new ShareBook(
        node,
        policy,
        qos,
        gpus,
        m,
        queue.remove(pod),
        h,
        without(pendingPins, pod),
        decisions,
        revision + 1);
  }

  /** Hibernation → Ready: the pod joins the tail. */
  public ShareBook enqueue(String pod, Instant at) {
    return new ShareBook(
        node,
        policy,
        qos,
        gpus,
        members,
        queue.enqueue(pod, at),
        holdings,
        pendingPins,
        decisions,
        revision + 1);
  }

  /** Ready → Hibernation: the pod withdraws its demand. */
  public ShareBook withdraw(String pod) {
    return new ShareBook(
        node,
        policy,
        qos,
        gpus,
        members,
        queue.remove(pod),
        holdings,
        pendingPins,
        decisions,
        revision + 1);
  }

  /** Ready → Running on {@code gpu}, holding the pod's limits. */
  public ShareBook grant(String decisionId, String pod, int gpu, Instant at) {
    Map<String, Holding> h =
        holdingMap()
            .plus(pod, new Holding(decisionId, gpu, members.get(pod).shared().held(), at, false));
    return new ShareBook(
        node,
        policy,
        qos,
        gpus,
        members,
        queue.remove(pod),
        h,
        pendingPins,
        decisions + 1,
        revision + 1);
  }

  /** Running → Hibernation: the share is freed at once. */
  public ShareBook release(String pod) {
    Map<String, Holding> h = holdingMap().minus(pod);
    Map<String, Member> m = members;
    Member member = members.get(pod);
    if (member != null
        && member.checkpoint() != null
        && member.checkpoint().phase() == Checkpoint.Phase.SUSPENDING) {
      m = memberMap().plus(pod, member.withCheckpoint(null)); // the member's report is refused
    }
    return new ShareBook(
        node, policy, qos, gpus, m, queue, h, pendingPins, decisions, revision + 1);
  }

  /** Running → Ready for each victim, at the tail, longest-running first. */
  public ShareBook preempt(List<String> victims, Instant at) {
    PersistentSortedMap<String, Holding> h = holdingMap();
    ReadyQueue q = queue;
    for (String victim : victims) {
      h = h.minus(victim);
      q = q.enqueue(victim, at);
    }
    return new ShareBook(
        node, policy, qos, gpus, members, q, h, pendingPins, decisions + 1, revision + 1);
  }

  /** A static pod pinned to {@code gpu} by its requests, for its whole life. */
  public ShareBook pin(String decisionId, String pod, int gpu, Instant at) {
    Map<String, Holding> h =
        holdingMap()
            .plus(pod, new Holding(decisionId, gpu, members.get(pod).shared().held(), at, true));
    return new ShareBook(
        node,
        policy,
        qos,
        gpus,
        members,
        queue,
        h,
        without(pendingPins, pod),
        decisions + 1,
        revision + 1);
  }

  /**
   * The member is to checkpoint {@code pods}' CUDA processes before their shares on {@code gpu} are
   * freed, for the preemptor {@code by} or for an idle release (by null): they keep their shares
   * until it reports ({@link #suspended}) or {@link #SUSPEND_TIMEOUT} passes.
   */
  public ShareBook suspendRequested(
      List<String> pods, int gpu, String by, String reason, Instant at) {
    PersistentSortedMap<String, Member> m = memberMap();
    for (String pod : pods) {
      Member member = m.get(pod);
      if (member != null && holdings.containsKey(pod)) {
        m =
            m.plus(
                pod,
                member.withCheckpoint(
                    new Checkpoint(
                        Checkpoint.Phase.SUSPENDING, gpu, List.of(), 0, at, by, reason)));
      }
    }
    return new ShareBook(
        node, policy, qos, gpus, m, queue, holdings, pendingPins, decisions + 1, revision + 1);
  }

  /**
   * The member reported on a suspending pod (or the wait expired): its share is freed as the
   * decision said (preempted: Ready at the tail; idle: Hibernation), with its GPU state held in
   * {@code bytes} of host memory ({@code held}) or not (the signal contract applies).
   */
  public ShareBook suspended(String pod, boolean held, List<Integer> pids, long bytes, Instant at) {
    Member member = members.get(pod);
    Checkpoint c = member == null ? null : member.checkpoint();
    if (c == null || c.phase() != Checkpoint.Phase.SUSPENDING) {
      return this;
    }
    Map<String, Member> m =
        memberMap()
            .plus(
                pod,
                member.withCheckpoint(
                    held
                        ? new Checkpoint(
                            Checkpoint.Phase.HELD, c.gpu(), pids, bytes, at, c.by(), c.reason())
                        : null));
    Map<String, Holding> h = holdingMap().minus(pod);
    ReadyQueue q = Checkpoint.PREEMPT.equals(c.reason()) ? queue.enqueue(pod, at) : queue;
    return new ShareBook(node, policy, qos, gpus, m, q, h, pendingPins, decisions, revision + 1);
  }

  /**
   * The pod's checkpoint is gone: restored after its grant, or given up (its process exited, the
   * restore kept failing, the member lost it).
   */
  public ShareBook checkpointCleared(String pod) {
    Member member = members.get(pod);
    if (member == null || member.checkpoint() == null) {
      return this;
    }
    Map<String, Member> m = memberMap().plus(pod, member.withCheckpoint(null));
    return new ShareBook(
        node, policy, qos, gpus, m, queue, holdings, pendingPins, decisions, revision + 1);
  }

  public ShareBook markFragmented(String pod) {
    Member member = members.get(pod);
    if (member == null) {
      return this;
    }
    Map<String, Member> m = memberMap().plus(pod, member.fragmented());
    return new ShareBook(
        node, policy, qos, gpus, m, queue, holdings, pendingPins, decisions, revision + 1);
  }

  /**
   * The Events and conditions a decision made visible on {@code pod}, kept with the member (not a
   * change of its own: the revision stays).
   */
  public ShareBook noted(
      String pod, List<PodNotes.EventNote> events, List<PodNotes.ConditionNote> conditions) {
    Member member = members.get(pod);
    if (member == null || (events.isEmpty() && conditions.isEmpty())) {
      return this;
    }
    Map<String, Member> m = memberMap().plus(pod, member.noted(events, conditions));
    return new ShareBook(
        node, policy, qos, gpus, m, queue, holdings, pendingPins, decisions, revision);
  }

  /**
   * Carries out one decision as the arbiter does once the GPU accepted it (decision ids from {@link
   * #nextDecisionId()}).
   */
  public ShareBook apply(Decision decision, Instant now) {
    if (decision instanceof Grant g) {
      return grant(nextDecisionId(), g.pod(), g.gpu(), now);
    }
    if (decision instanceof Preempt p) {
      return preempt(p.victims(), now);
    }
    if (decision instanceof Suspend p) {
      List<String> signalled =
          p.victims().stream().filter(v -> !p.checkpointed().contains(v)).toList();
      ShareBook book = signalled.isEmpty() ? this : preempt(signalled, now);
      return book.suspendRequested(p.checkpointed(), p.gpu(), p.pod(), Checkpoint.PREEMPT, now);
    }
    if (decision instanceof ExpireSuspend e) {
      ShareBook book = this;
      for (String pod : e.pods()) {
        book = book.suspended(pod, false, List.of(), 0, now);
      }
      return book;
    }
    if (decision instanceof Pin p) {
      return pin(nextDecisionId(), p.pod(), p.gpu(), now);
    }
    return markFragmented(((ReportFragmented) decision).pod());
  }

  /**
   * Decides until nothing is left to decide: what the arbiter reaches after a change once every GPU
   * accepted its reservation. For simulation and tests; the actor takes the same steps one
   * persisted event at a time.
   */
  public ShareBook settle(Instant now) {
    return settle(now, GpuChoice.BEST_FIT);
  }

  /** As {@link #settle(Instant)}, with {@code choice} picking the GPUs. */
  public ShareBook settle(Instant now, GpuChoice choice) {
    ShareBook book = this;
    int guard = 4 * (members.size() + 2);
    for (Optional<Decision> d = book.next(now, choice); d.isPresent(); d = book.next(now, choice)) {
      if (guard-- == 0) {
        throw new IllegalStateException("arbitration does not settle on node " + node);
      }
      book = book.apply(d.get(), now);
    }
    return book;
  }

  // ---- reading ----

  /** The id the next decision will carry: unique per node, so re-delivery is recognised. */
  public String nextDecisionId() {
    return node + "#" + (decisions + 1);
  }

  public boolean isMember(String pod) {
    return members.containsKey(pod);
  }

  /** Whether the pod takes part in share-pool arbitration (asks for shares, node in share-pool). */
  public boolean isSharePoolPod(String pod) {
    Member m = members.get(pod);
    return m != null
        && m.spec() instanceof PodSharing.Shared s
        && s.policy() == SharePolicy.SHARE_POOL
        && policy == SharePolicy.SHARE_POOL;
  }

  public PodState state(String pod) {
    Member m = members.get(pod);
    if (m == null || !(m.spec() instanceof PodSharing.Shared shared)) {
      return null;
    }
    if (holdings.containsKey(pod)) {
      return PodState.RUNNING;
    }
    if (shared.policy() == SharePolicy.STATIC) {
      return PodState.PENDING;
    }
    return queue.contains(pod) ? PodState.READY : PodState.HIBERNATION;
  }

  public Optional<PodStatus> status(String pod) {
    Member m = members.get(pod);
    if (m == null) {
      return Optional.empty();
    }
    Holding h = holdings.get(pod);
    Instant since =
        h != null ? h.since() : queue.entry(pod).map(ReadyQueue.Entry::enteredAt).orElse(null);
    return Optional.of(
        new PodStatus(
            m.key(),
            node,
            m.spec(),
            state(pod),
            h == null ? null : h.gpu(),
            h == null ? null : slot(h.gpu()).map(GpuSlot::uuid).orElse(null),
            since,
            revision,
            m.checkpoint()));
  }

  public Optional<GpuSlot> slot(int index) {
    return gpus.stream().filter(g -> g.index() == index).findFirst();
  }

  /** Every GPU with the shares held on it. */
  public List<GpuLoad> loads() {
    Map<Integer, Map<String, Share>> held = new HashMap<>();
    holdings.forEach(
        (pod, h) -> held.computeIfAbsent(h.gpu(), i -> new LinkedHashMap<>()).put(pod, h.share()));
    return gpus.stream()
        .map(g -> new GpuLoad(g.index(), g.healthy(), held.getOrDefault(g.index(), Map.of())))
        .toList();
  }

  /** Running share-pool pods and since when they have run continuously. */
  public Map<String, Instant> runningSince() {
    Map<String, Instant> since = new TreeMap<>();
    holdings.forEach(
        (pod, h) -> {
          if (!h.pinned()) {
            since.put(pod, h.since());
          }
        });
    return since;
  }

  /** What to decide now, if anything (SPEC §5 and §6), placing by best fit. */
  public Optional<Decision> next(Instant now) {
    return next(now, GpuChoice.BEST_FIT);
  }

  /** What to decide now, if anything, with {@code choice} picking the GPU of a grant or pin. */
  public Optional<Decision> next(Instant now, GpuChoice choice) {
    if (policy == SharePolicy.SHARE_POOL) {
      return nextSharePool(now, choice);
    }
    if (policy == SharePolicy.STATIC) {
      return nextStatic(choice);
    }
    return Optional.empty();
  }

  private Optional<Decision> nextSharePool(Instant now, GpuChoice choice) {
    // While the member checkpoints pods, their shares are not yet free: nothing is decided until it
    // reports, or the wait expires.
    List<String> suspending = suspending();
    if (!suspending.isEmpty()) {
      List<String> expired =
          suspending.stream().filter(p -> !now.isBefore(suspendDeadline(p))).toList();
      return expired.isEmpty() ? Optional.empty() : Optional.of(new ExpireSuspend(expired));
    }
    Optional<ReadyQueue.Entry> head = queue.head();
    if (head.isEmpty()) {
      return Optional.empty();
    }
    String pod = head.get().pod();
    Share limits = limitsOf(pod);
    Checkpoint held = members.get(pod).checkpoint();
    List<GpuLoad> loads =
        candidates(loads(), held == null ? OptionalInt.empty() : OptionalInt.of(held.gpu()));
    OptionalInt gpu = choice.choose(loads, limits);
    if (gpu.isPresent()) {
      return Optional.of(new Grant(pod, gpu.getAsInt()));
    }
    if (!qos.preemptEnabled()) {
      return Optional.empty();
    }
    return Preemption.choose(loads, runningSince(), limits, now, qos.podMaxDuration())
        .filter(plan -> !plan.victims().isEmpty())
        .map(
            plan -> {
              List<String> checkpointed =
                  plan.victims().stream().filter(v -> members.get(v).wantsCheckpoint()).toList();
              return checkpointed.isEmpty()
                  ? new Preempt(pod, plan.gpu(), plan.victims())
                  : new Suspend(pod, plan.gpu(), plan.victims(), checkpointed);
            });
  }

  /**
   * The GPUs a queued pod may be granted: every GPU, or only {@code restoreOn}, the GPU a pod whose
   * CUDA state is checkpointed had (the driver restores a checkpointed process onto the GPU it had,
   * CUDA 12.9: the pod waits for that GPU).
   */
  public static List<GpuLoad> candidates(List<GpuLoad> loads, OptionalInt restoreOn) {
    if (restoreOn.isEmpty()) {
      return loads;
    }
    return loads.stream().filter(g -> g.index() == restoreOn.getAsInt()).toList();
  }

  /**
   * How many of the {@link #candidates} a share ({@code limits}) fits now ({@link GpuLoad#fits}:
   * healthy, with room on both resources): the GPUs a grant to the queue's head could take. More
   * than zero while the head keeps waiting means the arbiter is not granting (the metric {@code
   * gpushare_queue_head_fitting_gpus}).
   */
  public static int fitting(List<GpuLoad> loads, Share limits, OptionalInt restoreOn) {
    return (int) candidates(loads, restoreOn).stream().filter(g -> g.fits(limits)).count();
  }

  /** The pods whose CUDA processes the member is checkpointing now. */
  public List<String> suspending() {
    List<String> pods = new ArrayList<>();
    members.forEach(
        (pod, m) -> {
          if (m.checkpoint() != null && m.checkpoint().phase() == Checkpoint.Phase.SUSPENDING) {
            pods.add(pod);
          }
        });
    return pods;
  }

  /** Host memory held by the node's checkpointed pods, in bytes. */
  public long checkpointBytes() {
    long bytes = 0;
    for (Member m : members.values()) {
      if (m.checkpoint() != null && m.checkpoint().phase() == Checkpoint.Phase.HELD) {
        bytes += m.checkpoint().bytes();
      }
    }
    return bytes;
  }

  private Instant suspendDeadline(String pod) {
    return members.get(pod).checkpoint().since().plus(SUSPEND_TIMEOUT);
  }

  private Optional<Decision> nextStatic(GpuChoice choice) {
    List<GpuLoad> loads = loads();
    for (String pod : pendingPins) {
      Share requests = members.get(pod).shared().requests();
      OptionalInt gpu = choice.choose(loads, requests);
      if (gpu.isPresent()) {
        return Optional.of(new Pin(pod, gpu.getAsInt()));
      }
    }
    for (String pod : pendingPins) {
      if (!members.get(pod).fragmentedReported()) {
        return Optional.of(
            new ReportFragmented(pod, fragmentationMessage(members.get(pod).shared().requests())));
      }
    }
    return Optional.empty();
  }

  /**
   * When the arbiter must look again although nothing else changes: the earliest moment a Running
   * pod becomes a preemption candidate while someone waits.
   */
  public Optional<Instant> nextTimer(Instant now) {
    Optional<Instant> deadline =
        suspending().stream().map(this::suspendDeadline).min(Instant::compareTo);
    if (deadline.isPresent()) {
      return deadline; // nothing else is decided before the member reports
    }
    if (policy != SharePolicy.SHARE_POOL || !qos.preemptEnabled() || queue.isEmpty()) {
      return Optional.empty();
    }
    return Preemption.nextCandidateAt(runningSince(), now, qos.podMaxDuration());
  }

  String fragmentationMessage(Share requests) {
    List<GpuLoad> loads = loads();
    Share freeTotal = Share.NONE;
    GpuLoad roomiest = null;
    for (GpuLoad g : loads) {
      if (!g.healthy()) {
        continue;
      }
      Share free = Share.WHOLE.minus(g.used());
      freeTotal = freeTotal.plus(free);
      if (roomiest == null || g.roomLeftAfter(Share.NONE) > roomiest.roomLeftAfter(Share.NONE)) {
        roomiest = g;
      }
    }
    String most =
        roomiest == null
            ? "the node has no healthy GPU"
            : "the roomiest is GPU "
                + roomiest.index()
                + " with "
                + Share.WHOLE.minus(roomiest.used())
                + " free";
    return "no single GPU has room for requests of "
        + requests
        + ": "
        + most
        + "; the node has "
        + freeTotal
        + " free in total but a pod's share must lie on one GPU. It will be pinned when"
        + " capacity frees.";
  }

  /**
   * What must always hold (ARCHITECTURE.md §6, invariants 1–3 as far as one book can tell): no GPU
   * above 100 % of core or memory, one holding per pod and never for a queued pod, holdings only on
   * known GPUs, the queue in order of entering Ready with no duplicates. Empty when all hold.
   */
  public List<String> violations() {
    List<String> v = new ArrayList<>();
    for (GpuLoad g : loads()) {
      Share used = g.used();
      if (used.core() > 100 || used.memory() > 100) {
        v.add("GPU " + g.index() + " holds " + used + " (over 100%)");
      }
    }
    holdings.forEach(
        (pod, h) -> {
          if (!members.containsKey(pod)) {
            v.add(pod + " holds GPU " + h.gpu() + " but is not bound to the node");
          }
          if (slot(h.gpu()).isEmpty()) {
            v.add(pod + " holds unknown GPU " + h.gpu());
          }
          if (queue.contains(pod)) {
            v.add(pod + " is both Running and Ready");
          }
        });
    members.forEach(
        (pod, m) -> {
          Checkpoint c = m.checkpoint();
          Holding h = holdings.get(pod);
          if (c != null && c.phase() == Checkpoint.Phase.SUSPENDING && h == null) {
            v.add(pod + " is being checkpointed but holds no share");
          }
          if (c != null && c.phase() == Checkpoint.Phase.HELD && h != null && h.gpu() != c.gpu()) {
            v.add(
                pod
                    + " runs on GPU "
                    + h.gpu()
                    + " but its checkpoint can be restored only on GPU "
                    + c.gpu());
          }
        });
    List<ReadyQueue.Entry> entries = queue.entries();
    for (int i = 1; i < entries.size(); i++) {
      if (entries.get(i).enteredAt().isBefore(entries.get(i - 1).enteredAt())) {
        v.add("queue out of FIFO order at position " + (i + 1));
      }
    }
    if (entries.stream().map(ReadyQueue.Entry::pod).distinct().count() != entries.size()) {
      v.add("a pod is queued twice");
    }
    for (ReadyQueue.Entry e : entries) {
      if (!isSharePoolPod(e.pod()) && members.containsKey(e.pod())) {
        v.add(e.pod() + " is queued but is not a share-pool pod");
      }
    }
    return v;
  }

  // ---- helpers ----

  private Share limitsOf(String pod) {
    return members.get(pod).shared().limits();
  }

  private static boolean isStaticShared(PodSharing spec) {
    return spec instanceof PodSharing.Shared s && s.policy() == SharePolicy.STATIC;
  }

  private static List<String> append(List<String> list, String item) {
    if (list.contains(item)) {
      return list;
    }
    List<String> next = new ArrayList<>(list);
    next.add(item);
    return next;
  }

  private static List<String> without(List<String> list, String item) {
    return list.stream().filter(x -> !x.equals(item)).toList();
  }
}
