package dev.gpushare.http.admission;

import static dev.gpushare.http.admission.AdmissionReviewerTest.decodedPatch;
import static dev.gpushare.http.admission.AdmissionReviewerTest.review;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.http.launch.PodSideSettings;
import dev.gpushare.http.server.Json;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.zjsonpatch.JsonPatch;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Issue 25's admission checks: what the mutating webhook adds to the reference manifest and its
 * variants so that libgpushare.so runs in the pod, that a re-invocation adds nothing, that what the
 * user wrote is kept, and that what cannot be completed is refused naming the field. Each patch is
 * applied with a real JSONPatch implementation and the result read into fabric8's Pod model.
 */
class PodSideInjectionTest {

  static final String SOCKET = PodSideSettings.DEPLOY_SOCKET;
  static final String LIB = PodSideSettings.DEFAULT_LIBRARY_DIR + "/libgpushare.so";
  static final PodSideSettings SETTINGS = PodSideSettings.DEFAULT.withSocket(Optional.of(SOCKET));
  static final PodSideSettings MPS = SETTINGS.withMpsRoot(Optional.of("/run/gpushare/mps"));

  private static JsonNode answer(JsonNode review, PodSideSettings settings) {
    return Json.mapper().valueToTree(AdmissionReviewer.mutate(review, settings));
  }

  /** The review with its pod changed by {@code edit}. */
  private static JsonNode edited(Consumer<ObjectNode> edit) {
    ObjectNode review = review("demo-create.json").deepCopy();
    edit.accept((ObjectNode) review.at("/request/object"));
    return review;
  }

  private static JsonNode patchedObject(JsonNode review, JsonNode answer) {
    return JsonPatch.apply(decodedPatch(answer), review.at("/request/object").deepCopy());
  }

  private static JsonNode withObject(JsonNode review, JsonNode object) {
    ObjectNode copy = review.deepCopy();
    ((ObjectNode) copy.get("request")).set("object", object);
    return copy;
  }

  /** Mutates, applies, checks the result is a Pod, and that a re-invocation changes nothing. */
  private static Pod injected(JsonNode review, PodSideSettings settings) {
    JsonNode answer = answer(review, settings);
    assertTrue(answer.at("/response/allowed").asBoolean(), answer.toString());
    JsonNode after = patchedObject(review, answer);
    JsonNode again = answer(withObject(review, after), settings);
    assertTrue(again.at("/response/allowed").asBoolean(), again.toString());
    assertFalse(again.get("response").has("patch"), "re-invocation adds nothing: " + again);
    Pod pod = Json.mapper().convertValue(after, Pod.class);
    assertTrue(pod.getAdditionalProperties().isEmpty(), "a Pod: " + pod.getAdditionalProperties());
    return pod;
  }

  /** {@link #SETTINGS} with {@code inject} and {@code runtimeClass}. */
  private static PodSideSettings settings(boolean inject, Optional<String> runtimeClass) {
    return new PodSideSettings(
        SETTINGS.socket(),
        inject,
        SETTINGS.image(),
        SETTINGS.imagePullPolicy(),
        SETTINGS.libraryDir(),
        SETTINGS.tokenAudience(),
        SETTINGS.tokenExpiration(),
        runtimeClass,
        Optional.empty(),
        SETTINGS.mpsUid());
  }

  /** The pod's own /dev/shm: a memory emptyDir, as PyTorch's DataLoader wants it. */
  private static void ownDevShm(ObjectNode o) {
    ((ArrayNode) o.at("/spec/containers/0/volumeMounts"))
        .addObject()
        .put("name", "dshm")
        .put("mountPath", "/dev/shm");
    ((ArrayNode) o.at("/spec/volumes"))
        .addObject()
        .put("name", "dshm")
        .putObject("emptyDir")
        .put("medium", "Memory");
  }

  private static Map<String, EnvVar> env(Container c) {
    return c.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e, (a, b) -> b));
  }

  private static Map<String, VolumeMount> mounts(Container c) {
    return c.getVolumeMounts().stream()
        .collect(Collectors.toMap(VolumeMount::getName, m -> m, (a, b) -> b));
  }

  private static Map<String, Volume> volumes(Pod pod) {
    return pod.getSpec().getVolumes().stream()
        .collect(Collectors.toMap(Volume::getName, v -> v, (a, b) -> b));
  }

  private static String refusal(JsonNode review, PodSideSettings settings) {
    JsonNode answer = answer(review, settings);
    assertFalse(answer.at("/response/allowed").asBoolean(), answer.toString());
    assertEquals(422, answer.at("/response/status/code").asInt());
    assertFalse(answer.get("response").has("patch"), "a refusal patches nothing");
    return answer.at("/response/status/message").asText();
  }

  /** Everything the injected GPU container and pod must hold, whatever else they have. */
  private static void assertInjected(Pod pod, Container gpu) {
    Container init = pod.getSpec().getInitContainers().get(0);
    assertEquals("gpushare-lib", init.getName());
    assertEquals(PodSideSettings.DEFAULT_IMAGE, init.getImage());
    assertEquals(List.of("install-library", PodSideSettings.DEFAULT_LIBRARY_DIR), init.getArgs());
    assertTrue(init.getCommand().isEmpty(), "the image's entrypoint, the launcher");
    assertEquals(PodSideSettings.DEFAULT_LIBRARY_DIR, init.getVolumeMounts().get(0).getMountPath());
    assertTrue(init.getSecurityContext().getRunAsNonRoot());
    assertFalse(init.getSecurityContext().getAllowPrivilegeEscalation());
    assertTrue(init.getSecurityContext().getReadOnlyRootFilesystem());
    assertEquals(List.of("ALL"), init.getSecurityContext().getCapabilities().getDrop());

    Map<String, Volume> volumes = volumes(pod);
    assertNotNull(volumes.get("gpushare-lib").getEmptyDir());
    var token = volumes.get("gpushare-token").getProjected().getSources().get(0);
    assertEquals("gpushare", token.getServiceAccountToken().getAudience());
    assertEquals(600L, token.getServiceAccountToken().getExpirationSeconds());
    assertEquals("token", token.getServiceAccountToken().getPath());
    assertEquals(
        "/run/gpushare/data-plane", volumes.get("gpushare-data-plane").getHostPath().getPath());
    assertEquals("Directory", volumes.get("gpushare-data-plane").getHostPath().getType());

    Map<String, VolumeMount> mounts = mounts(gpu);
    assertEquals(PodSideSettings.DEFAULT_LIBRARY_DIR, mounts.get("gpushare-lib").getMountPath());
    assertTrue(mounts.get("gpushare-lib").getReadOnly());
    assertEquals(
        "/var/run/secrets/gpushare.dev/token", mounts.get("gpushare-token").getMountPath());
    assertTrue(mounts.get("gpushare-token").getReadOnly());
    assertEquals("/run/gpushare/data-plane", mounts.get("gpushare-data-plane").getMountPath());
    assertTrue(mounts.get("gpushare-data-plane").getReadOnly());

    Map<String, EnvVar> env = env(gpu);
    assertEquals(
        "metadata.namespace",
        env.get("GPUSHARE_POD_NAMESPACE").getValueFrom().getFieldRef().getFieldPath());
    assertEquals(
        "metadata.name", env.get("GPUSHARE_POD_NAME").getValueFrom().getFieldRef().getFieldPath());
    assertEquals("unix:" + SOCKET, env.get("GPUSHARE_SERVER").getValue());
    assertEquals(
        "/var/run/secrets/gpushare.dev/token/token", env.get("GPUSHARE_TOKEN_FILE").getValue());
    assertTrue(env.get("LD_PRELOAD").getValue().startsWith(LIB));
    // $(VAR) only expands names defined earlier in the list.
    List<String> order = gpu.getEnv().stream().map(EnvVar::getName).toList();
    assertTrue(order.indexOf("GPUSHARE_POD_NAMESPACE") < order.indexOf("GPUSHARE_POD"));
    assertTrue(order.indexOf("GPUSHARE_POD_NAME") < order.indexOf("GPUSHARE_POD"));
  }

  // ---- the reference manifest ----

  @Test
  void theReferenceManifestGetsTheLibraryItsTokenTheSocketAndItsIdentity() {
    JsonNode review = review("demo-create.json");
    JsonNode answer = answer(review, SETTINGS);
    assertEquals(review("demo-injected-patch.json"), decodedPatch(answer), "the exact patch");
    Pod pod = injected(review, SETTINGS);
    Container demo = pod.getSpec().getContainers().get(0);
    assertInjected(pod, demo);
    Map<String, EnvVar> env = env(demo);
    assertEquals(
        "$(GPUSHARE_POD_NAMESPACE)/$(GPUSHARE_POD_NAME)", env.get("GPUSHARE_POD").getValue());
    assertEquals("all", env.get("NVIDIA_VISIBLE_DEVICES").getValue());
    assertEquals("compute,utility", env.get("NVIDIA_DRIVER_CAPABILITIES").getValue());
    assertEquals(LIB, env.get("LD_PRELOAD").getValue());
    assertEquals(List.of("sleep"), demo.getCommand(), "the command as written");
    assertEquals(List.of("1000h"), demo.getArgs());
    assertEquals(
        "kube-api-access-x7k2p",
        demo.getVolumeMounts().get(0).getName(),
        "the pod's own API token stays where it was; the library does not use it");
    assertEquals(null, pod.getSpec().getRuntimeClassName());
    assertEquals("100", pod.getMetadata().getAnnotations().get("alibabacloud.com/gpu-core-limit"));
  }

  @Test
  void theSettingsChooseImageDirectoryAudienceExpiryAndRuntimeClass() {
    PodSideSettings custom =
        new PodSideSettings(
            Optional.of("/var/run/gs/dp.sock"),
            true,
            "registry.example.com/gpushare:9",
            "Always",
            "/gs",
            "gpushare-prod",
            Duration.ofHours(1),
            Optional.of("nvidia"),
            Optional.empty(),
            1000);
    Pod pod = injected(review("demo-create.json"), custom);
    Container init = pod.getSpec().getInitContainers().get(0);
    assertEquals("registry.example.com/gpushare:9", init.getImage());
    assertEquals("Always", init.getImagePullPolicy());
    assertEquals(List.of("install-library", "/gs"), init.getArgs());
    assertEquals("nvidia", pod.getSpec().getRuntimeClassName());
    Map<String, Volume> volumes = volumes(pod);
    var token = volumes.get("gpushare-token").getProjected().getSources().get(0);
    assertEquals("gpushare-prod", token.getServiceAccountToken().getAudience());
    assertEquals(3600L, token.getServiceAccountToken().getExpirationSeconds());
    assertEquals("/var/run/gs", volumes.get("gpushare-data-plane").getHostPath().getPath());
    Map<String, EnvVar> env = env(pod.getSpec().getContainers().get(0));
    assertEquals("unix:/var/run/gs/dp.sock", env.get("GPUSHARE_SERVER").getValue());
    assertEquals("/gs/libgpushare.so", env.get("LD_PRELOAD").getValue());
  }

  @Test
  void aRuntimeClassThePodNamesIsKept() {
    PodSideSettings nvidia = settings(true, Optional.of("nvidia"));
    Pod pod =
        injected(
            edited(o -> ((ObjectNode) o.get("spec")).put("runtimeClassName", "nvidia-cdi")),
            nvidia);
    assertEquals("nvidia-cdi", pod.getSpec().getRuntimeClassName());
  }

  // ---- variants ----

  @Test
  void ofSeveralContainersOnlyTheOneOnTheGpuGetsTheLibrary() {
    JsonNode review =
        edited(
            o -> {
              ArrayNode containers = (ArrayNode) o.at("/spec/containers");
              ObjectNode sidecar = containers.insertObject(0);
              sidecar.put("name", "proxy").put("image", "envoy:1");
              sidecar.putObject("resources").putObject("requests").put("cpu", "100m");
              containers.addObject().put("name", "logs").put("image", "fluent-bit:3");
            });
    Pod pod = injected(review, SETTINGS);
    List<Container> containers = pod.getSpec().getContainers();
    assertEquals("demo", containers.get(1).getName());
    assertInjected(pod, containers.get(1));
    for (int i : new int[] {0, 2}) {
      Container other = containers.get(i);
      assertTrue(other.getEnv().isEmpty(), other.getName() + " keeps its environment");
      assertTrue(other.getVolumeMounts().isEmpty(), other.getName() + " mounts nothing of it");
    }
  }

  @Test
  void theUsersInitContainersRunAfterTheCopyAndAreLeftAlone() {
    JsonNode review =
        edited(
            o -> {
              ArrayNode init = ((ObjectNode) o.get("spec")).putArray("initContainers");
              init.addObject()
                  .put("name", "fetch-model")
                  .put("image", "busybox:1")
                  .putArray("command")
                  .add("true");
            });
    Pod pod = injected(review, SETTINGS);
    List<Container> init = pod.getSpec().getInitContainers();
    assertEquals(
        List.of("gpushare-lib", "fetch-model"), init.stream().map(Container::getName).toList());
    assertTrue(init.get(1).getEnv().isEmpty());
    assertInjected(pod, pod.getSpec().getContainers().get(0));
  }

  @Test
  void anExistingLdPreloadKeepsItsLibrariesAfterOurs() {
    JsonNode review =
        edited(
            o ->
                ((ObjectNode) o.at("/spec/containers/0"))
                    .putArray("env")
                    .addObject()
                    .put("name", "LD_PRELOAD")
                    .put("value", "/usr/lib/libjemalloc.so.2"));
    Pod pod = injected(review, SETTINGS);
    Container demo = pod.getSpec().getContainers().get(0);
    assertEquals(LIB + ":/usr/lib/libjemalloc.so.2", env(demo).get("LD_PRELOAD").getValue());
    assertEquals("LD_PRELOAD", demo.getEnv().get(0).getName(), "in place, not a second entry");
    assertEquals(1, demo.getEnv().stream().filter(e -> e.getName().equals("LD_PRELOAD")).count());
    assertInjected(pod, demo);
  }

  @Test
  void anEnvironmentVariableTheUserSetIsKept() {
    JsonNode review =
        edited(
            o -> {
              ArrayNode env = ((ObjectNode) o.at("/spec/containers/0")).putArray("env");
              env.addObject().put("name", "NVIDIA_DRIVER_CAPABILITIES").put("value", "all");
              env.addObject().put("name", "GPUSHARE_POD").put("value", "default/gpu-share-demo");
            });
    Pod pod = injected(review, SETTINGS);
    Container demo = pod.getSpec().getContainers().get(0);
    Map<String, EnvVar> env = env(demo);
    assertEquals("all", env.get("NVIDIA_DRIVER_CAPABILITIES").getValue());
    assertEquals("default/gpu-share-demo", env.get("GPUSHARE_POD").getValue());
    assertEquals(1, demo.getEnv().stream().filter(e -> e.getName().equals("GPUSHARE_POD")).count());
    assertEquals("all", env.get("NVIDIA_VISIBLE_DEVICES").getValue(), "what was unset is added");
  }

  @Test
  void aReinvocationOfTheInjectedReferencePodChangesNothing() {
    JsonNode review = review("demo-create.json");
    JsonNode once = patchedObject(review, answer(review, SETTINGS));
    JsonNode again = answer(withObject(review, once), SETTINGS);
    assertTrue(again.at("/response/allowed").asBoolean());
    assertFalse(again.get("response").has("patch"), again.toString());
    // Also after the API server's defaulting (readOnly false, defaultMode, hostPath type kept).
    ObjectNode defaulted = once.deepCopy();
    for (JsonNode v : defaulted.at("/spec/volumes")) {
      if (v.has("projected")) {
        ((ObjectNode) v.get("projected")).put("defaultMode", 420);
      }
      if (v.has("emptyDir")) {
        ((ObjectNode) v.get("emptyDir")).put("medium", "");
      }
    }
    JsonNode third = answer(withObject(review, defaulted), SETTINGS);
    assertFalse(third.get("response").has("patch"), third.toString());
  }

  @Test
  void aPodThatOptsOutGetsOnlyItsLimitAnnotations() {
    JsonNode review =
        edited(
            o ->
                ((ObjectNode) o.get("metadata"))
                    .putObject("annotations")
                    .put("gpushare.dev/inject", "false"));
    JsonNode answer = answer(review, SETTINGS);
    assertTrue(answer.at("/response/allowed").asBoolean());
    JsonNode after = patchedObject(review, answer);
    assertFalse(after.at("/spec").has("initContainers"));
    assertFalse(after.at("/spec/containers/0").has("env"));
    assertEquals(1, after.at("/spec/volumes").size());
    assertEquals(
        "100", after.at("/metadata/annotations/alibabacloud.com~1gpu-core-limit").asText());
    assertEquals(
        "10",
        after
            .at("/spec/containers/0/resources/limits/alibabacloud.com~1gpu-core.percentage")
            .asText());
  }

  @Test
  void anOptOutAnnotationOfAnotherValueIsRefusedNamingIt() {
    JsonNode review =
        edited(
            o ->
                ((ObjectNode) o.get("metadata"))
                    .putObject("annotations")
                    .put("gpushare.dev/inject", "no"));
    String message = refusal(review, SETTINGS);
    assertTrue(message.contains("metadata.annotations[gpushare.dev/inject]"), message);
    assertTrue(message.contains("\"no\""), message);
    assertTrue(message.contains("\"false\""), message);
    Pod pod =
        injected(
            edited(
                o ->
                    ((ObjectNode) o.get("metadata"))
                        .putObject("annotations")
                        .put("gpushare.dev/inject", "true")),
            SETTINGS);
    assertInjected(pod, pod.getSpec().getContainers().get(0));
  }

  @Test
  void aStaticPodIsCompletedTheSameWay() {
    JsonNode review =
        edited(
            o -> {
              ((ObjectNode) o.at("/metadata/labels"))
                  .put("alibabacloud.com/gpu-share-policy", "static");
              ObjectNode limits = (ObjectNode) o.at("/spec/containers/0/resources/limits");
              limits.put("alibabacloud.com/gpu-core.percentage", "10");
              limits.put("alibabacloud.com/gpu-memory.percentage", "10");
            });
    Pod pod = injected(review, SETTINGS);
    assertInjected(pod, pod.getSpec().getContainers().get(0));
  }

  @Test
  void onAnMpsNodeThePodGetsTheMpsDirectoriesAndTheNodesUid() {
    Pod pod = injected(review("demo-create.json"), MPS);
    Container demo = pod.getSpec().getContainers().get(0);
    assertInjected(pod, demo);
    Map<String, Volume> volumes = volumes(pod);
    assertEquals("/run/gpushare/mps", volumes.get("gpushare-mps").getHostPath().getPath());
    assertEquals("/run/gpushare/mps/shm", volumes.get("gpushare-mps-shm").getHostPath().getPath());
    Map<String, VolumeMount> mounts = mounts(demo);
    assertEquals("/run/gpushare/mps", mounts.get("gpushare-mps").getMountPath());
    assertFalse(Boolean.TRUE.equals(mounts.get("gpushare-mps").getReadOnly()), "the pipes");
    assertEquals("/dev/shm", mounts.get("gpushare-mps-shm").getMountPath());
    assertEquals(1000L, demo.getSecurityContext().getRunAsUser());
    // The same UID given by the user is accepted as it is.
    Pod own =
        injected(
            edited(o -> ((ObjectNode) o.at("/spec/securityContext")).put("runAsUser", 1000)), MPS);
    assertEquals(null, own.getSpec().getContainers().get(0).getSecurityContext());
  }

  @Test
  void onAnMpsNodeAnotherUidOrAnOwnDevShmIsRefusedNamingTheField() {
    String podUid =
        refusal(edited(o -> ((ObjectNode) o.at("/spec/securityContext")).put("runAsUser", 0)), MPS);
    assertTrue(podUid.contains("spec.securityContext.runAsUser"), podUid);
    assertTrue(podUid.contains("1000"), podUid);
    String containerUid =
        refusal(
            edited(
                o ->
                    ((ObjectNode) o.at("/spec/containers/0"))
                        .putObject("securityContext")
                        .put("runAsUser", 2000)),
            MPS);
    assertTrue(containerUid.contains("spec.containers[0].securityContext.runAsUser"), containerUid);
    assertTrue(containerUid.contains("2000"), containerUid);
    String shm = refusal(edited(PodSideInjectionTest::ownDevShm), MPS);
    assertTrue(shm.contains("spec.containers[0].volumeMounts[1].mountPath"), shm);
    assertTrue(shm.contains("/dev/shm"), shm);
    // Without MPS the pod's own /dev/shm is none of the webhook's business.
    injected(edited(PodSideInjectionTest::ownDevShm), SETTINGS);
  }

  @Test
  void aPodWithoutAShareIsLeftUntouched() {
    JsonNode review =
        edited(
            o -> {
              ((ObjectNode) o.at("/metadata/labels")).remove("alibabacloud.com/gpu-share-policy");
              ObjectNode resources = (ObjectNode) o.at("/spec/containers/0/resources");
              for (String k : List.of("limits", "requests")) {
                ((ObjectNode) resources.get(k)).remove("alibabacloud.com/gpu-core.percentage");
                ((ObjectNode) resources.get(k)).remove("alibabacloud.com/gpu-memory.percentage");
              }
            });
    JsonNode answer = answer(review, SETTINGS);
    assertTrue(answer.at("/response/allowed").asBoolean());
    assertFalse(answer.get("response").has("patch"), answer.toString());
  }

  @Test
  void withoutASocketOrWithInjectionOffOnlyTheLimitsArePatched() {
    JsonNode review = review("demo-create.json");
    JsonNode limitsOnly = decodedPatch(answer(review, PodSideSettings.DEFAULT));
    assertEquals(3, limitsOnly.size(), limitsOnly.toString());
    PodSideSettings off = settings(false, Optional.empty());
    assertEquals(limitsOnly, decodedPatch(answer(review, off)));
  }

  @Test
  void anUpdateIsNeverInjected() {
    JsonNode review =
        edited(o -> ((ObjectNode) o.get("metadata")).putObject("annotations").put("x", "y"));
    ((ObjectNode) review.get("request")).put("operation", "UPDATE");
    JsonNode answer = answer(review, SETTINGS);
    assertTrue(answer.at("/response/allowed").asBoolean());
    if (answer.get("response").has("patch")) {
      assertFalse(decodedPatch(answer).toString().contains("gpushare-lib"), answer.toString());
    }
  }

  // ---- refusals: what cannot be completed without overwriting the user ----

  @Test
  void anLdPreloadFromValueFromIsRefusedNamingIt() {
    String message =
        refusal(
            edited(
                o -> {
                  ObjectNode e =
                      ((ObjectNode) o.at("/spec/containers/0"))
                          .putArray("env")
                          .addObject()
                          .put("name", "LD_PRELOAD");
                  e.putObject("valueFrom")
                      .putObject("configMapKeyRef")
                      .put("name", "preload")
                      .put("key", "libs");
                }),
            SETTINGS);
    assertTrue(message.contains("spec.containers[0].env[0].valueFrom"), message);
    assertTrue(message.contains("configMapKeyRef"), message);
  }

  @Test
  void aVolumeOfTheUsersUnderTheWebhooksNameOrAMountAtItsPathIsRefused() {
    String volume =
        refusal(
            edited(
                o ->
                    ((ArrayNode) o.at("/spec/volumes"))
                        .addObject()
                        .put("name", "gpushare-lib")
                        .putObject("configMap")
                        .put("name", "mine")),
            SETTINGS);
    assertTrue(volume.contains("spec.volumes[1]"), volume);
    assertTrue(volume.contains("gpushare-lib"), volume);
    String mount =
        refusal(
            edited(
                o -> {
                  ((ArrayNode) o.at("/spec/containers/0/volumeMounts"))
                      .addObject()
                      .put("name", "models")
                      .put("mountPath", PodSideSettings.DEFAULT_LIBRARY_DIR + "/");
                  ((ArrayNode) o.at("/spec/volumes"))
                      .addObject()
                      .put("name", "models")
                      .putObject("emptyDir");
                }),
            SETTINGS);
    assertTrue(mount.contains("spec.containers[0].volumeMounts[1].mountPath"), mount);
    assertTrue(mount.contains(PodSideSettings.DEFAULT_LIBRARY_DIR), mount);
  }

  @Test
  void aPartThePatchWouldExtendInAShapeTheApiServerNeverSendsIsMalformedNamingIt() {
    record Case(String field, Consumer<ObjectNode> edit) {}
    for (Case c :
        List.of(
            new Case(
                "request.object.spec.containers[0].env",
                o -> ((ObjectNode) o.at("/spec/containers/0")).putObject("env")),
            new Case(
                "request.object.spec.containers[0].volumeMounts[0]",
                o -> ((ObjectNode) o.at("/spec/containers/0")).putArray("volumeMounts").add("x")),
            new Case(
                "request.object.spec.volumes",
                o -> ((ObjectNode) o.get("spec")).put("volumes", "none")),
            new Case(
                "request.object.spec.securityContext.runAsUser",
                o -> ((ObjectNode) o.at("/spec/securityContext")).put("runAsUser", "root")),
            new Case(
                "request.object.spec.runtimeClassName",
                o -> ((ObjectNode) o.get("spec")).put("runtimeClassName", 7)))) {
      MalformedReviewException e =
          org.junit.jupiter.api.Assertions.assertThrows(
              MalformedReviewException.class,
              () -> AdmissionReviewer.mutate(edited(c.edit()), SETTINGS),
              c.field());
      assertEquals(c.field(), e.error().field(), e.getMessage());
    }
  }

  @Test
  void aGeneratedNameIsLeftToTheDownwardApi() {
    Pod pod =
        injected(
            edited(
                o -> {
                  ((ObjectNode) o.get("metadata")).remove("name");
                  ((ObjectNode) o.get("metadata")).put("generateName", "demo-");
                }),
            SETTINGS);
    assertEquals(
        "metadata.name",
        env(pod.getSpec().getContainers().get(0))
            .get("GPUSHARE_POD_NAME")
            .getValueFrom()
            .getFieldRef()
            .getFieldPath());
  }

  @Test
  void aPodWithoutVolumesOrEnvGetsWholeLists() {
    JsonNode review =
        edited(
            o -> {
              ((ObjectNode) o.get("spec")).remove("volumes");
              ((ObjectNode) o.at("/spec/containers/0")).remove("volumeMounts");
              ((ObjectNode) o.at("/spec/containers/0")).remove("securityContext");
            });
    Pod pod = injected(review, MPS);
    assertEquals(5, pod.getSpec().getVolumes().size());
    assertEquals(5, pod.getSpec().getContainers().get(0).getVolumeMounts().size());
    assertInjected(pod, pod.getSpec().getContainers().get(0));
  }
}
