package dev.gpushare.http.admission;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.arbiter.InputJson;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.http.launch.PodSideSettings;
import dev.gpushare.http.server.Json;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.StatusCause;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionResponse;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionResponseBuilder;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionReview;
import io.fabric8.kubernetes.api.model.admission.v1.AdmissionReviewBuilder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The admission webhook's decisions (SPEC §3): an {@code admission.k8s.io/v1} AdmissionReview
 * request in, the AdmissionReview response out. Pure: no I/O, no clock, no state.
 *
 * <p><b>Which pods are judged.</b> A {@code CREATE} or {@code UPDATE} of a Pod (no subresource)
 * that marks sharing as {@link ShareRequestRules} defines it (a container asks for either
 * percentage resource, or the pod carries the {@code gpu-share-policy} label or a limit
 * annotation), or whose init containers ask for a percentage resource. Every other review, plain
 * and {@code nvidia.com/gpu} pods included, is allowed unchanged: Kubernetes judges those itself.
 *
 * <p><b>Denial.</b> A judged pod that breaks a rule of {@link ShareRequestRules#validate} (the pod
 * as it stands: a limit annotation, when present, is the limit), or whose init container asks for
 * shared GPU resources or {@code nvidia.com/gpu}, is refused with {@code allowed: false} and a
 * {@code status} of code 422, a message that lists every violation (each names its field, the value
 * given and what is accepted; {@code kubectl} shows it after {@code admission webhook "…" denied
 * the request:}) and one {@code details.causes} entry per violation. The status has no {@code
 * reason}: with reason {@code Invalid} kubectl prints {@code The Pod "…" is invalid:} and the
 * causes alone, without the webhook's name and the message (a real API server and kubectl showed
 * it: {@code KubeWebhookTest}); without one it prints {@code Error from server: … admission webhook
 * "…" denied the request: <message>}, as for the API server's own webhook denials. Both endpoints
 * deny alike, so that a user reads the rule rather than Kubernetes' later complaint about a limit
 * that differs from its request.
 *
 * <p><b>Mutation</b> ({@link #mutate} only). A valid sharing pod gets a JSONPatch that makes stock
 * Kubernetes accept it while keeping its meaning: it adds the annotations {@code
 * alibabacloud.com/gpu-core-limit} and {@code alibabacloud.com/gpu-memory-limit} with the pod's
 * limits (creating {@code metadata.annotations} when the pod has none), unless the pod already
 * carries both (they are respected: they are the limits), and replaces the sharing container's
 * limits of the two percentage resources with its requests where they differ. A pod that already
 * has both annotations and limits equal to requests gets no patch at all ({@code patch} and {@code
 * patchType} omitted), so that re-invocation ({@code reinvocationPolicy: IfNeeded}) changes
 * nothing. When a given annotation overrides a container limit that differs from the request, the
 * response carries a warning that says so.
 *
 * <p><b>The pod side</b> ({@link #mutate(JsonNode, PodSideSettings)}, on {@code CREATE}, when the
 * settings have a data-plane socket and injection on). The same patch also brings {@code
 * libgpushare.so} into the pod ({@link PodSideInjection}); what cannot be added without overwriting
 * something the user wrote denies the pod like a rule, naming the field.
 *
 * <p><b>Malformed input</b> (not JSON, not {@code admission.k8s.io/v1 AdmissionReview}, no {@code
 * request.uid}, a Pod of a shape the API server never sends) is a {@link MalformedReviewException}
 * naming the field; no response review can be formed for it.
 */
public final class AdmissionReviewer {

  public static final String API_VERSION = "admission.k8s.io/v1";
  public static final String KIND = "AdmissionReview";
  public static final String PATCH_TYPE = "JSONPatch";

  /** The HTTP status a denial reports: well-formed, but against the rules (API.md). */
  public static final int DENIED_CODE = 422;

  private static final ObjectReader READER = InputJson.tree();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final Set<String> JUDGED_OPERATIONS = Set.of("CREATE", "UPDATE");

  private AdmissionReviewer() {}

  /** The body of a webhook call as JSON; a {@link MalformedReviewException} if it is not JSON. */
  public static JsonNode parse(byte[] body) {
    if (body.length == 0 || new String(body, StandardCharsets.UTF_8).isBlank()) {
      throw new MalformedReviewException(
          new FieldError(
              "body", "", "body is empty; want an " + API_VERSION + " " + KIND + " as JSON"));
    }
    try {
      return READER.readTree(body);
    } catch (JsonProcessingException e) {
      Optional<FieldError> duplicate = InputJson.duplicateKey(e);
      if (duplicate.isPresent()) {
        throw new MalformedReviewException(duplicate.get());
      }
      String where =
          e.getLocation() == null
              ? ""
              : " at line "
                  + e.getLocation().getLineNr()
                  + ", column "
                  + e.getLocation().getColumnNr();
      String reason = e.getOriginalMessage().lines().findFirst().orElse("").strip();
      throw new MalformedReviewException(
          new FieldError(
              "body",
              null,
              "body is not valid JSON"
                  + where
                  + " ("
                  + reason
                  + "); want an "
                  + API_VERSION
                  + " "
                  + KIND
                  + " as JSON"));
    } catch (IOException e) {
      throw new MalformedReviewException(
          new FieldError("body", null, "body could not be read: " + e.getMessage()));
    }
  }

  /**
   * The mutating endpoint with the built-in settings, which bring no pod side (no socket): limits
   * only.
   */
  public static AdmissionReview mutate(JsonNode review) {
    return mutate(review, PodSideSettings.DEFAULT);
  }

  /**
   * The mutating endpoint: judges the pod and, when it is valid, patches it (see the class) and, on
   * {@code CREATE}, brings the pod side as {@code podSide} says ({@link PodSideInjection}).
   */
  public static AdmissionReview mutate(JsonNode review, PodSideSettings podSide) {
    return review(review, Optional.of(podSide));
  }

  /** The validating endpoint: judges the pod as it stands, patches nothing. */
  public static AdmissionReview validate(JsonNode review) {
    return review(review, Optional.empty());
  }

  private static AdmissionReview review(JsonNode review, Optional<PodSideSettings> podSide) {
    boolean mutate = podSide.isPresent();
    Request request = Request.of(review);
    if (!request.judged()) {
      return answer(allowed(request.uid()).build());
    }
    AdmittedPod pod = AdmittedPod.read(request.object(), request.namespace());
    if (!pod.marksSharing() || unchangedBy(request, pod)) {
      return answer(allowed(request.uid()).build());
    }
    Parsed<PodSharing> parsed = ShareRequestRules.validate(pod.manifest());
    List<FieldError> errors = new ArrayList<>();
    parsed.errors().forEach(e -> errors.add(forGeneratedName(e, pod)));
    errors.addAll(initContainerErrors(pod));
    if (!errors.isEmpty()) {
      return answer(denied(request.uid(), pod, errors));
    }
    if (!(parsed.value() instanceof PodSharing.Shared sharing)) {
      // Not reached: a pod that marks sharing is SHARED or has errors; allow what shares nothing.
      return answer(allowed(request.uid()).build());
    }
    if (!mutate) {
      return answer(allowed(request.uid()).build());
    }
    Mutation mutation = mutation(pod, sharing);
    if (request.creates() && PodSideInjection.enabled(podSide.get())) {
      PodSideInjection.Result injection =
          PodSideInjection.of(podSide.get(), pod.object(), pod.containerIndex(sharing.container()));
      if (!injection.errors().isEmpty()) {
        return answer(denied(request.uid(), pod, injection.errors()));
      }
      injection.ops().forEach(mutation.patch()::add);
    }
    AdmissionResponseBuilder response = allowed(request.uid());
    if (!mutation.patch().isEmpty()) {
      byte[] patch = Json.bytes(mutation.patch());
      response.withPatchType(PATCH_TYPE).withPatch(Base64.getEncoder().encodeToString(patch));
    }
    if (!mutation.warnings().isEmpty()) {
      response.withWarnings(mutation.warnings());
    }
    return answer(response.build());
  }

  /**
   * The envelope fields the decision needs, checked.
   *
   * @param object the Pod to judge, {@code null} when the review is not one the webhook judges
   * @param oldObject the Pod before an {@code UPDATE}, else {@code null}
   */
  private record Request(
      String uid, String namespace, String operation, JsonNode object, JsonNode oldObject) {

    static Request of(JsonNode review) {
      if (review == null || !review.isObject()) {
        throw AdmittedPod.malformed("body", review, "an " + API_VERSION + " " + KIND + " object");
      }
      JsonNode apiVersion = review.get("apiVersion");
      if (apiVersion == null || !API_VERSION.equals(apiVersion.asText(null))) {
        throw AdmittedPod.malformed(
            "apiVersion",
            apiVersion,
            "\"" + API_VERSION + "\": register the webhook with admissionReviewVersions: [\"v1\"]");
      }
      JsonNode kind = review.get("kind");
      if (kind == null || !KIND.equals(kind.asText(null))) {
        throw AdmittedPod.malformed("kind", kind, "\"" + KIND + "\"");
      }
      JsonNode request = review.get("request");
      if (request == null || !request.isObject()) {
        throw AdmittedPod.malformed(
            "request", request, "the request object the API server sends for review");
      }
      String uid = text(request, "uid");
      if (uid == null || uid.isEmpty()) {
        throw AdmittedPod.malformed(
            "request.uid", request.get("uid"), "a non-empty string, echoed in the response");
      }
      String operation = text(request, "operation");
      JsonNode object = request.get("object");
      // request.kind names the resource; older captures may carry only the object's own kind.
      String objectKind =
          request.path("kind").isObject()
              ? text(request.get("kind"), "kind")
              : object == null ? null : text(object, "kind");
      String subResource = text(request, "subResource");
      boolean judged =
          (operation == null || JUDGED_OPERATIONS.contains(operation))
              && "Pod".equals(objectKind)
              && (subResource == null || subResource.isEmpty());
      if (!judged) {
        return new Request(uid, null, operation, null, null);
      }
      if (object == null || object.isNull()) {
        throw AdmittedPod.malformed(
            "request.object", object, "the Pod under review (CREATE and UPDATE carry it)");
      }
      JsonNode oldObject = request.get("oldObject");
      return new Request(
          uid,
          text(request, "namespace"),
          operation,
          object,
          "UPDATE".equals(operation) && oldObject != null && oldObject.isObject()
              ? oldObject
              : null);
    }

    boolean judged() {
      return object != null;
    }

    /**
     * Whether the pod is being created (older captures without an operation count as creates): a
     * pod's containers and volumes cannot change afterwards.
     */
    boolean creates() {
      return operation == null || operation.equals("CREATE");
    }

    private static String text(JsonNode parent, String key) {
      JsonNode node = parent.get(key);
      return node == null || !node.isTextual() ? null : node.asText();
    }
  }

  /**
   * Whether an {@code UPDATE} leaves everything sharing reads as it was: then it is allowed
   * unchanged, so that a pod admitted under other rules can still have, say, its finalizers
   * removed.
   */
  private static boolean unchangedBy(Request request, AdmittedPod pod) {
    if (request.oldObject() == null) {
      return false;
    }
    AdmittedPod old;
    try {
      old = AdmittedPod.read(request.oldObject(), request.namespace());
    } catch (MalformedReviewException e) {
      return false;
    }
    return old.sharingView().equals(pod.sharingView());
  }

  /**
   * A name error of a pod that the API server has not named yet is an error of its {@code
   * generateName} prefix.
   */
  private static FieldError forGeneratedName(FieldError error, AdmittedPod pod) {
    if (pod.generateName() == null || !"metadata.name".equals(error.field())) {
      return error;
    }
    return FieldErrors.of(
        "metadata.generateName",
        pod.generateName(),
        "a prefix that, followed by the "
            + AdmittedPod.GENERATED_SUFFIX.length()
            + " characters the API server appends (metadata.name is empty, so the API server"
            + " generates it), makes "
            + KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED);
  }

  /**
   * Init containers run before the sharing container and hold their resources while they run; SPEC
   * §3 gives a pod's share to one container and sidecars CPU and memory only. One error per init
   * container that asks for a GPU resource.
   */
  private static List<FieldError> initContainerErrors(AdmittedPod pod) {
    List<FieldError> errors = new ArrayList<>();
    List<ContainerResources> init = pod.initContainers();
    for (int i = 0; i < init.size(); i++) {
      ContainerResources c = init.get(i);
      Set<String> asked = new TreeSet<>();
      for (String resource :
          List.of(
              ShareRequestRules.CORE, ShareRequestRules.MEMORY, ShareRequestRules.EXCLUSIVE_GPU)) {
        if (c.requests().containsKey(resource) || c.limits().containsKey(resource)) {
          asked.add(resource);
        }
      }
      if (!asked.isEmpty()) {
        String field = "spec.initContainers[" + i + "].resources";
        errors.add(
            new FieldError(
                field,
                c.name(),
                field
                    + " (init container \""
                    + c.name()
                    + "\") asks for "
                    + String.join(" and ", asked)
                    + "; want CPU and memory only in the init containers of a pod that shares a"
                    + " GPU: its share belongs to the one container in spec.containers that asks"
                    + " for "
                    + ShareRequestRules.CORE
                    + " and "
                    + ShareRequestRules.MEMORY));
      }
    }
    return errors;
  }

  /** The JSONPatch operations and the warnings for a valid sharing pod. */
  private record Mutation(ArrayNode patch, List<String> warnings) {}

  private static Mutation mutation(AdmittedPod pod, PodSharing.Shared sharing) {
    ArrayNode patch = NODES.arrayNode();
    List<String> warnings = new ArrayList<>();
    Map<String, String> annotations = pod.manifest().annotations();
    boolean annotatedLimits =
        annotations.containsKey(ShareRequestRules.CORE_LIMIT_ANNOTATION)
            && annotations.containsKey(ShareRequestRules.MEMORY_LIMIT_ANNOTATION);
    Share limits = sharing.limits();
    if (!annotatedLimits) {
      String core = Integer.toString(limits.core());
      String memory = Integer.toString(limits.memory());
      if (pod.object().path("metadata").isObject() && pod.annotated()) {
        patch.add(add(annotationPath(ShareRequestRules.CORE_LIMIT_ANNOTATION), core));
        patch.add(add(annotationPath(ShareRequestRules.MEMORY_LIMIT_ANNOTATION), memory));
      } else {
        ObjectNode map = NODES.objectNode();
        map.put(ShareRequestRules.CORE_LIMIT_ANNOTATION, core);
        map.put(ShareRequestRules.MEMORY_LIMIT_ANNOTATION, memory);
        if (pod.object().path("metadata").isObject()) {
          patch.add(op("add", "/metadata/annotations").set("value", map));
        } else {
          patch.add(
              op("add", "/metadata").set("value", NODES.objectNode().set("annotations", map)));
        }
      }
    }
    int index = pod.containerIndex(sharing.container());
    ContainerResources container = pod.manifest().containers().get(index);
    Share requests = sharing.requests();
    limitToRequest(
        patch,
        warnings,
        index,
        container,
        ShareRequestRules.CORE,
        requests.core(),
        limits.core(),
        annotatedLimits ? ShareRequestRules.CORE_LIMIT_ANNOTATION : null);
    limitToRequest(
        patch,
        warnings,
        index,
        container,
        ShareRequestRules.MEMORY,
        requests.memory(),
        limits.memory(),
        annotatedLimits ? ShareRequestRules.MEMORY_LIMIT_ANNOTATION : null);
    return new Mutation(patch, List.copyOf(warnings));
  }

  /**
   * Sets the container's limit of {@code resource} to its request unless it is already equal; warns
   * when an annotation given by the user overrides a limit that differed from both.
   */
  private static void limitToRequest(
      ArrayNode patch,
      List<String> warnings,
      int index,
      ContainerResources container,
      String resource,
      int request,
      int limit,
      String givenAnnotation) {
    // Validated: plain digits from the request up to 100.
    int current = Integer.parseInt(container.limits().get(resource));
    if (current == request) {
      return;
    }
    String field = "spec.containers[" + index + "].resources.limits[" + resource + "]";
    patch.add(
        op("replace", "/spec/containers/" + index + "/resources/limits/" + escape(resource))
            .put("value", Integer.toString(request)));
    if (givenAnnotation != null && current != limit) {
      warnings.add(
          field
              + " is \""
              + current
              + "\" but metadata.annotations["
              + givenAnnotation
              + "] is \""
              + limit
              + "\": the annotation is the limit; the container limit is set to the"
              + " request, "
              + request);
    }
  }

  private static ObjectNode add(String path, String value) {
    return op("add", path).put("value", value);
  }

  private static ObjectNode op(String op, String path) {
    return NODES.objectNode().put("op", op).put("path", path);
  }

  private static String annotationPath(String key) {
    return "/metadata/annotations/" + escape(key);
  }

  /**
   * One JSON-pointer reference token (RFC 6901): {@code ~} as {@code ~0}, {@code /} as {@code ~1}.
   */
  static String escape(String token) {
    return token.replace("~", "~0").replace("/", "~1");
  }

  private static AdmissionResponseBuilder allowed(String uid) {
    return new AdmissionResponseBuilder().withUid(uid).withAllowed(true);
  }

  private static AdmissionResponse denied(String uid, AdmittedPod pod, List<FieldError> errors) {
    List<StatusCause> causes = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    for (FieldError e : errors) {
      String line =
          e.message().startsWith(e.field()) ? e.message() : e.field() + ": " + e.message();
      lines.add(line);
      causes.add(
          new StatusCause(
              e.field(), line, e.value() == null ? "FieldValueRequired" : "FieldValueInvalid"));
    }
    String message =
        "pod "
            + pod.ref()
            + " breaks the GPU-sharing rules ("
            + (errors.size() == 1 ? "1 violation" : errors.size() + " violations")
            + "): "
            + String.join("; ", lines);
    return new AdmissionResponseBuilder()
        .withUid(uid)
        .withAllowed(false)
        .withStatus(
            new StatusBuilder()
                .withStatus("Failure")
                .withCode(DENIED_CODE)
                .withMessage(message)
                .withNewDetails()
                .withKind("Pod")
                .withName(pod.generateName() == null ? pod.manifest().name() : null)
                .withCauses(causes)
                .endDetails()
                .build())
        .build();
  }

  private static AdmissionReview answer(AdmissionResponse response) {
    return new AdmissionReviewBuilder()
        .withApiVersion(API_VERSION)
        .withKind(KIND)
        .withResponse(response)
        .build();
  }
}
