package dev.gpushare.arbiter;

/**
 * How a valid pod uses GPUs (SPEC §3), as decided by {@link ShareRequestRules#validate}.
 *
 * @param kind whether the pod shares a GPU, holds whole GPUs, or uses none
 * @param policy the pod's {@code gpu-share-policy} label; {@code null} unless {@code SHARED}
 * @param requests what decides how many pods fit a node; {@code null} unless {@code SHARED}
 * @param limits the ceiling of use, from the limit annotations when the admission webhook wrote
 *     them; {@code null} unless {@code SHARED}
 * @param exclusiveGpus the {@code nvidia.com/gpu} count over all containers; 0 unless {@code
 *     EXCLUSIVE}
 * @param container the name of the one container that shares a GPU; {@code null} unless {@code
 *     SHARED}
 */
public record PodSharing(
    Kind kind,
    SharePolicy policy,
    Share requests,
    Share limits,
    int exclusiveGpus,
    String container)
    implements JsonSerializable {

  public enum Kind {
    /** Asks for the two percentage resources: one share of one GPU. */
    SHARED,
    /** Asks for {@code nvidia.com/gpu}: whole GPUs, which rule sharing out on its node. */
    EXCLUSIVE,
    /** Asks for no GPU at all. */
    PLAIN
  }

  public static final PodSharing PLAIN = new PodSharing(Kind.PLAIN, null, null, null, 0, null);

  public static PodSharing shared(
      SharePolicy policy, Share requests, Share limits, String container) {
    return new PodSharing(Kind.SHARED, policy, requests, limits, 0, container);
  }

  public static PodSharing exclusive(int gpus) {
    return new PodSharing(Kind.EXCLUSIVE, null, null, null, gpus, null);
  }

  /** What this shared pod holds on its GPU: {@link SharePolicy#held} of its model. */
  public Share held() {
    return policy.held(requests, limits);
  }
}
