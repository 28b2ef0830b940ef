package dev.gpushare.http.server;

/** Ends a request with the given problem; for HTTP-level failures that no service refusal names. */
public final class ProblemException extends RuntimeException {
  private final transient Problem problem;

  public ProblemException(Problem problem) {
    super(problem.detail(), null, false, false);
    this.problem = problem;
  }

  public Problem problem() {
    return problem;
  }
}
