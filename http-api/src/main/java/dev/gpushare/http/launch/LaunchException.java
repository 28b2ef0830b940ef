package dev.gpushare.http.launch;

/**
 * The launcher cannot start as asked: a bad flag, an unusable config or {@code --data}. The message
 * names the flag or key, the value given and what is accepted; it is printed without a stack trace
 * and the process exits with {@link ExitStatus#USAGE}.
 */
public final class LaunchException extends RuntimeException {
  public LaunchException(String message) {
    super(message, null, false, false);
  }
}
