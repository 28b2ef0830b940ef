package dev.gpushare.persistence;

import org.apache.pekko.persistence.jdbc.config.JournalConfig;
import org.apache.pekko.persistence.jdbc.journal.dao.DefaultJournalDao;
import org.apache.pekko.persistence.jdbc.journal.dao.JournalTables;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.stream.Materializer;
import scala.Tuple2;
import scala.collection.immutable.Seq;
import scala.collection.immutable.Set;
import scala.concurrent.ExecutionContext;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;
import scala.runtime.BoxedUnit;
import slick.jdbc.JdbcBackend;
import slick.jdbc.JdbcProfile;

/**
 * The journal DAO of the embedded H2 profile ({@code jdbc-journal.dao}): the default DAO, except
 * that a write completes, and so a persist is acknowledged, only after H2's {@code CHECKPOINT} has
 * stored every committed change in the database file.
 *
 * <p>Why: H2 2.x (MVStore) has no write-ahead log. A commit changes memory; the background writer
 * stores it to the file up to {@code WRITE_DELAY} (500 ms) later, so a killed process loses
 * acknowledged events. {@code WRITE_DELAY=0} would store at every commit but also stops the
 * background writer, which is what compacts the file; the file then grows by kilobytes per event
 * without bound. {@code CHECKPOINT} stores synchronously and leaves the background writer on. Once
 * in the file, the data survive the death of the process (not a power loss: there is no fsync).
 * Snapshots are stored with the next checkpoint or within {@code WRITE_DELAY}; losing one costs a
 * longer recovery, never an event.
 *
 * <p>Checkpoints are grouped ({@link H2Checkpoints}): under load one checkpoint acknowledges many
 * writes (BENCHMARKS.md, "Load": it was one checkpoint per write, and the checkpoints queued on
 * MVStore's store lock).
 *
 * <p>Every write's outcome goes to the system's {@link JournalHealth}, which also probes the
 * database with a checkpoint after a failure.
 */
public final class H2CheckpointingJournalDao extends DefaultJournalDao {

  private final H2Checkpoints checkpoints;
  private final JournalHealth health;

  /** The constructor {@code JdbcAsyncWriteJournal} calls reflectively; same as the default DAO. */
  public H2CheckpointingJournalDao(
      JdbcBackend.JdbcDatabaseDef db,
      JdbcProfile profile,
      JournalConfig journalConfig,
      Serialization serialization,
      ExecutionContext ec,
      Materializer mat) {
    super(db, profile, journalConfig, serialization, ec, mat);
    this.checkpoints = new H2Checkpoints(db, ec, H2Checkpoints.Listener.NONE);
    this.health = JournalHealth.get(mat.system());
    health.attach(() -> FutureConverters.asJava(checkpoints.afterNow()));
  }

  @Override
  public Future<BoxedUnit> writeJournalRows(
      Seq<Tuple2<JournalTables.JournalPekkoSerializationRow, Set<String>>> rows) {
    Future<BoxedUnit> stored =
        super.writeJournalRows(rows).flatMap(written -> checkpoints.afterNow(), ec());
    stored.onComplete(
        result -> {
          if (result.isFailure()) {
            health.writeFailed(result.failed().get());
          } else {
            health.writeSucceeded();
          }
          return BoxedUnit.UNIT;
        },
        ec());
    return stored;
  }
}
