package dev.gpushare.http;

/**
 * The launcher cannot start as asked: a bad flag, an unusable config or {@code --data}. The message
 * names the flag or key, the value given and what is accepted; it is printed without a stack trace
 * and the process exits with {@link #USAGE}.
 */
public final class LaunchException extends RuntimeException {
  /** Exit status for a bad command line or configuration (BSD {@code EX_USAGE} style). */
  public static final int USAGE = 2;

  public LaunchException(String message) {
    super(message, null, false, false);
  }
}
