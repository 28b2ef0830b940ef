package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The exact JSON patches, as the real API server will apply them (RFC 6902). */
class PodWritesTest {
  static final String UID = "0b6f7d2e-1111-2222-3333-444455556666";

  static Pod pod() {
    return Fixtures.kubeletPod("ns", "p", UID, "n");
  }

  @Test
  void aPodWithoutAnnotationsGetsTheWholeMapAfterAUidTest() {
    String patch =
        PodWrites.annotationPatch(pod(), Fixtures.running("ns", "p", UID, "n", 3))
            .orElseThrow()
            .json();
    assertEquals(
        "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\""
            + UID
            + "\"},"
            + "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":"
            + "{\"gpushare.dev/gpu-index\":\"3\","
            + "\"gpushare.dev/gpu-uuid\":\"GPU-00000003-0000-0000-0000-000000000000\"}}]",
        patch);
  }

  @Test
  void otherAnnotationsStayAndOursAreAddedOrRemovedOneByOne() {
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
        "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\""
            + UID
            + "\"},"
            + "{\"op\":\"add\",\"path\":\"/metadata/annotations/gpushare.dev~1gpu-uuid\","
            + "\"value\":\"GPU-00000003-0000-0000-0000-000000000000\"}]",
        moved);
    String released =
        PodWrites.annotationPatch(
                annotated,
                Fixtures.podView("ns", "p", UID, "n", "Hibernation", null, List.of(), List.of()))
            .orElseThrow()
            .json();
    assertEquals(
        "[{\"op\":\"test\",\"path\":\"/metadata/uid\",\"value\":\""
            + UID
            + "\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpushare.dev~1gpu-index\"},"
            + "{\"op\":\"remove\",\"path\":\"/metadata/annotations/gpushare.dev~1gpu-uuid\"}]",
        released);
  }

  @Test
  void nothingToChangeIsNoPatch() {
    assertTrue(
        PodWrites.annotationPatch(
                pod(), Fixtures.podView("ns", "p", UID, "n", "Ready", null, List.of(), List.of()))
            .isEmpty());
  }
}
