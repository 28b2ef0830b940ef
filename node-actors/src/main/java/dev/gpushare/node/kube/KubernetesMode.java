package dev.gpushare.node.kube;

import dev.gpushare.node.api.GpuShareService;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.ClusterSingleton;
import org.apache.pekko.cluster.typed.SingletonActor;

/**
 * The Kubernetes face of the arbiter (ARCHITECTURE.md §3 "kubernetes" mode): the informers ({@link
 * KubeSource}) feed nodes and pods into the service, and {@code KubeSync} — a cluster singleton
 * hosting the {@link KubeWriter} — is the only writer to the API server. On fail-over the new
 * singleton starts a writer that reconciles everything (it assumes nothing was written).
 */
public final class KubernetesMode implements AutoCloseable {
  private final KubeSource source;
  private final ActorRef<Command> singleton;

  /** The singleton's protocol: a periodic full resync, and life and death. */
  public interface Command {}

  private enum Resync implements Command {
    INSTANCE
  }

  /**
   * How often the writer checks every object against its cache even though the arbiter announced
   * nothing: a safety net (the writer's informers already report others' changes to what gpushare
   * owns — a kubelet that re-registers and zeroes the extended resources, a user who edits a
   * condition); a check that agrees costs no request.
   */
  static final java.time.Duration RESYNC = java.time.Duration.ofMinutes(5);

  private KubernetesMode(KubeSource source, ActorRef<Command> singleton) {
    this.source = source;
    this.singleton = singleton;
  }

  /**
   * Starts the writer singleton and the informers; completes once the informers have listed
   * everything and the service has seen it (then the API may report ready).
   */
  public static CompletionStage<KubernetesMode> start(
      ActorSystem<?> system,
      GpuShareService service,
      KubernetesClient client,
      Optional<String> nodeName,
      KubeSyncSettings settings) {
    ActorRef<Command> singleton =
        ClusterSingleton.get(system)
            .init(
                SingletonActor.of(
                    Behaviors.supervise(kubeSync(client, service, settings))
                        .onFailure(SupervisorStrategy.restart()),
                    "kube-sync"));
    KubeSource source = new KubeSource(client, service, nodeName);
    return source.start().thenApply(v -> new KubernetesMode(source, singleton));
  }

  /** Hosts one {@link KubeWriter} for as long as this member holds the singleton. */
  static Behavior<Command> kubeSync(
      KubernetesClient client, GpuShareService service, KubeSyncSettings settings) {
    return Behaviors.setup(
        ctx -> {
          KubeWriter writer = new KubeWriter(client, service, settings).start();
          ctx.getLog().info("KubeSync started: the only writer to the API server on this cluster");
          return Behaviors.withTimers(
              timers -> {
                timers.startTimerWithFixedDelay(Resync.INSTANCE, RESYNC);
                return Behaviors.receive(Command.class)
                    .onMessageEquals(
                        Resync.INSTANCE,
                        () -> {
                          writer.resync();
                          return Behaviors.same();
                        })
                    .onSignal(
                        PostStop.class,
                        signal -> {
                          writer.close();
                          return Behaviors.same();
                        })
                    .build();
              });
        });
  }

  public boolean synced() {
    return source.synced();
  }

  @Override
  public void close() {
    source.close();
  }
}
