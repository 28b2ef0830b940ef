package dev.gpushare.http.auth;

import java.util.List;
import java.util.Optional;

/**
 * What a request asks to do, in Kubernetes authorization terms (the kube-rbac-proxy model): a verb
 * on a resource of the API group {@value #API_GROUP}, in a namespace, by name, with a subresource.
 * Derived from the method and the path only, before any route runs. The one home of the rule "which
 * endpoint is which permission":
 *
 * <ul>
 *   <li>public (no token): {@code /healthz}, {@code /readyz}, {@code /v1/openapi.json}, the
 *       dashboard's static files under {@code /dashboard};
 *   <li>{@code /metrics}: {@code get metrics}; {@code /v1/nodes…}: {@code nodes} (the GPU
 *       subresources {@code gpus}); {@code /v1/pods}: {@code list}/{@code create pods}; {@code
 *       /v1/namespaces/{ns}/pods/{name}[/demand|grant|watch|compute|processes|history]}: {@code
 *       pods} in {@code ns}, named, subresource {@code demand}, {@code grant}, {@code watch},
 *       {@code compute}, {@code processes} or {@code history} (the pod's history, {@code get
 *       pods/history}: not its data plane, since it names the other pods of shared decisions);
 *       {@code /v1/journal…}: {@code journal}; {@code /v1/clock…}: {@code clock}; {@code
 *       /v1/watch}: {@code watch changes};
 *   <li>{@code /scheduler/filter}, {@code /scheduler/prioritize} (the kube-scheduler extender,
 *       {@code http.extender}): {@code create scheduler}, no name — bind it to the scheduler's
 *       identity ({@code deploy/scheduler-extender/clusterrole-gpushare-scheduler-extender.yaml});
 *   <li>verbs: GET {@code get} (a collection {@code list}), POST {@code create}, PUT and PATCH
 *       {@code update}, DELETE {@code delete}.
 * </ul>
 *
 * A pod's own workload may use its pod's data plane ({@link #podDataPlane()}: the pod's view,
 * demand, release, grant, watch, its compute limiter's report, its processes' host PIDs) without
 * any RBAC: that is what its ServiceAccount token is for.
 */
public record Scope(
    boolean isPublic,
    String verb,
    String resource,
    Optional<String> subresource,
    Optional<String> namespace,
    Optional<String> name) {

  /** The API group the permissions are checked in (RBAC rules name it). */
  public static final String API_GROUP = "gpushare.dev";

  /** The scope of {@code method} on {@code path}. */
  public static Scope of(String method, String path) {
    List<String> s = List.of(path.split("/")).stream().filter(x -> !x.isEmpty()).toList();
    String verb = verb(method);
    if (s.isEmpty()) {
      return new Scope(true, verb, "", Optional.empty(), Optional.empty(), Optional.empty());
    }
    String first = s.get(0);
    if (s.size() == 1 && (first.equals("healthz") || first.equals("readyz"))) {
      return publicScope(verb);
    }
    if (first.equals("dashboard") && method.equals("GET")) {
      return publicScope(verb);
    }
    if (first.equals("metrics")) {
      return scope(verb, "metrics", null, null, null);
    }
    if (first.equals("scheduler")) {
      return scope(verb, "scheduler", null, null, null);
    }
    if (!first.equals("v1") || s.size() < 2) {
      return scope(verb, first, null, null, null);
    }
    String second = s.get(1);
    switch (second) {
      case "openapi.json":
        return publicScope(verb);
      case "nodes":
        if (s.size() == 2) {
          return scope(listOr(verb), "nodes", null, null, null);
        }
        return scope(verb, "nodes", s.size() > 3 ? s.get(3) : null, null, s.get(2));
      case "pods":
        return scope(listOr(verb), "pods", null, null, null);
      case "namespaces":
        if (s.size() >= 5 && s.get(3).equals("pods")) {
          return scope(verb, "pods", s.size() > 5 ? s.get(5) : null, s.get(2), s.get(4));
        }
        return scope(verb, "pods", null, s.size() > 2 ? s.get(2) : null, null);
      case "journal":
        return scope(verb, "journal", null, null, null);
      case "clock":
        return scope(verb, "clock", null, null, null);
      case "watch":
        return scope(verb.equals("get") ? "watch" : verb, "changes", null, null, null);
      default:
        return scope(verb, second, null, null, null);
    }
  }

  /**
   * Whether this is a pod's own data plane: its view, demand, release, grant, watch, compute report
   * ({@code POST …/compute}) or its processes' host PIDs ({@code GET …/processes}). Only these may
   * a workload's ServiceAccount token use for its own pod.
   */
  public boolean podDataPlane() {
    if (!resource.equals("pods") || namespace.isEmpty() || name.isEmpty()) {
      return false;
    }
    if (subresource.isEmpty()) {
      return verb.equals("get");
    }
    String sub = subresource.get();
    return sub.equals("demand")
        || sub.equals("grant")
        || sub.equals("watch")
        || sub.equals("processes") && verb.equals("get")
        || sub.equals("compute") && verb.equals("create");
  }

  /** For messages: {@code update nodes/gpus "n1"}, {@code create pods/demand "ns/a"}. */
  public String describe() {
    StringBuilder b = new StringBuilder(verb).append(' ').append(resource);
    subresource.ifPresent(x -> b.append('/').append(x));
    if (name.isPresent()) {
      b.append(" \"").append(namespace.map(n -> n + "/").orElse("")).append(name.get()).append('"');
    } else if (namespace.isPresent()) {
      b.append(" in namespace ").append(namespace.get());
    }
    return b.toString();
  }

  private static Scope publicScope(String verb) {
    return new Scope(true, verb, "", Optional.empty(), Optional.empty(), Optional.empty());
  }

  private static Scope scope(
      String verb, String resource, String subresource, String namespace, String name) {
    return new Scope(
        false,
        verb,
        resource,
        Optional.ofNullable(subresource),
        Optional.ofNullable(namespace),
        Optional.ofNullable(name));
  }

  private static String listOr(String verb) {
    return verb.equals("get") ? "list" : verb;
  }

  private static String verb(String method) {
    switch (method) {
      case "GET":
      case "HEAD":
        return "get";
      case "POST":
        return "create";
      case "PUT":
      case "PATCH":
        return "update";
      case "DELETE":
        return "delete";
      default:
        return method.toLowerCase(java.util.Locale.ROOT);
    }
  }
}
