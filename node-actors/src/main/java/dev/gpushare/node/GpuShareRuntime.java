package dev.gpushare.node;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.cluster.NodeShardAllocation;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Starts the arbiter's actors in an actor system whose persistence plugins are configured, and
 * gives the {@link GpuShareService} that the edges use.
 */
public final class GpuShareRuntime {
  private GpuShareRuntime() {}

  /** The dispatcher GPU telemetry samples on (NVML calls block): gpushare-runtime.conf. */
  public static final String TELEMETRY_DISPATCHER = "gpushare-telemetry-dispatcher";

  /**
   * The actor-system settings the runtime needs (a cluster provider on loopback, sharding that
   * keeps entities alive): put them under the persistence profile, above {@code
   * ConfigFactory.load()}.
   */
  public static Config config() {
    return ConfigFactory.parseResources("gpushare-runtime.conf");
  }

  /**
   * Whether this member forms a one-member cluster by joining itself: yes unless seed nodes are
   * configured ({@code pekko.cluster.seed-nodes}) or cluster bootstrap is switched on ({@code
   * gpushare.cluster.bootstrap = on}), in which case the member joins the others.
   */
  static boolean formsItsOwnCluster(ActorSystem<?> system) {
    com.typesafe.config.Config config = system.settings().config();
    boolean seeds = !config.getStringList("pekko.cluster.seed-nodes").isEmpty();
    boolean bootstrap =
        config.hasPath("gpushare.cluster.bootstrap")
            && config.getBoolean("gpushare.cluster.bootstrap");
    return !seeds && !bootstrap;
  }

  /**
   * Recovers every known node from the journal, registers the configured simulated nodes that are
   * new, reconciles each arbiter with its bound pods, and completes with the service.
   */
  public static CompletionStage<GpuShareService> start(
      ActorSystem<?> system, RuntimeSettings settings, ArbiterClock clock) {
    return start(system, settings, clock, Optional.empty());
  }

  /**
   * As {@link #start(ActorSystem, RuntimeSettings, ArbiterClock)}, with the real backend (NVML) of
   * the GPUs of the node this member runs on (its {@code node:<name>} role): telemetry of that node
   * is sampled through it; without one, through a simulated backend.
   */
  public static CompletionStage<GpuShareService> start(
      ActorSystem<?> system,
      RuntimeSettings settings,
      ArbiterClock clock,
      Optional<GpuBackend> ownNodeBackend) {
    return start(system, settings, clock, ownNodeBackend, JournalStatus.WRITABLE);
  }

  /**
   * As {@link #start(ActorSystem, RuntimeSettings, ArbiterClock, Optional)}, with what the journal
   * tells of its ability to write: while it cannot, writing requests fail at once with the reason
   * and the service is not ready ({@link GpuShareService#notReady()}).
   */
  public static CompletionStage<GpuShareService> start(
      ActorSystem<?> system,
      RuntimeSettings settings,
      ArbiterClock clock,
      Optional<GpuBackend> ownNodeBackend,
      JournalStatus journal) {
    Cluster cluster = Cluster.get(system);
    Optional<String> ownNode =
        cluster.selfMember().getRoles().stream()
            .map(NodeShardAllocation::nodeOf)
            .flatMap(Optional::stream)
            .findFirst();
    LocalGpus local = new LocalGpus(ownNode, ownNodeBackend, formsItsOwnCluster(system));
    if (formsItsOwnCluster(system)) {
      cluster.manager().tell(Join.create(cluster.selfMember().address()));
    }
    AtomicReference<DefaultGpuShareService> service = new AtomicReference<>();
    // This runtime's metrics: a registry of its own, not the JVM-wide default one.
    GpuShareMetrics metrics = new GpuShareMetrics();
    PodActor.Listener listener = (key, deleted) -> service.get().changed(key, deleted);
    Entities[] holder = new Entities[1];
    holder[0] =
        Entities.init(
            system,
            settings.reservedPerGpu(),
            clock,
            listener,
            node -> new ShardedPeers(holder[0], node, listener, system),
            metrics);
    // Changes travel cluster-wide, so watchers and the Kubernetes writer on any member hear them.
    ActorRef<Topic.Command<Changes.Change>> changes =
        system.systemActorOf(
            Topic.create(Changes.Change.class, Changes.TOPIC), "gpushare-changes", Props.empty());
    service.set(
        new DefaultGpuShareService(
            system, holder[0], changes, settings, clock, local, metrics, journal));
    ActorRef<Changes.Change> subscriber =
        system.systemActorOf(
            Behaviors.receive(Changes.Change.class)
                .onAnyMessage(
                    change -> {
                      service.get().heard(change);
                      return Behaviors.same();
                    })
                .build(),
            "gpushare-change-subscriber",
            Props.empty());
    changes.tell(Topic.subscribe(subscriber));
    // After a member is removed its shards start elsewhere only when messaged: wake every node so
    // its arbiter recovers, reconciles with its bound pods and re-arms its timers at once.
    ActorRef<ClusterEvent.MemberRemoved> removals =
        system.systemActorOf(
            Behaviors.receive(ClusterEvent.MemberRemoved.class)
                .onAnyMessage(
                    removed -> {
                      service.get().wakeAll();
                      return Behaviors.same();
                    })
                .build(),
            "gpushare-member-removals",
            Props.empty());
    cluster.subscriptions().tell(Subscribe.create(removals, ClusterEvent.MemberRemoved.class));
    // GPU telemetry of the nodes this member sees, sampled on its own blocking threads.
    Executor blocking =
        system.dispatchers().lookup(DispatcherSelector.fromConfig(TELEMETRY_DISPATCHER));
    ActorRef<GpuTelemetry.Msg> telemetry =
        system.systemActorOf(
            GpuTelemetry.create(service.get().telemetry(), settings.gpu(), clock, blocking),
            "gpushare-gpu-telemetry",
            Props.empty());
    // Sampling asks the node entities: it stops before the shard regions hand their shards off.
    CoordinatedShutdown.get(system)
        .addTask(
            CoordinatedShutdown.PhaseBeforeClusterShutdown(),
            "gpushare-stop-gpu-telemetry",
            () -> {
              telemetry.tell(GpuTelemetry.Stop.INSTANCE);
              return CompletableFuture.completedFuture(Done.getInstance());
            });
    return service.get().start().thenApply(d -> service.get());
  }
}
