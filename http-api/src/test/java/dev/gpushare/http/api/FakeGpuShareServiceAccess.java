package dev.gpushare.http.api;

import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.persistence.JournalInspector;
import java.util.List;

/** The in-memory service and journal of this package's tests, for tests in other packages. */
public final class FakeGpuShareServiceAccess {
  private FakeGpuShareServiceAccess() {}

  /** A fake service with the few handles other packages need. */
  public interface Service {
    GpuShareService service();

    void reset();

    /** Adds a Hibernation pod {@code namespace/name} on {@code node}. */
    void addPod(String namespace, String name, String node);

    /** The calls the service received, oldest first (e.g. {@code "demand team/a"}). */
    List<String> calls();
  }

  public static Service create() {
    FakeGpuShareService fake = new FakeGpuShareService();
    return new Service() {
      @Override
      public GpuShareService service() {
        return fake;
      }

      @Override
      public void reset() {
        fake.reset();
      }

      @Override
      public void addPod(String namespace, String name, String node) {
        synchronized (fake) {
          fake.pods.put(
              namespace + "/" + name,
              FakeGpuShareService.pod(namespace, name, node, "Hibernation"));
        }
      }

      @Override
      public List<String> calls() {
        synchronized (fake) {
          return List.copyOf(fake.calls);
        }
      }
    };
  }

  public static JournalInspector journal() {
    return new FakeJournalInspector();
  }
}
