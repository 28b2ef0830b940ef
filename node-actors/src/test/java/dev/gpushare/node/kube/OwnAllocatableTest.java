package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OwnAllocatableTest {

  @Test
  void withoutTheAnnotationTheStatusIsTheNodesOwn() {
    assertTrue(OwnAllocatable.read(Fixtures.kubeletNode("n")).isEmpty());
  }

  @Test
  void theRecordedValuesStandOverTheStatusWithoutOurPercentages() {
    Node node =
        new NodeBuilder(Fixtures.kubeletNode("n"))
            .editMetadata()
            .addToAnnotations(
                OwnAllocatable.ANNOTATION,
                OwnAllocatable.write(Map.of("cpu", "176", "memory", "1800Gi")))
            .endMetadata()
            .editStatus()
            .addToAllocatable("cpu", new io.fabric8.kubernetes.api.model.Quantity("144"))
            .addToAllocatable(
                "alibabacloud.com/gpu-core.percentage",
                new io.fabric8.kubernetes.api.model.Quantity("1600"))
            .endStatus()
            .build();
    Map<String, String> own = OwnAllocatable.read(node).orElseThrow();
    assertEquals("176", own.get("cpu"));
    assertEquals("1800Gi", own.get("memory"));
    assertEquals("16", own.get("nvidia.com/gpu"));
    assertEquals("4608Gi", own.get("ephemeral-storage"));
    assertTrue(!own.containsKey("alibabacloud.com/gpu-core.percentage"));
  }

  @Test
  void writeAndParseRoundTripWithSortedKeys() {
    String text = OwnAllocatable.write(Map.of("memory", "1800Gi", "cpu", "176"));
    assertEquals("{\"cpu\":\"176\",\"memory\":\"1800Gi\"}", text);
    assertEquals(Map.of("cpu", "176", "memory", "1800Gi"), OwnAllocatable.parse(text));
  }

  @Test
  void aMalformedAnnotationIsRefusedNamingFieldValueAndWhatIsAccepted() {
    String notJson =
        assertThrows(IllegalArgumentException.class, () -> OwnAllocatable.parse("cpu=176"))
            .getMessage();
    assertTrue(
        notJson.startsWith(
            "metadata.annotations[gpushare.dev/own-allocatable] is \"cpu=176\"; want a JSON"
                + " object of resource name to quantity text"),
        notJson);
    String number =
        assertThrows(IllegalArgumentException.class, () -> OwnAllocatable.parse("{\"cpu\":176}"))
            .getMessage();
    assertTrue(
        number.startsWith("metadata.annotations[gpushare.dev/own-allocatable].cpu is 176; want"),
        number);
    String quantity =
        assertThrows(
                IllegalArgumentException.class, () -> OwnAllocatable.parse("{\"cpu\":\"lots\"}"))
            .getMessage();
    assertTrue(
        quantity.startsWith(
            "metadata.annotations[gpushare.dev/own-allocatable].cpu is \"lots\"; want a"
                + " non-negative decimal number"),
        quantity);
  }

  @Test
  void aResourceRecordedTwiceIsRefusedNotReadAsTheLastValue() {
    String twice =
        assertThrows(
                IllegalArgumentException.class,
                () -> OwnAllocatable.parse("{\"cpu\":\"176\",\"cpu\":\"1\"}"))
            .getMessage();
    assertTrue(
        twice.startsWith(
            "metadata.annotations[gpushare.dev/own-allocatable].cpu: the key \"cpu\" appears"
                + " again"),
        twice);
    assertTrue(twice.contains("at most once"), twice);
  }

  @Test
  void aQuantityWithSpacesAroundItIsRefused() {
    String spaced =
        assertThrows(
                IllegalArgumentException.class, () -> OwnAllocatable.parse("{\"cpu\":\" 176\"}"))
            .getMessage();
    assertTrue(
        spaced.startsWith("metadata.annotations[gpushare.dev/own-allocatable].cpu is \" 176\""),
        spaced);
  }
}
