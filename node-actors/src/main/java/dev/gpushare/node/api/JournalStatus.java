package dev.gpushare.node.api;

import java.util.Optional;
import java.util.function.Consumer;

/**
 * What the service knows of its journal's ability to write, so that a write that cannot be made
 * fails at once with the reason instead of waiting for the ask timeout, and {@code /readyz} says
 * so. The launcher adapts the embedded H2 journal's health to it; {@link #WRITABLE} knows nothing
 * (the journal is assumed to write).
 */
public interface JournalStatus {

  /** Always writable, never a failure: for journals without a health of their own. */
  JournalStatus WRITABLE =
      new JournalStatus() {
        @Override
        public Optional<String> unwritable() {
          return Optional.empty();
        }

        @Override
        public void onWriteFailure(Consumer<String> listener) {}
      };

  /** Why the journal cannot take writes now (where, and what to do); empty while it can. */
  Optional<String> unwritable();

  /**
   * {@code listener} hears the reason of every journal write that fails from now on, at once: the
   * entity that wrote does not answer. Calls come from journal threads and must return quickly.
   */
  void onWriteFailure(Consumer<String> listener);
}
