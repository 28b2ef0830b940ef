package dev.gpushare.http.api;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.persistence.JournalInspector;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * Journal inspection (API.md): {@code GET /v1/journal/persistence-ids} lists every persistence id;
 * {@code GET /v1/journal/events?persistenceId=…&fromSequenceNr=1&limit=100} lists one entity's
 * events in order. {@code persistenceId} is required, {@code fromSequenceNr} is at least 1 (default
 * 1), {@code limit} is 1 to 1000 (default 100); anything else is a {@code 400} naming the
 * parameter.
 *
 * <p>A pod's history: {@code GET /v1/namespaces/{ns}/pods/{name}/history?after=0&limit=100}, its
 * own records and every arbiter's decisions about it in journal order ({@link
 * JournalInspector#history}), answered {@code {"items":[…],"next":CURSOR or null}}. {@code after}
 * is 0 (the default: from the start) or a cursor of an earlier answer; {@code limit} as above. A
 * name Kubernetes would refuse names no pod: {@code 404}. A name never used has an empty history.
 */
public final class JournalRoutes extends ApiDirectives {
  static final long DEFAULT_LIMIT = 100;
  static final long MAX_LIMIT = 1000;

  private final JournalInspector journal;

  public JournalRoutes(JournalInspector journal) {
    this.journal = journal;
  }

  public Route route() {
    return concat(
        journal(), podPath((ns, name) -> path("history", () -> get(() -> history(ns, name)))));
  }

  private Route journal() {
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

  private Route history(String namespace, String name) {
    return parameterOptional(
        "after",
        after -> parameterOptional("limit", limit -> history(namespace, name, after, limit)));
  }

  private Route history(
      String namespace, String name, Optional<String> after, Optional<String> limit) {
    if (!KubernetesNames.isDns1123Label(namespace)) {
      throw noSuchPod(
          namespace, name, "metadata.namespace", namespace, KubernetesNames.DNS1123_LABEL_ACCEPTED);
    }
    if (!KubernetesNames.isDns1123Subdomain(name)) {
      throw noSuchPod(
          namespace, name, "metadata.name", name, KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED);
    }
    long from = cursorParameter(after);
    int max = (int) longParameter("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT);
    return answerOk(() -> journal.history(namespace, name, from, max));
  }

  /** A 404: {@code field} of the path is not a name Kubernetes accepts, so no pod has a history. */
  private static ServiceException noSuchPod(
      String namespace, String name, String field, String value, String accepted) {
    String message =
        field
            + " '"
            + value
            + "': not a valid pod name, so it has no history; expected "
            + accepted;
    return new ServiceException(
        ServiceException.Kind.NOT_FOUND,
        "pod " + namespace + "/" + name + " not found: " + message,
        List.of(new FieldError(field, value, message)));
  }

  /** {@code after}: 0 or more, as a cursor of an earlier answer is. */
  private static long cursorParameter(Optional<String> raw) {
    String accepted =
        "expected 0 (from the start) or a cursor of an earlier answer (an item's cursor, or"
            + " next): an integer from 0 to "
            + Long.MAX_VALUE;
    if (raw.isEmpty()) {
      return 0;
    }
    try {
      long value = Long.parseLong(raw.get());
      if (value >= 0) {
        return value;
      }
    } catch (NumberFormatException e) {
      // refused below
    }
    throw badParameter("after", raw.get(), accepted);
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
