package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The exact patches, as the real API server will apply them: a JSON merge patch (RFC 7386) of
 * gpushare's annotations only, and a strategic merge patch of its conditions only (merged by type),
 * each with the pod's uid (the API server refuses to change it: the patch never lands on a pod
 * recreated under the same name) and no resource version.
 */
class PodWritesTest {
  static final String UID = "0b6f7d2e-1111-2222-3333-444455556666";

  static Pod pod() {
    return Fixtures.kubeletPod("ns", "p", UID, "n");
  }

  @Test
  void aPodWithoutAnnotationsGetsOursAndTheUid() {
    String patch =
        PodWrites.annotationPatch(pod(), Fixtures.running("ns", "p", UID, "n", 3))
            .orElseThrow()
            .json();
    assertEquals(
        "{\"metadata\":{\"annotations\":{\"gpushare.dev/gpu-index\":\"3\","
            + "\"gpushare.dev/gpu-uuid\":\"GPU-00000003-0000-0000-0000-000000000000\"},"
            + "\"uid\":\""
            + UID
            + "\"}}",
        patch);
  }

  @Test
  void otherAnnotationsStayAndOursAreSetOrRemovedOneByOne() {
    Pod annotated =
        new PodBuilder(pod())
            .editMetadata()
            .addToAnnotations("owner", "team-a")
            .addToAnnotations(KubeWriter.GPU_INDEX_ANNOTATION, "3")
            .addToAnnotations(KubeWriter.GPU_UUID_ANNOTATION, "GPU-old")
            .endMetadata()
            .build();
    String moved =
        PodWrites.annotationPatch(annotated, Fixtures.running("ns", "p", UID, "n", 3))
            .orElseThrow()
            .json();
    assertEquals(
        "{\"metadata\":{\"annotations\":"
            + "{\"gpushare.dev/gpu-uuid\":\"GPU-00000003-0000-0000-0000-000000000000\"},"
            + "\"uid\":\""
            + UID
            + "\"}}",
        moved);
    String released =
        PodWrites.annotationPatch(
                annotated,
                Fixtures.podView("ns", "p", UID, "n", "Hibernation", null, List.of(), List.of()))
            .orElseThrow()
            .json();
    assertEquals(
        "{\"metadata\":{\"annotations\":"
            + "{\"gpushare.dev/gpu-index\":null,\"gpushare.dev/gpu-uuid\":null},"
            + "\"uid\":\""
            + UID
            + "\"}}",
        released);
  }

  @Test
  void conditionsPatchOnlyOursAndDeleteWhatTheViewNoLongerHas() {
    Pod withReclaim =
        new PodBuilder(pod())
            .editOrNewStatus()
            .addNewCondition()
            .withType("Ready")
            .withStatus("True")
            .endCondition()
            .addNewCondition()
            .withType(dev.gpushare.arbiter.PodNotes.RECLAIM_CONDITION)
            .withStatus("True")
            .withReason("Preempted")
            .endCondition()
            .endStatus()
            .build();
    String patch =
        PodWrites.conditionsPatch(
                withReclaim,
                Fixtures.podView("ns", "p", UID, "n", "Hibernation", null, List.of(), List.of()))
            .orElseThrow()
            .json();
    assertEquals(
        "{\"status\":{\"conditions\":[{\"type\":\""
            + dev.gpushare.arbiter.PodNotes.RECLAIM_CONDITION
            + "\",\"$patch\":\"delete\"}]},\"metadata\":{\"uid\":\""
            + UID
            + "\"}}",
        patch);
    assertTrue(
        PodWrites.conditionsPatch(
                pod(), Fixtures.podView("ns", "p", UID, "n", "Ready", null, List.of(), List.of()))
            .isEmpty(),
        "the kubelet's conditions are not ours to patch");
  }

  @Test
  void nothingToChangeIsNoPatch() {
    assertTrue(
        PodWrites.annotationPatch(
                pod(), Fixtures.podView("ns", "p", UID, "n", "Ready", null, List.of(), List.of()))
            .isEmpty());
  }
}
