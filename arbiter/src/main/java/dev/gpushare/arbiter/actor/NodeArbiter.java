package dev.gpushare.arbiter.actor;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.HistoryTags;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodNotes.ConditionNote;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.actor.ArbiterPeers.PodNotice;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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
 * The per-node decision maker (ARCHITECTURE.md §2) and the single writer of every decision of its
 * node: entering and leaving the ready queue, grants with their GPU, releases and revocations,
 * preemptions, pins. Its state is a {@link ShareBook}, rebuilt from its events; invariants 1–3
 * (ARCHITECTURE.md §6) are properties of that book.
 *
 * <p><b>Group commit.</b> A command does not write by itself: it joins the next <em>round</em>. A
 * round takes every command that arrived since the last one, applies them to the book in order,
 * then decides until nothing is left to decide (the queue head, a GPU by the placement rule, a
 * preemption, a pin), and writes all the resulting events in one atomic write. Only then are the
 * commands answered, each from the book after the write — an answer is the decision itself, and it
 * is durable. Commands that arrive while a write is in flight wait (Pekko stashes them) and form
 * the next round, so under load one write carries many decisions.
 *
 * <p><b>Followers.</b> After the write, off the answer's path, {@link ArbiterPeers} hears which
 * pods changed and what each pod's record must keep (Events, conditions). A pod's actor that missed
 * it asks again ({@link Resync}); after its own recovery the arbiter tells every pod with notes
 * again. GPU actors keep only their own facts: nothing here waits for them.
 *
 * <p><b>Reads</b> ({@link GetBook}, {@link GetPod}) are answered at once from the book as written,
 * so a view is one consistent snapshot and never waits for other pods' rounds.
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
  public record Release(String pod, String reason, EventNote note, ActorRef<Outcome> replyTo)
      implements Command {
    /** The pod's own release (the data plane's DELETE .../demand). */
    public Release(String pod, ActorRef<Outcome> replyTo) {
      this(pod, null, null, replyTo);
    }
  }

  /**
   * The member's report on a pod the book says to checkpoint ({@code ShareBook.suspending()}; the
   * member follows the book, reading it as its telemetry does): {@code pids} held in {@code bytes}
   * of host memory, or not ({@code message} says why; the signal contract applies).
   */
  public record ReportSuspended(
      String pod,
      boolean held,
      List<Integer> pids,
      long bytes,
      String message,
      ActorRef<Outcome> replyTo)
      implements Command {}

  /**
   * The member restored a checkpointed pod's processes ({@code reason} null), or gave the
   * checkpoint up ({@code reason}: the process exited, the restore kept failing, it was lost).
   */
  public record ReportRestored(String pod, String reason, ActorRef<Outcome> replyTo)
      implements Command {}

  /**
   * Make the arbiter's pods exactly {@code bound} (what the NodeActor says is bound): adds the
   * missing, removes the extra. Sent at start-up, so a crash between binding and telling the
   * arbiter leaves nothing behind.
   */
  public record Reconcile(List<BoundPod> bound, ActorRef<Outcome> replyTo) implements Command {}

  public record BoundPod(PodKey key, PodSharing spec) implements JsonSerializable {}

  /** Look again now (time has passed); {@code replyTo} may be {@code null} (a timer). */
  public record Tick(ActorRef<Outcome> replyTo) implements Command {}

  /** The whole book, as written. */
  public record GetBook(ActorRef<BookView> replyTo) implements Command {}

  /** One pod's decision state, as written: answered with its {@link Outcome} or NOT_FOUND. */
  public record GetPod(String pod, ActorRef<Outcome> replyTo) implements Command {}

  /**
   * A pod's actor recovered and may have missed a notice: tell it its status and the Events and
   * conditions the book keeps for it. Unknown pods are ignored.
   */
  public record Resync(String pod) implements Command {}

  /** The book as of {@code now}, and when the arbiter must look again by itself. */
  public record BookView(ShareBook book, Instant now, Instant nextTimer)
      implements JsonSerializable {}

  /**
   * The answer to a command once its round is written, or to a read: the pod's status, 1-based
   * queue position (Ready only) and the arbiter's time of the answer — all from one book — or an
   * error. {@code error} is one of {@code NOT_FOUND}, {@code CONFLICT}. {@code events} and {@code
   * conditions}: the Events and conditions the same book keeps for the pod (its most recent
   * decisions'), so that an answer shows what its own decision said even before the pod's record
   * has followed.
   */
  public record Outcome(
      PodStatus status,
      Integer queuePosition,
      Instant at,
      Refusal refusal,
      List<EventNote> events,
      List<ConditionNote> conditions)
      implements JsonSerializable {
    public static final Outcome DONE = new Outcome(null, null, null, null);

    public Outcome {
      events = events == null ? List.of() : List.copyOf(events);
      conditions = conditions == null ? List.of() : List.copyOf(conditions);
    }

    public Outcome(PodStatus status, Integer queuePosition, Instant at, Refusal refusal) {
      this(status, queuePosition, at, refusal, List.of(), List.of());
    }

    public boolean ok() {
      return refusal == null;
    }

    /** What was refused and why, or null when {@link #ok()}. */
    public String detail() {
      return refusal == null ? null : refusal.detail();
    }

    public static Outcome of(ShareBook book, String pod, Instant at) {
      ShareBook.Member m = book.members().get(pod);
      return book.status(pod)
          .map(
              s ->
                  new Outcome(
                      s,
                      book.queue().position(pod).orElse(null),
                      at,
                      null,
                      m == null ? List.of() : m.events(),
                      m == null ? List.of() : m.conditions()))
          .orElse(notFound("pod " + pod + " is not bound to node " + book.node()));
    }

    /** No such pod on the node: {@link Refusal.Kind#NOT_FOUND}. */
    static Outcome notFound(String detail) {
      return new Outcome(null, null, null, Refusal.notFound(policyField(null, detail)));
    }

    /**
     * The node's state forbids it: {@link Refusal.Kind#CONFLICT}, naming the pod's policy label
     * (what decides whether a pod takes part in arbitration), with its value when the pod has one.
     */
    static Outcome conflict(PodStatus status, String detail) {
      return new Outcome(status, null, null, Refusal.conflict(policyField(status, detail)));
    }

    private static FieldError policyField(PodStatus status, String detail) {
      String value =
          status != null && status.spec() instanceof PodSharing.Shared shared
              ? shared.policy().label()
              : null;
      return new FieldError("metadata.labels[" + SharePolicy.LABEL + "]", value, detail);
    }
  }

  /** Start the next round (sent to itself; never from outside). */
  private enum Flush implements Command {
    INSTANCE
  }

  // ---- events ----

  public sealed interface Event extends JsonSerializable {}

  public record GpusSet(List<ShareBook.GpuSlot> gpus) implements Event {}

  public record PolicyApplied(SharePolicy policy, QosConfig qos) implements Event {}

  public record PodAdded(PodKey key, PodSharing spec) implements Event {}

  public record PodRemoved(String pod, Instant at) implements Event {}

  /** Hibernation → Ready. A demand granted in the same decision writes only its {@link Granted}. */
  public record Enqueued(String pod, Instant at) implements Event {}

  public record Withdrawn(String pod, Instant at) implements Event {}

  /** → Running on {@code gpu}: from the queue head, or straight from Hibernation. */
  public record Granted(String decisionId, String pod, int gpu, Instant at) implements Event {}

  /**
   * @param reason null when the pod released its share itself; {@code idle} or {@code memory} when
   *     the telemetry rules took it back (added in 0.1: older events read as null)
   * @param note the Event the pod gets for a revocation (added in 0.2: older events read as null)
   */
  public record Released(String pod, Instant at, String reason, EventNote note) implements Event {
    public Released(String pod, Instant at) {
      this(pod, at, null, null);
    }
  }

  public record Preempted(String decisionId, String by, int gpu, List<String> victims, Instant at)
      implements Event {}

  public record Pinned(String decisionId, String pod, int gpu, Instant at) implements Event {}

  public record PinDeferred(String pod, String message, Instant at) implements Event {}

  /**
   * The member is to checkpoint {@code pods} before their shares on {@code gpu} are freed: for the
   * preemptor {@code by} ({@code reason} preempt) or for an idle release (by null).
   */
  public record SuspendRequested(
      String decisionId, String by, int gpu, List<String> pods, String reason, Instant at)
      implements Event {}

  /** A suspending pod's share is freed: its GPU state held in host memory, or not (why). */
  public record CheckpointReported(
      String pod, boolean held, List<Integer> pids, long bytes, String message, Instant at)
      implements Event {}

  /** A pod's checkpoint is over: restored (reason null) or given up. */
  public record CheckpointCleared(String pod, String reason, Instant at) implements Event {}

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

  /** Commands waiting for the next round, with their arrival (System.nanoTime, for metrics). */
  private List<Arrival> pending = new ArrayList<>();

  private boolean flushQueued;

  private record Arrival(Command command, long at) {}

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

  /**
   * Each event about pods carries the history tag of every pod it concerns ({@link HistoryTags}): a
   * preemption its victims' and its preemptor's, a suspension its pods' and the preemptor's. The
   * GPUs and the policy in force concern no one pod and carry none. Tags are not part of the
   * payload.
   */
  @Override
  public Set<String> tagsFor(Event event) {
    return HistoryTags.ofEntityIds(concerning(event));
  }

  /** The pods {@code event} is about: those whose state it changes, and who caused it. */
  static List<String> concerning(Event event) {
    if (event instanceof SuspendRequested e && e.by() != null) {
      List<String> pods = new ArrayList<>(e.pods());
      pods.add(e.by());
      return pods;
    }
    return podsOf(event);
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
              // What the previous incarnation wrote may not have reached its followers.
              book.members()
                  .forEach(
                      (pod, m) -> {
                        peers.changed(m.key(), false);
                        if (!m.events().isEmpty() || !m.conditions().isEmpty()) {
                          peers.record(m.key(), resyncNotice(book, m));
                        }
                      });
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
    return newCommandHandlerBuilder().forAnyState().onAnyCommand(this::onCommand);
  }

  private Effect<Event, ShareBook> onCommand(ShareBook book, Command command) {
    if (command instanceof GetBook get) {
      Instant now = clock.now();
      get.replyTo().tell(new BookView(book, now, book.nextTimer(now).orElse(null)));
      return Effect().none();
    }
    if (command instanceof GetPod get) {
      get.replyTo().tell(Outcome.of(book, get.pod(), clock.now()));
      return Effect().none();
    }
    if (command instanceof Resync resync) {
      ShareBook.Member m = book.members().get(resync.pod());
      if (m != null) {
        peers.record(m.key(), resyncNotice(book, m));
      }
      return Effect().none();
    }
    if (command == Flush.INSTANCE) {
      return round(book);
    }
    pending.add(new Arrival(command, System.nanoTime()));
    if (!flushQueued) {
      // Behind whatever is already in the mailbox (or stashed during a write): those join too.
      flushQueued = true;
      ctx.getSelf().tell(Flush.INSTANCE);
    }
    return Effect().none();
  }

  /** Decides every pending command and what follows, writes it all at once, then answers. */
  private Effect<Event, ShareBook> round(ShareBook before) {
    flushQueued = false;
    List<Arrival> batch = pending;
    pending = new ArrayList<>();
    Round round = new Round(before, clock.now());
    for (Arrival a : batch) {
      round.handle(a.command());
    }
    round.decide();
    if (round.events.isEmpty()) {
      round.finish(before, batch);
      return Effect().none();
    }
    return Effect().persist(round.events).thenRun(after -> round.finish(after, batch));
  }

  /** One round: the book as it goes, the events to write, the answers and notices to send after. */
  private final class Round {
    ShareBook book;
    final Instant now;
    final List<Event> events = new ArrayList<>();
    private final List<Answer> answers = new ArrayList<>();
    // Pods this round touched, in order: their key, notes, and whether they left the node.
    private final Map<String, Touched> touched = new LinkedHashMap<>();
    private final List<Runnable> counted = new ArrayList<>();

    Round(ShareBook book, Instant now) {
      this.book = book;
      this.now = now;
    }

    private record Answer(ActorRef<Outcome> replyTo, String pod, Outcome fixed) {}

    private final class Touched {
      final PodKey key;
      final List<EventNote> events = new ArrayList<>();
      final List<ConditionNote> conditions = new ArrayList<>();
      boolean added;
      boolean removed;
      PodStatus last;

      Touched(PodKey key) {
        this.key = key;
      }
    }

    void handle(Command command) {
      if (command instanceof Tick tick) {
        answer(tick.replyTo(), null, Outcome.DONE);
      } else if (command instanceof SetGpus set) {
        String stranded = set.gpus().equals(book.gpus()) ? null : strandedBy(book, set.gpus());
        if (stranded != null) {
          answer(set.replyTo(), null, Outcome.conflict(null, stranded));
          return;
        }
        if (!set.gpus().equals(book.gpus())) {
          write(new GpusSet(set.gpus()));
        }
        answer(set.replyTo(), null, Outcome.DONE);
      } else if (command instanceof ApplyPolicy apply) {
        if (apply.policy() != book.policy() || !apply.qos().equals(book.qos())) {
          write(new PolicyApplied(apply.policy(), apply.qos()));
        }
        answer(apply.replyTo(), null, Outcome.DONE);
      } else if (command instanceof AddPod add) {
        String pod = add.key().entityId();
        if (!book.isMember(pod)) {
          write(new PodAdded(add.key(), add.spec()));
        }
        answer(add.replyTo(), pod, null);
      } else if (command instanceof RemovePod remove) {
        if (book.isMember(remove.pod())) {
          write(new PodRemoved(remove.pod(), now));
        }
        answer(remove.replyTo(), null, Outcome.DONE);
      } else if (command instanceof Demand demand) {
        demand(demand);
      } else if (command instanceof Release release) {
        release(release);
      } else if (command instanceof Reconcile reconcile) {
        reconcile(reconcile);
      } else if (command instanceof ReportSuspended report) {
        ShareBook.Member m = book.members().get(report.pod());
        if (m == null
            || m.checkpoint() == null
            || m.checkpoint().phase() != ShareBook.Checkpoint.Phase.SUSPENDING) {
          answer(
              report.replyTo(),
              null,
              Outcome.conflict(
                  book.status(report.pod()).orElse(null),
                  "pod " + report.pod() + " is not being checkpointed on node " + node));
          return;
        }
        write(
            new CheckpointReported(
                report.pod(), report.held(), report.pids(), report.bytes(), report.message(), now));
        answer(report.replyTo(), report.pod(), null);
      } else if (command instanceof ReportRestored report) {
        ShareBook.Member m = book.members().get(report.pod());
        if (m != null && m.checkpoint() != null) {
          write(new CheckpointCleared(report.pod(), report.reason(), now));
        }
        answer(report.replyTo(), m == null ? null : report.pod(), m == null ? Outcome.DONE : null);
      } else {
        throw new IllegalArgumentException("unexpected command " + command);
      }
    }

    private void demand(Demand demand) {
      String pod = demand.pod();
      Outcome refused = refuseUnlessSharePool(book, pod, "raise demand for");
      if (refused != null) {
        answer(demand.replyTo(), null, refused);
        return;
      }
      if (book.state(pod) == PodState.HIBERNATION) {
        // A demand the very next decision would grant (nobody waits, a GPU fits) is that grant
        // alone: same decision, same decision id, one event instead of Enqueued + Granted.
        Enqueued enqueued = new Enqueued(pod, now);
        ShareBook queued = apply(book, enqueued);
        Optional<ShareBook.Decision> next =
            book.queue().isEmpty() ? queued.next(now, choice) : null;
        if (next != null
            && next.isPresent()
            && next.get() instanceof ShareBook.Grant grant
            && grant.pod().equals(pod)) {
          write(new Granted(book.nextDecisionId(), pod, grant.gpu(), now));
        } else {
          write(enqueued);
        }
      }
      answer(demand.replyTo(), pod, null);
    }

    private void release(Release release) {
      String pod = release.pod();
      Outcome refused = refuseUnlessSharePool(book, pod, "release");
      if (refused != null) {
        answer(release.replyTo(), null, refused);
        return;
      }
      PodState state = book.state(pod);
      if (state == PodState.READY && release.reason() == null) {
        write(new Withdrawn(pod, now));
      } else if (state == PodState.RUNNING) {
        ShareBook.Member m = book.members().get(pod);
        boolean suspending =
            m.checkpoint() != null
                && m.checkpoint().phase() == ShareBook.Checkpoint.Phase.SUSPENDING;
        if (ShareBook.Checkpoint.IDLE.equals(release.reason()) && suspending) {
          // already being checkpointed: the member's report frees it
        } else if (ShareBook.Checkpoint.IDLE.equals(release.reason())
            && m.wantsCheckpoint()
            && m.checkpoint() == null) {
          write(
              new SuspendRequested(
                  book.nextDecisionId(),
                  null,
                  book.holdings().get(pod).gpu(),
                  List.of(pod),
                  ShareBook.Checkpoint.IDLE,
                  now));
        } else {
          write(new Released(pod, now, release.reason(), release.note()));
        }
      }
      answer(release.replyTo(), pod, null);
    }

    private void reconcile(Reconcile reconcile) {
      Map<String, BoundPod> bound = new HashMap<>();
      reconcile.bound().forEach(b -> bound.put(b.key().entityId(), b));
      for (String pod : List.copyOf(book.members().keySet())) {
        if (!bound.containsKey(pod)) {
          write(new PodRemoved(pod, now));
        }
      }
      for (BoundPod b : reconcile.bound()) {
        if (!book.isMember(b.key().entityId())) {
          write(new PodAdded(b.key(), b.spec()));
        }
      }
      answer(reconcile.replyTo(), null, Outcome.DONE);
    }

    /** Decides until nothing is left to decide (SPEC §5, §6). */
    void decide() {
      int guard = 4 * (book.members().size() + 2);
      for (Optional<ShareBook.Decision> d = book.next(now, choice);
          d.isPresent();
          d = book.next(now, choice)) {
        if (guard-- == 0) {
          ctx.getLog().error("node {}: arbitration does not settle; stopping this round", node);
          return;
        }
        ShareBook.Decision decision = d.get();
        if (decision instanceof ShareBook.Grant g) {
          write(new Granted(book.nextDecisionId(), g.pod(), g.gpu(), now));
        } else if (decision instanceof ShareBook.Preempt p) {
          PodKey preemptor = book.members().get(p.pod()).key();
          List<PodKey> victims =
              p.victims().stream().map(v -> book.members().get(v).key()).toList();
          ctx.getLog()
              .info("node {}: {} preempts {} on GPU {}", node, p.pod(), p.victims(), p.gpu());
          write(new Preempted(book.nextDecisionId(), p.pod(), p.gpu(), p.victims(), now));
          counted.add(() -> metrics.preempted(node, preemptor, victims));
        } else if (decision instanceof ShareBook.Suspend p) {
          List<String> signalled =
              p.victims().stream().filter(v -> !p.checkpointed().contains(v)).toList();
          ctx.getLog()
              .info(
                  "node {}: {} preempts {} on GPU {}, checkpointing {} first",
                  node,
                  p.pod(),
                  p.victims(),
                  p.gpu(),
                  p.checkpointed());
          if (!signalled.isEmpty()) {
            write(new Preempted(book.nextDecisionId(), p.pod(), p.gpu(), signalled, now));
          }
          write(
              new SuspendRequested(
                  book.nextDecisionId(),
                  p.pod(),
                  p.gpu(),
                  p.checkpointed(),
                  ShareBook.Checkpoint.PREEMPT,
                  now));
        } else if (decision instanceof ShareBook.ExpireSuspend e) {
          for (String pod : e.pods()) {
            write(
                new CheckpointReported(
                    pod,
                    false,
                    List.of(),
                    0,
                    "the node's member did not report within "
                        + ShareBook.SUSPEND_TIMEOUT.toSeconds()
                        + " s",
                    now));
          }
        } else if (decision instanceof ShareBook.Pin pin) {
          write(new Pinned(book.nextDecisionId(), pin.pod(), pin.gpu(), now));
        } else if (decision instanceof ShareBook.ReportFragmented r) {
          write(new PinDeferred(r.pod(), r.message(), now));
        }
      }
    }

    private void write(Event event) {
      ShareBook before = book;
      notesOf(before, event)
          .forEach(
              (pod, notes) -> {
                Touched t = touch(before, event, pod);
                t.events.addAll(notes.events());
                t.conditions.addAll(notes.conditions());
              });
      for (String pod : podsOf(event)) {
        Touched t = touch(before, event, pod);
        if (event instanceof PodAdded) {
          t.added = true;
        }
        if (event instanceof PodRemoved) {
          t.removed = true;
          t.last = before.status(pod).orElse(null);
        }
      }
      events.add(event);
      book = apply(before, event);
      String kind = kindOf(event);
      if (kind != null) {
        counted.add(() -> metrics.decided(node, kind));
      }
      if (event instanceof CheckpointReported r) {
        ShareBook.Member victim = before.members().get(r.pod());
        ShareBook.Checkpoint c = victim == null ? null : victim.checkpoint();
        ShareBook.Member by = c == null || c.by() == null ? null : before.members().get(c.by());
        if (by != null) {
          PodKey preemptor = by.key();
          List<PodKey> victims = List.of(victim.key());
          counted.add(() -> metrics.preempted(node, preemptor, victims));
        }
      }
      if (event instanceof PodRemoved r && before.members().get(r.pod()) != null) {
        PodKey gone = before.members().get(r.pod()).key();
        counted.add(() -> metrics.podRemoved(node, gone));
      }
    }

    private Touched touch(ShareBook before, Event event, String pod) {
      return touched.computeIfAbsent(
          pod,
          p ->
              new Touched(
                  event instanceof PodAdded added ? added.key() : before.members().get(p).key()));
    }

    private void answer(ActorRef<Outcome> replyTo, String pod, Outcome fixed) {
      if (replyTo != null) {
        answers.add(new Answer(replyTo, pod, fixed));
      }
    }

    /** After the write (or at once when nothing was written): answers, followers, timers. */
    void finish(ShareBook written, List<Arrival> batch) {
      counted.forEach(Runnable::run);
      long end = System.nanoTime();
      for (Arrival a : batch) {
        metrics.roundEnded(node, Duration.ofNanos(end - a.at()));
      }
      for (Answer a : answers) {
        a.replyTo().tell(a.fixed() != null ? a.fixed() : Outcome.of(written, a.pod(), now));
      }
      touched.forEach(
          (pod, t) -> {
            if (t.removed && !written.isMember(pod)) {
              PodStatus gone =
                  t.last == null
                      ? null
                      : new PodStatus(
                          t.key, node, t.last.spec(), null, null, null, null, written.revision());
              peers.record(t.key, new PodNotice(gone, t.events, t.conditions, true));
              peers.changed(t.key, true);
              return;
            }
            PodStatus status = written.status(pod).orElse(null);
            if (status == null) {
              return;
            }
            if (t.added || !t.events.isEmpty() || !t.conditions.isEmpty()) {
              peers.record(t.key, new PodNotice(status, t.events, t.conditions, false));
            }
            peers.changed(t.key, false);
          });
      timers.cancel("look-again");
      if (!clock.manual()) {
        written
            .nextTimer(now)
            .ifPresent(
                at ->
                    timers.startSingleTimer(
                        "look-again", new Tick(null), Duration.between(now, at).plusMillis(1)));
      }
    }
  }

  /** Everything the book keeps for {@code m}, for a pod that may have missed it. */
  private static PodNotice resyncNotice(ShareBook book, ShareBook.Member m) {
    return new PodNotice(
        book.status(m.key().entityId()).orElse(null), m.events(), m.conditions(), false);
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
      return Outcome.notFound("pod " + pod + " is not bound to node " + node);
    }
    if (!book.isSharePoolPod(pod)) {
      PodSharing spec = book.members().get(pod).spec();
      String why =
          !(spec instanceof PodSharing.Shared shared)
              ? "it does not ask for a GPU share (no alibabacloud.com/gpu-core.percentage)"
              : shared.policy() == SharePolicy.STATIC
                  ? "it is a static pod, pinned for its whole life (no demand or release)"
                  : "node " + node + " has policy " + book.policy() + ", not share-pool";
      return Outcome.conflict(
          book.status(pod).orElse(null),
          "cannot " + what + " pod " + book.members().get(pod).key().ref() + ": " + why);
    }
    return null;
  }

  /** The metrics' name of the decision {@code event} records, or null (not a decision). */
  private static String kindOf(Event event) {
    if (event instanceof Enqueued) {
      return "enqueue";
    } else if (event instanceof Withdrawn) {
      return "withdraw";
    } else if (event instanceof Granted) {
      return "grant";
    } else if (event instanceof Released e) {
      return e.reason() == null ? "release" : "revoke";
    } else if (event instanceof Preempted) {
      return "preempt";
    } else if (event instanceof Pinned) {
      return "pin";
    } else if (event instanceof PinDeferred) {
      return "pin_deferred";
    } else if (event instanceof SuspendRequested) {
      return "suspend";
    } else if (event instanceof CheckpointReported e) {
      return e.held() ? "checkpoint" : "checkpoint_failed";
    } else if (event instanceof CheckpointCleared e) {
      return e.reason() == null ? "restore" : "checkpoint_dropped";
    }
    return null;
  }

  /** The pods whose decision state {@code event} changes. */
  static List<String> podsOf(Event event) {
    if (event instanceof PodAdded e) {
      return List.of(e.key().entityId());
    } else if (event instanceof PodRemoved e) {
      return List.of(e.pod());
    } else if (event instanceof Enqueued e) {
      return List.of(e.pod());
    } else if (event instanceof Withdrawn e) {
      return List.of(e.pod());
    } else if (event instanceof Granted e) {
      return List.of(e.pod());
    } else if (event instanceof Released e) {
      return List.of(e.pod());
    } else if (event instanceof Preempted e) {
      List<String> pods = new ArrayList<>(e.victims());
      pods.add(e.by());
      return pods;
    } else if (event instanceof Pinned e) {
      return List.of(e.pod());
    } else if (event instanceof PinDeferred e) {
      return List.of(e.pod());
    } else if (event instanceof SuspendRequested e) {
      return e.pods();
    } else if (event instanceof CheckpointReported e) {
      return List.of(e.pod());
    } else if (event instanceof CheckpointCleared e) {
      return List.of(e.pod());
    }
    return List.of();
  }

  /** The Events and conditions of one pod that a decision makes visible. */
  record Notes(List<EventNote> events, List<ConditionNote> conditions) {}

  /**
   * What users see on each pod of the decision {@code event}, applied to {@code before} (SPEC §7):
   * the one place that turns decisions into Events and conditions, used both for the book's recent
   * notes (so recovery rebuilds them) and for the notices after a write.
   */
  static Map<String, Notes> notesOf(ShareBook before, Event event) {
    Map<String, Notes> notes = new LinkedHashMap<>();
    if (event instanceof Preempted p) {
      ShareBook.Member by = before.members().get(p.by());
      if (by == null) {
        return notes;
      }
      List<EventNote> byEvents = new ArrayList<>();
      List<ConditionNote> byConditions = new ArrayList<>();
      for (String victim : p.victims()) {
        ShareBook.Member v = before.members().get(victim);
        if (v == null) {
          continue;
        }
        notes.put(
            victim,
            new Notes(
                List.of(PodNotes.victimEvent(by.key(), p.at())),
                List.of(PodNotes.victimCondition(by.key(), p.at()))));
        byEvents.add(PodNotes.preemptorEvent(v.key(), p.at()));
        byConditions.add(PodNotes.preemptorCondition(v.key(), p.at()));
      }
      notes.put(p.by(), new Notes(byEvents, byConditions));
    } else if (event instanceof CheckpointReported r) {
      ShareBook.Member victim = before.members().get(r.pod());
      ShareBook.Checkpoint c = victim == null ? null : victim.checkpoint();
      if (c == null || c.phase() != ShareBook.Checkpoint.Phase.SUSPENDING) {
        return notes;
      }
      List<EventNote> events = new ArrayList<>();
      List<ConditionNote> conditions = new ArrayList<>();
      ShareBook.Member by = c.by() == null ? null : before.members().get(c.by());
      if (by != null) {
        events.add(PodNotes.victimEvent(by.key(), r.at()));
        conditions.add(PodNotes.victimCondition(by.key(), r.at()));
        notes.put(
            c.by(),
            new Notes(
                List.of(PodNotes.preemptorEvent(victim.key(), r.at())),
                List.of(PodNotes.preemptorCondition(victim.key(), r.at()))));
      }
      if (r.held()) {
        events.add(PodNotes.checkpointedEvent(r.bytes(), c.gpu(), r.at()));
        conditions.add(PodNotes.checkpointedCondition(r.bytes(), c.gpu(), r.at()));
      } else {
        events.add(PodNotes.checkpointFailedEvent(r.message(), r.at()));
        conditions.add(PodNotes.checkpointFailedCondition(r.message(), r.at()));
      }
      notes.put(r.pod(), new Notes(events, conditions));
    } else if (event instanceof CheckpointCleared r) {
      notes.put(
          r.pod(),
          new Notes(
              r.reason() == null
                  ? List.of()
                  : List.of(PodNotes.checkpointDroppedEvent(r.reason(), r.at())),
              List.of(PodNotes.checkpointClearedCondition(r.reason(), r.at()))));
    } else if (event instanceof Released r && r.note() != null) {
      notes.put(r.pod(), new Notes(List.of(r.note()), List.of()));
    } else if (event instanceof Pinned p) {
      String uuid = before.slot(p.gpu()).map(ShareBook.GpuSlot::uuid).orElse("?");
      notes.put(
          p.pod(), new Notes(List.of(), List.of(PodNotes.pinnedCondition(p.gpu(), uuid, p.at()))));
    } else if (event instanceof PinDeferred d) {
      notes.put(
          d.pod(),
          new Notes(
              List.of(PodNotes.fragmentedEvent(d.message(), d.at())),
              List.of(PodNotes.fragmentedCondition(d.message(), d.at()))));
    }
    return notes;
  }

  // ---- events ----

  @Override
  public EventHandler<ShareBook, Event> eventHandler() {
    return newEventHandlerBuilder().forAnyState().onAnyEvent(NodeArbiter::apply);
  }

  /** The book after {@code event}: the one fold that recovery, rounds and tests share. */
  public static ShareBook apply(ShareBook book, Event event) {
    ShareBook next = change(book, event);
    for (Map.Entry<String, Notes> n : notesOf(book, event).entrySet()) {
      next = next.noted(n.getKey(), n.getValue().events(), n.getValue().conditions());
    }
    return next;
  }

  private static ShareBook change(ShareBook book, Event event) {
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
    if (event instanceof SuspendRequested e) {
      return book.suspendRequested(e.pods(), e.gpu(), e.by(), e.reason(), e.at());
    }
    if (event instanceof CheckpointReported e) {
      return book.suspended(e.pod(), e.held(), e.pids(), e.bytes(), e.at());
    }
    if (event instanceof CheckpointCleared e) {
      return book.checkpointCleared(e.pod());
    }
    throw new IllegalArgumentException("unknown event " + event);
  }
}
