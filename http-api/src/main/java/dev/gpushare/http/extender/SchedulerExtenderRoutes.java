package dev.gpushare.http.extender;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.arbiter.fragmentation.FragmentationMeasure;
import dev.gpushare.arbiter.fragmentation.Policies;
import dev.gpushare.arbiter.fragmentation.TargetWorkload;
import dev.gpushare.http.extender.ExtenderFilter.Verdict;
import dev.gpushare.http.server.ApiDirectives;
import dev.gpushare.http.server.Problem;
import dev.gpushare.http.server.ProblemException;
import dev.gpushare.node.api.GpuShareReader;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.MediaType;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.ExceptionHandler;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * kube-scheduler's HTTP extender (SPEC §8): {@code POST /scheduler/filter} and {@code POST
 * /scheduler/prioritize}, with the JSON of {@code k8s.io/kube-scheduler/extender/v1}. Its Go
 * structs carry no {@code json} tags, so the field names are the Go names, capitalised:
 *
 * <ul>
 *   <li>request, both verbs: {@code ExtenderArgs} {@code {"Pod": v1.Pod, "Nodes": v1.NodeList,
 *       "NodeNames": null}} ({@code "Nodes": null, "NodeNames": [...]} when the extender is {@code
 *       nodeCacheCapable}), read by {@link ExtenderArgs};
 *   <li>filter answers {@code ExtenderFilterResult} {@code {"Nodes": v1.NodeList | null,
 *       "NodeNames": [...] | null, "FailedNodes": {node: reason}, "FailedAndUnresolvableNodes":
 *       {node: reason}, "Error": ""}}: the nodes that pass, in the form they came in (the node
 *       objects as sent, or their names), each refused node with its reason ({@link
 *       ExtenderFilter}), under {@code FailedAndUnresolvableNodes} when preemption cannot help. A
 *       pod whose spec breaks SPEC §3 ({@link ShareRequestRules}) gets {@code Error} naming every
 *       field at fault and no node;
 *   <li>prioritize answers {@code HostPriorityList} {@code [{"Host": node, "Score": 0..10}]}, one
 *       entry per candidate in the order sent ({@link ExtenderScores}; {@code ?policy=fgd}, the
 *       default, or {@code ?policy=bestfit}); nodes the filter refuses, and every node for a pod
 *       that shares no GPU (the extender has no opinion there) or whose spec is invalid, score 0.
 * </ul>
 *
 * Both answer {@code 200} whenever the body could be read; a body that is not JSON or not an {@code
 * ExtenderArgs}, an unknown {@code policy} or a media type other than {@code application/json} is a
 * {@code 400}/{@code 415} problem, and a failure to read the arbiter's state its problem (e.g.
 * {@code 503}). Access: {@code create scheduler} ({@code auth/Scope}) on the API port; on the
 * extender's own mTLS listener ({@link SchedulerExtenderServer}) the client certificate.
 */
public final class SchedulerExtenderRoutes extends ApiDirectives {
  private static final Logger LOG = LoggerFactory.getLogger(SchedulerExtenderRoutes.class);

  /** The path prefix: kube-scheduler's {@code urlPrefix} ends with it. */
  public static final String PREFIX = "scheduler";

  /** The verbs, as {@code filterVerb} and {@code prioritizeVerb} name them. */
  public static final String FILTER_VERB = "filter";

  public static final String PRIORITIZE_VERB = "prioritize";

  public static final String FILTER_PATH = "/" + PREFIX + "/" + FILTER_VERB;
  public static final String PRIORITIZE_PATH = "/" + PREFIX + "/" + PRIORITIZE_VERB;

  /** The query parameter that picks the scoring policy. */
  public static final String POLICY_PARAMETER = "policy";

  /**
   * The largest body read: without {@code nodeCacheCapable} the scheduler sends every candidate
   * node whole (a few KiB each), so thousands of nodes take megabytes.
   */
  static final long MAX_BODY_BYTES = 64L * 1024 * 1024;

  static final Duration BODY_TIMEOUT = Duration.ofSeconds(10);

  private static final List<String> MEDIA_TYPES = List.of("application/json");
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private final GpuShareReader service;
  private final ExtenderScores.Policy defaultPolicy;

  /** The extender with FGD scoring unless a request asks otherwise. */
  public SchedulerExtenderRoutes(GpuShareReader service) {
    this(service, ExtenderScores.Policy.FGD);
  }

  public SchedulerExtenderRoutes(GpuShareReader service, ExtenderScores.Policy defaultPolicy) {
    this.service = service;
    this.defaultPolicy = defaultPolicy;
  }

  public Route route() {
    return pathPrefix(
        PREFIX,
        () ->
            concat(
                path(FILTER_VERB, () -> post(() -> body(this::filter))),
                path(
                    PRIORITIZE_VERB,
                    () ->
                        post(
                            () ->
                                parameterOptional(
                                    POLICY_PARAMETER,
                                    policy -> body(b -> prioritize(b, policy)))))));
  }

  // ---- filter ----

  private Route filter(byte[] body) {
    ExtenderArgs args = ExtenderArgs.read(body);
    Parsed<PodSharing> parsed = ShareRequestRules.validate(args.pod());
    if (!parsed.ok()) {
      String error = invalidPod(args, parsed.errors());
      LOG.debug("extender filter: {}", error);
      return complete(json(StatusCodes.OK, filterResult(args, Map.of(), error)));
    }
    PodSharing pod = parsed.value();
    if (pod instanceof PodSharing.Plain) {
      return complete(json(StatusCodes.OK, filterResult(args, passAll(args), "")));
    }
    return answer(
        service::nodes,
        nodes -> {
          Map<String, Verdict> verdicts =
              ExtenderFilter.verdicts(pod, args.nodeNames(), byName(nodes));
          LOG.debug("extender filter {}: {}", args.podRef(), verdicts);
          return json(StatusCodes.OK, filterResult(args, verdicts, ""));
        });
  }

  static String invalidPod(ExtenderArgs args, List<FieldError> errors) {
    return "pod "
        + args.podRef()
        + " cannot be placed by gpushare, its spec breaks the GPU sharing rules (SPEC §3): "
        + errors.stream().map(FieldError::message).collect(Collectors.joining("; "));
  }

  /** {@code ExtenderFilterResult}, its fields in the Go struct's order. */
  static ObjectNode filterResult(ExtenderArgs args, Map<String, Verdict> verdicts, String error) {
    ObjectNode out = NODES.objectNode();
    ObjectNode failed = NODES.objectNode();
    ObjectNode unresolvable = NODES.objectNode();
    boolean ok = error.isEmpty();
    if (args.withNodeObjects()) {
      ObjectNode list = NODES.objectNode();
      args.nodes().properties().forEach(e -> list.set(e.getKey(), e.getValue()));
      ArrayNode items = list.putArray("items");
      if (ok) {
        for (String name : args.nodeNames()) {
          if (verdicts.get(name).passes()) {
            items.add(args.items().get(name));
          }
        }
      }
      out.set("Nodes", ok ? list : NODES.nullNode());
      out.putNull("NodeNames");
    } else {
      out.putNull("Nodes");
      if (ok) {
        ArrayNode names = out.putArray("NodeNames");
        args.nodeNames().stream().filter(n -> verdicts.get(n).passes()).forEach(names::add);
      } else {
        out.putNull("NodeNames");
      }
    }
    verdicts.forEach(
        (name, v) -> {
          if (!v.passes()) {
            (v.unresolvable() ? unresolvable : failed).put(name, v.reason());
          }
        });
    out.set("FailedNodes", failed);
    out.set("FailedAndUnresolvableNodes", unresolvable);
    out.put("Error", error);
    return out;
  }

  private static Map<String, Verdict> passAll(ExtenderArgs args) {
    Map<String, Verdict> all = new LinkedHashMap<>();
    args.nodeNames().forEach(n -> all.put(n, Verdict.PASS));
    return all;
  }

  // ---- prioritize ----

  private Route prioritize(byte[] body, Optional<String> policyParameter) {
    ExtenderScores.Policy policy = policy(policyParameter);
    GpuChoice choice = service.gpuChoice();
    ExtenderArgs args = ExtenderArgs.read(body);
    Parsed<PodSharing> parsed = ShareRequestRules.validate(args.pod());
    if (!parsed.ok() || !(parsed.value() instanceof PodSharing.Shared pod)) {
      return complete(json(StatusCodes.OK, priorities(args.nodeNames(), Map.of())));
    }
    return answer(
        () -> service.nodes().thenCombine(service.pods(Optional.empty()), Map::entry),
        state -> {
          Map<String, NodeView> known = byName(state.getKey());
          TargetWorkload workload = ExtenderScores.workload(pod, otherPods(state.getValue(), args));
          FragmentationMeasure measure = Policies.projectMeasure(workload);
          Map<String, Integer> scores = new LinkedHashMap<>();
          for (String name : args.nodeNames()) {
            NodeView node = known.get(name);
            if (ExtenderFilter.verdict(pod, name, node).passes()) {
              scores.put(
                  name, ExtenderScores.score(policy, choice, pod, node, state.getValue(), measure));
            }
          }
          LOG.debug("extender prioritize {} ({}): {}", args.podRef(), policy.key(), scores);
          return json(StatusCodes.OK, priorities(args.nodeNames(), scores));
        });
  }

  /** The pods the arbiter knows, less the one being scheduled (a retry may know it already). */
  private static List<PodView> otherPods(List<PodView> pods, ExtenderArgs args) {
    return pods.stream()
        .filter(
            p ->
                !(p.namespace().equals(args.pod().namespace())
                    && p.name().equals(args.pod().name())))
        .toList();
  }

  private ExtenderScores.Policy policy(Optional<String> given) {
    if (given.isEmpty()) {
      return defaultPolicy;
    }
    return ExtenderScores.Policy.byKey(given.get())
        .orElseThrow(
            () -> {
              String message =
                  "query parameter "
                      + POLICY_PARAMETER
                      + ": '"
                      + given.get()
                      + "' given; expected one of "
                      + ExtenderScores.Policy.keys()
                      + " (default "
                      + defaultPolicy.key()
                      + ")";
              return ServiceException.of(
                  ServiceException.Kind.MALFORMED,
                  new FieldError(POLICY_PARAMETER, given.get(), message));
            });
  }

  /** {@code HostPriorityList}: every candidate in order, 0 when not scored. */
  static ArrayNode priorities(List<String> names, Map<String, Integer> scores) {
    ArrayNode out = NODES.arrayNode();
    for (String name : names) {
      ObjectNode entry = out.addObject();
      entry.put("Host", name);
      entry.put("Score", scores.getOrDefault(name, 0));
    }
    return out;
  }

  // ---- plumbing ----

  private static Map<String, NodeView> byName(List<NodeView> nodes) {
    Map<String, NodeView> out = new LinkedHashMap<>();
    nodes.forEach(n -> out.put(n.name(), n));
    return out;
  }

  /** The whole body of an {@code application/json} request. */
  private Route body(Function<byte[], Route> inner) {
    return handleExceptions(
        ExceptionHandler.newBuilder()
            .match(EntityStreamSizeException.class, e -> complete(tooLarge(e).toResponse()))
            .build(),
        () ->
            withSizeLimit(
                MAX_BODY_BYTES,
                () ->
                    extractStrictEntity(
                        BODY_TIMEOUT,
                        MAX_BODY_BYTES,
                        entity -> {
                          checkMediaType(entity);
                          return inner.apply(entity.getData().toArray());
                        })));
  }

  private static Problem tooLarge(EntityStreamSizeException e) {
    String message =
        "the body is larger than "
            + MAX_BODY_BYTES / (1024 * 1024)
            + " MiB; with this many nodes set nodeCacheCapable: true in the extender's"
            + " configuration, so that kube-scheduler sends node names only";
    return Problem.http(
        StatusCodes.PAYLOAD_TOO_LARGE,
        message,
        List.of(
            new FieldError(
                "body",
                e.actualSize().isDefined() ? e.actualSize().get() + " bytes" : null,
                message)));
  }

  private static void checkMediaType(HttpEntity entity) {
    MediaType media = entity.getContentType().mediaType();
    String given = (media.mainType() + "/" + media.subType()).toLowerCase(Locale.ROOT);
    if (!MEDIA_TYPES.contains(given)) {
      String message =
          "Content-Type: '"
              + media
              + "' given; send "
              + String.join(", ", MEDIA_TYPES)
              + " (kube-scheduler does)";
      throw new ProblemException(
          Problem.http(
              StatusCodes.UNSUPPORTED_MEDIA_TYPE,
              message,
              List.of(new FieldError("Content-Type", media.toString(), message))));
    }
  }
}
