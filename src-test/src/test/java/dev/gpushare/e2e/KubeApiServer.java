package dev.gpushare.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import dev.gpushare.node.fake.ApiServerSemantics;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.events.v1.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A fabric8 mock API server in CRUD mode on 127.0.0.1 (plain HTTP), standing in for a cluster's
 * kube-apiserver, and {@link #kubectl}: a client that makes the calls {@code kubectl} makes —
 * {@code create -f} (POST), {@code label}/{@code annotate} (JSON merge patch of the metadata),
 * {@code delete} (DELETE) — and that plays the kubelet where a test needs one (status writes).
 *
 * <p>Unlike the stock CRUD mock, a PUT that carries a stale {@code resourceVersion} is refused with
 * 409, as the real API server does (optimistic locking). The last requests with their answers are
 * kept for failure messages ({@link #recentExchanges}).
 *
 * <p>{@link RealKubeApiServer} is the same face on a real API server (issue 33): a test written
 * against this class runs there too, with the member on the shipped ServiceAccount's RBAC.
 */
class KubeApiServer implements AutoCloseable {
  static final String NS = Api.NS;
  private static final int KEPT_EXCHANGES = 400;

  private final Dispatcher dispatcher = new Dispatcher();
  private final KubernetesMockServer server;
  final KubernetesClient kubectl;

  /** For {@link RealKubeApiServer}: {@code admin} plays kubectl; no mock server. */
  protected KubeApiServer(KubernetesClient admin) {
    server = null;
    kubectl = admin;
  }

  KubeApiServer() {
    server =
        new KubernetesMockServer(
            new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
    try {
      server.init(InetAddress.getByName("127.0.0.1"), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    kubectl = server.createClient();
  }

  /** The API server's address, for {@code -Dkubernetes.master}. */
  String url() {
    return "http://127.0.0.1:" + server.getPort();
  }

  /**
   * The environment of a member that uses this server: {@link #outsideACluster()}, plus its
   * credentials where they come from a file ({@code KUBECONFIG} on a real API server).
   */
  Map<String, String> memberEnvironment() {
    return outsideACluster();
  }

  /**
   * Fails if a member's log shows the API server refusing it (an RBAC denial): none on a mock,
   * which authorises nothing.
   */
  void assertNoDenials(java.nio.file.Path memberLog) {}

  /** The JVM options that point a member's fabric8 client at this server, and nowhere else. */
  List<String> clientProperties() {
    return List.of(
        "-Dkubernetes.master=" + url(),
        "-Dkubernetes.auth.tryKubeConfig=false",
        "-Dkubernetes.auth.tryServiceAccount=false",
        "-Dkubernetes.trust.certificates=true",
        "-Dkubernetes.namespace=" + NS);
  }

  /**
   * A member's environment changes so that nothing of a real cluster around the test leaks in (a
   * {@code null} value removes the variable); a mutable map, for the caller's own additions.
   */
  static Map<String, String> outsideACluster() {
    Map<String, String> env = new HashMap<>();
    for (String unset :
        List.of(
            "NODE_NAME",
            "KUBECONFIG",
            "KUBERNETES_MASTER",
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_SERVICE_PORT")) {
      env.put(unset, null);
    }
    return env;
  }

  // ---------------------------------------------------------------- what kubectl does

  /** {@code kubectl create -f} of a Node as the kubelet registers it (status included). */
  Node createNode(Node node) {
    return kubectl.nodes().resource(node).create();
  }

  /** {@code kubectl create -f -} of a YAML manifest. */
  HasMetadata create(String yaml) {
    return kubectl.resource(yaml).inNamespace(NS).create();
  }

  /** {@code kubectl label node N key=value --overwrite}; {@code value} null: {@code key-}. */
  Node label(String node, String key, String value) {
    return mergeNodeMetadata(node, "labels", key, value);
  }

  /** {@code kubectl annotate node N key=value --overwrite}; {@code value} null: {@code key-}. */
  Node annotate(String node, String key, String value) {
    return mergeNodeMetadata(node, "annotations", key, value);
  }

  private Node mergeNodeMetadata(String node, String field, String key, String value) {
    var patch = Api.JSON.createObjectNode();
    var map = patch.putObject("metadata").putObject(field);
    if (value == null) {
      map.putNull(key);
    } else {
      map.put(key, value);
    }
    return kubectl
        .nodes()
        .withName(node)
        .patch(PatchContext.of(PatchType.JSON_MERGE), Api.write(patch));
  }

  /** {@code kubectl annotate pod N key-} for each key. */
  Pod removePodAnnotations(String pod, String... keys) {
    var patch = Api.JSON.createObjectNode();
    var map = patch.putObject("metadata").putObject("annotations");
    for (String k : keys) {
      map.putNull(k);
    }
    return kubectl
        .pods()
        .inNamespace(NS)
        .withName(pod)
        .patch(PatchContext.of(PatchType.JSON_MERGE), Api.write(patch));
  }

  /** {@code kubectl delete pod N}. */
  void deletePod(String pod) {
    kubectl.pods().inNamespace(NS).withName(pod).delete();
  }

  Node node(String name) {
    return kubectl.nodes().withName(name).get();
  }

  Pod pod(String name) {
    return kubectl.pods().inNamespace(NS).withName(name).get();
  }

  /** What the kubelet writes once the pod's containers run: phase Running, condition Ready. */
  Pod kubeletRuns(String pod) {
    return kubectl
        .pods()
        .inNamespace(NS)
        .withName(pod)
        .editStatus(
            p ->
                new PodBuilder(p)
                    .editOrNewStatus()
                    .withPhase("Running")
                    .addNewCondition()
                    .withType("Ready")
                    .withStatus("True")
                    .withLastTransitionTime("2026-01-01T00:00:00Z")
                    .endCondition()
                    .endStatus()
                    .build());
  }

  /** {@code kubectl get events.v1.events.k8s.io -n default}. */
  List<Event> events() {
    return kubectl.events().v1().events().inNamespace(NS).list().getItems();
  }

  /** The Events regarding one object. */
  List<Event> eventsAbout(String kind, String name) {
    List<Event> out = new ArrayList<>();
    for (Event e : events()) {
      if (e.getRegarding() != null
          && kind.equals(e.getRegarding().getKind())
          && name.equals(e.getRegarding().getName())) {
        out.add(e);
      }
    }
    return out;
  }

  /**
   * Answers {@code POST} to {@code path} (e.g. TokenReview's {@code
   * /apis/authentication.k8s.io/v1/tokenreviews}) with {@code answer} of the request's body instead
   * of storing it: what a real API server computes (authentication, authorization) and the CRUD
   * mock cannot. Each body is kept ({@link #reviewed}).
   */
  void answerPosts(String path, java.util.function.Function<JsonNode, JsonNode> answer) {
    synchronized (dispatcher) {
      dispatcher.answers.put(path, answer);
    }
  }

  /** The bodies POSTed to a path given to {@link #answerPosts}, oldest first. */
  List<JsonNode> reviewed(String path) {
    synchronized (dispatcher) {
      return List.copyOf(dispatcher.posted.getOrDefault(path, List.of()));
    }
  }

  /** The last requests the server answered, as {@code "METHOD path → code"}, oldest first. */
  List<String> recentExchanges() {
    synchronized (dispatcher) {
      return List.copyOf(dispatcher.exchanges);
    }
  }

  @Override
  public void close() {
    try {
      kubectl.close();
    } finally {
      server.destroy();
    }
  }

  private static final class Dispatcher extends KubernetesCrudDispatcher {
    final Deque<String> exchanges = new ArrayDeque<>();
    final Map<String, java.util.function.Function<JsonNode, JsonNode>> answers = new HashMap<>();
    final Map<String, List<JsonNode>> posted = new HashMap<>();

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      MockResponse response = answered(request);
      if (response == null) {
        response = ApiServerSemantics.answer(request, this::handleGet, super::dispatch);
      }
      if (response == null) {
        response = super.dispatch(request);
      }
      String path = request.getPath();
      synchronized (this) {
        exchanges.addLast(request.getMethod() + " " + path + " → " + response.code());
        while (exchanges.size() > KEPT_EXCHANGES) {
          exchanges.removeFirst();
        }
      }
      return response;
    }

    private MockResponse answered(RecordedRequest request) {
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      java.util.function.Function<JsonNode, JsonNode> answer;
      synchronized (this) {
        answer = "POST".equals(request.getMethod()) ? answers.get(bare) : null;
      }
      if (answer == null) {
        return null;
      }
      try {
        JsonNode body = Api.JSON.readTree(request.getBody().getBytes());
        synchronized (this) {
          posted.computeIfAbsent(bare, k -> new ArrayList<>()).add(body);
        }
        return new MockResponse().setResponseCode(201).setBody(Api.write(answer.apply(body)));
      } catch (IOException e) {
        return status(400, e.toString());
      }
    }

    @Override
    public MockResponse handleUpdate(RecordedRequest request) {
      String path = request.getPath();
      String bare = path.contains("?") ? path.substring(0, path.indexOf('?')) : path;
      String object = bare.endsWith("/status") ? bare.substring(0, bare.length() - 7) : bare;
      try {
        String sent = resourceVersion(Api.JSON.readTree(request.getBody().getBytes()));
        if (sent != null) {
          MockResponse current = handleGet(object);
          if (current.code() == 200) {
            String stored =
                resourceVersion(
                    Api.JSON.readTree(
                        new String(current.getBody().getBytes(), StandardCharsets.UTF_8)));
            if (stored != null && !stored.equals(sent)) {
              return status(
                  409,
                  "Operation cannot be fulfilled: the object has been modified; please apply"
                      + " your changes to the latest version and try again");
            }
          }
        }
      } catch (IOException e) {
        return status(400, e.toString());
      }
      return super.handleUpdate(request);
    }

    private static String resourceVersion(JsonNode object) {
      JsonNode rv = object.path("metadata").path("resourceVersion");
      return rv.isTextual() ? rv.asText() : null;
    }

    private static MockResponse status(int code, String message) {
      String body =
          Api.write(
              Map.of(
                  "apiVersion", "v1",
                  "kind", "Status",
                  "status", "Failure",
                  "code", code,
                  "message", message));
      return new MockResponse().setResponseCode(code).setBody(body);
    }
  }
}
