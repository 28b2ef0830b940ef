package dev.gpushare.persistence;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletionStage;

/** Reads the event journal for people (API.md "Journal inspection"). */
public interface JournalInspector {

  /** One journal entry; {@code event} is the event as JSON, {@code type} its short class name. */
  record JournalEntry(
      String persistenceId, long sequenceNr, Instant timestamp, String type, JsonNode event) {}

  /** Every persistence id in the journal, sorted. */
  CompletionStage<List<String>> persistenceIds();

  /**
   * Events of one entity from {@code fromSequenceNr} (inclusive), at most {@code limit}, in order.
   */
  CompletionStage<List<JournalEntry>> events(String persistenceId, long fromSequenceNr, int limit);

  /**
   * One entry of a pod's history: a {@link JournalEntry} and its {@code cursor}, the event's place
   * in the journal (its global {@code ordering}): entries come in cursor order, and a page asked
   * {@code after} a cursor starts with the first entry past it.
   */
  record HistoryEntry(
      long cursor,
      String persistenceId,
      long sequenceNr,
      Instant timestamp,
      String type,
      JsonNode event) {}

  /**
   * A page of a pod's history; {@code next} is the cursor to ask the next page after, or {@code
   * null} when the journal holds nothing more for the pod (now).
   */
  record HistoryPage(List<HistoryEntry> items, Long next) {
    public HistoryPage {
      items = List.copyOf(items);
    }
  }

  /**
   * The history of the pod {@code namespace/name}, every lifetime of the name, in journal order:
   * its own records ({@code Pod|ns/name/uid}) and every decision about it from every node's arbiter
   * ({@code NodeArbiter|node}), the entries after cursor {@code after} (0: from the start), at most
   * {@code limit}.
   */
  CompletionStage<HistoryPage> history(String namespace, String name, long after, int limit);
}
