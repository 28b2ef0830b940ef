package dev.gpushare.http.server;

import dev.gpushare.arbiter.FieldError;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RetryAfter;

/**
 * The watches (Server-Sent Events) and grant long polls held at once: at most {@code maxPerClient}
 * from one remote address and {@code max} in all. Each one holds a {@link Permit} from before it
 * starts until its response has ended (the stream closed, the long poll answered, or its connection
 * gone, {@link ConnectionGuard.Connection}). One over a limit is answered at once: {@code 429} over
 * the client's limit, {@code 503} over the server's, both with {@code Retry-After} and a problem
 * naming the setting and its value.
 */
public final class WatchLimits {
  /** What a refused client is told to wait before it tries again. */
  public static final int RETRY_AFTER_SECONDS = 5;

  public static final String MAX_KEY = HttpLimits.AT + ".max-watches";
  public static final String PER_CLIENT_KEY = HttpLimits.AT + ".max-watches-per-client";

  private final int max;
  private final int maxPerClient;
  private final Map<String, Integer> byClient = new HashMap<>();
  private int total;

  WatchLimits(int max, int maxPerClient) {
    this.max = max;
    this.maxPerClient = maxPerClient;
  }

  public static WatchLimits of(HttpLimits limits) {
    return new WatchLimits(limits.maxWatches(), limits.maxWatchesPerClient());
  }

  /** The answer to one watch or long poll: a permit, or the response that refuses it. */
  sealed interface Admission permits Permit, Refused {}

  /** The refusal, ready to send. */
  public record Refused(HttpResponse response) implements Admission {}

  /**
   * A permit for one more from {@code client}, or the refusal; release a permit once (more is
   * harmless).
   */
  public synchronized Admission tryAcquire(String client) {
    int own = byClient.getOrDefault(client, 0);
    if (own >= maxPerClient) {
      return refused(
          StatusCodes.TOO_MANY_REQUESTS,
          PER_CLIENT_KEY,
          maxPerClient,
          "too many watches and long polls from "
              + client
              + ": "
              + PER_CLIENT_KEY
              + " is "
              + maxPerClient
              + " at a time per remote address; close one, or retry after "
              + RETRY_AFTER_SECONDS
              + " seconds");
    }
    if (total >= max) {
      return refused(
          StatusCodes.SERVICE_UNAVAILABLE,
          MAX_KEY,
          max,
          "the server holds as many watches and long polls as it takes: "
              + MAX_KEY
              + " is "
              + max
              + " at a time from all clients; retry after "
              + RETRY_AFTER_SECONDS
              + " seconds");
    }
    byClient.put(client, own + 1);
    total++;
    return new Permit(this, client);
  }

  private synchronized void release(String client) {
    total--;
    byClient.computeIfPresent(client, (c, n) -> n <= 1 ? null : n - 1);
  }

  private static Refused refused(StatusCode status, String key, int limit, String why) {
    return new Refused(
        Problem.http(status, why, List.of(new FieldError(key, Integer.toString(limit), why)))
            .toResponse()
            .addHeader(RetryAfter.create(Long.valueOf(RETRY_AFTER_SECONDS))));
  }

  /** One watch or long poll held; {@link #release} gives its place back, once. */
  static final class Permit implements Admission {
    private final WatchLimits limits;
    private final String client;
    private final AtomicBoolean released = new AtomicBoolean();
    private volatile Runnable onRelease = () -> {};

    private Permit(WatchLimits limits, String client) {
      this.limits = limits;
      this.client = client;
    }

    void release() {
      if (released.compareAndSet(false, true)) {
        limits.release(client);
        onRelease.run();
      }
    }

    /** Runs {@code action} once released (the connection forgets the permit). */
    void onRelease(Runnable action) {
      onRelease = action;
      if (released.get()) {
        action.run();
      }
    }
  }
}
