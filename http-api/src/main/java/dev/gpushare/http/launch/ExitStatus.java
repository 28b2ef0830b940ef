package dev.gpushare.http.launch;

/** The launcher's and its tools' exit statuses, besides 0 for success. */
public final class ExitStatus {
  /** A start-up or tool failure that no flag or key explains. */
  public static final int FAILED = 1;

  /**
   * A bad command line or configuration (BSD {@code EX_USAGE} style): the message names the flag or
   * key, the value given and what is accepted ({@link LaunchException}).
   */
  public static final int USAGE = 2;

  /**
   * H2 has closed the journal database after a write error (a full disk): a new process recovers
   * from the file.
   */
  public static final int JOURNAL_CLOSED = 3;

  private ExitStatus() {}
}
