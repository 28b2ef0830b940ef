package dev.gpushare.http.admission;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.FieldErrors;
import dev.gpushare.http.launch.PodSideSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * What the mutating webhook adds to a share-pool or static pod so that {@code libgpushare.so} runs
 * in it (SPEC §10), as JSONPatch operations on the pod under review. The pod is written as users
 * write it (the reference manifest); nothing in it is overwritten:
 *
 * <ul>
 *   <li>an init container {@value #INIT_CONTAINER} from the product's image runs {@code
 *       install-library DIR}, which copies the library into the {@code emptyDir} {@value
 *       #LIBRARY_VOLUME}; the GPU container mounts it read-only at {@link
 *       PodSideSettings#libraryDir()} and gets it prepended to its {@code LD_PRELOAD};
 *   <li>a projected ServiceAccount token for the audience {@link PodSideSettings#tokenAudience()}
 *       ({@value #TOKEN_VOLUME}, at {@value #TOKEN_DIR}): the library's credential, which the API
 *       server does not accept for itself, so the pod's own API-server token never reaches the
 *       member;
 *   <li>the directory of the member's data-plane Unix socket ({@value #SOCKET_VOLUME}, a read-only
 *       {@code hostPath}): the credential never leaves the node;
 *   <li>the pod's identity (downward API), the socket's address, the token's path, and the NVIDIA
 *       runtime's environment ({@code NVIDIA_VISIBLE_DEVICES=all}, {@code
 *       NVIDIA_DRIVER_CAPABILITIES=compute,utility}); a {@code runtimeClassName} when the settings
 *       name one and the pod names none;
 *   <li>on MPS nodes, the MPS directory (read-write) and its {@code shm} at {@code /dev/shm}, and
 *       the node's one MPS UID for the GPU container.
 * </ul>
 *
 * <p>Each piece is added only when it is absent, so that a re-invocation adds nothing. An
 * environment variable the user set is kept as it is ({@code LD_PRELOAD} keeps its value after the
 * library). What cannot be completed without overwriting the user is refused with one error per
 * field in the way: a mount of another volume at one of the paths above, a volume of the user's
 * under one of the webhook's names, an {@code LD_PRELOAD} from {@code valueFrom}, on MPS nodes a
 * UID other than the node's MPS UID.
 *
 * <p>A pod annotated {@value #INJECT_ANNOTATION}{@code : "false"} is left alone; {@code "true"} is
 * the default; another value is refused.
 */
final class PodSideInjection {

  static final String INJECT_ANNOTATION = "gpushare.dev/inject";
  static final String INIT_CONTAINER = "gpushare-lib";
  static final String LIBRARY_VOLUME = "gpushare-lib";
  static final String TOKEN_VOLUME = "gpushare-token";
  static final String SOCKET_VOLUME = "gpushare-data-plane";
  static final String MPS_VOLUME = "gpushare-mps";
  static final String MPS_SHM_VOLUME = "gpushare-mps-shm";
  static final String LIBRARY_FILE = "libgpushare.so";
  static final String TOKEN_DIR = "/var/run/secrets/gpushare.dev/token";
  static final String TOKEN_FILE = "token";
  static final String INSTALL_COMMAND = "install-library";
  static final String SHM = "/dev/shm";

  /** The init container's user: the product image's own non-root user. */
  static final long INIT_UID = 65532;

  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  /** The patch operations, or the errors that stop the pod; at most one of the two non-empty. */
  record Result(List<ObjectNode> ops, List<FieldError> errors) {}

  private final PodSideSettings settings;
  private final JsonNode pod;
  private final int index;
  private final JsonNode container;
  private final String at;
  private final String path;
  private final List<ObjectNode> ops = new ArrayList<>();
  private final List<FieldError> errors = new ArrayList<>();

  private PodSideInjection(PodSideSettings settings, JsonNode pod, int index) {
    this.settings = settings;
    this.pod = pod;
    this.index = index;
    this.container = pod.path("spec").path("containers").path(index);
    this.at = "spec.containers[" + index + "]";
    this.path = "/spec/containers/" + index;
  }

  /** Whether the webhook injects at all with these settings (it needs the socket). */
  static boolean enabled(PodSideSettings settings) {
    return settings.inject() && settings.socket().isPresent();
  }

  /**
   * The operations that complete the pod whose GPU container is {@code spec.containers[index]}, or
   * the errors; nothing when the pod opted out or is complete already.
   */
  static Result of(PodSideSettings settings, JsonNode pod, int index) {
    PodSideInjection injection = new PodSideInjection(settings, pod, index);
    injection.checkShapes();
    injection.build();
    return injection.errors.isEmpty()
        ? new Result(List.copyOf(injection.ops), List.of())
        : new Result(List.of(), List.copyOf(injection.errors));
  }

  /**
   * The parts of the pod the patch reads or extends must have the shapes the API server sends; any
   * other is a {@link MalformedReviewException} naming the field under {@code request.object} (a
   * patch must never replace what it could not read).
   */
  private void checkShapes() {
    String at = "request.object.";
    JsonNode spec = pod.path("spec");
    list(spec.path("volumes"), at + "spec.volumes", "a list of volumes");
    for (int k = 0; k < spec.path("volumes").size(); k++) {
      JsonNode name = spec.path("volumes").get(k).get("name");
      if (name != null && !name.isTextual()) {
        throw AdmittedPod.malformed(
            at + "spec.volumes[" + k + "].name", name, "the volume's name, a string");
      }
    }
    list(container.path("env"), at + this.at + ".env", "a list of environment variables");
    list(container.path("volumeMounts"), at + this.at + ".volumeMounts", "a list of volume mounts");
    securityContext(container.path("securityContext"), at + this.at + ".securityContext");
    securityContext(spec.path("securityContext"), at + "spec.securityContext");
    JsonNode runtimeClass = spec.path("runtimeClassName");
    if (!absent(runtimeClass) && !runtimeClass.isTextual()) {
      throw AdmittedPod.malformed(at + "spec.runtimeClassName", runtimeClass, "a string");
    }
  }

  private static void securityContext(JsonNode node, String field) {
    if (absent(node)) {
      return;
    }
    if (!node.isObject()) {
      throw AdmittedPod.malformed(field, node, "an object");
    }
    JsonNode uid = node.path("runAsUser");
    if (!absent(uid) && !uid.canConvertToLong()) {
      throw AdmittedPod.malformed(field + ".runAsUser", uid, "a UID, a whole number");
    }
  }

  /** An absent or null node, or a list of objects; anything else is malformed. */
  private static void list(JsonNode node, String field, String what) {
    if (absent(node)) {
      return;
    }
    if (!node.isArray()) {
      throw AdmittedPod.malformed(field, node, what);
    }
    for (int i = 0; i < node.size(); i++) {
      if (!node.get(i).isObject()) {
        throw AdmittedPod.malformed(field + "[" + i + "]", node.get(i), "an object");
      }
    }
  }

  private void build() {
    JsonNode annotation = pod.path("metadata").path("annotations").path(INJECT_ANNOTATION);
    if (!annotation.isMissingNode() && !annotation.isNull()) {
      String value = annotation.asText();
      if (value.equals("false")) {
        return;
      }
      if (!value.equals("true")) {
        errors.add(
            FieldErrors.of(
                "metadata.annotations[" + INJECT_ANNOTATION + "]",
                value,
                "\"true\" (the default: the webhook brings libgpushare.so into the pod) or"
                    + " \"false\" (the pod is left as written, apart from its limit annotations)"));
        return;
      }
    }
    String socket = settings.socket().orElseThrow();
    String socketDir = parent(socket);
    String libraryDir = settings.libraryDir();
    Optional<String> mps = settings.mpsRoot();

    // Volumes first: the mounts below name them.
    volume(
        LIBRARY_VOLUME,
        v -> v.has("emptyDir"),
        "an emptyDir",
        NODES
            .objectNode()
            .put("name", LIBRARY_VOLUME)
            .set("emptyDir", NODES.objectNode().put("sizeLimit", "16Mi")));
    volume(
        TOKEN_VOLUME,
        v -> tokenSource(v).isPresent(),
        "a projected serviceAccountToken with audience " + settings.tokenAudience(),
        tokenVolume());
    volume(
        SOCKET_VOLUME,
        v -> hostPath(v, socketDir),
        "a hostPath of " + socketDir,
        host(SOCKET_VOLUME, socketDir));
    if (mps.isPresent()) {
      String root = mps.get();
      volume(MPS_VOLUME, v -> hostPath(v, root), "a hostPath of " + root, host(MPS_VOLUME, root));
      volume(
          MPS_SHM_VOLUME,
          v -> hostPath(v, root + "/shm"),
          "a hostPath of " + root + "/shm",
          host(MPS_SHM_VOLUME, root + "/shm"));
    }

    initContainer(libraryDir);

    mount(LIBRARY_VOLUME, libraryDir, true);
    mount(TOKEN_VOLUME, TOKEN_DIR, true);
    mount(SOCKET_VOLUME, socketDir, true);
    if (mps.isPresent()) {
      mount(MPS_VOLUME, mps.get(), false);
      mount(MPS_SHM_VOLUME, SHM, false);
      mpsUser();
    }

    ObjectNode ns = NODES.objectNode();
    ns.putObject("valueFrom").putObject("fieldRef").put("fieldPath", "metadata.namespace");
    ObjectNode name = NODES.objectNode();
    name.putObject("valueFrom").putObject("fieldRef").put("fieldPath", "metadata.name");
    env("GPUSHARE_POD_NAMESPACE", ns);
    env("GPUSHARE_POD_NAME", name);
    env("GPUSHARE_POD", value("$(GPUSHARE_POD_NAMESPACE)/$(GPUSHARE_POD_NAME)"));
    env("GPUSHARE_SERVER", value("unix:" + socket));
    env("GPUSHARE_TOKEN_FILE", value(TOKEN_DIR + "/" + TOKEN_FILE));
    env("NVIDIA_VISIBLE_DEVICES", value("all"));
    env("NVIDIA_DRIVER_CAPABILITIES", value("compute,utility"));
    preload(libraryDir + "/" + LIBRARY_FILE);

    if (settings.runtimeClass().isPresent() && absent(pod.path("spec").path("runtimeClassName"))) {
      ops.add(add("/spec/runtimeClassName", NODES.textNode(settings.runtimeClass().get())));
    }
  }

  // ---- volumes ------------------------------------------------------------------------------

  private int pendingVolumes;

  /**
   * Adds the pod volume {@code name} unless the pod has it; one of the user's under that name that
   * is not {@code ours} is refused.
   */
  private void volume(String name, Predicate<JsonNode> ours, String what, ObjectNode volume) {
    JsonNode volumes = pod.path("spec").path("volumes");
    for (int k = 0; k < volumes.size(); k++) {
      JsonNode v = volumes.get(k);
      if (name.equals(v.path("name").asText(null))) {
        if (!ours.test(v)) {
          errors.add(
              FieldErrors.ofJson(
                  "spec.volumes[" + k + "]",
                  v.toString(),
                  "no volume of the pod's own named \""
                      + name
                      + "\": the webhook adds "
                      + what
                      + " under that name for libgpushare.so; rename the pod's volume"));
        }
        return;
      }
    }
    if (volumes.isArray()) {
      ops.add(add("/spec/volumes/-", volume));
    } else if (pendingVolumes++ == 0) {
      ops.add(add("/spec/volumes", NODES.arrayNode().add(volume)));
    } else {
      ops.add(add("/spec/volumes/-", volume));
    }
  }

  private ObjectNode tokenVolume() {
    ObjectNode token =
        NODES
            .objectNode()
            .put("audience", settings.tokenAudience())
            .put("expirationSeconds", settings.tokenExpiration().toSeconds())
            .put("path", TOKEN_FILE);
    ArrayNode sources = NODES.arrayNode();
    sources.addObject().set("serviceAccountToken", token);
    ObjectNode volume = NODES.objectNode().put("name", TOKEN_VOLUME);
    volume.putObject("projected").set("sources", sources);
    return volume;
  }

  private Optional<JsonNode> tokenSource(JsonNode volume) {
    for (JsonNode source : volume.path("projected").path("sources")) {
      JsonNode token = source.path("serviceAccountToken");
      if (settings.tokenAudience().equals(token.path("audience").asText(null))) {
        return Optional.of(token);
      }
    }
    return Optional.empty();
  }

  private static ObjectNode host(String name, String dir) {
    ObjectNode volume = NODES.objectNode().put("name", name);
    volume.putObject("hostPath").put("path", dir).put("type", "Directory");
    return volume;
  }

  private static boolean hostPath(JsonNode volume, String dir) {
    return dir.equals(volume.path("hostPath").path("path").asText(null));
  }

  // ---- the init container -------------------------------------------------------------------

  private void initContainer(String libraryDir) {
    JsonNode init = pod.path("spec").path("initContainers");
    for (JsonNode c : init) {
      if (INIT_CONTAINER.equals(c.path("name").asText(null))) {
        return;
      }
    }
    ObjectNode c = NODES.objectNode();
    c.put("name", INIT_CONTAINER);
    c.put("image", settings.image());
    c.put("imagePullPolicy", settings.imagePullPolicy());
    c.putArray("args").add(INSTALL_COMMAND).add(libraryDir);
    // The image's entrypoint is the JVM: a small heap, no shared perf file on a read-only root.
    c.putArray("env")
        .addObject()
        .put("name", "JAVA_TOOL_OPTIONS")
        .put("value", "-Xmx32m -XX:TieredStopAtLevel=1 -XX:-UsePerfData");
    ObjectNode resources = c.putObject("resources");
    resources.putObject("requests").put("cpu", "50m").put("memory", "64Mi");
    resources.putObject("limits").put("memory", "128Mi");
    ObjectNode security = c.putObject("securityContext");
    security.put("runAsNonRoot", true);
    security.put("runAsUser", INIT_UID);
    security.put("runAsGroup", INIT_UID);
    security.put("allowPrivilegeEscalation", false);
    security.put("readOnlyRootFilesystem", true);
    security.putObject("capabilities").putArray("drop").add("ALL");
    security.putObject("seccompProfile").put("type", "RuntimeDefault");
    c.putArray("volumeMounts").addObject().put("name", LIBRARY_VOLUME).put("mountPath", libraryDir);
    if (init.isArray() && !init.isEmpty()) {
      ops.add(add("/spec/initContainers/0", c));
    } else {
      ops.add(add("/spec/initContainers", NODES.arrayNode().add(c)));
    }
  }

  // ---- the GPU container --------------------------------------------------------------------

  private int pendingMounts;

  /**
   * Mounts {@code volume} at {@code mountPath} unless it is there; another mount there is refused.
   */
  private void mount(String volume, String mountPath, boolean readOnly) {
    JsonNode mounts = container.path("volumeMounts");
    for (int j = 0; j < mounts.size(); j++) {
      JsonNode m = mounts.get(j);
      String p = trimSlash(m.path("mountPath").asText(""));
      boolean samePath = p.equals(trimSlash(mountPath));
      boolean sameVolume = volume.equals(m.path("name").asText(null));
      if (samePath && sameVolume) {
        return;
      }
      if (samePath) {
        errors.add(
            FieldErrors.of(
                at + ".volumeMounts[" + j + "].mountPath",
                m.path("mountPath").asText(),
                "no mount of the container's own at "
                    + mountPath
                    + ": the webhook mounts "
                    + volume
                    + " there for libgpushare.so"
                    + (SHM.equals(mountPath)
                        ? " (on MPS nodes /dev/shm is shared with the node's MPS servers)"
                        : "")
                    + "; mount the volume "
                    + m.path("name").asText()
                    + " elsewhere"));
        return;
      }
      if (sameVolume) {
        // The webhook's volume at another path: a pod written with it by hand; leave it.
        return;
      }
    }
    ObjectNode m = NODES.objectNode().put("name", volume).put("mountPath", mountPath);
    if (readOnly) {
      m.put("readOnly", true);
    }
    if (mounts.isArray() || pendingMounts++ > 0) {
      ops.add(add(path + "/volumeMounts/-", m));
    } else {
      ops.add(add(path + "/volumeMounts", NODES.arrayNode().add(m)));
    }
  }

  private int pendingEnv;

  /** Sets {@code name} unless the container sets it already (its value wins). */
  private void env(String name, ObjectNode valueOrFrom) {
    if (envIndex(name) >= 0) {
      return;
    }
    ObjectNode e = NODES.objectNode().put("name", name);
    e.setAll(valueOrFrom);
    appendEnv(e);
  }

  private void appendEnv(ObjectNode e) {
    if (container.path("env").isArray() || pendingEnv++ > 0) {
      ops.add(add(path + "/env/-", e));
    } else {
      ops.add(add(path + "/env", NODES.arrayNode().add(e)));
    }
  }

  /** {@code LD_PRELOAD}: the library first, then whatever the container preloads already. */
  private void preload(String library) {
    int j = envIndex("LD_PRELOAD");
    if (j < 0) {
      appendEnv(NODES.objectNode().put("name", "LD_PRELOAD").put("value", library));
      return;
    }
    JsonNode e = container.path("env").get(j);
    if (e.has("valueFrom") && !e.path("valueFrom").isNull()) {
      errors.add(
          FieldErrors.ofJson(
              at + ".env[" + j + "].valueFrom",
              e.get("valueFrom").toString(),
              "LD_PRELOAD given as value, so that the webhook can put "
                  + library
                  + " before it (a value from a ConfigMap or Secret cannot be prepended to)"));
      return;
    }
    String current = e.path("value").asText("");
    for (String entry : current.split("[: ]")) {
      if (entry.equals(library)) {
        return;
      }
    }
    String joined = current.isBlank() ? library : library + ":" + current;
    ops.add(replaceOrAdd(path + "/env/" + j + "/value", e.has("value"), NODES.textNode(joined)));
  }

  /**
   * The index of the last definition of {@code name} in the container's env (the one that wins).
   */
  private int envIndex(String name) {
    JsonNode env = container.path("env");
    int found = -1;
    for (int j = 0; j < env.size(); j++) {
      if (name.equals(env.get(j).path("name").asText(null))) {
        found = j;
      }
    }
    return found;
  }

  /**
   * On MPS nodes every client of a GPU's control daemon runs as one UID: the GPU container's is the
   * node's MPS UID, set when neither the container nor the pod sets one.
   */
  private void mpsUser() {
    long uid = settings.mpsUid();
    JsonNode own = container.path("securityContext").path("runAsUser");
    JsonNode podUid = pod.path("spec").path("securityContext").path("runAsUser");
    String field;
    JsonNode given;
    if (!absent(own)) {
      field = at + ".securityContext.runAsUser";
      given = own;
    } else if (!absent(podUid)) {
      field = "spec.securityContext.runAsUser";
      given = podUid;
    } else {
      JsonNode security = container.path("securityContext");
      if (security.isObject()) {
        ops.add(add(path + "/securityContext/runAsUser", NODES.numberNode(uid)));
      } else {
        ops.add(add(path + "/securityContext", NODES.objectNode().put("runAsUser", uid)));
      }
      return;
    }
    if (!given.canConvertToLong() || given.asLong() != uid) {
      errors.add(
          FieldErrors.ofJson(
              field,
              given.toString(),
              uid
                  + " (unset, or the node's MPS UID gpushare.pod-side.mps-uid): every MPS workload"
                  + " of a node runs as one UID, and a client of another UID waits until every"
                  + " client of the running MPS server has finished"));
    }
  }

  // ---- JSON helpers -------------------------------------------------------------------------

  private static ObjectNode value(String v) {
    return NODES.objectNode().put("value", v);
  }

  private static ObjectNode add(String p, JsonNode value) {
    ObjectNode op = NODES.objectNode().put("op", "add").put("path", p);
    op.set("value", value);
    return op;
  }

  private static ObjectNode replaceOrAdd(String p, boolean exists, JsonNode value) {
    ObjectNode op = NODES.objectNode().put("op", exists ? "replace" : "add").put("path", p);
    op.set("value", value);
    return op;
  }

  private static boolean absent(JsonNode node) {
    return node == null || node.isMissingNode() || node.isNull();
  }

  private static String trimSlash(String p) {
    return p.length() > 1 && p.endsWith("/") ? p.substring(0, p.length() - 1) : p;
  }

  /** The directory of an absolute file path ({@code /} for a file at the root). */
  static String parent(String file) {
    int slash = file.lastIndexOf('/');
    return slash <= 0 ? "/" : file.substring(0, slash);
  }
}
