package dev.gpushare.node.kube;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.gpushare.node.fake.ApiServerSemantics;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;

/**
 * A CRUD mock API server that behaves like the real one where the writer depends on it: a PUT
 * carrying a stale {@code resourceVersion} is refused with 409 (the stock mock accepts it), and
 * failures can be injected ({@link #failNext}). Every request is logged as {@code "METHOD path"}.
 *
 * <p>{@link #client} is the writer's client, built without fabric8's own retries; {@link #other} is
 * a second client, playing the kubelet or a user.
 */
final class MockApi implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  final KubernetesMockServer server;
  final KubernetesClient client;
  final KubernetesClient other;
  private final Dispatcher dispatcher = new Dispatcher();

  MockApi() {
    server =
        new KubernetesMockServer(
            new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
    server.init();
    client =
        server.createClient(b -> b.editOrNewConfig().withRequestRetryBackoffLimit(0).endConfig());
    other = server.createClient();
  }

  /** The next {@code times} requests of {@code method} to {@code path} get {@code code}. */
  void failNext(String method, String path, int code, int times) {
    synchronized (dispatcher) {
      for (int i = 0; i < times; i++) {
        dispatcher.faults.add(new Fault(method, path, code));
      }
    }
  }

  /**
   * The requests received so far, as {@code "METHOD path"}, oldest first, without the lists and
   * watches of whole collections: the informers' ({@code GET /api/v1/pods}) and the writer's one
   * list of its Events when it starts.
   */
  List<String> requests() {
    synchronized (dispatcher) {
      return dispatcher.log.stream().filter(r -> !collection(r)).toList();
    }
  }

  /** The requests with their answers, as {@code "METHOD path → code"}, as {@link #requests}. */
  List<String> exchanges() {
    synchronized (dispatcher) {
      return dispatcher.exchanges.stream().filter(r -> !collection(r)).toList();
    }
  }

  /** A list or watch of a whole collection (what informers send). */
  private static boolean collection(String line) {
    String path = line.split(" ")[1];
    return line.startsWith("GET ")
        && (path.equals("/api/v1/nodes")
            || path.equals("/api/v1/pods")
            || path.matches("/api/v1/namespaces/[^/]+/pods")
            || path.equals("/apis/events.k8s.io/v1/events"));
  }

  void clearRequests() {
    synchronized (dispatcher) {
      dispatcher.log.clear();
      dispatcher.exchanges.clear();
    }
  }

  @Override
  public void close() {
    client.close();
    other.close();
    server.destroy();
  }

  private record Fault(String method, String path, int code) {}

  private static final class Dispatcher extends KubernetesCrudDispatcher {
    final List<String> log = new ArrayList<>();
    final List<String> exchanges = new ArrayList<>();
    final Deque<Fault> faults = new ArrayDeque<>();

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      String line = request.getMethod() + " " + bare;
      MockResponse response = null;
      synchronized (this) {
        log.add(line);
        Fault fault = faults.peek();
        if (fault != null && fault.method.equals(request.getMethod()) && fault.path.equals(bare)) {
          faults.poll();
          response = ApiServerSemantics.status(fault.code, "injected failure");
        }
      }
      if (response == null) {
        response = ApiServerSemantics.answer(request, this::handleGet, super::dispatch);
      }
      if (response == null) {
        response = super.dispatch(request);
      }
      synchronized (this) {
        exchanges.add(line + " → " + response.code());
      }
      return response;
    }

    @Override
    public MockResponse handleUpdate(RecordedRequest request) {
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      String object = bare.endsWith("/status") ? bare.substring(0, bare.length() - 7) : bare;
      try {
        String sent = resourceVersion(JSON.readTree(request.getBody().getBytes()));
        if (sent != null) {
          MockResponse current = handleGet(object);
          if (current.code() == 200) {
            String stored =
                resourceVersion(
                    JSON.readTree(
                        new String(current.getBody().getBytes(), StandardCharsets.UTF_8)));
            if (stored != null && !stored.equals(sent)) {
              return ApiServerSemantics.status(
                  409,
                  "Operation cannot be fulfilled: the object has been modified; please apply"
                      + " your changes to the latest version and try again");
            }
          }
        }
      } catch (java.io.IOException e) {
        return ApiServerSemantics.status(400, e.toString());
      }
      return super.handleUpdate(request);
    }

    private static String resourceVersion(JsonNode object) {
      JsonNode rv = object.path("metadata").path("resourceVersion");
      return rv.isTextual() ? rv.asText() : null;
    }
  }
}
