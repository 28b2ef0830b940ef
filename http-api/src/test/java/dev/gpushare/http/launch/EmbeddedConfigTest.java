package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.RuntimeSettings.ConfiguredNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmbeddedConfigTest {
  @TempDir Path dir;

  /** The user's text over the built-in configuration, as the launcher reads it. */
  private static EmbeddedConfig read(String userConf) {
    Config user = ConfigFactory.parseString(userConf);
    return EmbeddedConfig.from(user.withFallback(EmbeddedConfig.builtIn()).resolve());
  }

  private static String refused(String userConf) {
    return assertThrows(LaunchException.class, () -> read(userConf)).getMessage();
  }

  private static String node(String body) {
    return "gpushare.nodes = [ { " + body + " } ]";
  }

  private static final String CAPACITY = "capacity { \"nvidia.com/gpu\" = 2 }";

  @Test
  void theBuiltInConfigurationIsTheReferenceNode() {
    EmbeddedConfig config = read("");
    assertEquals(ClockMode.SYSTEM, config.clock());
    assertEquals(Instant.parse("2026-01-01T00:00:00Z"), config.manualClockStart());
    assertEquals(Duration.ofSeconds(10), config.settings().askTimeout());
    assertEquals(new ReservedPerGpu("2", "10Gi"), config.settings().reservedPerGpu());
    assertEquals(
        java.util.List.of(
            new ConfiguredNode(
                new NodeManifest(
                    "node-1",
                    Map.of(
                        "alibabacloud.com/node-type", "reserved",
                        "alibabacloud.com/gpu-share-policy", "share-pool"),
                    Map.of(),
                    Map.of(
                        "cpu", "176",
                        "memory", "1800Gi",
                        "ephemeral-storage", "6Ti",
                        "nvidia.com/gpu", "16"),
                    Map.of(
                        "cpu", "176",
                        "memory", "1800Gi",
                        "ephemeral-storage", "4608Gi",
                        "nvidia.com/gpu", "16")),
                "NVIDIA H800",
                81559)),
        config.settings().nodes());
  }

  @Test
  void aUserNodeListReplacesTheBuiltInOne() {
    EmbeddedConfig config =
        read(
            """
            gpushare {
              clock = manual
              manual-clock-start = "2027-03-04T05:06:07Z"
              ask-timeout = 3s
              reserved-per-gpu { cpu = 1, memory = 5Gi }
              nodes = [
                { name = a, capacity { "nvidia.com/gpu" = 2, cpu = 16 }, gpu-model = "NVIDIA A100",
                  gpu-memory-mib = 40960, labels { "alibabacloud.com/gpu-share-policy" = static } }
                { name = b.example, capacity { "nvidia.com/gpu" = "1" } }
              ]
            }
            """);
    assertEquals(ClockMode.MANUAL, config.clock());
    assertEquals(Instant.parse("2027-03-04T05:06:07Z"), config.manualClockStart());
    assertEquals(Duration.ofSeconds(3), config.settings().askTimeout());
    assertEquals(new ReservedPerGpu("1", "5Gi"), config.settings().reservedPerGpu());
    assertEquals(2, config.settings().nodes().size());
    ConfiguredNode a = config.settings().nodes().get(0);
    assertEquals("a", a.manifest().name());
    assertEquals(Map.of("cpu", "16", "nvidia.com/gpu", "2"), a.manifest().capacity());
    assertEquals(Map.of(), a.manifest().allocatable());
    assertEquals("NVIDIA A100", a.gpuModel());
    assertEquals(40960, a.gpuMemoryMiB());
    ConfiguredNode b = config.settings().nodes().get(1);
    assertEquals("NVIDIA H800", b.gpuModel());
    assertEquals(81559, b.gpuMemoryMiB());
  }

  @Test
  void noNodesAtAllIsAllowed() {
    assertEquals(0, read("gpushare.nodes = []").settings().nodes().size());
  }

  @Test
  void anUnknownKeyIsNamedWithTheAcceptedOnes() {
    String message = refused("gpushare.ask-timout = 5s");
    assertTrue(message.contains("gpushare.ask-timout: '5s' given at "), message);
    assertTrue(message.contains("unknown key; accepted keys: ask-timeout, clock"), message);
  }

  @Test
  void anUnknownNodeKeyIsNamed() {
    String message = refused(node("name = a, " + CAPACITY + ", capcity {}"));
    assertTrue(message.contains("gpushare.nodes[0].capcity: "), message);
    assertTrue(message.contains("accepted keys: allocatable, annotations, capacity"), message);
  }

  @Test
  void aBadClockIsNamed() {
    String message = refused("gpushare.clock = fast");
    assertTrue(message.contains("gpushare.clock: 'fast' given"), message);
    assertTrue(message.contains("expected system or manual"), message);
  }

  @Test
  void aBadManualClockStartIsNamed() {
    String message = refused("gpushare.manual-clock-start = tomorrow");
    assertTrue(message.contains("gpushare.manual-clock-start: 'tomorrow' given"), message);
    assertTrue(message.contains("ISO-8601"), message);
  }

  @Test
  void aBadAskTimeoutIsNamed() {
    for (String value : new String[] {"0s", "soon", "11m", "-1s"}) {
      String message = refused("gpushare.ask-timeout = \"" + value + "\"");
      assertTrue(message.contains("gpushare.ask-timeout: '" + value + "' given"), message);
      assertTrue(message.contains("at most 10 minutes"), message);
    }
  }

  @Test
  void aBadPassivationTimeIsNamedAndAGoodOneAccepted() {
    for (String value : new String[] {"0s", "later", "-1m"}) {
      String message = refused("gpushare.passivate-idle-pods-after = \"" + value + "\"");
      assertTrue(
          message.contains("gpushare.passivate-idle-pods-after: '" + value + "' given"), message);
      assertTrue(message.contains("expected a duration above 0 such as 2m"), message);
    }
    read("gpushare.passivate-idle-pods-after = 30s");
  }

  @Test
  void aBadReservedQuantityIsNamed() {
    String message = refused("gpushare.reserved-per-gpu { cpu = lots, memory = 10Gi }");
    assertTrue(message.contains("gpushare.reserved-per-gpu.cpu: 'lots' given"), message);
    assertTrue(message.contains("Kubernetes quantity"), message);
    assertTrue(refused("gpushare.reserved-per-gpu = 2").contains("gpushare.reserved-per-gpu: '2'"));
    assertTrue(
        refused("gpushare.reserved-per-gpu { cpu = 2, memory = 1Gi, gpu = 1 }")
            .contains("gpushare.reserved-per-gpu.gpu: '1' given"));
  }

  @Test
  void aQuotedQuantityWithSpacesAroundItIsRefusedAsWritten() {
    for (String value : new String[] {" 2", "2 ", "\\t2", " 2 "}) {
      String message =
          refused("gpushare.reserved-per-gpu { cpu = \"" + value + "\", memory = 10Gi }");
      String shown = value.replace("\\t", "\t");
      assertTrue(message.contains("gpushare.reserved-per-gpu.cpu: '" + shown + "' given"), message);
      assertTrue(message.contains("no spaces around it"), message);
    }
    String capacity =
        refused(node("name = a, capacity { \"nvidia.com/gpu\" = 2, memory = \"1800Gi \" }"));
    assertTrue(capacity.contains("gpushare.nodes[0].capacity.memory: '1800Gi ' given"), capacity);
    String gpus = refused(node("name = a, capacity { \"nvidia.com/gpu\" = \" 2\" }"));
    assertTrue(gpus.contains("gpushare.nodes[0].capacity.\"nvidia.com/gpu\": ' 2' given"), gpus);
    String name = refused(node("name = \" a\", " + CAPACITY));
    assertTrue(name.contains("gpushare.nodes[0].name: ' a' given"), name);
  }

  @Test
  void unquotedValuesAndEveryQuantityNotationAreKept() {
    EmbeddedConfig config =
        read("gpushare.reserved-per-gpu {\n  cpu = 500m   \n  memory = \"1.5e9\"\n}");
    assertEquals(new ReservedPerGpu("500m", "1.5e9"), config.settings().reservedPerGpu());
    assertEquals(
        new ReservedPerGpu("+2", "10Gi"),
        read("gpushare.reserved-per-gpu { cpu = \"+2\", memory = 10Gi }")
            .settings()
            .reservedPerGpu());
  }

  @Test
  void aNodeNeedsANameAndAGpuCount() {
    String message = refused(node("labels {}"));
    assertTrue(message.contains("gpushare.nodes[0].name: missing; required"), message);
    assertTrue(message.contains("gpushare.nodes[0].capacity: missing; required"), message);
    message = refused(node("name = a, capacity { cpu = 4 }"));
    assertTrue(
        message.contains("gpushare.nodes[0].capacity.\"nvidia.com/gpu\": missing; required"),
        message);
  }

  @Test
  void aBadGpuCountIsNamed() {
    for (String value : new String[] {"0", "two", "129", "1.5"}) {
      String message =
          refused(node("name = a, capacity { \"nvidia.com/gpu\" = \"" + value + "\" }"));
      assertTrue(
          message.contains("gpushare.nodes[0].capacity.\"nvidia.com/gpu\": '" + value + "' given"),
          message);
    }
  }

  @Test
  void anUnquotedDottedKeyIsExplained() {
    String message = refused(node("name = a, capacity { nvidia.com/gpu = 2 }"));
    assertTrue(message.contains("gpushare.nodes[0].capacity.nvidia:"), message);
    assertTrue(message.contains("must be quoted"), message);
    message = refused(node("name = a, " + CAPACITY + ", labels { alibabacloud.com/x = y }"));
    assertTrue(message.contains("gpushare.nodes[0].labels.alibabacloud:"), message);
    assertTrue(message.contains("must be quoted"), message);
  }

  @Test
  void aBadNodeNameIsNamed() {
    String message = refused(node("name = \"Node_1\", " + CAPACITY));
    assertTrue(message.contains("gpushare.nodes[0].name: 'Node_1' given"), message);
    assertTrue(message.contains("DNS-1123"), message);
  }

  @Test
  void duplicateNodeNamesAreRefused() {
    String message =
        refused(
            "gpushare.nodes = [ { name = a, " + CAPACITY + " }, { name = a, " + CAPACITY + " } ]");
    assertTrue(message.contains("gpushare.nodes[1].name: 'a' given"), message);
    assertTrue(message.contains("unique"), message);
  }

  @Test
  void badGpuModelAndMemoryAreNamed() {
    String message =
        refused(node("name = a, " + CAPACITY + ", gpu-model = \"\", gpu-memory-mib = -5"));
    assertTrue(message.contains("gpushare.nodes[0].gpu-model: '' given"), message);
    assertTrue(message.contains("gpushare.nodes[0].gpu-memory-mib: '-5' given"), message);
  }

  @Test
  void nodesMustBeAListOfObjects() {
    assertTrue(refused("gpushare.nodes = {}").contains("gpushare.nodes: '{}' given"));
    assertTrue(refused("gpushare.nodes = [ 5 ]").contains("gpushare.nodes[0]: '5' given"));
  }

  @Test
  void everyErrorIsReportedAtOnce() {
    String message = refused("gpushare { clock = x, ask-timeout = y }");
    assertTrue(message.startsWith("invalid configuration (2 errors):"), message);
  }

  @Test
  void aFileIsLayeredOverTheBuiltInConfiguration() throws Exception {
    Path file = dir.resolve("user.conf");
    Files.writeString(file, "gpushare.clock = manual\n");
    Config loaded = EmbeddedConfig.load(Optional.of(file));
    EmbeddedConfig config = EmbeddedConfig.from(loaded.resolve());
    assertEquals(ClockMode.MANUAL, config.clock());
    assertEquals(1, config.settings().nodes().size());
  }

  @Test
  void errorsInAFileNameItsLine() throws Exception {
    Path file = dir.resolve("user.conf");
    Files.writeString(file, "\n\ngpushare.clock = fast\n");
    String message =
        assertThrows(
                LaunchException.class,
                () -> EmbeddedConfig.from(EmbeddedConfig.load(Optional.of(file)).resolve()))
            .getMessage();
    assertTrue(message.contains("user.conf:3"), message);
  }

  @Test
  void aMissingFileIsNamed() {
    Path missing = dir.resolve("nope.conf");
    String message =
        assertThrows(LaunchException.class, () -> EmbeddedConfig.load(Optional.of(missing)))
            .getMessage();
    assertEquals("--config " + missing + ": no such file; expected a HOCON file", message);
  }

  @Test
  void aDirectoryIsNotAConfigFile() {
    String message =
        assertThrows(LaunchException.class, () -> EmbeddedConfig.load(Optional.of(dir)))
            .getMessage();
    assertTrue(message.contains("not a regular file"), message);
  }

  @Test
  void invalidHoconIsNamedWithTheParserMessage() throws Exception {
    Path file = dir.resolve("broken.conf");
    Files.writeString(file, "gpushare { clock = manual\n");
    String message =
        assertThrows(LaunchException.class, () -> EmbeddedConfig.load(Optional.of(file)))
            .getMessage();
    assertTrue(message.startsWith("--config " + file + ": not valid HOCON: "), message);
  }

  @Test
  void anUnresolvableSubstitutionIsReported() {
    Config user = ConfigFactory.parseString("gpushare.clock = ${nowhere}");
    String message =
        assertThrows(
                LaunchException.class, () -> EmbeddedConfig.resolve(user, ConfigFactory.empty()))
            .getMessage();
    assertTrue(message.contains("nowhere"), message);
  }
}
