package dev.gpushare.node;

import dev.gpushare.arbiter.GpuLoad;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.PodStatus;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.WorkloadEnv;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.node.api.Views;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import dev.gpushare.node.api.Views.ComputeLimitView;
import dev.gpushare.node.api.Views.EventView;
import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.Health;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodConditionView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.QueueEntryView;
import dev.gpushare.node.api.Views.ShareView;
import dev.gpushare.node.api.Views.UsageView;
import dev.gpushare.node.api.Views.WorkloadView;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The API's views as pure functions (ARCHITECTURE.md §2, "Reads"): every piece of decision state in
 * a view — a pod's state, GPU, queue position, waiting and running time; a node's GPUs, their
 * holders and use, and its queue — comes from <em>one</em> snapshot of the node's arbiter, so no
 * view can show a pod both queued and on a GPU. The node's record adds its manifest, config and
 * status; the pod's record adds its Events and conditions.
 */
final class BookViews {
  private BookViews() {}

  /** A node as {@code record} describes it, its decision state from {@code book}. */
  static NodeView node(
      NodeActor.Record record, NodeArbiter.BookView book, ReservedPerGpu reserved) {
    Map<Integer, GpuLoad> loads = new java.util.HashMap<>();
    book.book().loads().forEach(l -> loads.put(l.index(), l));
    List<GpuView> gpus = new ArrayList<>();
    for (GpuDevice d : record.gpus()) {
      GpuLoad load = loads.get(d.index());
      Share used = load == null ? Share.NONE : load.used();
      boolean healthy =
          book.book()
              .slot(d.index())
              .map(ShareBook.GpuSlot::healthy)
              .orElse(record.healthy(d.uuid()));
      List<String> holders =
          load == null
              ? List.of()
              : load.held().keySet().stream().map(p -> refOf(book.book(), p)).sorted().toList();
      gpus.add(
          new GpuView(
              d.index(),
              d.uuid(),
              d.model(),
              d.memoryMiB(),
              Health.of(healthy),
              share(used),
              holders));
    }
    return new NodeView(
        record.manifest().name(),
        record.manifest().labels(),
        record.manifest().annotations(),
        record.config().active(),
        record.config().activeQos(),
        record.status(reserved, book.now()),
        gpus,
        queue(book),
        record.events().stream().map(BookViews::eventView).toList());
  }

  /** The node's ready queue, head first. */
  static List<QueueEntryView> queue(NodeArbiter.BookView b) {
    List<QueueEntryView> items = new ArrayList<>();
    int position = 1;
    for (var e : b.book().queue().entries()) {
      ShareBook.Member m = b.book().members().get(e.pod());
      Share limits = m.shared().limits(); // only shared pods queue
      items.add(
          new QueueEntryView(
              m.key().ref(), position++, seconds(e.enteredAt(), b.now()), share(limits)));
    }
    return items;
  }

  /** A pod of {@code node} with its decision state {@code decided} and its own {@code record}. */
  static PodView pod(PodKey key, String node, NodeArbiter.Outcome decided, PodActor.Record record) {
    // The pod's record follows the arbiter's durable decisions: what it has not yet recorded of
    // the notes the same book keeps is added here, so the answer to a decision always shows it.
    record = record.following(decided.events(), decided.conditions());
    PodStatus status = decided.status();
    PodSharing.Shared shared = status.spec() instanceof PodSharing.Shared s ? s : null;
    PodState state = status.state();
    Instant now = decided.at();
    return new PodView(
        key.namespace(),
        key.name(),
        key.uid(),
        node,
        shared != null ? shared.policy() : null,
        state,
        shared != null ? share(shared.requests()) : null,
        shared != null ? share(shared.limits()) : null,
        status.gpu() != null ? new GpuRef(status.gpu(), status.gpuUuid()) : null,
        decided.queuePosition(),
        state == PodState.READY && status.since() != null ? seconds(status.since(), now) : null,
        state == PodState.RUNNING && status.since() != null ? seconds(status.since(), now) : null,
        record.conditions().stream()
            .map(c -> new PodConditionView(c.type(), c.status(), c.reason(), c.message(), c.time()))
            .toList(),
        record.events().stream().map(BookViews::eventView).toList(),
        null,
        null,
        checkpointView(status.checkpoint(), state));
  }

  private static Views.CheckpointView checkpointView(ShareBook.Checkpoint c, PodState state) {
    if (c == null) {
      return null;
    }
    String phase =
        c.phase() == ShareBook.Checkpoint.Phase.SUSPENDING
            ? "checkpointing"
            : state == PodState.RUNNING ? "restoring" : "held";
    return new Views.CheckpointView(phase, c.gpu(), c.bytes(), c.since());
  }

  /**
   * A Running pod's view with its telemetry ({@code usage}, may be null) and what its workload
   * exports: share-pool pods get the enforcement contract's environment.
   */
  static PodView withGpuUse(
      PodView v, NodeActor.Record node, Changes.PodUsageReport usage, Optional<String> mpsRoot) {
    long gpuMiB =
        node.gpus().stream()
            .filter(g -> g.uuid().equals(v.gpu().uuid()))
            .mapToLong(GpuDevice::memoryMiB)
            .findFirst()
            .orElse(RuntimeSettings.DEFAULT_GPU_MEMORY_MIB);
    Share limits = new Share(v.limits().core(), v.limits().memory());
    return new PodView(
        v.namespace(),
        v.name(),
        v.uid(),
        v.node(),
        v.policy(),
        v.state(),
        v.requests(),
        v.limits(),
        v.gpu(),
        v.queuePosition(),
        v.waitingSeconds(),
        v.runningSeconds(),
        v.conditions(),
        v.events(),
        usage == null
            ? null
            : new UsageView(
                usage.memoryUsedMiB(),
                usage.memoryLimitMiB(),
                usage.absoluteUtilization(),
                usage.relativeUtilization(),
                usage.processes()),
        v.policy() == SharePolicy.SHARE_POOL
            ? new WorkloadView(WorkloadEnv.of(v.gpu().uuid(), limits, gpuMiB, mpsRoot))
            : null,
        v.checkpoint(),
        v.computeLimit());
  }

  /**
   * A sharing pod's compute limit under {@code mode}, with its library's latest {@code report} (may
   * be null): the aim is the core limit when the library limits, {@code heldSeconds} 0 and the
   * measurement {@code null} until a report. {@code null} for pods that share no GPU.
   */
  static ComputeLimitView computeLimit(
      PodView v, ComputeLimitMode mode, Changes.ComputeReported report) {
    if (v.limits() == null) {
      return null;
    }
    return new ComputeLimitView(
        mode,
        mode == ComputeLimitMode.LIBRARY ? Integer.valueOf(v.limits().core()) : null,
        report == null ? 0.0 : report.heldSeconds(),
        report == null ? null : Double.valueOf(report.measuredPercent()),
        report == null ? null : report.reportedAt());
  }

  static EventView eventView(PodNotes.EventNote e) {
    return new EventView(e.type(), e.reason(), e.message(), e.time(), PodNotes.SOURCE);
  }

  private static String refOf(ShareBook book, String entityId) {
    ShareBook.Member m = book.members().get(entityId);
    return m != null ? m.key().ref() : entityId;
  }

  private static ShareView share(Share s) {
    return new ShareView(s.core(), s.memory());
  }

  private static long seconds(Instant from, Instant to) {
    return Math.max(0, Duration.between(from, to).toSeconds());
  }
}
