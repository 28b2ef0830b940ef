package dev.gpushare.bench;

import dev.gpushare.persistence.H2Checkpoints;
import java.util.Arrays;
import java.util.concurrent.atomic.LongAdder;
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
import slick.jdbc.H2Profile;
import slick.jdbc.JdbcBackend;
import slick.jdbc.JdbcProfile;

/**
 * A profiling stand-in for the journal DAO (LoadBenchmark {@code --timed-journal}): what the
 * production DAOs do — the default DAO, and on H2 the grouped {@code CHECKPOINT} after each write
 * as {@code H2CheckpointingJournalDao} does (the same {@link H2Checkpoints}) — with timers around
 * each step, so that the load benchmark can say how much of a decision's latency is the journal:
 * write batches, rows per batch, the insert, the wait for a checkpoint, and how many checkpoints
 * ran. Only while {@link #measuring}.
 */
public final class TimedJournalDao extends DefaultJournalDao {

  static volatile boolean measuring;

  /** Whether the DAO checkpoints after each write (H2). */
  static volatile boolean checkpoints;

  static final LongAdder BATCHES = new LongAdder();
  static final LongAdder ROWS = new LongAdder();
  static final Samples INSERT = new Samples();
  static final Samples CHECKPOINT_TIME = new Samples();
  static final Samples WRITE = new Samples();
  static final LongAdder CHECKPOINTS = new LongAdder();

  private final boolean h2;
  private final H2Checkpoints grouped;

  public TimedJournalDao(
      JdbcBackend.JdbcDatabaseDef db,
      JdbcProfile profile,
      JournalConfig journalConfig,
      Serialization serialization,
      ExecutionContext ec,
      Materializer mat) {
    super(db, profile, journalConfig, serialization, ec, mat);
    this.h2 = profile instanceof H2Profile;
    this.grouped =
        new H2Checkpoints(
            db,
            ec,
            (started, ended) -> {
              if (measuring) {
                CHECKPOINTS.increment();
              }
            });
    checkpoints = h2;
  }

  @Override
  public Future<BoxedUnit> writeJournalRows(
      Seq<Tuple2<JournalTables.JournalPekkoSerializationRow, Set<String>>> rows) {
    long start = System.nanoTime();
    int count = rows.size();
    Future<BoxedUnit> inserted = super.writeJournalRows(rows);
    if (!h2) {
      return inserted.map(
          done -> {
            record(count, start, System.nanoTime(), System.nanoTime());
            return done;
          },
          ec());
    }
    return inserted.flatMap(
        written -> {
          long insertedAt = System.nanoTime();
          return grouped
              .afterNow()
              .map(
                  done -> {
                    record(count, start, insertedAt, System.nanoTime());
                    return done;
                  },
                  ec());
        },
        ec());
  }

  private static void record(int rows, long start, long inserted, long end) {
    if (!measuring) {
      return;
    }
    BATCHES.increment();
    ROWS.add(rows);
    INSERT.add(inserted - start);
    CHECKPOINT_TIME.add(end - inserted);
    WRITE.add(end - start);
  }

  static void reset() {
    BATCHES.reset();
    ROWS.reset();
    INSERT.clear();
    CHECKPOINT_TIME.clear();
    WRITE.clear();
    CHECKPOINTS.reset();
  }

  /** Durations in nanoseconds from many threads. */
  static final class Samples {
    private long[] values = new long[1 << 12];
    private int size;

    synchronized void add(long nanos) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = nanos;
    }

    synchronized void clear() {
      size = 0;
    }

    synchronized long[] sorted() {
      long[] copy = Arrays.copyOf(values, size);
      Arrays.sort(copy);
      return copy;
    }

    /** "mean a ms, p99 b ms". */
    String summary() {
      long[] s = sorted();
      if (s.length == 0) {
        return "-";
      }
      double mean = Arrays.stream(s).average().orElse(0) / 1e6;
      return String.format(
          java.util.Locale.ROOT,
          "mean %.2f ms, p99 %.2f ms",
          mean,
          BenchSupport.percentile(s, 0.99) / 1e6);
    }
  }
}
