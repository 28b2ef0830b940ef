package dev.gpushare.http.api;

import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.persistence.JournalInspector;
import java.util.Optional;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * Journal inspection (API.md): {@code GET /v1/journal/persistence-ids} lists every persistence id;
 * {@code GET /v1/journal/events?persistenceId=…&fromSequenceNr=1&limit=100} lists one entity's
 * events in order. {@code persistenceId} is required, {@code fromSequenceNr} is at least 1 (default
 * 1), {@code limit} is 1 to 1000 (default 100); anything else is a {@code 400} naming the
 * parameter.
 */
public final class JournalRoutes extends ApiDirectives {
  static final long DEFAULT_LIMIT = 100;
  static final long MAX_LIMIT = 1000;

  private final JournalInspector journal;

  public JournalRoutes(JournalInspector journal) {
    this.journal = journal;
  }

  public Route route() {
    return pathPrefix(
        "v1",
        () ->
            pathPrefix(
                "journal",
                () ->
                    concat(
                        path("persistence-ids", () -> get(this::persistenceIds)),
                        path("events", () -> get(this::events)))));
  }

  private Route persistenceIds() {
    return answerOk(() -> journal.persistenceIds().thenApply(Items::new));
  }

  private Route events() {
    return parameterOptional(
        "persistenceId",
        id ->
            parameterOptional(
                "fromSequenceNr",
                from -> parameterOptional("limit", limit -> events(id, from, limit))));
  }

  private Route events(
      Optional<String> persistenceId, Optional<String> fromSequenceNr, Optional<String> limit) {
    String id =
        persistenceId
            .filter(s -> !s.isBlank())
            .orElseThrow(
                () ->
                    badParameter(
                        "persistenceId",
                        persistenceId.orElse(null),
                        "required: a persistence id as listed by /v1/journal/persistence-ids,"
                            + " e.g. Pod|default/a/<uid>"));
    long from = longParameter("fromSequenceNr", fromSequenceNr, 1, 1, Long.MAX_VALUE);
    int max = (int) longParameter("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT);
    return answerOk(() -> journal.events(id, from, max).thenApply(Items::new));
  }
}
