package dev.gpushare.persistence;

import java.sql.SQLException;
import java.sql.Statement;
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
import scala.runtime.BoxedUnit;
import slick.dbio.DBIOAction;
import slick.dbio.NoStream;
import slick.jdbc.JdbcBackend;
import slick.jdbc.JdbcProfile;
import slick.jdbc.SimpleJdbcAction;

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
 */
public final class H2CheckpointingJournalDao extends DefaultJournalDao {

  private static final SimpleJdbcAction<BoxedUnit> CHECKPOINT =
      new SimpleJdbcAction<>(
          context -> {
            try (Statement statement = context.connection().createStatement()) {
              statement.execute("CHECKPOINT");
            } catch (SQLException e) {
              throw new IllegalStateException(
                  "H2 CHECKPOINT after a journal write failed; the write is not acknowledged", e);
            }
            return BoxedUnit.UNIT;
          });

  /** The constructor {@code JdbcAsyncWriteJournal} calls reflectively; same as the default DAO. */
  public H2CheckpointingJournalDao(
      JdbcBackend.JdbcDatabaseDef db,
      JdbcProfile profile,
      JournalConfig journalConfig,
      Serialization serialization,
      ExecutionContext ec,
      Materializer mat) {
    super(db, profile, journalConfig, serialization, ec, mat);
  }

  @Override
  public Future<BoxedUnit> writeJournalRows(
      Seq<Tuple2<JournalTables.JournalPekkoSerializationRow, Set<String>>> rows) {
    return super.writeJournalRows(rows).flatMap(written -> run(CHECKPOINT), ec());
  }

  /**
   * {@code Database.run} takes {@code DBIOAction[R, NoStream, Nothing]}, which every action is in
   * Scala (the effect parameter is contravariant) but which Java cannot even name ({@code Nothing}
   * is no {@code Effect} to javac); hence the raw call.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private Future<BoxedUnit> run(DBIOAction<BoxedUnit, NoStream, ?> action) {
    return db().run((DBIOAction) action);
  }
}
