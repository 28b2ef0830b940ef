package dev.gpushare.node;

import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.arbiter.PodKey;

/**
 * What changed, published cluster-wide (a Pekko pub-sub topic) so that every member's watchers,
 * long polls and the Kubernetes writer hear of changes made on any member.
 */
public final class Changes {
  private Changes() {}

  public static final String TOPIC = "gpushare-changes";

  public sealed interface Change extends JsonSerializable {}

  /** A pod's record changed (persisted by its PodActor). */
  public record PodChanged(PodKey key, PodActor.Record record) implements Change {}

  /** A node's config, conditions, GPUs or bound pods changed. */
  public record NodeChanged(String node) implements Change {}
}
