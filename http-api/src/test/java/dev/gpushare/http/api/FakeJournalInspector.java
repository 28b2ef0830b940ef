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

  void reset() {
    lastPersistenceId = null;
    lastFrom = 0;
    lastLimit = 0;
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
}
