package dev.gpushare.http.admission;

import dev.gpushare.arbiter.FieldError;

/**
 * A request body that is not an {@code admission.k8s.io/v1} AdmissionReview of the shape the API
 * server sends. {@link AdmissionRoutes} answers it with {@code 400}; the API server counts that as
 * a failed call, which under {@code failurePolicy: Fail} refuses the pod. The message names the
 * field, the value given and what is accepted.
 */
public final class MalformedReviewException extends IllegalArgumentException {
  private final transient FieldError error;

  public MalformedReviewException(FieldError error) {
    super(error.message());
    this.error = error;
  }

  public FieldError error() {
    return error;
  }
}
