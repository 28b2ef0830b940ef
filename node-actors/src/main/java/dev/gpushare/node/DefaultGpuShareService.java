package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.ComputeReport;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.api.Views.ClockView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodProcessesView;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.PutNodeResult;
import dev.gpushare.node.api.Views.QueueEntryView;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The arbiter's service over its sharded entities: NodeActor (admission, config), NodeArbiter (the
 * single writer of decisions), GpuActors (identity, health) and PodActors (Events, conditions).
 * Every answer comes after the decisions it caused are persisted, and every view takes its decision
 * state from one snapshot of the node's arbiter ({@link BookViews}).
 *
 * <p>A facade: it wires the parts, one job each, and hands every request to one of them.
 *
 * <ul>
 *   <li>{@link ServiceAsks}: the typed asks of the entities, with the mapping of refusals to
 *       errors.
 *   <li>{@link WriteGate}: requests that write, gated by the journal's ability to write.
 *   <li>{@link StartupRecovery}: start-up, recovery of every node, readiness.
 *   <li>{@link NodeReads} and {@link PodReads}: the views users read.
 *   <li>{@link NodeRegistration}: a node put, patched, its GPUs' health; arbiters kept in line.
 *   <li>{@link PodLifecycle} (with the {@link EmbeddedScheduler}): pods created and deleted.
 *   <li>{@link PodDataPlane}: demand, release, the long poll and the watch ({@link PodWatches}),
 *       compute-limiter reports.
 *   <li>{@link ChangeFanOut}: changes published cluster-wide and told to listeners.
 *   <li>{@link TelemetryPort}: what GPU telemetry reads and does; {@link GpuScripting}: its script.
 *   <li>{@link ServiceClock}: the manual clock.
 * </ul>
 */
final class DefaultGpuShareService implements GpuShareService, PodActor.Listener {

  private final ActorSystem<?> system;
  private final GpuShareMetrics metrics;
  private final WriteGate gate;
  private final ChangeFanOut fanOut;
  private final StartupRecovery recovery;
  private final NodeReads nodeReads;
  private final NodeRegistration registration;
  private final PodReads podReads;
  private final PodLifecycle lifecycle;
  private final PodDataPlane dataPlane;
  private final TelemetryPort telemetry;
  private final GpuScripting scripting;
  private final ServiceClock time;

  DefaultGpuShareService(
      ActorSystem<?> system,
      Entities entities,
      ActorRef<Topic.Command<Changes.Change>> changes,
      RuntimeSettings settings,
      ArbiterClock clock,
      LocalGpus local,
      GpuShareMetrics metrics,
      JournalStatus journal) {
    Duration timeout = settings.askTimeout();
    ServiceAsks asks = new ServiceAsks(entities, timeout);
    PodWatches watches = new PodWatches(system);
    this.system = system;
    this.metrics = metrics;
    this.gate = new WriteGate(journal);
    this.fanOut = new ChangeFanOut(system, changes, watches);
    this.nodeReads = new NodeReads(asks, settings.reservedPerGpu());
    this.registration = new NodeRegistration(gate, asks, entities, timeout, nodeReads, fanOut);
    this.recovery =
        new StartupRecovery(system, settings.nodes(), asks, entities, timeout, registration);
    this.podReads =
        new PodReads(
            asks, nodeReads, fanOut, settings.gpu().mpsRoot(), settings.gpu().computeLimitMode());
    this.lifecycle =
        new PodLifecycle(gate, asks, entities, timeout, registration, podReads, fanOut);
    this.dataPlane = new PodDataPlane(gate, asks, podReads, watches, fanOut, clock);
    this.telemetry =
        new TelemetryPort(system, asks, entities, timeout, local, registration, fanOut, metrics);
    this.scripting = new GpuScripting(asks, nodeReads, local);
    this.time = new ServiceClock(clock, gate, asks);
  }

  /** Registers configured nodes that are new, then brings every known node in line. */
  CompletionStage<Done> start() {
    return recovery.start();
  }

  /** Wakes every known node after a member left the cluster ({@link StartupRecovery}). */
  void wakeAll() {
    recovery.wakeAll();
  }

  /** A change published on any member, heard here. */
  void heard(Changes.Change change) {
    fanOut.heard(change);
  }

  /** GPU telemetry's side of the service. */
  TelemetryPort telemetry() {
    return telemetry;
  }

  @Override
  public GpuShareMetrics metrics() {
    return metrics;
  }

  @Override
  public GpuChoice gpuChoice() {
    return Entities.gpuChoice(system);
  }

  @Override
  public boolean ready() {
    return recovery.ready();
  }

  @Override
  public Optional<String> notReady() {
    return recovery.ready() ? gate.unwritable() : GpuShareService.super.notReady();
  }

  @Override
  public CompletionStage<List<NodeView>> nodes() {
    return nodeReads.nodes();
  }

  @Override
  public CompletionStage<NodeView> node(String name) {
    return nodeReads.node(name);
  }

  @Override
  public CompletionStage<List<QueueEntryView>> queue(String node) {
    return nodeReads.queue(node);
  }

  @Override
  public CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    return registration.putNode(manifest);
  }

  @Override
  public CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return registration.patchNode(name, labels, annotations);
  }

  @Override
  public CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    return registration.setGpuHealth(node, index, healthy);
  }

  @Override
  public CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes) {
    return scripting.scriptGpu(node, index, processes);
  }

  @Override
  public CompletionStage<PodView> createPod(PodManifest manifest) {
    return lifecycle.createPod(manifest);
  }

  @Override
  public CompletionStage<PodView> deletePod(String namespace, String name) {
    return lifecycle.deletePod(namespace, name);
  }

  @Override
  public CompletionStage<PodView> ensurePod(PodManifest manifest) {
    return lifecycle.ensurePod(manifest);
  }

  @Override
  public CompletionStage<Boolean> forgetPod(String namespace, String name, String uid) {
    return lifecycle.forgetPod(namespace, name, uid);
  }

  @Override
  public AutoCloseable subscribe(ChangeListener listener) {
    return fanOut.subscribe(listener);
  }

  @Override
  public CompletionStage<List<PodView>> pods(Optional<String> node) {
    return podReads.pods(node);
  }

  @Override
  public CompletionStage<PodView> pod(String namespace, String name) {
    return podReads.pod(namespace, name);
  }

  @Override
  public CompletionStage<PodView> demand(String namespace, String name) {
    return dataPlane.demand(namespace, name);
  }

  @Override
  public CompletionStage<PodView> release(String namespace, String name) {
    return dataPlane.release(namespace, name);
  }

  @Override
  public CompletionStage<PodView> reportCompute(
      String namespace, String name, ComputeReport report) {
    return dataPlane.reportCompute(namespace, name, report);
  }

  @Override
  public CompletionStage<PodProcessesView> processes(String namespace, String name) {
    return dataPlane.processes(namespace, name);
  }

  /** How many pods have a compute-limiter report kept on this member (for tests). */
  int computeReports() {
    return fanOut.computeReports();
  }

  @Override
  public CompletionStage<PodView> awaitGrant(String namespace, String name, Duration wait) {
    return dataPlane.awaitGrant(namespace, name, wait);
  }

  @Override
  public Source<PodView, NotUsed> watch(String namespace, String name) {
    return dataPlane.watch(namespace, name);
  }

  @Override
  public void changed(PodKey key, boolean deleted) {
    fanOut.publish(new Changes.PodChanged(key, deleted));
  }

  @Override
  public ClockView clock() {
    return time.clock();
  }

  @Override
  public CompletionStage<ClockView> advance(Duration by) {
    return time.advance(by);
  }
}
