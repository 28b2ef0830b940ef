package dev.gpushare.persistence;

import java.io.IOException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.apache.pekko.actor.AbstractExtensionId;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.ClassicActorSystemProvider;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Extension;
import org.apache.pekko.event.Logging;
import org.apache.pekko.event.LoggingAdapter;

/**
 * Whether the embedded H2 journal can take writes now, for readiness and for failing writes fast
 * instead of letting them time out. One per actor system ({@link #get}).
 *
 * <p>The journal cannot write, and {@link #unwritable()} says why, while
 *
 * <ul>
 *   <li>the file system of the data directory has less free space than the minimum given to {@link
 *       #watchFreeSpace} (checked every second; it clears itself when space returns), or
 *   <li>a journal write failed ({@link H2CheckpointingJournalDao} reports it), until a {@code
 *       CHECKPOINT} or a later write succeeds, or
 *   <li>H2 has closed the database: MVStore closes its store when a write to the file fails (a full
 *       disk, an I/O error) and every later statement of this process fails with error 90098 ("The
 *       database has been closed"), while the file keeps every change stored before the failure, so
 *       every acknowledged event (H2CheckpointingJournalDao). This lasts: only a new process,
 *       opening the file again, writes again. {@link Listener#databaseClosed} tells the launcher,
 *       which exits so that its supervisor starts it again.
 * </ul>
 *
 * {@link Listener#writeFailed} hears of each failed write at once: the entity that wrote does not
 * answer (it restarts and recovers from the journal), so whoever waits for it should stop waiting.
 */
public final class JournalHealth implements Extension {

  /** What the journal's users hear; calls come from journal and scheduler threads. */
  public interface Listener {
    /** A journal write failed; {@code reason} says why and where. */
    default void writeFailed(String reason) {}

    /** H2 has closed the database: this process cannot write to the journal again. */
    default void databaseClosed(String reason) {}
  }

  /** Reads the free space of the data directory's file system. */
  interface FreeSpace {
    long usable() throws IOException;
  }

  /** H2's {@code ErrorCode.DATABASE_IS_CLOSED}. */
  static final int H2_DATABASE_CLOSED = 90098;

  static final Duration CHECK_INTERVAL = Duration.ofSeconds(1);

  /** The configuration key of the minimum, named in messages. */
  public static final String MIN_FREE_SPACE_KEY = "gpushare.journal.min-free-space";

  private static final Id ID = new Id();

  private static final class Id extends AbstractExtensionId<JournalHealth> {
    @Override
    public JournalHealth createExtension(ExtendedActorSystem system) {
      return new JournalHealth(system);
    }
  }

  private final ExtendedActorSystem system;
  private final LoggingAdapter log;
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();

  // Guarded by lock. Each reason while it holds, else null: free space under the minimum, a
  // failed write not yet followed by a successful one, the database closed by H2.
  private String lowSpace;
  private String failed;
  private String closed;
  private boolean probing;

  private String where;
  private Runnable spaceCheck = () -> {};
  private Cancellable watch;

  private volatile Supplier<CompletionStage<?>> probe;

  private JournalHealth(ExtendedActorSystem system) {
    this.system = system;
    this.log = Logging.getLogger(system, JournalHealth.class);
  }

  /** The health of {@code system}'s journal. */
  public static JournalHealth get(ClassicActorSystemProvider system) {
    return ID.get(system.classicSystem());
  }

  /** Why the journal cannot take writes now; empty while it can. */
  public Optional<String> unwritable() {
    synchronized (lock) {
      return Optional.ofNullable(closed != null ? closed : failed != null ? failed : lowSpace);
    }
  }

  /** Whether H2 has closed the database (for good, in this process). */
  public boolean databaseClosed() {
    synchronized (lock) {
      return closed != null;
    }
  }

  public void listen(Listener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  /**
   * Checks every second that the file system of {@code dataDir} has at least {@code minFreeBytes}
   * free ({@code 0}: never refuses for space), and after a failed write whether the database writes
   * again. Called once, by the launcher.
   */
  public void watchFreeSpace(Path dataDir, long minFreeBytes) {
    FreeSpace space;
    try {
      DataDirectory.space(dataDir);
      space = () -> DataDirectory.space(dataDir).usable();
    } catch (IOException e) {
      log.warning(
          "journal: the file system of {} cannot be read ({}); its free space is not watched",
          dataDir,
          e.toString());
      space = () -> Long.MAX_VALUE;
    }
    watchFreeSpace(dataDir.toString(), space, minFreeBytes, CHECK_INTERVAL);
  }

  /** As above over any {@code space}; {@code interval} zero: only {@link #check()} looks. */
  void watchFreeSpace(String dataDir, FreeSpace space, long minFreeBytes, Duration interval) {
    synchronized (lock) {
      where = dataDir;
      spaceCheck = () -> checkSpace(dataDir, space, minFreeBytes);
    }
    check();
    if (!interval.isZero()) {
      Cancellable scheduled =
          system
              .scheduler()
              .scheduleWithFixedDelay(interval, interval, this::check, system.dispatcher());
      synchronized (lock) {
        watch = scheduled;
      }
    }
  }

  /** One look: free space, and a probe while a failed write is not cleared. */
  void check() {
    Runnable space;
    boolean probeNow;
    synchronized (lock) {
      space = spaceCheck;
      probeNow = failed != null && closed == null;
    }
    space.run();
    if (probeNow) {
      probe();
    }
  }

  private void checkSpace(String dataDir, FreeSpace space, long minFreeBytes) {
    if (minFreeBytes <= 0) {
      return;
    }
    long usable;
    try {
      usable = space.usable();
    } catch (IOException | RuntimeException e) {
      log.debug("journal: free space of {} not read: {}", dataDir, e.toString());
      return;
    }
    String low =
        usable >= minFreeBytes
            ? null
            : "the file system of "
                + dataDir
                + " has "
                + size(usable)
                + " free, less than "
                + MIN_FREE_SPACE_KEY
                + " ("
                + size(minFreeBytes)
                + "); free space there (or lower the setting)";
    String before;
    synchronized (lock) {
      before = lowSpace;
      lowSpace = low;
    }
    if (before == null && low != null) {
      log.warning("journal: {}; writes are refused and /readyz answers 503 until then", low);
    } else if (before != null && low == null) {
      log.info("journal: {} free in {} again; writes are accepted", size(usable), dataDir);
    }
  }

  /** The DAO's way to look whether the database still writes: a {@code CHECKPOINT}. */
  void attach(Supplier<CompletionStage<?>> checkpoint) {
    this.probe = checkpoint;
  }

  /** A journal write (or the checkpoint that acknowledges it) failed. */
  void writeFailed(Throwable cause) {
    String reason;
    boolean first;
    synchronized (lock) {
      reason = writeFailedIn() + ": " + describe(cause);
      if (closed != null) {
        return;
      }
      first = failed == null;
      failed = reason;
    }
    if (first) {
      log.warning("journal: {}; writes are refused until the journal writes again", reason);
    }
    listeners.forEach(l -> l.writeFailed(reason));
    if (isDatabaseClosed(cause)) {
      close(reason);
    } else {
      probe();
    }
  }

  /** A journal write succeeded: an earlier failure is over. */
  void writeSucceeded() {
    String before;
    synchronized (lock) {
      before = failed;
      if (closed != null || before == null) {
        return;
      }
      failed = null;
    }
    log.info("journal: writes succeed again after: {}", before);
  }

  /** A {@code CHECKPOINT}: closed database → for good; success → the failure is over. */
  private void probe() {
    Supplier<CompletionStage<?>> checkpoint = probe;
    synchronized (lock) {
      if (checkpoint == null || probing || closed != null) {
        return;
      }
      probing = true;
    }
    CompletionStage<?> stage;
    try {
      stage = checkpoint.get();
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    stage.whenComplete(
        (ok, error) -> {
          synchronized (lock) {
            probing = false;
          }
          if (error == null) {
            writeSucceeded();
          } else if (isDatabaseClosed(error)) {
            String reason;
            synchronized (lock) {
              reason = failed != null ? failed : writeFailedIn();
            }
            close(reason);
          }
          // any other failure: the next check probes again
        });
  }

  // Guarded by lock.
  private String writeFailedIn() {
    return "a journal write failed" + (where == null ? "" : " in " + where);
  }

  private void close(String reason) {
    String why =
        reason
            + "; H2 has closed the journal database, so nothing more can be written by this"
            + " process (the file keeps every acknowledged write)";
    synchronized (lock) {
      if (closed != null) {
        return;
      }
      closed = why;
      if (watch != null) {
        watch.cancel();
      }
    }
    log.error("journal: {}", why);
    listeners.forEach(l -> l.databaseClosed(why));
  }

  /** Whether {@code error} or a cause is H2's "The database has been closed". */
  static boolean isDatabaseClosed(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SQLException e && e.getErrorCode() == H2_DATABASE_CLOSED) {
        return true;
      }
    }
    return false;
  }

  /** What went wrong, in a few words: the file system's complaint when there is one. */
  static String describe(Throwable error) {
    Throwable deepest = error;
    for (Throwable t = error; t != null; t = t.getCause()) {
      deepest = t;
      String message = t.getMessage() == null ? "" : t.getMessage();
      if (t instanceof IOException) {
        String lower = message.toLowerCase(Locale.ROOT);
        if (lower.contains("no space left")) {
          return "no space left on device";
        }
        if (lower.contains("quota")) {
          return "disk quota exceeded";
        }
        if (lower.contains("read-only file system")) {
          return "read-only file system";
        }
      }
      if (t instanceof SQLException e && e.getErrorCode() == H2_DATABASE_CLOSED) {
        return "H2 has closed the database after an earlier write error";
      }
    }
    String message = deepest.getMessage();
    String line = message == null ? "" : message.lines().findFirst().orElse("");
    return deepest.getClass().getSimpleName() + (line.isEmpty() ? "" : ": " + line);
  }

  /** Bytes for people: {@code 812 KiB}, {@code 3.2 MiB}. */
  static String size(long bytes) {
    if (bytes < 1024) {
      return bytes + " bytes";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double value = bytes;
    int unit = -1;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit++;
    }
    return (value < 10 && value != Math.floor(value)
            ? String.format(Locale.ROOT, "%.1f", value)
            : String.valueOf(Math.round(value)))
        + " "
        + units[unit];
  }
}
