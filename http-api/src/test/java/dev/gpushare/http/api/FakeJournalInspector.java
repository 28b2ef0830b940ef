package dev.gpushare.http.api;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import dev.gpushare.persistence.JournalInspector;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** A journal of two events of one pod, recording the last query. */
final class FakeJournalInspector implements JournalInspector {
  static final String POD_ID = "Pod|default/a/uid-a";

  volatile String lastPersistenceId;
  volatile long lastFrom;
  volatile int lastLimit;
  volatile String lastHistory;

  void reset() {
    lastPersistenceId = null;
    lastFrom = 0;
    lastLimit = 0;
    lastHistory = null;
  }

  @Override
  public CompletionStage<List<String>> persistenceIds() {
    return CompletableFuture.completedFuture(List.of("NodeArbiter|node-1", POD_ID));
  }

  @Override
  public CompletionStage<List<JournalEntry>> events(
      String persistenceId, long fromSequenceNr, int limit) {
    lastPersistenceId = persistenceId;
    lastFrom = fromSequenceNr;
    lastLimit = limit;
    return CompletableFuture.completedFuture(
        List.of(
            new JournalEntry(
                persistenceId,
                fromSequenceNr,
                Instant.parse("2026-01-01T00:00:00Z"),
                "DemandRaised",
                JsonNodeFactory.instance.objectNode().put("pod", "default/a"))));
  }

  /** Two entries (cursors 7 and 9), then a next of 9 when the limit is 2 or less. */
  @Override
  public CompletionStage<HistoryPage> history(
      String namespace, String name, long after, int limit) {
    lastHistory = namespace + "/" + name + " after " + after + " limit " + limit;
    List<HistoryEntry> all =
        List.of(
            new HistoryEntry(
                7,
                "Pod|" + namespace + "/" + name + "/uid-a",
                1,
                Instant.parse("2026-01-01T00:00:00Z"),
                "PodActor.SpecSeen",
                JsonNodeFactory.instance.objectNode().put("state", "Hibernation")),
            new HistoryEntry(
                9,
                "NodeArbiter|node-1",
                4,
                Instant.parse("2026-01-01T00:00:01Z"),
                "NodeArbiter.Granted",
                JsonNodeFactory.instance
                    .objectNode()
                    .put("pod", namespace + "/" + name + "/uid-a")
                    .put("gpu", 0)));
    List<HistoryEntry> page = all.stream().filter(e -> e.cursor() > after).limit(limit).toList();
    Long next =
        page.size() == limit && limit < all.size() ? page.get(page.size() - 1).cursor() : null;
    return CompletableFuture.completedFuture(new HistoryPage(page, next));
  }
}
