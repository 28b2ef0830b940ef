package dev.gpushare.cli;

import java.io.IOException;

/** The server did not answer at all: refused, unknown host, timed out, connection dropped. */
final class UnreachableException extends RuntimeException {
  private final String server;

  /** {@code server} as messages name it: its URL, or {@code unix:/path}. */
  UnreachableException(String server, IOException cause) {
    super(describe(cause), cause);
    this.server = server;
  }

  String server() {
    return server;
  }

  private static String describe(IOException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.nio.channels.UnresolvedAddressException
          || t instanceof java.net.UnknownHostException) {
        return "unknown host";
      }
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.net.http.HttpConnectTimeoutException) {
        return "connection timed out";
      }
      if (t instanceof java.net.http.HttpTimeoutException) {
        return "no answer in time (" + t.getMessage() + ")";
      }
      if (t instanceof java.net.ConnectException) {
        return t.getMessage() == null || t.getMessage().isBlank()
            ? "connection refused"
            : t.getMessage();
      }
    }
    Throwable t = e;
    while ((t.getMessage() == null || t.getMessage().isBlank()) && t.getCause() != null) {
      t = t.getCause();
    }
    String message = t.getMessage();
    String kind = t.getClass().getSimpleName();
    return message == null || message.isBlank() ? kind : kind + ": " + message;
  }
}
