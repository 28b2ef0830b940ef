package dev.gpushare.node.kube;

import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Duration;

/** How {@link KubeWriter} reads an API server's refusal: what to do next, by status code. */
final class KubeCalls {
  private KubeCalls() {}

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
