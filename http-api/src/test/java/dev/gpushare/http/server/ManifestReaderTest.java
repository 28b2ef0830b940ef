package dev.gpushare.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodManifest.ContainerResources;
import dev.gpushare.http.server.ManifestReader.Format;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ManifestReaderTest {

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static PodManifest pod(String text, Format format) {
    return ManifestReader.pod(bytes(text), format);
  }

  private static ServiceException podRefused(String text, Format format) {
    return assertThrows(ServiceException.class, () -> pod(text, format));
  }

  private static List<String> fields(ServiceException e) {
    return e.errors().stream().map(FieldError::field).toList();
  }

  private static String referenceYaml() throws IOException {
    try (InputStream in =
        ManifestReaderTest.class
            .getClassLoader()
            .getResourceAsStream("examples/gpu-share-demo.yaml")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void theReferenceYamlIsReadAsIs() throws Exception {
    PodManifest pod = pod(referenceYaml(), Format.YAML);
    assertEquals(
        new PodManifest(
            "default",
            "gpu-share-demo",
            null,
            null,
            Map.of(
                "alibabacloud.com/compute-class", "gpu-hpn",
                "alibabacloud.com/gpu-share-policy", "share-pool"),
            Map.of(),
            List.of(
                new ContainerResources(
                    "demo",
                    Map.of(
                        "cpu", "5",
                        "memory", "50Gi",
                        "alibabacloud.com/gpu-core.percentage", "10",
                        "alibabacloud.com/gpu-memory.percentage", "10"),
                    Map.of(
                        "cpu", "5",
                        "memory", "50Gi",
                        "alibabacloud.com/gpu-core.percentage", "100",
                        "alibabacloud.com/gpu-memory.percentage", "100")))),
        pod);
  }

  @Test
  void theSamePodInJsonReadsTheSame() throws Exception {
    String json =
        """
        {"apiVersion":"v1","kind":"Pod",
         "metadata":{"name":"gpu-share-demo","namespace":"default",
           "labels":{"alibabacloud.com/compute-class":"gpu-hpn",
                     "alibabacloud.com/gpu-share-policy":"share-pool"}},
         "spec":{"containers":[{"name":"demo","image":"x","resources":{
           "limits":{"cpu":"5","memory":"50Gi","alibabacloud.com/gpu-core.percentage":100,
                     "alibabacloud.com/gpu-memory.percentage":100},
           "requests":{"cpu":"5","memory":"50Gi","alibabacloud.com/gpu-core.percentage":10,
                       "alibabacloud.com/gpu-memory.percentage":10}}}]}}
        """;
    assertEquals(pod(referenceYaml(), Format.YAML), pod(json, Format.JSON));
  }

  @Test
  void nodeNameUidAndAnnotationsAreKept() {
    PodManifest pod =
        pod(
            """
            kind: Pod
            metadata: {name: p, namespace: team, uid: u-1, annotations: {a: "1"}}
            spec: {nodeName: node-1, containers: [{name: c, resources: {limits: {cpu: 0.5}}}]}
            """,
            Format.YAML);
    assertEquals("team", pod.namespace());
    assertEquals("u-1", pod.uid());
    assertEquals("node-1", pod.nodeName());
    assertEquals(Map.of("a", "1"), pod.annotations());
    assertEquals(Map.of("cpu", "0.5"), pod.containers().get(0).limits());
    assertEquals(Map.of(), pod.containers().get(0).requests());
  }

  @Test
  void malformedYamlIsA400WithTheLocation() {
    ServiceException e = podRefused("kind: Pod\nmetadata:\n  name: [unclosed\n", Format.YAML);
    assertEquals(Kind.MALFORMED, e.kind());
    assertEquals("body", e.field());
    assertTrue(e.getMessage().contains("not valid YAML at line"), e.getMessage());
  }

  @Test
  void malformedJsonIsA400WithTheLocation() {
    ServiceException e = podRefused("{\"kind\": \"Pod\",\n\"metadata\": {,}}", Format.JSON);
    assertEquals(Kind.MALFORMED, e.kind());
    assertTrue(e.getMessage().contains("not valid JSON at line 2, column"), e.getMessage());
  }

  @Test
  void trailingJsonIsMalformed() {
    assertEquals(Kind.MALFORMED, podRefused("{\"kind\":\"Pod\"} {}", Format.JSON).kind());
  }

  @Test
  void anEmptyBodyIsMalformed() {
    ServiceException e = podRefused("  \n", Format.YAML);
    assertEquals(Kind.MALFORMED, e.kind());
    assertTrue(e.getMessage().contains("empty"), e.getMessage());
  }

  @Test
  void aCommentOnlyYamlIsMalformed() {
    assertEquals(Kind.MALFORMED, podRefused("# nothing\n", Format.YAML).kind());
  }

  /** Found by the adversarial suite: these numbers have no decimal value (they were a 500). */
  @Test
  void anInfiniteOrNanQuantityIsRefusedNamingTheField() {
    String json =
        "{\"kind\":\"Node\",\"status\":{\"capacity\":{\"cpu\":1e400,\"nvidia.com/gpu\":2}}}";
    ServiceException e =
        assertThrows(
            ServiceException.class, () -> ManifestReader.node(bytes(json), Format.JSON, "n1"));
    assertEquals(List.of("status.capacity[cpu]"), fields(e));
    for (String value : List.of("1e400", "-1E+400", "1.0e999")) {
      String pod =
          "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":"
              + "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
              + value
              + "}}}]}}";
      ServiceException refused = podRefused(pod, Format.JSON);
      assertEquals(
          List.of("spec.containers[0].resources.requests[cpu]"),
          fields(refused),
          refused::getMessage);
    }
  }

  @Test
  void severalYamlDocumentsAreRefused() {
    ServiceException e = podRefused("kind: Pod\n---\nkind: Pod\n", Format.YAML);
    assertEquals(Kind.INVALID, e.kind());
    assertTrue(e.getMessage().contains("2 documents"), e.getMessage());
    // The message stands on its own: it names the field at fault, like every other one.
    assertEquals("body", e.errors().get(0).field());
    assertTrue(e.errors().get(0).message().startsWith("body: "), e.errors().get(0).message());
  }

  @Test
  void aBodyThatIsNotAnObjectIsNamed() {
    ServiceException e = podRefused("[1, 2]", Format.JSON);
    assertEquals(Kind.INVALID, e.kind());
    assertEquals("body", e.field());
  }

  @Test
  void aWrongKindOrApiVersionIsNamed() {
    ServiceException e =
        podRefused(
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"p\"},"
                + "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
            Format.JSON);
    assertEquals(List.of("kind", "apiVersion"), fields(e));
    assertEquals("Deployment", e.errors().get(0).value());
    assertEquals(
        "kind: 'Deployment' given; must be Pod (apiVersion v1)", e.errors().get(0).message());
  }

  @Test
  void aMissingKindIsNamed() {
    ServiceException e =
        podRefused("metadata: {name: p}\nspec: {containers: [{name: c}]}", Format.YAML);
    assertEquals(List.of("kind"), fields(e));
    assertNull(e.errors().get(0).value());
  }

  @Test
  void aMissingNameIsA422() {
    ServiceException e =
        podRefused(
            "kind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: c}]}", Format.YAML);
    assertEquals(Kind.INVALID, e.kind());
    assertEquals(List.of("metadata.name"), fields(e));
    assertEquals("metadata.name: missing; required: a non-empty string", e.getMessage());
  }

  @Test
  void badNamesAreNamed() {
    ServiceException e =
        podRefused(
            "kind: Pod\nmetadata: {name: Bad_Name, namespace: a/b}\nspec: {containers: [{name: c}]}",
            Format.YAML);
    assertEquals(List.of("metadata.name", "metadata.namespace"), fields(e));
  }

  @Test
  void wrongShapesAreNamedByTheirPath() {
    ServiceException e =
        podRefused(
            """
            {"kind":"Pod","metadata":{"name":"p","labels":{"a":1}},
             "spec":{"containers":[
               {"name":"c","resources":[]},
               {"name":"d","resources":{"limits":{"cpu":{"value":1},"memory":true},"requests":"x"}},
               "sidecar"]}}
            """,
            Format.JSON);
    assertEquals(
        List.of(
            "metadata.labels[a]",
            "spec.containers[0].resources",
            "spec.containers[1].resources.requests",
            "spec.containers[1].resources.limits[cpu]",
            "spec.containers[1].resources.limits[memory]",
            "spec.containers[2]"),
        fields(e));
    assertEquals("{\"value\":1}", e.errors().get(3).value());
  }

  @Test
  void containersMustBeANonEmptyList() {
    assertEquals(
        List.of("spec.containers"),
        fields(
            podRefused(
                "kind: Pod\nmetadata: {name: p}\nspec: {containers: {name: c}}", Format.YAML)));
    assertEquals(
        List.of("spec.containers"),
        fields(podRefused("kind: Pod\nmetadata: {name: p}\nspec: {containers: []}", Format.YAML)));
    assertEquals(
        List.of("spec"), fields(podRefused("kind: Pod\nmetadata: {name: p}", Format.YAML)));
    assertEquals(
        List.of("spec.containers[0].name"),
        fields(
            podRefused("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{}]}", Format.YAML)));
  }

  @Test
  void aNodeManifestReadsStatusCapacityAndAllocatable() {
    NodeManifest node =
        ManifestReader.node(
            bytes(
                """
                apiVersion: v1
                kind: Node
                metadata:
                  name: node-9
                  labels: {alibabacloud.com/gpu-share-policy: static}
                  annotations:
                    alibabacloud.com/gpu-share-qos-config: '{"preemptEnabled": true}'
                status:
                  capacity: {cpu: "176", memory: 1800Gi, nvidia.com/gpu: 16}
                  allocatable: {cpu: 170}
                """),
            Format.YAML,
            "node-9");
    assertEquals(
        new NodeManifest(
            "node-9",
            Map.of("alibabacloud.com/gpu-share-policy", "static"),
            Map.of("alibabacloud.com/gpu-share-qos-config", "{\"preemptEnabled\": true}"),
            Map.of("cpu", "176", "memory", "1800Gi", "nvidia.com/gpu", "16"),
            Map.of("cpu", "170")),
        node);
  }

  @Test
  void aNodeWithoutNameTakesThePathsName() {
    NodeManifest node = ManifestReader.node(bytes("{\"kind\":\"Node\"}"), Format.JSON, "node-3");
    assertEquals("node-3", node.name());
    assertEquals(Map.of(), node.capacity());
  }

  @Test
  void aNodeNamedOtherThanThePathIsA422NamingMetadataName() {
    ServiceException e =
        assertThrows(
            ServiceException.class,
            () -> ManifestReader.node(bytes("kind: Node\nmetadata: {name: b}"), Format.YAML, "a"));
    assertEquals(Kind.INVALID, e.kind());
    assertEquals("metadata.name", e.field());
    assertEquals("b", e.errors().get(0).value());
  }

  @Test
  void aPodIsNotANode() {
    ServiceException e =
        assertThrows(
            ServiceException.class,
            () -> ManifestReader.node(bytes("kind: Pod"), Format.YAML, "a"));
    assertEquals(List.of("kind"), fields(e));
  }

  @Test
  void aNodeQuantityThatIsAnObjectIsNamed() {
    ServiceException e =
        assertThrows(
            ServiceException.class,
            () ->
                ManifestReader.node(
                    bytes("kind: Node\nstatus: {capacity: {cpu: {n: 1}}, allocatable: 5}"),
                    Format.YAML,
                    "a"));
    assertEquals(List.of("status.capacity[cpu]", "status.allocatable"), fields(e));
  }

  @Test
  void aKeyTwiceInJsonIsA400NamingItsPathNotTheLastValue() {
    ServiceException name =
        podRefused(
            "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"name\":\"b\"},\"spec\":{}}",
            Format.JSON);
    assertEquals(Kind.MALFORMED, name.kind());
    assertEquals("metadata.name", name.field());
    assertEquals("name", name.errors().get(0).value());
    assertTrue(
        name.getMessage().startsWith("metadata.name: the key \"name\" appears again"),
        name.getMessage());
    assertTrue(name.getMessage().contains("at most once"), name.getMessage());

    String limitsTwice =
        """
        {"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{
          "limits":{"alibabacloud.com/gpu-core.percentage":50},
          "limits":{"alibabacloud.com/gpu-core.percentage":100}}}]}}
        """;
    ServiceException limits = podRefused(limitsTwice, Format.JSON);
    assertEquals(Kind.MALFORMED, limits.kind());
    assertEquals("spec.containers[0].resources.limits", limits.field());
    assertTrue(limits.getMessage().contains("line 3"), limits.getMessage());
  }

  @Test
  void aKeyTwiceInYamlIsA400NamingItsPath() {
    ServiceException e =
        podRefused(
            """
            kind: Pod
            metadata:
              name: p
              labels:
                alibabacloud.com/gpu-share-policy: share-pool
                alibabacloud.com/gpu-share-policy: static
            spec: {containers: [{name: c}]}
            """,
            Format.YAML);
    assertEquals(Kind.MALFORMED, e.kind());
    assertEquals("metadata.labels[alibabacloud.com/gpu-share-policy]", e.field());
    assertTrue(e.getMessage().contains("line 6"), e.getMessage());

    ServiceException node =
        assertThrows(
            ServiceException.class,
            () ->
                ManifestReader.node(
                    bytes("kind: Node\nstatus:\n  capacity: {cpu: 1, cpu: 2}\n"),
                    Format.YAML,
                    "a"));
    assertEquals(Kind.MALFORMED, node.kind());
    assertEquals("status.capacity.cpu", node.field());
  }

  @Test
  void quantitiesKeepSurroundingWhitespaceForTheRulesToRefuse() {
    PodManifest pod =
        pod(
            """
            kind: Pod
            metadata: {name: p}
            spec:
              containers:
              - name: c
                resources:
                  requests: {alibabacloud.com/gpu-core.percentage: " 50", cpu: "1\\t"}
                  limits: {alibabacloud.com/gpu-core.percentage: "50 "}
            """,
            Format.YAML);
    ContainerResources c = pod.containers().get(0);
    assertEquals(" 50", c.requests().get("alibabacloud.com/gpu-core.percentage"));
    assertEquals("1\t", c.requests().get("cpu"));
    assertEquals("50 ", c.limits().get("alibabacloud.com/gpu-core.percentage"));
    NodeManifest node =
        ManifestReader.node(
            bytes("{\"kind\":\"Node\",\"status\":{\"capacity\":{\"ephemeral-storage\":\"6Ti \"}}}"),
            Format.JSON,
            "a");
    assertEquals("6Ti ", node.capacity().get("ephemeral-storage"));
  }

  @Test
  void mediaTypesMapToFormats() {
    assertEquals(Optional.of(Format.JSON), ManifestReader.formatOf("application", "json"));
    assertEquals(Optional.of(Format.YAML), ManifestReader.formatOf("application", "yaml"));
    assertEquals(Optional.of(Format.YAML), ManifestReader.formatOf("application", "x-yaml"));
    assertEquals(Optional.of(Format.YAML), ManifestReader.formatOf("text", "yaml"));
    assertEquals(Optional.empty(), ManifestReader.formatOf("text", "plain"));
  }
}
