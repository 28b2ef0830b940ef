package dev.gpushare.persistence;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.arbiter.HistoryTags;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.query.javadsl.JdbcReadJournal;
import org.apache.pekko.persistence.query.EventEnvelope;
import org.apache.pekko.persistence.query.Offset;
import org.apache.pekko.persistence.query.PersistenceQuery;
import org.apache.pekko.persistence.query.Sequence;
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

  /** The persistence id of a name's index entity, before {@code ns/name} (EVENTS.md). */
  static final String INDEX_PREFIX = "PodIndex|";

  /** The persistence id of a pod's own record, before {@code ns/name/uid} (EVENTS.md). */
  static final String RECORD_PREFIX = "Pod|";

  /** The index's event that gives the name to a pod ({@code {"node":…,"key":{…,"uid":…}}}). */
  static final String CLAIMED_TYPE = "PodIndex.Claimed";

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

  /**
   * The pod's history is read by its tag ({@link HistoryTags}, {@code currentEventsByTag} from the
   * cursor, which is the {@code Sequence} offset, i.e. the journal's {@code ordering}). Events
   * written before gpushare tagged them carry no tag: the pod's own records of that time are found
   * through the name's index ({@value #INDEX_PREFIX}{@code ns/name}: every uid that held the name)
   * and read by persistence id; each event is shown once. Untagged arbiter decisions are not found
   * (EVENTS.md, "Tags: a pod's history").
   */
  @Override
  public CompletionStage<HistoryPage> history(
      String namespace, String name, long after, int limit) {
    if (namespace == null || namespace.isEmpty() || namespace.contains("/")) {
      return invalid("namespace " + namespace + ": give a pod's namespace");
    }
    if (name == null || name.isEmpty() || name.contains("/")) {
      return invalid("name " + name + ": give a pod's name");
    }
    if (after < 0) {
      return invalid("after " + after + ": give 0 or more");
    }
    if (limit < 1) {
      return invalid("limit " + limit + ": give 1 or more");
    }
    String tag = HistoryTags.of(namespace, name);
    int wanted = limit == Integer.MAX_VALUE ? limit : limit + 1;
    CompletionStage<List<EventEnvelope>> tagged = byTag(tag, after, wanted);
    CompletionStage<List<EventEnvelope>> untagged =
        untaggedRecords(tag, namespace + "/" + name, after, wanted);
    return tagged.thenCombine(
        untagged,
        (fromTag, fromRecords) -> {
          TreeMap<Long, EventEnvelope> merged = new TreeMap<>();
          for (EventEnvelope e : fromTag) {
            merged.put(ordering(e), e);
          }
          for (EventEnvelope e : fromRecords) {
            merged.putIfAbsent(ordering(e), e);
          }
          List<HistoryEntry> items = new ArrayList<>();
          for (EventEnvelope e : merged.values()) {
            if (items.size() == limit) {
              break;
            }
            items.add(historyEntry(e));
          }
          Long next =
              merged.size() > limit ? Long.valueOf(items.get(items.size() - 1).cursor()) : null;
          return new HistoryPage(items, next);
        });
  }

  private CompletionStage<List<EventEnvelope>> byTag(String tag, long after, int max) {
    return readJournal
        .currentEventsByTag(tag, Offset.sequence(after))
        .take(max)
        .runWith(Sink.seq(), system);
  }

  /**
   * The events after {@code after} of the pod records of {@code ref} that may hold untagged events:
   * those whose name was claimed in the index before the first tagged event of the name (all of
   * them when none is tagged). Later records were written with tags throughout.
   */
  private CompletionStage<List<EventEnvelope>> untaggedRecords(
      String tag, String ref, long after, int max) {
    CompletionStage<Long> firstTagged =
        byTag(tag, 0, 1)
            .thenApply(first -> first.isEmpty() ? Long.MAX_VALUE : ordering(first.get(0)));
    CompletionStage<List<EventEnvelope>> claims =
        readJournal
            .currentEventsByPersistenceId(INDEX_PREFIX + ref, 0, Long.MAX_VALUE)
            .runWith(Sink.seq(), system);
    return firstTagged
        .thenCombine(
            claims,
            (first, index) -> {
              Set<String> uids = new LinkedHashSet<>();
              for (EventEnvelope claim : index) {
                if (ordering(claim) < first
                    && typeName(claim.event().getClass()).equals(CLAIMED_TYPE)) {
                  String uid = mapper.valueToTree(claim.event()).path("key").path("uid").asText("");
                  if (!uid.isEmpty()) {
                    uids.add(uid);
                  }
                }
              }
              return uids;
            })
        .thenCompose(
            uids -> {
              CompletableFuture<List<EventEnvelope>> all =
                  CompletableFuture.completedFuture(new ArrayList<>());
              for (String uid : uids) {
                CompletionStage<List<EventEnvelope>> record =
                    readJournal
                        .currentEventsByPersistenceId(
                            RECORD_PREFIX + ref + "/" + uid, 0, Long.MAX_VALUE)
                        .filter(e -> ordering(e) > after)
                        .take(max)
                        .runWith(Sink.seq(), system);
                all =
                    all.thenCombine(
                        record,
                        (sofar, more) -> {
                          sofar.addAll(more);
                          return sofar;
                        });
              }
              return all;
            });
  }

  private static long ordering(EventEnvelope envelope) {
    if (envelope.offset() instanceof Sequence sequence) {
      return sequence.value();
    }
    throw new IllegalStateException(
        "the JDBC read journal gave offset "
            + envelope.offset()
            + " for "
            + envelope.persistenceId()
            + ", not a Sequence");
  }

  private HistoryEntry historyEntry(EventEnvelope envelope) {
    JournalEntry e = entry(envelope);
    return new HistoryEntry(
        ordering(envelope), e.persistenceId(), e.sequenceNr(), e.timestamp(), e.type(), e.event());
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
