package dev.gpushare.http.api;

import dev.gpushare.persistence.JournalInspector;

/**
 * The in-memory journal of this package's tests, for tests in other packages (the in-memory service
 * is node-actors' {@code dev.gpushare.node.fake.FakeGpuShareService}, public).
 */
public final class FakeGpuShareServiceAccess {
  private FakeGpuShareServiceAccess() {}

  public static JournalInspector journal() {
    return new FakeJournalInspector();
  }
}
