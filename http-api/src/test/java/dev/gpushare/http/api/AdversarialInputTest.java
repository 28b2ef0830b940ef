package dev.gpushare.http.api;

import static dev.gpushare.http.api.AdversarialInputs.COMPUTE_CLASS;
import static dev.gpushare.http.api.AdversarialInputs.CORE;
import static dev.gpushare.http.api.AdversarialInputs.MEMORY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeSharing;
import dev.gpushare.arbiter.Parsed;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Quantity;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.arbiter.ShareRequestRules;
import dev.gpushare.http.api.AdversarialInputs.Encoding;
import dev.gpushare.http.api.AdversarialInputs.Extra;
import dev.gpushare.http.api.AdversarialInputs.Mutation;
import dev.gpushare.http.launch.EmbeddedConfig;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.http.server.ManifestReader;
import dev.gpushare.node.api.ServiceException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;

/**
 * The adversarial suite over the parsers (issue 13 item 9): generated manifests, annotations, flags
 * and config files, each either refused with every error naming its field (and the value given), or
 * accepted as a value that satisfies the rules of SPEC §2–§3 and reads back the same. Never another
 * exception. Figures: src-test/BENCHMARKS.md §"Adversarial suite".
 */
class AdversarialInputTest {
  static final String SEED = "20261202";
  private static final Pattern DNS_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");

  @AfterContainer
  static void figures() {
    AdversarialFigures.report("parsers", "parser:");
  }

  // ------------------------------------------------------------------ pod manifests

  @Provide
  Arbitrary<List<Mutation>> podMutations() {
    return AdversarialInputs.podMutations().list().ofMaxSize(4);
  }

  @Property(tries = 600, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void podManifestsAreRefusedNamingTheFieldOrAcceptedWithinTheRules(
      @ForAll("podMutations") List<Mutation> mutations,
      @ForAll Extra extra,
      @ForAll Encoding encoding) {
    ObjectNode tree = AdversarialInputs.mutatedPod("default", "p", null, mutations, extra);
    byte[] body = AdversarialInputs.encode(tree, encoding);
    PodManifest pod;
    try {
      pod = ManifestReader.pod(body, AdversarialInputs.format(encoding));
    } catch (ServiceException e) {
      assertNamesFields(e.errors(), e.getMessage());
      AdversarialFigures.refused("parser:pod manifest (ManifestReader + ShareRequestRules)");
      return;
    }
    assertNameRules(pod);
    Parsed<PodSharing> sharing = ShareRequestRules.validate(pod);
    if (!sharing.ok()) {
      assertNamesFields(sharing.errors(), sharing.errorSummary());
      AdversarialFigures.refused("parser:pod manifest (ManifestReader + ShareRequestRules)");
      return;
    }
    if (sharing.value() instanceof PodSharing.Shared s) {
      assertTrue(s.policy() == SharePolicy.SHARE_POOL || s.policy() == SharePolicy.STATIC, "" + s);
      assertEquals(ShareRequestRules.GPU_HPN, pod.labels().get(COMPUTE_CLASS));
      assertEquals(s.policy().label(), pod.labels().get(SharePolicy.LABEL));
      assertTrue(1 <= s.requests().core() && s.requests().core() <= s.limits().core(), "" + s);
      assertTrue(1 <= s.requests().memory() && s.requests().memory() <= s.limits().memory());
      assertTrue(s.limits().withinWhole(), "" + s);
      PodManifest.ContainerResources c =
          pod.containers().stream().filter(x -> x.name().equals(s.container())).findFirst().get();
      // The request read is the request written (plain digits), limits at least as large.
      assertEquals(s.requests().core(), Integer.parseInt(c.requests().get(CORE)));
      assertEquals(s.requests().memory(), Integer.parseInt(c.requests().get(MEMORY)));
      assertTrue(Integer.parseInt(c.limits().get(CORE)) >= s.requests().core());
      long sharingContainers =
          pod.containers().stream()
              .filter(x -> x.requests().containsKey(CORE) || x.limits().containsKey(CORE))
              .count();
      assertEquals(1, sharingContainers, "one container shares: " + pod);
    }
    // Deterministic: the same manifest reads and validates the same.
    assertEquals(pod, ManifestReader.pod(body, AdversarialInputs.format(encoding)));
    assertEquals(sharing.value(), ShareRequestRules.validate(pod).value());
    AdversarialFigures.accepted("parser:pod manifest (ManifestReader + ShareRequestRules)");
  }

  private static void assertNameRules(PodManifest pod) {
    assertTrue(
        pod.name().length() <= 253 && DNS_SUBDOMAIN.matcher(pod.name()).matches(), pod.name());
    assertTrue(
        pod.namespace().length() <= 63 && DNS_LABEL.matcher(pod.namespace()).matches(),
        pod.namespace());
  }

  // ------------------------------------------------------------------ node manifests, labels, QoS

  @Provide
  Arbitrary<ObjectNode> nodeManifests() {
    Arbitrary<JsonNode> gpus =
        Arbitraries.oneOf(
            Arbitraries.integers().between(0, 130).map(i -> (JsonNode) TextNode.valueOf("" + i)),
            AdversarialInputs.oddValues());
    Arbitrary<JsonNode> policy = AdversarialInputs.labelValues();
    Arbitrary<JsonNode> qos =
        Arbitraries.oneOf(
            AdversarialInputs.qosTexts().map(s -> (JsonNode) TextNode.valueOf(s)),
            AdversarialInputs.oddValues());
    Arbitrary<JsonNode> name =
        Arbitraries.oneOf(
            Arbitraries.just((JsonNode) TextNode.valueOf("node-a")),
            AdversarialInputs.names().map(s -> (JsonNode) TextNode.valueOf(s)),
            AdversarialInputs.oddValues());
    Arbitrary<JsonNode> storage =
        Arbitraries.oneOf(
            Arbitraries.of("2Ti", "1Ti", "0", "1.5Ti", " 2Ti", "2TB", "-1Gi")
                .map(s -> (JsonNode) TextNode.valueOf(s)),
            AdversarialInputs.oddValues());
    Arbitrary<Integer> which = Arbitraries.integers().between(0, 31);
    return Combinators.combine(which, gpus, policy, qos, name, storage)
        .as(
            (w, g, p, q, n, st) -> {
              ObjectNode node = AdversarialInputs.node("node-a", 2);
              ObjectNode metadata = (ObjectNode) node.get("metadata");
              ObjectNode capacity = (ObjectNode) node.path("status").path("capacity");
              if ((w & 1) != 0) {
                capacity.set("nvidia.com/gpu", g);
              }
              if ((w & 2) != 0) {
                ((ObjectNode) metadata.get("labels")).set(AdversarialInputs.POLICY, p);
              }
              if ((w & 4) != 0) {
                ((ObjectNode) metadata.get("annotations")).set(AdversarialInputs.QOS, q);
              }
              if ((w & 8) != 0) {
                metadata.set("name", n);
              }
              if ((w & 16) != 0) {
                capacity.set("ephemeral-storage", st);
              }
              return node;
            });
  }

  @Property(tries = 500, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void nodeManifestsAndTheirSharingConfigAreRefusedNamingTheFieldOrConsistent(
      @ForAll("nodeManifests") ObjectNode tree, @ForAll Encoding encoding) {
    byte[] body = AdversarialInputs.encode(tree, encoding);
    NodeManifest node;
    try {
      node = ManifestReader.node(body, AdversarialInputs.format(encoding), "node-a");
    } catch (ServiceException e) {
      assertNamesFields(e.errors(), e.getMessage());
      AdversarialFigures.refused("parser:node manifest (ManifestReader)");
      return;
    }
    AdversarialFigures.accepted("parser:node manifest (ManifestReader)");
    assertEquals("node-a", node.name());
    NodeSharing.Resolution r =
        NodeSharing.resolveWithErrors(
            NodeSharing.SharingConfig.INITIAL,
            node.labels(),
            node.annotations(),
            node.capacity(),
            List.of(),
            List.of());
    NodeSharing.SharingConfig config = r.config();
    assertNotNull(config.active());
    assertNotNull(config.activeQos());
    if (config.valid()) {
      assertTrue(r.configErrors().isEmpty(), "" + r);
      String label = node.labels().get(SharePolicy.LABEL);
      assertEquals(
          label == null ? SharePolicy.NONE : SharePolicy.fromLabel(label).orElseThrow(),
          config.active());
      assertTrue(config.activeQos().podMaxDurationMinutes() >= 1);
      Quantity.parse(config.activeQos().reservedEphemeralStorage());
      AdversarialFigures.accepted("parser:node sharing config (label + QoS annotation)");
    } else {
      assertFalse(r.configErrors().isEmpty(), "an invalid config says why: " + r);
      assertNamesFields(r.configErrors(), config.validMessage());
      for (FieldError e : r.configErrors()) {
        assertTrue(
            e.field().equals(NodeSharing.POLICY_FIELD) || e.field().startsWith(QosConfig.FIELD),
            "a sharing error names the label or the annotation: " + e);
      }
      // An invalid label leaves the previous (here: initial) policy in force, an invalid QoS
      // config the previous QoS config (SPEC §2).
      boolean badLabel =
          r.configErrors().stream().anyMatch(e -> e.field().equals(NodeSharing.POLICY_FIELD));
      if (badLabel) {
        assertEquals(SharePolicy.NONE, config.active(), "" + r);
      } else {
        assertEquals(QosConfig.DEFAULT, config.activeQos(), "" + r);
      }
      AdversarialFigures.refused("parser:node sharing config (label + QoS annotation)");
    }
  }

  @Property(tries = 500, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void qosConfigsAreRefusedNamingTheFieldOrReadBackTheSame(@ForAll("qosTexts") String json) {
    Parsed<QosConfig> parsed = QosConfig.parse(json);
    if (!parsed.ok()) {
      assertNamesFields(parsed.errors(), parsed.errorSummary());
      parsed.errors().forEach(e -> assertTrue(e.field().startsWith(QosConfig.FIELD), "" + e));
      AdversarialFigures.refused("parser:QoS config annotation (QosConfig)");
      return;
    }
    QosConfig qos = parsed.value();
    assertTrue(qos.podMaxDurationMinutes() >= 1, "" + qos);
    assertTrue(Quantity.parse(qos.reservedEphemeralStorage()).compareTo(Quantity.ZERO) >= 0);
    String again =
        "{\"preemptEnabled\":"
            + qos.preemptEnabled()
            + ",\"podMaxDurationMinutes\":"
            + qos.podMaxDurationMinutes()
            + ",\"reservedEphemeralStorage\":"
            + AdversarialInputs.q(qos.reservedEphemeralStorage())
            + "}";
    assertEquals(qos, QosConfig.parse(again).value(), "round trip of " + json);
    AdversarialFigures.accepted("parser:QoS config annotation (QosConfig)");
  }

  @Provide
  Arbitrary<String> qosTexts() {
    return AdversarialInputs.qosTexts();
  }

  // ------------------------------------------------------------------ launcher flags

  @Provide
  Arbitrary<List<String>> launcherArgs() {
    Arbitrary<String> flag =
        Arbitraries.of(
            "--port",
            "--host",
            "--data",
            "--clock",
            "--config",
            "--webhook-port",
            "--tls-cert",
            "--tls-key",
            "--extender-port",
            "--extender-client-ca",
            "--kubernetes",
            "--PORT",
            "-port",
            "--verbose",
            "--",
            "-",
            "--port=",
            "--kubernetes=yes");
    Arbitrary<String> value =
        Arbitraries.oneOf(
            Arbitraries.integers().between(-2, 70000).map(Object::toString),
            Arbitraries.of(
                "0",
                "8080",
                " 8080",
                "8080 ",
                "+80",
                "0x50",
                "08080",
                "65535",
                "65536",
                "99999999999",
                "http",
                "",
                " ",
                "system",
                "manual",
                "MANUAL",
                "slow",
                "/tmp/x",
                "data dir",
                "a\u0000b",
                "::1",
                "0.0.0.0",
                "localhost",
                "--port",
                "名前"),
            AdversarialInputs.names());
    Arbitrary<List<String>> pair =
        Combinators.combine(flag, value, Arbitraries.of(true, false))
            .as((f, v, eq) -> eq ? List.of(f + "=" + v) : List.of(f, v));
    Arbitrary<List<String>> single = flag.map(List::of);
    return Arbitraries.oneOf(pair, pair, single)
        .list()
        .ofMaxSize(5)
        .map(
            parts -> {
              List<String> args = new ArrayList<>();
              parts.forEach(args::addAll);
              return args;
            });
  }

  @Property(tries = 600, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void launcherFlagsAreRefusedNamingTheFlagOrParseBackTheSame(
      @ForAll("launcherArgs") List<String> args) {
    LauncherOptions options;
    try {
      options = LauncherOptions.parse(args);
    } catch (LaunchException e) {
      String m = e.getMessage();
      assertTrue(
          m.startsWith("--") || m.startsWith("unexpected argument") || m.startsWith("unknown flag"),
          "a refusal names the flag: " + m);
      assertFalse(m.isBlank());
      AdversarialFigures.refused("parser:launcher flags (LauncherOptions)");
      return;
    }
    assertTrue(0 <= options.port() && options.port() <= 65535, "" + options);
    assertFalse(options.host().isBlank());
    List<String> again = new ArrayList<>();
    again.addAll(List.of("--port", "" + options.port(), "--host=" + options.host()));
    again.add("--data=" + options.data());
    options.clock().ifPresent(c -> again.add("--clock=" + c.name().toLowerCase()));
    options.config().ifPresent(c -> again.add("--config=" + c));
    if (options.webhook().enabled()) {
      again.add("--webhook-port=" + options.webhook().port());
      again.add("--tls-cert=" + options.webhook().tlsCert().orElseThrow());
      again.add("--tls-key=" + options.webhook().tlsKey().orElseThrow());
    }
    if (options.extender().enabled()) {
      again.add("--extender-port=" + options.extender().port());
      again.add("--extender-client-ca=" + options.extender().clientCa().orElseThrow());
    }
    if (options.kubernetes()) {
      again.add("--kubernetes");
    }
    if (!options.help()) {
      assertEquals(options, LauncherOptions.parse(again), "parse back of " + args);
    }
    AdversarialFigures.accepted("parser:launcher flags (LauncherOptions)");
  }

  // ------------------------------------------------------------------ config files

  @Provide
  Arbitrary<String> configFiles() {
    Arbitrary<String> key =
        Arbitraries.of(
            "clock",
            "manual-clock-start",
            "ask-timeout",
            "passivate-idle-pods-after",
            "placement",
            "reserved-per-gpu.cpu",
            "reserved-per-gpu.memory",
            "reserved-per-gpu.gpu",
            "http.max-connections",
            "http.header-read-timeout",
            "http.max-watches",
            "http.max-watches-per-client",
            "gpu.backend",
            "gpu.telemetry-interval",
            "gpu.idle-release-after",
            "journal.kind",
            "kubernetes",
            "unknown-key",
            "nodes");
    Arbitrary<String> value =
        Arbitraries.oneOf(
            Arbitraries.of(
                "10s",
                "\"10s\"",
                "-1s",
                "0",
                "0s",
                "never",
                "\" 10s\"",
                "{}",
                "[]",
                "null",
                "true",
                "99999999999999999999",
                "manual",
                "system",
                "\"manual\"",
                "MANUAL",
                "best-fit",
                "worst-fit",
                "\"2026-01-01T00:00:00Z\"",
                "\"yesterday\"",
                "\"2\"",
                "\" 2\"",
                "\"10Gi\"",
                "\"-1\"",
                "h2",
                "postgres",
                "auto",
                "nvml",
                "cuda",
                "off",
                "1",
                "4096",
                "-4096",
                "\"☃\"",
                "${?NOPE}",
                "${NOPE}",
                "\"abc",
                "{",
                "]",
                "=",
                "\"a|b/c\""),
            Arbitraries.integers().between(-10, 200000).map(Object::toString),
            nodeLists());
    Arbitrary<String> line =
        Combinators.combine(key, value).as((k, v) -> "gpushare." + k + " = " + v);
    return line.list().ofMaxSize(4).map(lines -> String.join("\n", lines) + "\n");
  }

  private static Arbitrary<String> nodeLists() {
    Arbitrary<String> gpus =
        Arbitraries.oneOf(
            Arbitraries.integers().between(-1, 130).map(i -> "\"" + i + "\""),
            Arbitraries.of("2", "\" 2\"", "\"two\"", "\"1.5\"", "{}", "null"));
    Arbitrary<String> name =
        Arbitraries.oneOf(
            Arbitraries.of("n1", "\"n1\"", "\"a|b\"", "\"a/b\"", "\"UP\"", "\"\"", "\"x\"")
                .map(s -> s),
            Arbitraries.strings()
                .withCharRange('a', 'z')
                .ofMinLength(250)
                .ofMaxLength(256)
                .map(s -> "\"" + s + "\""));
    Arbitrary<String> extra =
        Arbitraries.of(
            "",
            ", gpu-model = \"\"",
            ", gpu-memory-mib = 0",
            ", gpu-memory-mib = 81559",
            ", labels { \"alibabacloud.com/gpu-share-policy\" = share-pool }",
            ", labels { x = 1 }",
            ", oops = 1",
            ", allocatable { cpu = \" 1\" }");
    Arbitrary<String> node =
        Combinators.combine(name, gpus, extra)
            .as(
                (n, g, e) ->
                    "{ name = "
                        + n
                        + ", capacity { cpu = \"8\", \"nvidia.com/gpu\" = "
                        + g
                        + " }"
                        + e
                        + " }");
    return node.list().ofMaxSize(3).map(ns -> "[" + String.join(", ", ns) + "]");
  }

  @Property(tries = 400, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void configFilesAreRefusedNamingTheKeyOrAcceptedWithinTheRules(@ForAll("configFiles") String text)
      throws IOException {
    Path file = Files.createTempFile("adversarial", ".conf");
    try {
      Files.writeString(file, text);
      EmbeddedConfig config;
      try {
        config =
            EmbeddedConfig.from(
                EmbeddedConfig.resolve(
                    EmbeddedConfig.load(Optional.of(file)),
                    com.typesafe.config.ConfigFactory.load()),
                variable -> null);
      } catch (LaunchException e) {
        String m = e.getMessage();
        assertTrue(
            m.contains("gpushare") || m.contains(file.toString()),
            "a refusal names the key, or the file and line: " + m);
        AdversarialFigures.refused("parser:config file (EmbeddedConfig)");
        return;
      }
      assertTrue(
          !config.settings().askTimeout().isNegative() && !config.settings().askTimeout().isZero(),
          "" + config);
      config
          .settings()
          .nodes()
          .forEach(
              n -> {
                int gpus = Integer.parseInt(n.manifest().capacity().get("nvidia.com/gpu"));
                assertTrue(1 <= gpus && gpus <= 128, "" + n);
                assertTrue(
                    n.manifest().name().length() <= 253
                        && DNS_SUBDOMAIN.matcher(n.manifest().name()).matches(),
                    n.manifest().name());
              });
      assertTrue(config.http().maxConnections() >= 1, "" + config.http());
      AdversarialFigures.accepted("parser:config file (EmbeddedConfig)");
    } finally {
      Files.deleteIfExists(file);
    }
  }

  // ------------------------------------------------------------------ strict JSON

  @Property(tries = 300, seed = SEED, shrinking = ShrinkingMode.BOUNDED)
  void jsonWithARepeatedKeyIsRefusedNamingItsPath(@ForAll("podMutations") List<Mutation> mutations)
      throws IOException {
    ObjectNode tree = AdversarialInputs.mutatedPod("default", "p", null, mutations, Extra.NONE);
    String json = AdversarialInputs.JSON.writeValueAsString(tree);
    // A key twice in the container's resources (or at the root when a mutation removed them).
    String marker = "\"resources\":{";
    int at = json.indexOf(marker);
    String dup;
    String expectedPath;
    if (at >= 0) {
      int inside = at + marker.length();
      dup = json.substring(0, inside) + "\"x|y/z\":1,\"x|y/z\":2," + json.substring(inside);
      expectedPath = "resources[x|y/z]";
    } else {
      dup = "{\"zz\":1,\"zz\":2," + json.substring(1);
      expectedPath = "zz";
    }
    if (json.equals("{}")) {
      dup = "{\"zz\":1,\"zz\":2}";
    }
    for (ManifestReader.Format f : ManifestReader.Format.values()) {
      try {
        ManifestReader.pod(dup.getBytes(java.nio.charset.StandardCharsets.UTF_8), f);
        throw new AssertionError("a repeated key was accepted (" + f + "): " + dup);
      } catch (ServiceException e) {
        assertEquals(ServiceException.Kind.MALFORMED, e.kind(), e.getMessage());
        assertTrue(e.field().contains(expectedPath), e.field() + " names " + expectedPath);
        AdversarialFigures.refused("parser:repeated keys (InputJson, " + f + ")");
      }
    }
  }

  // ------------------------------------------------------------------ error shape

  /** Every error names a field; its message names that field and, when short, the value. */
  static void assertNamesFields(List<FieldError> errors, String context) {
    assertFalse(errors.isEmpty(), "a refusal lists its errors: " + context);
    for (FieldError e : errors) {
      assertNotNull(e.field(), "" + e);
      assertFalse(e.field().isBlank(), "" + e);
      assertNotNull(e.message(), "" + e);
      assertTrue(e.message().contains(e.field()), "the message names the field: " + e);
      String v = e.value();
      if (v != null
          && v.length() <= 80
          && v.chars().allMatch(ch -> ch >= ' ' && ch < 127 && ch != '"' && ch != '\\')) {
        assertTrue(e.message().contains(v), "the message names the value: " + e);
      }
    }
  }
}
