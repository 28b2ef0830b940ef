package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerEntry;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerReply;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerSnapshot;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.apache.pekko.persistence.typed.JournalPersistFailed;
import org.apache.pekko.persistence.typed.JournalPersistRejected;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.RecoveryCompleted;
import org.apache.pekko.persistence.typed.RecoveryFailed;
import org.apache.pekko.persistence.typed.SnapshotFailed;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.Effect;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;
import org.apache.pekko.persistence.typed.javadsl.RetentionCriteria;
import org.apache.pekko.persistence.typed.javadsl.SignalHandler;

/**
 * The per-node decision maker (ARCHITECTURE.md §2): owns the ready queue, placement, preemption and
 * static pinning for one node, as a {@link ShareBook} rebuilt from its events.
 *
 * <p>A change (demand, release, a pod bound or removed, a config or GPU change, time passing)
 * starts a <em>round</em>: the arbiter decides, one decision at a time, until nothing is left to
 * decide. A grant or a pin is first reserved on the GPU's own actor, which refuses anything that
 * would break the 100 % invariant, and only then persisted; frees and pod notices are sent after
 * the decision is persisted and awaited before the next decision. While a round runs, other
 * commands wait in the stash, and the commands that started it are answered when it ends, so an
 * answer means every consequence is durable and visible. Decision ids make re-delivery harmless.
 *
 * <p>After recovery, before deciding anything new, the arbiter reconciles with its GPU ledgers
 * (frees reservations it never persisted, restores ones that were lost) and tells every pod its
 * status again.
 */
public final class NodeArbiter
    extends EventSourcedBehavior<NodeArbiter.Command, NodeArbiter.Event, ShareBook> {

  // ---- protocol ----

  public sealed interface Command extends JsonSerializable {}

  /** The node's GPUs (from discovery, or a health change). */
  public record SetGpus(List<ShareBook.GpuSlot> gpus, ActorRef<Outcome> replyTo)
      implements Command {}

  /** The policy and QoS config in force (decided by the NodeActor). */
  public record ApplyPolicy(SharePolicy policy, QosConfig qos, ActorRef<Outcome> replyTo)
      implements Command {}

  /** A pod was bound to the node: share-pool pods start in Hibernation, static ones are pinned. */
  public record AddPod(PodKey key, PodSharing spec, ActorRef<Outcome> replyTo) implements Command {}

  /** A pod is gone; everything it held is freed. */
  public record RemovePod(String pod, ActorRef<Outcome> replyTo) implements Command {}

  /** Hibernation → Ready (or straight to Running). */
  public record Demand(String pod, ActorRef<Outcome> replyTo) implements Command {}

  /**
   * Ready → Hibernation, or Running → Hibernation. With a {@code reason} (the arbiter's own
   * telemetry rules: {@code idle}, {@code memory}) only a Running pod is released, and {@code note}
   * is the Event the pod gets.
   */
  public record Release(
      String pod, String reason, PodNotes.EventNote note, ActorRef<Outcome> replyTo)
      implements Command {
    /** The pod's own release (the data plane's DELETE .../demand). */
    public Release(String pod, ActorRef<Outcome> replyTo) {
      this(pod, null, null, replyTo);
    }
  }

  /**
   * Make the arbiter's pods exactly {@code bound} (what the NodeActor says is bound): adds the
   * missing, removes the extra. Sent at start-up, so a crash between binding and telling the
   * arbiter leaves nothing behind.
   */
  public record Reconcile(List<BoundPod> bound, ActorRef<Outcome> replyTo) implements Command {}

  public record BoundPod(PodKey key, PodSharing spec) implements JsonSerializable {}

  /** Look again now (time has passed); {@code replyTo} may be {@code null} (a timer). */
  public record Tick(ActorRef<Outcome> replyTo) implements Command {}

  public record GetBook(ActorRef<BookView> replyTo) implements Command {}

  /** The book as of {@code now}, and when the arbiter must look again by itself. */
  public record BookView(ShareBook book, Instant now, Instant nextTimer)
      implements JsonSerializable {}

  /**
   * The answer to a command once its round has ended: the pod's status (for pod commands), or an
   * error. {@code error} is one of {@code NOT_FOUND}, {@code CONFLICT}.
   */
  public record Outcome(PodStatus status, String error, String detail) implements JsonSerializable {
    public static final Outcome DONE = new Outcome(null, null, null);

    public boolean ok() {
      return error == null;
    }
  }

  /** The result of an asynchronous step, back in the actor. */
  private record StepDone(Step step, Object result, Throwable failure) implements Command {}

  // ---- events ----

  public sealed interface Event extends JsonSerializable {}

  public record GpusSet(List<ShareBook.GpuSlot> gpus) implements Event {}

  public record PolicyApplied(SharePolicy policy, QosConfig qos) implements Event {}

  public record PodAdded(PodKey key, PodSharing spec) implements Event {}

  public record PodRemoved(String pod, Instant at) implements Event {}

  public record Enqueued(String pod, Instant at) implements Event {}

  public record Withdrawn(String pod, Instant at) implements Event {}

  public record Granted(String decisionId, String pod, int gpu, Instant at) implements Event {}

  /**
   * @param reason null when the pod released its share itself; {@code idle} or {@code memory} when
   *     the telemetry rules took it back (added in 0.1: older events read as null)
   */
  public record Released(String pod, Instant at, String reason) implements Event {
    public Released(String pod, Instant at) {
      this(pod, at, null);
    }
  }

  public record Preempted(String decisionId, String by, int gpu, List<String> victims, Instant at)
      implements Event {}

  public record Pinned(String decisionId, String pod, int gpu, Instant at) implements Event {}

  public record PinDeferred(String pod, String message, Instant at) implements Event {}

  // ---- steps of a round ----

  private sealed interface Step {}

  /**
   * Reserve on the GPU for a grant or a pin. {@code enqueued} is set for a demand granted at once:
   * its {@code Enqueued} is not persisted yet, and is persisted together with the grant (or alone,
   * if the GPU refuses).
   */
  private record Reserve(
      ShareBook.Decision decision, String decisionId, String uuid, Share share, Enqueued enqueued)
      implements Step {
    Reserve(ShareBook.Decision decision, String decisionId, String uuid, Share share) {
      this(decision, decisionId, uuid, share, null);
    }
  }

  /** A decision that needs no reservation (preemption, fragmentation report). */
  private record Persist(ShareBook.Decision decision) implements Step {}

  /** Fetch every ledger and repair differences. */
  private record CheckLedgers() implements Step {}

  /** Something to carry out after a persisted decision (a free, a pod notice). */
  private record Fire(String what, Supplier<CompletionStage<?>> action) implements Step {}

  /**
   * Consecutive fires of the outbox, sent together: they go to different entities (or, to one
   * entity, in order) and none depends on another's answer; all are awaited before the next step.
   */
  private record Fires(List<Fire> fires) implements Step {}

  private record Waiter(ActorRef<Outcome> replyTo, String pod) {}

  public static PersistenceId persistenceId(String node) {
    return PersistenceId.of("NodeArbiter", node, "|");
  }

  public static Behavior<Command> create(String node, ArbiterPeers peers, ArbiterClock clock) {
    return create(node, peers, clock, ArbiterMetrics.NONE);
  }

  /** As {@link #create(String, ArbiterPeers, ArbiterClock)}, telling {@code metrics} its work. */
  public static Behavior<Command> create(
      String node, ArbiterPeers peers, ArbiterClock clock, ArbiterMetrics metrics) {
    return create(node, peers, clock, metrics, GpuChoice.BEST_FIT);
  }

  /** As above, with {@code choice} picking the GPU of each grant and pin. */
  public static Behavior<Command> create(
      String node,
      ArbiterPeers peers,
      ArbiterClock clock,
      ArbiterMetrics metrics,
      GpuChoice choice) {
    return Behaviors.<Command>supervise(
            Behaviors.setup(
                ctx ->
                    Behaviors.withTimers(
                        timers ->
                            new NodeArbiter(node, peers, clock, metrics, choice, ctx, timers))))
        .onFailure(
            SupervisorStrategy.restartWithBackoff(
                Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
  }

  private final String node;
  private final ArbiterPeers peers;
  private final ArbiterClock clock;
  private final ArbiterMetrics metrics;
  private final GpuChoice choice;
  private final ActorContext<Command> ctx;
  private final TimerScheduler<Command> timers;

  // A round's progress: lives only in this incarnation; a crash restarts from the journal.
  private final Deque<Step> outbox = new ArrayDeque<>();
  private final List<Waiter> waiters = new ArrayList<>();
  private boolean busy;
  private boolean ledgersChecked;
  private int refusals;
  // The book after the latest persisted event: what notices tell pods.
  private ShareBook latest;
  // For metrics (System.nanoTime): when each stashed command arrived, when the command being
  // handled arrived, and the arrivals of the commands the current round answers when it ends.
  private final Map<Command, Long> stashedAt = new IdentityHashMap<>();
  private long arrived;
  private final List<Long> roundArrivals = new ArrayList<>();

  private NodeArbiter(
      String node,
      ArbiterPeers peers,
      ArbiterClock clock,
      ArbiterMetrics metrics,
      GpuChoice choice,
      ActorContext<Command> ctx,
      TimerScheduler<Command> timers) {
    super(
        persistenceId(node),
        SupervisorStrategy.restartWithBackoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.1));
    this.node = node;
    this.peers = peers;
    this.clock = clock;
    this.metrics = metrics;
    this.choice = choice;
    this.ctx = ctx;
    this.timers = timers;
  }

  @Override
  public ShareBook emptyState() {
    return ShareBook.empty(node);
  }

  @Override
  public RetentionCriteria retentionCriteria() {
    return RetentionCriteria.snapshotEvery(100, 2);
  }

  @Override
  public SignalHandler<ShareBook> signalHandler() {
    return newSignalHandlerBuilder()
        .onSignal(
            RecoveryCompleted.instance(),
            book -> {
              // The witness of invariant 4 (one arbiter per node): from here until PostStop this
              // incarnation decides for the node; the partition test checks that these spans never
              // overlap across members.
              ctx.getLog()
                  .info(
                      "node {}: arbiter active on {} after recovering {} event(s)",
                      node,
                      ctx.getSystem().address(),
                      lastSequenceNumber(ctx));
              latest = book;
              ledgersChecked = false;
              ctx.getSelf().tell(new Tick(null));
            })
        .onSignal(
            PostStop.instance(),
            book ->
                ctx.getLog()
                    .info("node {}: arbiter stopped on {}", node, ctx.getSystem().address()))
        // Journal failures, for metrics (Pekko logs them and restarts the arbiter itself).
        .onSignal(
            RecoveryFailed.class,
            (book, f) -> metrics.journalFailed(node, "recovery", f.getFailure()))
        .onSignal(
            JournalPersistFailed.class,
            (book, f) -> metrics.journalFailed(node, "persist", f.getFailure()))
        .onSignal(
            JournalPersistRejected.class,
            (book, f) -> metrics.journalFailed(node, "persist_rejected", f.getFailure()))
        .onSignal(
            SnapshotFailed.class,
            (book, f) -> metrics.journalFailed(node, "snapshot", f.getFailure()))
        .build();
  }

  // ---- commands ----

  @Override
  public CommandHandler<Command, Event, ShareBook> commandHandler() {
    return newCommandHandlerBuilder()
        .forAnyState()
        .onCommand(StepDone.class, this::onStepDone)
        .onAnyCommand(this::onCommand);
  }

  private Effect<Event, ShareBook> onCommand(ShareBook book, Command command) {
    if (command instanceof GetBook get) {
      // Answered at once, even during a round: the book is what is persisted, and a reader
      // (the API's views) must not wait for other pods' decisions.
      Instant now = clock.now();
      get.replyTo().tell(new BookView(book, now, book.nextTimer(now).orElse(null)));
      return Effect().none();
    }
    if (busy) {
      stashedAt.putIfAbsent(command, System.nanoTime());
      return Effect().stash();
    }
    Long stashed = stashedAt.remove(command);
    arrived = stashed != null ? stashed : System.nanoTime();
    if (command instanceof Tick tick) {
      return round(Effect().none(), tick.replyTo(), null);
    }
    if (command instanceof SetGpus set) {
      if (set.gpus().equals(book.gpus())) {
        return round(Effect().none(), set.replyTo(), null);
      }
      String stranded = strandedBy(book, set.gpus());
      if (stranded != null) {
        set.replyTo().tell(new Outcome(null, "CONFLICT", stranded));
        return Effect().none();
      }
      return round(Effect().persist(new GpusSet(set.gpus())), set.replyTo(), null);
    }
    if (command instanceof ApplyPolicy apply) {
      if (apply.policy() == book.policy() && apply.qos().equals(book.qos())) {
        return round(Effect().none(), apply.replyTo(), null);
      }
      return round(
          Effect().persist(new PolicyApplied(apply.policy(), apply.qos())), apply.replyTo(), null);
    }
    if (command instanceof AddPod add) {
      String pod = add.key().entityId();
      if (book.isMember(pod)) {
        return round(Effect().none(), add.replyTo(), pod);
      }
      outbox.add(notice(pod, List.of(), List.of()));
      return round(Effect().persist(new PodAdded(add.key(), add.spec())), add.replyTo(), pod);
    }
    if (command instanceof RemovePod remove) {
      return onRemove(book, remove.pod(), remove.replyTo());
    }
    if (command instanceof Demand demand) {
      return onDemand(book, demand);
    }
    if (command instanceof Release release) {
      return onRelease(book, release);
    }
    if (command instanceof Reconcile reconcile) {
      return onReconcile(book, reconcile);
    }
    throw new IllegalArgumentException("unexpected command " + command);
  }

  private Effect<Event, ShareBook> onRemove(ShareBook book, String pod, ActorRef<Outcome> replyTo) {
    if (!book.isMember(pod)) {
      return round(Effect().none(), replyTo, null);
    }
    afterRemoval(book, pod);
    return round(persistCounted(book, new PodRemoved(pod, clock.now())), replyTo, null);
  }

  /** What follows a pod's removal: its share freed, the pod told it is gone. */
  private void afterRemoval(ShareBook book, String pod) {
    PodKey key = book.members().get(pod).key();
    ShareBook.Holding held = book.holdings().get(pod);
    if (held != null) {
      outbox.add(free(book, held));
    }
    PodStatus gone =
        new PodStatus(
            key, node, book.members().get(pod).spec(), null, null, null, null, book.revision() + 1);
    outbox.add(
        new Fire(
            "tell " + pod + " it is deleted",
            () -> peers.notifyPod(key, new PodNotice(gone, List.of(), List.of(), true))));
  }

  private Effect<Event, ShareBook> onDemand(ShareBook book, Demand demand) {
    String pod = demand.pod();
    Outcome refused = refuseUnlessSharePool(book, pod, "raise demand for");
    if (refused != null) {
      demand.replyTo().tell(refused);
      return Effect().none();
    }
    if (book.state(pod) != PodState.HIBERNATION) {
      return round(Effect().none(), demand.replyTo(), pod);
    }
    Instant now = clock.now();
    Enqueued enqueued = new Enqueued(pod, now);
    Reserve immediate = immediateGrant(book, enqueued, now);
    if (immediate != null) {
      // The pod would be granted by the very next decision: reserve first, then persist its
      // Enqueued and Granted in one write, and tell the pod once (Hibernation → Running).
      join(demand.replyTo(), pod);
      start(immediate);
      return Effect().none();
    }
    outbox.add(notice(pod, List.of(), List.of()));
    return round(persistCounted(book, enqueued), demand.replyTo(), pod);
  }

  /**
   * The reservation for {@code enqueued}'s pod when, once queued, it is what the arbiter would
   * decide next (a grant of this pod) and nothing else is pending; otherwise null. Same decision,
   * same decision id as the ordinary path (enqueue, then decide): only the writes are fewer.
   */
  private Reserve immediateGrant(ShareBook book, Enqueued enqueued, Instant now) {
    if (!ledgersChecked || !outbox.isEmpty()) {
      return null;
    }
    ShareBook queued = apply(book, enqueued);
    Optional<ShareBook.Decision> next = queued.next(now, choice);
    if (next.isEmpty()
        || !(next.get() instanceof ShareBook.Grant grant)
        || !grant.pod().equals(enqueued.pod())) {
      return null;
    }
    return new Reserve(
        grant,
        queued.nextDecisionId(),
        queued.slot(grant.gpu()).orElseThrow().uuid(),
        queued.members().get(grant.pod()).spec().limits(),
        enqueued);
  }

  private Effect<Event, ShareBook> onRelease(ShareBook book, Release release) {
    String pod = release.pod();
    Outcome refused = refuseUnlessSharePool(book, pod, "release");
    if (refused != null) {
      release.replyTo().tell(refused);
      return Effect().none();
    }
    PodState state = book.state(pod);
    if (state == PodState.READY && release.reason() == null) {
      outbox.add(notice(pod, List.of(), List.of()));
      return round(persistCounted(book, new Withdrawn(pod, clock.now())), release.replyTo(), pod);
    }
    if (state == PodState.RUNNING) {
      outbox.add(free(book, book.holdings().get(pod)));
      outbox.add(
          notice(pod, release.note() == null ? List.of() : List.of(release.note()), List.of()));
      return round(
          persistCounted(book, new Released(pod, clock.now(), release.reason())),
          release.replyTo(),
          pod);
    }
    return round(Effect().none(), release.replyTo(), pod);
  }

  /** Why a new GPU list would strand a holding (its GPU gone or another device), or null. */
  private String strandedBy(ShareBook book, List<ShareBook.GpuSlot> gpus) {
    for (Map.Entry<String, ShareBook.Holding> e : book.holdings().entrySet()) {
      ShareBook.GpuSlot was = book.slot(e.getValue().gpu()).orElseThrow();
      boolean kept =
          gpus.stream().anyMatch(g -> g.index() == was.index() && g.uuid().equals(was.uuid()));
      if (!kept) {
        return "GPU "
            + was.index()
            + " ("
            + was.uuid()
            + ") of node "
            + node
            + " is held by "
            + book.members().get(e.getKey()).key().ref()
            + "; it cannot be removed while in use";
      }
    }
    return null;
  }

  private Outcome refuseUnlessSharePool(ShareBook book, String pod, String what) {
    if (!book.isMember(pod)) {
      return new Outcome(null, "NOT_FOUND", "pod " + pod + " is not bound to node " + node);
    }
    if (!book.isSharePoolPod(pod)) {
      PodSharing spec = book.members().get(pod).spec();
      String why =
          spec.kind() != PodSharing.Kind.SHARED
              ? "it does not ask for a GPU share (no alibabacloud.com/gpu-core.percentage)"
              : spec.policy() == SharePolicy.STATIC
                  ? "it is a static pod, pinned for its whole life (no demand or release)"
                  : "node " + node + " has policy " + book.policy() + ", not share-pool";
      return new Outcome(
          book.status(pod).orElse(null),
          "CONFLICT",
          "cannot " + what + " pod " + book.members().get(pod).key().ref() + ": " + why);
    }
    return null;
  }

  private Effect<Event, ShareBook> onReconcile(ShareBook book, Reconcile reconcile) {
    Map<String, BoundPod> bound = new HashMap<>();
    reconcile.bound().forEach(b -> bound.put(b.key().entityId(), b));
    List<Event> events = new ArrayList<>();
    Instant now = clock.now();
    for (String pod : book.members().keySet()) {
      if (!bound.containsKey(pod)) {
        afterRemoval(book, pod);
        events.add(new PodRemoved(pod, now));
      }
    }
    for (BoundPod b : reconcile.bound()) {
      if (!book.isMember(b.key().entityId())) {
        events.add(new PodAdded(b.key(), b.spec()));
      }
    }
    // Every pod hears its status again once the ledgers are checked.
    ledgersChecked = false;
    return round(
        events.isEmpty()
            ? Effect().none()
            : Effect().persist(events).thenRun(b -> events.forEach(e -> count(book, e))),
        reconcile.replyTo(),
        null);
  }

  // ---- rounds ----

  /** Runs {@code effect}, then continues the round; {@code replyTo} is answered when it ends. */
  private Effect<Event, ShareBook> round(
      org.apache.pekko.persistence.typed.javadsl.EffectBuilder<Event, ShareBook> effect,
      ActorRef<Outcome> replyTo,
      String pod) {
    join(replyTo, pod);
    return effect.thenRun(this::proceed).thenUnstashAll();
  }

  /** Starts a round for the command being handled: {@code replyTo} is answered when it ends. */
  private void join(ActorRef<Outcome> replyTo, String pod) {
    if (replyTo != null) {
      waiters.add(new Waiter(replyTo, pod));
    }
    roundArrivals.add(arrived);
    refusals = 0;
  }

  private void proceed(ShareBook book) {
    latest = book;
    if (busy) {
      return;
    }
    if (!ledgersChecked) {
      start(new CheckLedgers());
      return;
    }
    if (!outbox.isEmpty()) {
      Step head = outbox.poll();
      if (head instanceof Fire first && outbox.peek() instanceof Fire) {
        List<Fire> fires = new ArrayList<>(List.of(first));
        while (outbox.peek() instanceof Fire f) {
          fires.add(f);
          outbox.poll();
        }
        head = new Fires(fires);
      }
      start(head);
      return;
    }
    Instant now = clock.now();
    Optional<ShareBook.Decision> next = refusals > 3 ? Optional.empty() : book.next(now, choice);
    if (next.isEmpty()) {
      settle(book, now);
      return;
    }
    ShareBook.Decision decision = next.get();
    if (decision instanceof ShareBook.Grant grant) {
      Share limits = book.members().get(grant.pod()).spec().limits();
      start(
          new Reserve(
              decision,
              book.nextDecisionId(),
              book.slot(grant.gpu()).orElseThrow().uuid(),
              limits));
    } else if (decision instanceof ShareBook.Pin pin) {
      Share requests = book.members().get(pin.pod()).spec().requests();
      start(
          new Reserve(
              decision,
              book.nextDecisionId(),
              book.slot(pin.gpu()).orElseThrow().uuid(),
              requests));
    } else {
      start(new Persist(decision));
    }
  }

  private void start(Step step) {
    busy = true;
    CompletionStage<?> stage;
    try {
      stage = run(step);
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    ctx.pipeToSelf(stage, (result, failure) -> new StepDone(step, result, failure));
  }

  private CompletionStage<?> run(Step step) {
    if (step instanceof Reserve r) {
      String pod =
          r.decision() instanceof ShareBook.Grant g
              ? g.pod()
              : ((ShareBook.Pin) r.decision()).pod();
      return peers.reserve(r.uuid(), r.decisionId(), pod, r.share());
    }
    if (step instanceof CheckLedgers) {
      List<CompletableFuture<LedgerSnapshot>> fetches = new ArrayList<>();
      for (ShareBook.GpuSlot slot : latest.gpus()) {
        fetches.add(peers.ledger(slot.uuid()).toCompletableFuture());
      }
      return CompletableFuture.allOf(fetches.toArray(CompletableFuture[]::new))
          .thenApply(v -> fetches.stream().map(CompletableFuture::join).toList());
    }
    if (step instanceof Fire f) {
      return f.action().get();
    }
    if (step instanceof Fires fs) {
      List<CompletableFuture<?>> sent = new ArrayList<>();
      for (Fire f : fs.fires()) {
        CompletableFuture<?> one;
        try {
          one = f.action().get().toCompletableFuture();
        } catch (RuntimeException e) {
          one = CompletableFuture.failedFuture(e);
        }
        // Each failure is reported on its own; the others still count as done.
        sent.add(
            one.handle(
                (r, e) -> {
                  if (e != null) {
                    ctx.getLog().warn("node {}: step failed: {}", node, f.what(), e);
                  }
                  return null;
                }));
      }
      return CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new));
    }
    return CompletableFuture.completedFuture(null);
  }

  private Effect<Event, ShareBook> onStepDone(ShareBook book, StepDone done) {
    busy = false;
    Step step = done.step();
    if (step instanceof CheckLedgers && done.failure() != null) {
      ctx.getLog().warn("node {}: cannot read the GPU ledgers; retrying", node, done.failure());
      timers.startSingleTimer("look-again", new Tick(null), Duration.ofSeconds(1));
      return Effect().none().thenUnstashAll();
    }
    if (step instanceof CheckLedgers) {
      @SuppressWarnings("unchecked")
      List<LedgerSnapshot> ledgers = (List<LedgerSnapshot>) done.result();
      repair(book, ledgers);
      return Effect().none().thenRun(this::proceed).thenUnstashAll();
    }
    if (done.failure() != null) {
      ctx.getLog().warn("node {}: step failed: {}", node, describe(step), done.failure());
      if (step instanceof Reserve r) {
        // The reservation's fate is unknown: the ledger check will free or keep it.
        ledgersChecked = false;
        refusals++;
        if (r.enqueued() != null) {
          return enqueueInstead(book, r);
        }
      }
      return Effect().none().thenRun(this::proceed).thenUnstashAll();
    }
    if (step instanceof Reserve r) {
      return onReserved(book, r, (LedgerReply) done.result());
    }
    if (step instanceof Persist p) {
      return persistDecision(book, p.decision());
    }
    return Effect().none().thenRun(this::proceed).thenUnstashAll();
  }

  private Effect<Event, ShareBook> onReserved(ShareBook book, Reserve r, LedgerReply reply) {
    Instant now = clock.now();
    if (!reply.reserved()) {
      ctx.getLog()
          .warn("node {}: GPU {} refused {}: {}", node, r.uuid(), r.decisionId(), reply.reason());
      refusals++;
      ledgersChecked = false;
      if (r.enqueued() != null) {
        return enqueueInstead(book, r);
      }
      return Effect().none().thenRun(this::proceed).thenUnstashAll();
    }
    refusals = 0;
    if (r.decision() instanceof ShareBook.Grant g) {
      outbox.add(notice(g.pod(), List.of(), List.of()));
      Granted granted = new Granted(r.decisionId(), g.pod(), g.gpu(), now);
      if (r.enqueued() != null) {
        List<Event> both = List.of(r.enqueued(), granted);
        return Effect()
            .persist(both)
            .thenRun(after -> both.forEach(e -> count(book, e)))
            .thenRun(this::proceed)
            .thenUnstashAll();
      }
      return persistCounted(book, granted).thenRun(this::proceed).thenUnstashAll();
    }
    ShareBook.Pin pin = (ShareBook.Pin) r.decision();
    outbox.add(
        notice(pin.pod(), List.of(), List.of(PodNotes.pinnedCondition(pin.gpu(), r.uuid(), now))));
    return persistCounted(book, new Pinned(r.decisionId(), pin.pod(), pin.gpu(), now))
        .thenRun(this::proceed)
        .thenUnstashAll();
  }

  /** An immediate grant did not happen: the demand is queued as usual, and the round goes on. */
  private Effect<Event, ShareBook> enqueueInstead(ShareBook book, Reserve r) {
    outbox.add(notice(r.enqueued().pod(), List.of(), List.of()));
    return persistCounted(book, r.enqueued()).thenRun(this::proceed).thenUnstashAll();
  }

  private Effect<Event, ShareBook> persistDecision(ShareBook book, ShareBook.Decision decision) {
    Instant now = clock.now();
    if (decision instanceof ShareBook.Preempt p) {
      PodKey preemptor = book.members().get(p.pod()).key();
      List<PodNotes.EventNote> preemptorEvents = new ArrayList<>();
      List<PodNotes.ConditionNote> preemptorConditions = new ArrayList<>();
      for (String victim : p.victims()) {
        PodKey victimKey = book.members().get(victim).key();
        outbox.add(free(book, book.holdings().get(victim)));
        outbox.add(
            notice(
                victim,
                List.of(PodNotes.victimEvent(preemptor, now)),
                List.of(PodNotes.victimCondition(preemptor, now))));
        preemptorEvents.add(PodNotes.preemptorEvent(victimKey, now));
        preemptorConditions.add(PodNotes.preemptorCondition(victimKey, now));
      }
      outbox.add(notice(p.pod(), preemptorEvents, preemptorConditions));
      ctx.getLog().info("node {}: {} preempts {} on GPU {}", node, p.pod(), p.victims(), p.gpu());
      List<PodKey> victimKeys = p.victims().stream().map(v -> book.members().get(v).key()).toList();
      return persistCounted(
              book, new Preempted(book.nextDecisionId(), p.pod(), p.gpu(), p.victims(), now))
          .thenRun(b -> metrics.preempted(node, preemptor, victimKeys))
          .thenRun(this::proceed)
          .thenUnstashAll();
    }
    ShareBook.ReportFragmented r = (ShareBook.ReportFragmented) decision;
    outbox.add(
        notice(
            r.pod(),
            List.of(PodNotes.fragmentedEvent(r.message(), now)),
            List.of(PodNotes.fragmentedCondition(r.message(), now))));
    return persistCounted(book, new PinDeferred(r.pod(), r.message(), now))
        .thenRun(this::proceed)
        .thenUnstashAll();
  }

  /**
   * Reconciliation with the GPU ledgers. The arbiter's journal is the authority on who holds what:
   * a reservation it never persisted (a crash between the GPU's answer and the grant's persistence)
   * is freed, and a holding the ledger lacks is reserved again. Then every pod is told its status,
   * so pods that missed a notice catch up.
   */
  private void repair(ShareBook book, List<LedgerSnapshot> ledgers) {
    Map<String, LedgerSnapshot> byUuid = new HashMap<>();
    ledgers.forEach(l -> byUuid.put(l.uuid(), l));
    Set<String> held = new TreeSet<>();
    for (ShareBook.Holding h : book.holdings().values()) {
      held.add(h.decisionId());
    }
    for (LedgerSnapshot ledger : ledgers) {
      for (Map.Entry<String, LedgerEntry> r : ledger.reservations().entrySet()) {
        if (!held.contains(r.getKey())) {
          ctx.getLog()
              .info(
                  "node {}: freeing unpersisted reservation {} on {}",
                  node,
                  r.getKey(),
                  ledger.uuid());
          outbox.add(new Fire("free " + r.getKey(), () -> peers.free(ledger.uuid(), r.getKey())));
        }
      }
    }
    book.holdings()
        .forEach(
            (pod, h) -> {
              String uuid = book.slot(h.gpu()).orElseThrow().uuid();
              LedgerSnapshot ledger = byUuid.get(uuid);
              if (ledger == null || !ledger.reservations().containsKey(h.decisionId())) {
                ctx.getLog()
                    .warn(
                        "node {}: restoring reservation {} of {} on {}",
                        node,
                        h.decisionId(),
                        pod,
                        uuid);
                outbox.add(
                    new Fire(
                        "restore " + h.decisionId(),
                        () -> peers.reserve(uuid, h.decisionId(), pod, h.share())));
              }
            });
    for (String pod : book.members().keySet()) {
      outbox.add(notice(pod, List.of(), List.of()));
    }
    ledgersChecked = true;
  }

  private void settle(ShareBook book, Instant now) {
    for (Waiter w : waiters) {
      Outcome outcome =
          w.pod() == null
              ? Outcome.DONE
              : book.status(w.pod())
                  .map(s -> new Outcome(s, null, null))
                  .orElse(new Outcome(null, "NOT_FOUND", "pod " + w.pod() + " is gone"));
      w.replyTo().tell(outcome);
    }
    waiters.clear();
    long end = System.nanoTime();
    for (long start : roundArrivals) {
      metrics.roundEnded(node, Duration.ofNanos(end - start));
    }
    roundArrivals.clear();
    timers.cancel("look-again");
    if (!clock.manual()) {
      book.nextTimer(now)
          .ifPresent(
              at ->
                  timers.startSingleTimer(
                      "look-again", new Tick(null), Duration.between(now, at).plusMillis(1)));
    }
  }

  // ---- helpers ----

  /**
   * Persists {@code event} (applied to {@code before}), then tells the metrics of the decision or
   * removal it records.
   */
  private org.apache.pekko.persistence.typed.javadsl.EffectBuilder<Event, ShareBook> persistCounted(
      ShareBook before, Event event) {
    return Effect().persist(event).thenRun(after -> count(before, event));
  }

  /** Tells the metrics of the decision or removal that {@code event} records, once persisted. */
  private void count(ShareBook before, Event event) {
    if (event instanceof PodRemoved r) {
      ShareBook.Member gone = before.members().get(r.pod());
      if (gone != null) {
        metrics.podRemoved(node, gone.key());
      }
      return;
    }
    String kind = null;
    if (event instanceof Enqueued) {
      kind = "enqueue";
    } else if (event instanceof Withdrawn) {
      kind = "withdraw";
    } else if (event instanceof Granted) {
      kind = "grant";
    } else if (event instanceof Released e) {
      kind = e.reason() == null ? "release" : "revoke";
    } else if (event instanceof Preempted) {
      kind = "preempt";
    } else if (event instanceof Pinned) {
      kind = "pin";
    } else if (event instanceof PinDeferred) {
      kind = "pin_deferred";
    }
    if (kind != null) {
      metrics.decided(node, kind);
    }
  }

  /** A notice with the pod's status as it will be once the pending event is applied. */
  private Fire notice(
      String pod, List<PodNotes.EventNote> events, List<PodNotes.ConditionNote> conditions) {
    return new Fire(
        "tell " + pod,
        () -> {
          Optional<PodStatus> status = latest == null ? Optional.empty() : latest.status(pod);
          if (status.isEmpty()) {
            return CompletableFuture.completedFuture(Done.getInstance());
          }
          return peers.notifyPod(
              status.get().key(), new PodNotice(status.get(), events, conditions, false));
        });
  }

  private Fire free(ShareBook book, ShareBook.Holding held) {
    String uuid = book.slot(held.gpu()).orElseThrow().uuid();
    return new Fire("free " + held.decisionId(), () -> peers.free(uuid, held.decisionId()));
  }

  private static String describe(Step step) {
    if (step instanceof Fires fs) {
      return fs.fires().stream().map(Fire::what).toList().toString();
    }
    return step instanceof Fire f ? f.what() : step.toString();
  }

  // ---- events ----

  @Override
  public EventHandler<ShareBook, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(NodeArbiter::apply);
  }

  static ShareBook apply(ShareBook book, Event event) {
    if (event instanceof GpusSet e) {
      return book.withGpus(e.gpus());
    }
    if (event instanceof PolicyApplied e) {
      return book.withPolicy(e.policy(), e.qos());
    }
    if (event instanceof PodAdded e) {
      return book.addPod(e.key(), e.spec());
    }
    if (event instanceof PodRemoved e) {
      return book.removePod(e.pod());
    }
    if (event instanceof Enqueued e) {
      return book.enqueue(e.pod(), e.at());
    }
    if (event instanceof Withdrawn e) {
      return book.withdraw(e.pod());
    }
    if (event instanceof Granted e) {
      return book.grant(e.decisionId(), e.pod(), e.gpu(), e.at());
    }
    if (event instanceof Released e) {
      return book.release(e.pod());
    }
    if (event instanceof Preempted e) {
      return book.preempt(e.victims(), e.at());
    }
    if (event instanceof Pinned e) {
      return book.pin(e.decisionId(), e.pod(), e.gpu(), e.at());
    }
    if (event instanceof PinDeferred e) {
      return book.markFragmented(e.pod());
    }
    throw new IllegalArgumentException("unknown event " + event);
  }
}
