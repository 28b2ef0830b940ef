package dev.gpushare.http.tools;

/**
 * A trace file that cannot be used: missing, unreadable or malformed. The message names the file
 * and, for a bad line, the line number, the column, the value and what is accepted.
 */
public final class TraceFormatException extends RuntimeException {
  public TraceFormatException(String message) {
    super(message, null, false, false);
  }
}
