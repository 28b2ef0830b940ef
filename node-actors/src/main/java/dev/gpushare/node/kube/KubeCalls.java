package dev.gpushare.node.kube;

import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.ServiceException;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How {@link KubeWriter} sends a request: after a token of its {@link TokenBucket}, counted, and
 * with the API server's refusal read as what to do next ({@link #classify}); and how it waits for
 * the arbiter's view of an object.
 */
final class KubeCalls {
  // the writer's logger: what it refuses or retries is the writer's story
  private static final Logger LOG = LoggerFactory.getLogger(KubeWriter.class);

  /** How long the writer waits for the arbiter's view of an object. */
  static final Duration VIEW_TIMEOUT = Duration.ofSeconds(10);

  private final TokenBucket bucket;
  private final GpuShareMetrics metrics;
  private final AtomicLong requests = new AtomicLong();

  KubeCalls(TokenBucket bucket, GpuShareMetrics metrics) {
    this.bucket = bucket;
    this.metrics = metrics;
  }

  /** Requests sent so far, reads included. */
  long sent() {
    return requests.get();
  }

  /**
   * A write of an object of {@code kind} ({@code node}, {@code pod}, {@code event}, the label of
   * {@code gpushare_kubernetes_write_errors_total}). A request that the server refused for good is
   * logged, and the pass goes on without it; every failure is counted.
   */
  <T> T write(String kind, String what, Supplier<T> request) {
    try {
      return call(what, request, () -> metrics.kubernetesWrite(kind));
    } catch (Rejected r) {
      metrics.kubernetesWriteError(kind, "rejected");
      LOG.warn("{}; dropped until the next change", r.getMessage());
      return null;
    } catch (Retry r) {
      metrics.kubernetesWriteError(kind, "retry");
      throw r;
    } catch (Conflict c) {
      // An Event's 409 means it exists already (written before a fail-over): no error.
      if (!"event".equals(kind)) {
        metrics.kubernetesWriteError(kind, "conflict");
      }
      throw c;
    } catch (Gone | Stopped g) {
      throw g;
    } catch (RuntimeException e) {
      metrics.kubernetesWriteError(kind, "error");
      throw e;
    }
  }

  <T> T call(String what, Supplier<T> request) {
    return call(what, request, () -> {});
  }

  /** {@code request} once the rate limit lets it go; {@code sent} is told just before it goes. */
  <T> T call(String what, Supplier<T> request, Runnable sent) {
    long wait = bucket.reserve();
    if (wait > 0) {
      try {
        TimeUnit.NANOSECONDS.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Stopped();
      }
    }
    requests.incrementAndGet();
    sent.run();
    try {
      return request.get();
    } catch (KubernetesClientException e) {
      throw classify(what, e);
    }
  }

  static <T> T view(String what, CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(VIEW_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Stopped();
    } catch (TimeoutException e) {
      throw new Retry(what + " took longer than " + VIEW_TIMEOUT, null);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      while (cause instanceof CompletionException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      if (cause instanceof ServiceException s && s.kind() == ServiceException.Kind.NOT_FOUND) {
        return null;
      }
      throw new Retry(what + " failed: " + cause, null);
    }
  }

  static RuntimeException classify(String what, KubernetesClientException e) {
    int code = e.getCode();
    String detail =
        what
            + " failed with "
            + (code == 0 ? "no response" : "HTTP " + code)
            + ": "
            + (e.getStatus() != null && e.getStatus().getMessage() != null
                ? e.getStatus().getMessage()
                : e.getMessage());
    if (code == 409) {
      return new Conflict(what);
    }
    if (code == 404) {
      return new Gone(what);
    }
    if (code == 0 || code == 408 || code == 429 || code >= 500) {
      Integer seconds =
          e.getStatus() == null || e.getStatus().getDetails() == null
              ? null
              : e.getStatus().getDetails().getRetryAfterSeconds();
      return new Retry(detail, seconds == null ? null : Duration.ofSeconds(seconds));
    }
    return new Rejected(detail);
  }

  /** 409: read again and recompute. */
  static final class Conflict extends RuntimeException {
    Conflict(String what) {
      super(what, null, false, false);
    }
  }

  /** 404 on a write: the object is gone; nothing left to do. */
  static final class Gone extends RuntimeException {
    Gone(String what) {
      super(what, null, false, false);
    }
  }

  /** 429, 5xx, timeouts: try again later. */
  static final class Retry extends RuntimeException {
    final Duration after;

    Retry(String detail, Duration after) {
      super(detail, null, false, false);
      this.after = after;
    }
  }

  /** Any other 4xx: this write is wrong as it stands; log it and move on. */
  static final class Rejected extends RuntimeException {
    Rejected(String detail) {
      super(detail, null, false, false);
    }
  }

  /** The writer was closed during a wait. */
  static final class Stopped extends RuntimeException {
    Stopped() {
      super("stopped", null, false, false);
    }
  }
}
