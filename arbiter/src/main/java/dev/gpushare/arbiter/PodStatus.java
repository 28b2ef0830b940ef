package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * A pod's arbitration status as its node's arbiter decided it: the authority that the pod's own
 * actor follows. {@code revision} grows with every arbiter event, so a stale or re-delivered status
 * is recognised and ignored.
 *
 * @param state {@code null} for pods that do not share a GPU
 * @param gpu device index while Running (share-pool) or pinned (static), else {@code null}
 * @param since when the pod entered its state (Ready or Running), else {@code null}
 * @param checkpoint the pod's GPU state as the member checkpoints or holds it, else {@code null}
 */
public record PodStatus(
    PodKey key,
    String node,
    PodSharing spec,
    PodState state,
    Integer gpu,
    String gpuUuid,
    Instant since,
    long revision,
    @JsonInclude(JsonInclude.Include.NON_NULL) ShareBook.Checkpoint checkpoint)
    implements JsonSerializable {

  /** A status without a checkpoint (the pod's GPU state is not held by the member). */
  public PodStatus(
      PodKey key,
      String node,
      PodSharing spec,
      PodState state,
      Integer gpu,
      String gpuUuid,
      Instant since,
      long revision) {
    this(key, node, spec, state, gpu, gpuUuid, since, revision, null);
  }
}
