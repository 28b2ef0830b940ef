package dev.gpushare.arbiter.actor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gpushare.arbiter.HistoryTags;
import dev.gpushare.arbiter.PodKey;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which pods' histories each kind of the arbiter's events goes into ({@link HistoryTags}). */
class NodeArbiterTagsTest {
  private static final Instant AT = Instant.parse("2026-01-01T00:00:00Z");

  @Test
  void everyEventAboutPodsNamesEachOfThemAndEveryKindIsCovered() {
    Map<NodeArbiter.Event, List<String>> expected = new LinkedHashMap<>();
    expected.put(new NodeArbiter.GpusSet(List.of()), List.of());
    expected.put(new NodeArbiter.PolicyApplied(null, null), List.of());
    expected.put(new NodeArbiter.PodAdded(new PodKey("t", "a", "u1"), null), List.of("t/a"));
    expected.put(new NodeArbiter.PodRemoved("t/a/u1", AT), List.of("t/a"));
    expected.put(new NodeArbiter.Enqueued("t/a/u1", AT), List.of("t/a"));
    expected.put(new NodeArbiter.Withdrawn("t/a/u1", AT), List.of("t/a"));
    expected.put(new NodeArbiter.Granted("n#1", "t/a/u1", 0, AT), List.of("t/a"));
    expected.put(new NodeArbiter.Released("t/a/u1", AT), List.of("t/a"));
    expected.put(
        new NodeArbiter.Preempted("n#2", "t/p/u2", 0, List.of("t/a/u1", "u/b/u3"), AT),
        List.of("t/a", "u/b", "t/p"));
    expected.put(new NodeArbiter.Pinned("n#3", "t/s/u4", 1, AT), List.of("t/s"));
    expected.put(new NodeArbiter.PinDeferred("t/s/u4", "no room", AT), List.of("t/s"));
    expected.put(
        new NodeArbiter.SuspendRequested("n#4", "t/p/u2", 0, List.of("t/a/u1"), "preempt", AT),
        List.of("t/a", "t/p"));
    expected.put(
        new NodeArbiter.SuspendRequested("n#5", null, 0, List.of("t/a/u1"), "idle", AT),
        List.of("t/a"));
    expected.put(
        new NodeArbiter.CheckpointReported("t/a/u1", true, List.of(1), 10, null, AT),
        List.of("t/a"));
    expected.put(new NodeArbiter.CheckpointCleared("t/a/u1", null, AT), List.of("t/a"));

    Set<Class<?>> kinds = new HashSet<>();
    expected.forEach(
        (event, pods) -> {
          kinds.add(event.getClass());
          Set<String> tags = new HashSet<>();
          pods.forEach(p -> tags.add(HistoryTags.of(p.split("/")[0], p.split("/")[1])));
          assertEquals(
              tags, HistoryTags.ofEntityIds(NodeArbiter.concerning(event)), event.toString());
        });
    assertEquals(
        Set.of(NodeArbiter.Event.class.getPermittedSubclasses()),
        kinds,
        "every kind of event is decided here: a new one must say whose history it is in");
  }
}
