package dev.gpushare.cli;

/** A mistake in the command line or in what it points to (a token file): exit status 2. */
final class CliException extends RuntimeException {
  CliException(String message) {
    super(message);
  }
}
