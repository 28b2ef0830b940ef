package dev.gpushare.node;

import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The journal's gate on requests that write ({@link JournalStatus}): while the journal cannot write
 * they fail at once with UNAVAILABLE and the reason, having changed nothing; those in flight when a
 * journal write fails fail then (the entity whose write failed restarts without answering); and one
 * whose ask times out while the journal cannot write is told why rather than "unknown".
 */
final class WriteGate {
  private final JournalStatus journal;

  /** The answers of writing requests not yet answered ({@link #writing}). */
  private final Set<CompletableFuture<?>> writesInFlight = ConcurrentHashMap.newKeySet();

  WriteGate(JournalStatus journal) {
    this.journal = journal;
    journal.onWriteFailure(this::writeFailed);
  }

  /** Why the journal cannot write now, as {@code /readyz} says it; empty while it can. */
  Optional<String> unwritable() {
    return journal.unwritable().map(why -> "the journal cannot write: " + why);
  }

  /**
   * A request that writes: refused at once while the journal cannot write, failed at once when a
   * journal write fails while it is in flight, and told why when its ask times out meanwhile.
   */
  <T> CompletionStage<T> writing(Supplier<CompletionStage<T>> write) {
    Optional<String> why = journal.unwritable();
    if (why.isPresent()) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.UNAVAILABLE,
              "the journal cannot write: "
                  + why.get()
                  + "; nothing was changed: retry once GET /readyz answers 200"));
    }
    CompletableFuture<T> answer = new CompletableFuture<>();
    writesInFlight.add(answer);
    CompletionStage<T> stage;
    try {
      stage = write.get();
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    stage.whenComplete(
        (value, error) -> {
          writesInFlight.remove(answer);
          if (error == null) {
            answer.complete(value);
          } else {
            answer.completeExceptionally(whileUnwritable(error));
          }
        });
    return answer;
  }

  /** A journal write failed: the requests in flight will not be answered by their entities. */
  private void writeFailed(String reason) {
    ServiceException failed =
        new ServiceException(
            Kind.UNAVAILABLE,
            reason
                + "; this request is not acknowledged: once GET /readyz answers 200, look whether"
                + " it took effect and retry it if not");
    for (CompletableFuture<?> answer : writesInFlight) {
      writesInFlight.remove(answer);
      answer.completeExceptionally(failed);
    }
  }

  /** An ask that timed out while the journal could not write: say so rather than "unknown". */
  private Throwable whileUnwritable(Throwable error) {
    Throwable cause = error;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    Optional<String> why = journal.unwritable();
    if (!(cause instanceof TimeoutException) || why.isEmpty()) {
      return error;
    }
    return new ServiceException(
        Kind.UNAVAILABLE,
        "no answer in time while the journal cannot write: "
            + why.get()
            + "; the request is not acknowledged: once GET /readyz answers 200, look whether it"
            + " took effect and retry it if not");
  }
}
