package dev.gpushare.arbiter;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * The rules a pod must follow to share a GPU (SPEC §3), checked before anything is decided for it.
 * {@link #validate} reports every violation at once, each on its own field, so that a user fixes a
 * manifest in one go; a valid pod comes back as its {@link PodSharing}.
 *
 * <p>A pod is sharing when a container mentions either percentage resource, or the pod carries the
 * {@code gpu-share-policy} label or a limit annotation. Such a pod is {@code gpu-hpn}, labelled
 * {@code share-pool} or {@code static}, and has exactly one container that asks for both resources
 * in both requests and limits, as integers with {@code 1 ≤ request ≤ limit ≤ 100} written as plain
 * digits ({@code " 50"} is refused, not read as 50). Every other resource of every container holds
 * a non-negative Kubernetes quantity as written. Because stock Kubernetes refuses extended
 * resources whose limit differs from the request, the admission webhook moves the limits into the
 * annotations {@link #CORE_LIMIT_ANNOTATION} and {@link #MEMORY_LIMIT_ANNOTATION}; when present,
 * those are the limits.
 *
 * <p>A share-pool pod may choose what its preemption does with the annotation {@link
 * PreemptionMode#ANNOTATION}: exactly {@code checkpoint} or {@code signal} (absent = {@code
 * signal}). The annotation applies to no other pod: a {@code static} pod is never preempted (SPEC
 * §6), and a pod that does not share a GPU is not handled by the arbiter's preemption at all.
 */
public final class ShareRequestRules {
  private ShareRequestRules() {}

  public static final String CORE = "alibabacloud.com/gpu-core.percentage";
  public static final String MEMORY = "alibabacloud.com/gpu-memory.percentage";
  public static final String EXCLUSIVE_GPU = "nvidia.com/gpu";
  public static final String COMPUTE_CLASS_LABEL = "alibabacloud.com/compute-class";
  public static final String CORE_LIMIT_ANNOTATION = "alibabacloud.com/gpu-core-limit";
  public static final String MEMORY_LIMIT_ANNOTATION = "alibabacloud.com/gpu-memory-limit";

  /** The one compute class that supports GPU sharing. */
  public static final String GPU_HPN = "gpu-hpn";

  private static final Pattern PLAIN_INTEGER = Pattern.compile("[0-9]+");
  private static final String REQUESTS = "requests";
  private static final String LIMITS = "limits";

  public static Parsed<PodSharing> validate(PodManifest pod) {
    List<FieldError> errors = new ArrayList<>();
    checkNames(pod, errors);
    Map<String, String> labels = orEmpty(pod.labels());
    Map<String, String> annotations = orEmpty(pod.annotations());
    List<PodManifest.ContainerResources> containers =
        pod.containers() == null ? List.of() : pod.containers();

    List<Integer> sharing = new ArrayList<>();
    int exclusiveGpus = 0;
    for (int i = 0; i < containers.size(); i++) {
      if (mentionsShare(containers.get(i))) {
        sharing.add(i);
      }
      checkQuantities(i, containers.get(i), errors);
      exclusiveGpus =
          (int)
              Math.min(
                  Integer.MAX_VALUE,
                  (long) exclusiveGpus + exclusiveGpus(i, containers.get(i), errors));
    }
    boolean sharingPod =
        !sharing.isEmpty()
            || labels.containsKey(SharePolicy.LABEL)
            || annotations.containsKey(CORE_LIMIT_ANNOTATION)
            || annotations.containsKey(MEMORY_LIMIT_ANNOTATION);
    if (!sharingPod) {
      checkNoPreemptionAnnotation(
          annotations, "it applies only to pods that share a GPU (share-pool)", errors);
      if (!errors.isEmpty()) {
        return Parsed.failed(errors);
      }
      return Parsed.ok(exclusiveGpus > 0 ? PodSharing.exclusive(exclusiveGpus) : PodSharing.PLAIN);
    }

    SharePolicy policy = checkLabels(labels, errors);
    checkNoExclusiveGpus(containers, errors);
    if (sharing.isEmpty()) {
      errors.add(
          new FieldError(
              "spec.containers",
              null,
              "spec.containers has no container that asks for "
                  + CORE
                  + " or "
                  + MEMORY
                  + ", but the pod is marked as sharing a GPU (label "
                  + SharePolicy.LABEL
                  + " or a limit annotation); want exactly one container with both resources in"
                  + " both requests and limits, or neither the label nor the annotations"));
      preemptionMode(policy, annotations, errors);
      return Parsed.failed(errors);
    }
    int index = sharing.get(0);
    PodManifest.ContainerResources container = containers.get(index);
    for (int other : sharing.subList(1, sharing.size())) {
      errors.add(secondSharingContainer(other, containers.get(other), index, container));
    }
    Share requests = checkedShare(index, container, REQUESTS, null, errors);
    Share containerLimits = checkedShare(index, container, LIMITS, requests, errors);
    Share limits = annotatedLimits(annotations, requests, errors);
    PreemptionMode preemption = preemptionMode(policy, annotations, errors);
    if (!errors.isEmpty()) {
      return Parsed.failed(errors);
    }
    return Parsed.ok(
        PodSharing.shared(
            policy,
            requests,
            limits == null ? containerLimits : limits,
            container.name(),
            preemption));
  }

  /**
   * The pod's {@link PreemptionMode#ANNOTATION}: {@code checkpoint} or {@code signal} exactly, as
   * Kubernetes reads its own enum annotations (case-sensitive, nothing trimmed); absent is {@link
   * PreemptionMode#SIGNAL}. A {@code static} pod may not carry it.
   */
  private static PreemptionMode preemptionMode(
      SharePolicy policy, Map<String, String> annotations, List<FieldError> errors) {
    if (policy == SharePolicy.STATIC) {
      checkNoPreemptionAnnotation(
          annotations,
          "static pods are never preempted (SPEC §6), so the annotation does not apply",
          errors);
      return PreemptionMode.SIGNAL;
    }
    String given = annotations.get(PreemptionMode.ANNOTATION);
    if (given == null) {
      return PreemptionMode.SIGNAL;
    }
    try {
      return PreemptionMode.of(given);
    } catch (IllegalArgumentException e) {
      errors.add(
          FieldErrors.of(
              annotation(PreemptionMode.ANNOTATION),
              given,
              PreemptionMode.accepted() + " (absent = " + PreemptionMode.SIGNAL.value() + ")"));
      return PreemptionMode.SIGNAL;
    }
  }

  private static void checkNoPreemptionAnnotation(
      Map<String, String> annotations, String why, List<FieldError> errors) {
    String given = annotations.get(PreemptionMode.ANNOTATION);
    if (given != null) {
      errors.add(
          FieldErrors.of(
              annotation(PreemptionMode.ANNOTATION), given, "no such annotation: " + why));
    }
  }

  private static void checkNames(PodManifest pod, List<FieldError> errors) {
    if (!KubernetesNames.isDns1123Subdomain(pod.name())) {
      errors.add(
          FieldErrors.of("metadata.name", pod.name(), KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED));
    }
    if (!KubernetesNames.isDns1123Label(pod.namespace())) {
      errors.add(
          FieldErrors.of(
              "metadata.namespace", pod.namespace(), KubernetesNames.DNS1123_LABEL_ACCEPTED));
    }
  }

  private static SharePolicy checkLabels(Map<String, String> labels, List<FieldError> errors) {
    String computeClass = labels.get(COMPUTE_CLASS_LABEL);
    if (!GPU_HPN.equals(computeClass)) {
      errors.add(
          FieldErrors.of(
              label(COMPUTE_CLASS_LABEL),
              computeClass,
              "\"" + GPU_HPN + "\", the only compute class that supports GPU sharing"));
    }
    String policyLabel = labels.get(SharePolicy.LABEL);
    SharePolicy policy = SharePolicy.fromLabel(policyLabel).orElse(null);
    if (policy == null || !policy.sharing()) {
      String accepted = "share-pool or static, matching the node's policy";
      errors.add(
          FieldErrors.of(
              label(SharePolicy.LABEL),
              policyLabel,
              policy == SharePolicy.NONE
                  ? accepted + "; a pod that asks for shared GPU resources cannot use none"
                  : accepted));
    }
    return policy;
  }

  /** Sidecars of a sharing pod use CPU and memory only: no whole GPUs beside a share. */
  private static void checkNoExclusiveGpus(
      List<PodManifest.ContainerResources> containers, List<FieldError> errors) {
    for (int i = 0; i < containers.size(); i++) {
      PodManifest.ContainerResources c = containers.get(i);
      for (String kind : List.of(REQUESTS, LIMITS)) {
        String given = resources(c, kind).get(EXCLUSIVE_GPU);
        if (given != null) {
          errors.add(
              FieldErrors.of(
                  resourceField(i, kind, EXCLUSIVE_GPU),
                  given,
                  "no "
                      + EXCLUSIVE_GPU
                      + " in a pod that shares a GPU: a container cannot ask for "
                      + EXCLUSIVE_GPU
                      + " and shared GPU resources together, and sidecars use CPU and memory"
                      + " only"));
        }
      }
    }
  }

  private static FieldError secondSharingContainer(
      int index,
      PodManifest.ContainerResources container,
      int firstIndex,
      PodManifest.ContainerResources first) {
    String field = "spec.containers[" + index + "].resources";
    return new FieldError(
        field,
        container.name(),
        field
            + " (container \""
            + container.name()
            + "\") asks for shared GPU resources, but spec.containers["
            + firstIndex
            + "] (container \""
            + first.name()
            + "\") already does; want at most one container per pod using "
            + CORE
            + " and "
            + MEMORY
            + ": sidecars use CPU and memory only");
  }

  /**
   * Both percentage resources of one side (requests or limits) of the sharing container, or {@code
   * null} when either is wrong. Limits are checked against {@code requests} when those are valid.
   */
  private static Share checkedShare(
      int index,
      PodManifest.ContainerResources container,
      String kind,
      Share requests,
      List<FieldError> errors) {
    Map<String, String> values = resources(container, kind);
    Integer core =
        checkedPercentage(
            resourceField(index, kind, CORE),
            values.get(CORE),
            requests == null ? null : requests.core(),
            errors);
    Integer memory =
        checkedPercentage(
            resourceField(index, kind, MEMORY),
            values.get(MEMORY),
            requests == null ? null : requests.memory(),
            errors);
    return core == null || memory == null ? null : new Share(core, memory);
  }

  /**
   * One percentage: a request when {@code request} is {@code null}, else a limit that must lie
   * between that request and 100.
   */
  private static Integer checkedPercentage(
      String field, String given, Integer request, List<FieldError> errors) {
    int lowest = request == null ? 1 : request;
    String range = "an integer from " + lowest + " to 100";
    if (request != null) {
      range += " (from the request up to one whole GPU)";
    }
    if (given == null) {
      errors.add(
          FieldErrors.of(
              field,
              null,
              range + "; both " + CORE + " and " + MEMORY + " belong in both requests and limits"));
      return null;
    }
    OptionalInt value = plainInteger(given);
    if (value.isEmpty()) {
      errors.add(
          FieldErrors.of(
              field,
              given,
              range
                  + ", written as plain digits such as 10 (no sign, decimal point, exponent,"
                  + " suffix or spaces around it)"));
      return null;
    }
    int v = value.getAsInt();
    if (v > 100) {
      errors.add(
          FieldErrors.of(
              field,
              given,
              range
                  + "; one pod's share lies on one GPU, so no value exceeds 100 (shares are not"
                  + " aggregated across GPUs)"));
      return null;
    }
    if (v < lowest) {
      errors.add(FieldErrors.of(field, given, range));
      return null;
    }
    return v;
  }

  /**
   * The limits the admission webhook recorded, or {@code null} when it recorded none. The two
   * annotations go together; each holds an integer from the request up to 100.
   */
  private static Share annotatedLimits(
      Map<String, String> annotations, Share requests, List<FieldError> errors) {
    String core = annotations.get(CORE_LIMIT_ANNOTATION);
    String memory = annotations.get(MEMORY_LIMIT_ANNOTATION);
    if (core == null && memory == null) {
      return null;
    }
    if (core == null || memory == null) {
      String missing = core == null ? CORE_LIMIT_ANNOTATION : MEMORY_LIMIT_ANNOTATION;
      String present = core == null ? MEMORY_LIMIT_ANNOTATION : CORE_LIMIT_ANNOTATION;
      errors.add(
          FieldErrors.of(
              annotation(missing),
              null,
              "both limit annotations or neither: "
                  + present
                  + " is set, so "
                  + missing
                  + " is needed too"));
      return null;
    }
    Integer coreLimit =
        checkedPercentage(
            annotation(CORE_LIMIT_ANNOTATION),
            core,
            requests == null ? null : requests.core(),
            errors);
    Integer memoryLimit =
        checkedPercentage(
            annotation(MEMORY_LIMIT_ANNOTATION),
            memory,
            requests == null ? null : requests.memory(),
            errors);
    return coreLimit == null || memoryLimit == null ? null : new Share(coreLimit, memoryLimit);
  }

  /**
   * The container's {@code nvidia.com/gpu} count (limit, else request; Kubernetes makes a missing
   * request equal to the limit), 0 when it asks for none or the values are wrong.
   */
  private static int exclusiveGpus(
      int index, PodManifest.ContainerResources container, List<FieldError> errors) {
    String request = resources(container, REQUESTS).get(EXCLUSIVE_GPU);
    String limit = resources(container, LIMITS).get(EXCLUSIVE_GPU);
    int requested = checkedGpuCount(resourceField(index, REQUESTS, EXCLUSIVE_GPU), request, errors);
    int limited = checkedGpuCount(resourceField(index, LIMITS, EXCLUSIVE_GPU), limit, errors);
    if (requested > 0 && limited > 0 && requested != limited) {
      errors.add(
          FieldErrors.of(
              resourceField(index, REQUESTS, EXCLUSIVE_GPU),
              request,
              "the same count as the limit, "
                  + limit
                  + ": Kubernetes does not overcommit "
                  + EXCLUSIVE_GPU));
      return 0;
    }
    return Math.max(requested, limited);
  }

  private static int checkedGpuCount(String field, String given, List<FieldError> errors) {
    if (given == null) {
      return 0;
    }
    OptionalInt value = plainInteger(given);
    if (value.isEmpty() || value.getAsInt() < 1 || value.getAsInt() == Integer.MAX_VALUE) {
      errors.add(FieldErrors.of(field, given, "a positive integer count of whole GPUs, such as 1"));
      return 0;
    }
    return value.getAsInt();
  }

  /**
   * Every other resource (cpu, memory, ephemeral-storage, …) holds a Kubernetes quantity as
   * written: {@code " 1"} or {@code "1 "} is not one, as the API server would say too. The share
   * percentages and {@code nvidia.com/gpu} have stricter rules of their own.
   */
  private static void checkQuantities(
      int index, PodManifest.ContainerResources container, List<FieldError> errors) {
    for (String kind : List.of(REQUESTS, LIMITS)) {
      resources(container, kind)
          .forEach(
              (resource, given) -> {
                if (resource.equals(CORE)
                    || resource.equals(MEMORY)
                    || resource.equals(EXCLUSIVE_GPU)) {
                  return;
                }
                try {
                  Quantity.parse(given);
                } catch (IllegalArgumentException e) {
                  errors.add(
                      FieldErrors.of(
                          resourceField(index, kind, resource),
                          given,
                          Quantity.ACCEPTED + ", with no spaces around it"));
                }
              });
    }
  }

  private static boolean mentionsShare(PodManifest.ContainerResources c) {
    Map<String, String> requests = resources(c, REQUESTS);
    Map<String, String> limits = resources(c, LIMITS);
    return requests.containsKey(CORE)
        || requests.containsKey(MEMORY)
        || limits.containsKey(CORE)
        || limits.containsKey(MEMORY);
  }

  /** Plain digits only; values beyond {@code int} read as {@link Integer#MAX_VALUE}. */
  private static OptionalInt plainInteger(String text) {
    if (!PLAIN_INTEGER.matcher(text).matches()) {
      return OptionalInt.empty();
    }
    return OptionalInt.of(
        new BigInteger(text).min(BigInteger.valueOf(Integer.MAX_VALUE)).intValueExact());
  }

  private static Map<String, String> resources(PodManifest.ContainerResources c, String kind) {
    return orEmpty(REQUESTS.equals(kind) ? c.requests() : c.limits());
  }

  private static String resourceField(int index, String kind, String resource) {
    return "spec.containers[" + index + "].resources." + kind + "[" + resource + "]";
  }

  private static String label(String key) {
    return "metadata.labels[" + key + "]";
  }

  private static String annotation(String key) {
    return "metadata.annotations[" + key + "]";
  }

  private static <K, V> Map<K, V> orEmpty(Map<K, V> map) {
    return map == null ? Map.of() : map;
  }
}
