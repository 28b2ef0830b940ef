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
}
