package dev.gpushare.persistence;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.gpushare.arbiter.JsonSerializable;

/**
 * The worked example of EVENTS.md: an event class at version 2, with every kind of change.
 *
 * <p>Version 1, as older code wrote it to the journal (manifest {@code
 * dev.gpushare.persistence.ShareGranted}, no {@code #}, so version 1):
 *
 * <pre>{"pod":"default/a","gpu":1,"core":50}</pre>
 *
 * <p>Version 2 (this class, manifest {@code dev.gpushare.persistence.ShareGranted#2}):
 *
 * <ul>
 *   <li>{@code podKey}: renamed in Java only; {@code @JsonProperty("pod")} keeps the JSON name, so
 *       old and new payloads read alike: no migration needed.
 *   <li>{@code decisionId}: added; absent from version 1, where it reads as {@code null} and the
 *       constructor gives the default {@code ""}: no migration needed.
 *   <li>{@code limits}: replaces the flat {@code core} by {@code {"core":…,"memory":…}}, a breaking
 *       change: {@link ShareGrantedMigration} rewrites version-1 JSON before it is read.
 * </ul>
 */
record ShareGranted(@JsonProperty("pod") String podKey, int gpu, Limits limits, String decisionId)
    implements JsonSerializable {

  ShareGranted {
    decisionId = decisionId == null ? "" : decisionId;
  }

  record Limits(int core, int memory) {}
}
