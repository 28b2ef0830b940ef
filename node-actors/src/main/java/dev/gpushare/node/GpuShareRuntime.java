package dev.gpushare.node;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.node.api.GpuShareService;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Starts the arbiter's actors in an actor system whose persistence plugins are configured, and
 * gives the {@link GpuShareService} that the edges use.
 */
public final class GpuShareRuntime {
  private GpuShareRuntime() {}

  /**
   * Recovers every known node from the journal, registers the configured simulated nodes that are
   * new, reconciles each arbiter with its GPU ledgers, and completes with the service.
   */
  public static CompletionStage<GpuShareService> start(
      ActorSystem<?> system, RuntimeSettings settings, ArbiterClock clock) {
    throw new UnsupportedOperationException("being written");
  }
}
