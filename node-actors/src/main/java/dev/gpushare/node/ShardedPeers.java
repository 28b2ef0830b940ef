package dev.gpushare.node;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.actor.ArbiterPeers;
import dev.gpushare.gpu.GpuActor;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/** A node arbiter's peers as sharded entities of the same node. */
final class ShardedPeers implements ArbiterPeers {
  private final Entities entities;
  private final String node;
  private final Duration timeout;

  ShardedPeers(Entities entities, String node, Duration timeout) {
    this.entities = entities;
    this.node = node;
    this.timeout = timeout;
  }

  @Override
  public CompletionStage<LedgerReply> reserve(
      String gpuUuid, String decisionId, String pod, Share share) {
    return entities
        .gpu(node, gpuUuid)
        .ask(r -> new GpuActor.Reserve(decisionId, pod, share, r), timeout);
  }

  @Override
  public CompletionStage<Done> free(String gpuUuid, String decisionId) {
    return entities.gpu(node, gpuUuid).ask(r -> new GpuActor.Free(decisionId, r), timeout);
  }

  @Override
  public CompletionStage<LedgerSnapshot> ledger(String gpuUuid) {
    return entities.gpu(node, gpuUuid).ask(GpuActor.GetLedger::new, timeout);
  }

  @Override
  public CompletionStage<Done> notifyPod(PodKey key, PodNotice notice) {
    return entities.pod(node, key).ask(r -> new PodActor.Notice(notice, r), timeout);
  }
}
