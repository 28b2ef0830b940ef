package dev.gpushare.persistence;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;
import org.apache.pekko.stream.javadsl.Sink;

/**
 * {@link JournalInspector} over Pekko Persistence Query on the JDBC read journal ({@code
 * jdbc-read-journal}), so it sees exactly what the journal holds, including events of entities that
 * are not running.
 *
 * <p>{@code type} is the event's class name as written in Java, nested classes with their enclosing
 * classes ({@code NodeArbiter.Enqueued}); {@code event} is the event rendered by the {@code
 * jackson-json} binding's object mapper, i.e. the JSON the journal stores; {@code timestamp} is the
 * write time recorded by the journal. Invalid arguments give a stage failed with {@link
 * IllegalArgumentException} that names the parameter.
 */
public final class JdbcJournalInspector implements JournalInspector {

  private final ActorSystem<?> system;
  private final JdbcReadJournal readJournal;
  private final ObjectMapper mapper;

  private JdbcJournalInspector(
      ActorSystem<?> system, JdbcReadJournal readJournal, ObjectMapper mapper) {
    this.system = system;
    this.readJournal = readJournal;
    this.mapper = mapper;
  }

  /** An inspector on {@code system}'s JDBC read journal; the system must use a JDBC profile. */
  public static JournalInspector create(ActorSystem<?> system) {
    JdbcReadJournal readJournal =
        PersistenceQuery.get(system)
            .getReadJournalFor(JdbcReadJournal.class, JdbcReadJournal.Identifier());
    ObjectMapper mapper =
        JacksonObjectMapperProvider.get(system).getOrCreate("jackson-json", Optional.empty());
    return new JdbcJournalInspector(system, readJournal, mapper);
  }

  @Override
  public CompletionStage<List<String>> persistenceIds() {
    return readJournal
        .currentPersistenceIds()
        .runWith(Sink.seq(), system)
        .thenApply(
            ids -> {
              List<String> sorted = new ArrayList<>(ids);
              sorted.sort(null);
              return List.copyOf(sorted);
            });
  }

  @Override
  public CompletionStage<List<JournalEntry>> events(
      String persistenceId, long fromSequenceNr, int limit) {
    if (persistenceId == null || persistenceId.isEmpty()) {
      return invalid("persistenceId " + persistenceId + ": give the id of a journal entity");
    }
    if (fromSequenceNr < 0) {
      return invalid("fromSequenceNr " + fromSequenceNr + ": give 0 or more");
    }
    if (limit < 1) {
      return invalid("limit " + limit + ": give 1 or more");
    }
    return readJournal
        .currentEventsByPersistenceId(persistenceId, fromSequenceNr, Long.MAX_VALUE)
        .take(limit)
        .map(this::entry)
        .runWith(Sink.seq(), system)
        .thenApply(List::copyOf);
  }

  private JournalEntry entry(EventEnvelope envelope) {
    Object event = envelope.event();
    JsonNode json = mapper.valueToTree(event);
    return new JournalEntry(
        envelope.persistenceId(),
        envelope.sequenceNr(),
        Instant.ofEpochMilli(envelope.timestamp()),
        typeName(event.getClass()),
        json);
  }

  /** {@code Outer.Inner} for nested classes; the binary name for anonymous and local ones. */
  static String typeName(Class<?> type) {
    if (type.isAnonymousClass() || type.isLocalClass()) {
      return type.getName();
    }
    StringBuilder name = new StringBuilder(type.getSimpleName());
    for (Class<?> outer = type.getEnclosingClass();
        outer != null;
        outer = outer.getEnclosingClass()) {
      if (outer.isAnonymousClass() || outer.isLocalClass()) {
        return type.getName();
      }
      name.insert(0, outer.getSimpleName() + ".");
    }
    return name.toString();
  }

  private static <T> CompletionStage<T> invalid(String message) {
    return CompletableFuture.failedFuture(new IllegalArgumentException(message));
  }
}
