package dev.gpushare.persistence;

import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.Supplier;
import scala.concurrent.ExecutionContext;
import scala.concurrent.Future;
import scala.concurrent.Promise;
import scala.runtime.BoxedUnit;
import slick.dbio.DBIOAction;
import slick.dbio.NoStream;
import slick.jdbc.JdbcBackend;
import slick.jdbc.SimpleJdbcAction;

/**
 * H2's {@code CHECKPOINT} after journal writes, grouped ({@link H2CheckpointingJournalDao}): a
 * checkpoint stores everything committed before it started, whoever committed it, so a write that
 * finds none running starts one, and every write that completes while one runs waits for the single
 * next one, which starts when the running one ends. At most one runs and one waits, however many
 * entities write at once.
 */
public final class H2Checkpoints {

  /** Told of each checkpoint: when it started and ended ({@code System.nanoTime()}). */
  public interface Listener {
    Listener NONE = (started, ended) -> {};

    void checkpointed(long started, long ended);
  }

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

  private final Supplier<Future<BoxedUnit>> checkpoint;
  private final ExecutionContext ec;
  private final Listener listener;
  private final Object group = new Object();
  // Guarded by group: whether a checkpoint runs, and the one that waits for it (or null).
  private boolean running;
  private Promise<BoxedUnit> waiting;

  /** Checkpoints of {@code db}'s database. */
  public H2Checkpoints(JdbcBackend.JdbcDatabaseDef db, ExecutionContext ec, Listener listener) {
    this(() -> run(db, CHECKPOINT), ec, listener);
  }

  /** Grouped runs of {@code checkpoint} (tests count them). */
  H2Checkpoints(Supplier<Future<BoxedUnit>> checkpoint, ExecutionContext ec, Listener listener) {
    this.checkpoint = checkpoint;
    this.ec = ec;
    this.listener = listener;
  }

  /** Completes once a checkpoint that started after this call has stored the file. */
  public Future<BoxedUnit> afterNow() {
    Promise<BoxedUnit> mine;
    synchronized (group) {
      if (running) {
        if (waiting == null) {
          waiting = Promise.apply();
        }
        return waiting.future();
      }
      running = true;
      mine = Promise.apply();
    }
    start(mine);
    return mine.future();
  }

  private void start(Promise<BoxedUnit> done) {
    long started = System.nanoTime();
    Future<BoxedUnit> stored;
    try {
      stored = checkpoint.get();
    } catch (RuntimeException e) {
      stored = scala.concurrent.Future$.MODULE$.failed(e);
    }
    stored.onComplete(
        result -> {
          listener.checkpointed(started, System.nanoTime());
          done.complete(result);
          Promise<BoxedUnit> next;
          synchronized (group) {
            next = waiting;
            waiting = null;
            running = next != null;
          }
          if (next != null) {
            start(next);
          }
          return BoxedUnit.UNIT;
        },
        ec);
  }

  /**
   * {@code Database.run} takes {@code DBIOAction[R, NoStream, Nothing]}, which every action is in
   * Scala (the effect parameter is contravariant) but which Java cannot even name ({@code Nothing}
   * is no {@code Effect} to javac); hence the raw call.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Future<BoxedUnit> run(
      JdbcBackend.JdbcDatabaseDef db, DBIOAction<BoxedUnit, NoStream, ?> action) {
    return db.run((DBIOAction) action);
  }
}
