package dev.gpushare.http.launch;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import dev.gpushare.arbiter.GpuChoice;
import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.node.GpuSettings;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.RuntimeSettings.ConfiguredNode;
import dev.gpushare.node.kube.KubeSyncSettings;
import dev.gpushare.node.kube.NodeStatusMode;
import dev.gpushare.persistence.JournalSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The embedded mode's configuration: the {@code gpushare} section of the built-in resource {@value
 * #RESOURCE} with the user's {@code --config} file layered over it (the file's keys win; its {@code
 * gpushare.nodes} list replaces the built-in list). The format is documented at the top of the
 * resource. Every key is checked; {@link #from(Config)} reports all errors at once, each naming the
 * key, where it was set, the value given and what is accepted.
 *
 * @param settings the simulated nodes, the reserved CPU and memory per GPU, the ask timeout, the
 *     GPU side ({@code gpushare.gpu}, {@link GpuConfig})
 * @param clock {@code gpushare.clock}; the {@code --clock} flag wins over it
 * @param manualClockStart where a manual clock starts on a fresh data directory
 * @param kubernetes how the Kubernetes mode writes to the API server ({@code gpushare.kubernetes},
 *     optional; defaults: kubelet nodes, 20 QPS, burst 40, back-off up to 30 s)
 * @param journal which journal the server uses ({@code gpushare.journal}; default: H2 under {@code
 *     --data})
 * @param http what the API's HTTP server holds open at most ({@code gpushare.http}, {@link
 *     HttpConfig}; default {@link HttpLimits#DEFAULT})
 * @param podSide the data-plane socket and what the webhook adds to sharing pods ({@code
 *     gpushare.pod-side}, {@link PodSideConfig}; its {@code mpsRoot} is {@code gpushare.gpu}'s)
 */
public record EmbeddedConfig(
    RuntimeSettings settings,
    ClockMode clock,
    Instant manualClockStart,
    KubernetesWrites kubernetes,
    JournalSettings journal,
    HttpLimits http,
    PodSideSettings podSide) {

  /**
   * The configuration with the default pod side ({@link PodSideSettings#DEFAULT}, with the MPS
   * directory of {@code settings}).
   */
  public EmbeddedConfig(
      RuntimeSettings settings,
      ClockMode clock,
      Instant manualClockStart,
      KubernetesWrites kubernetes,
      JournalSettings journal,
      HttpLimits http) {
    this(
        settings,
        clock,
        manualClockStart,
        kubernetes,
        journal,
        http,
        PodSideSettings.DEFAULT.withMpsRoot(settings.gpu().mpsRoot()));
  }

  /** The configuration with the default HTTP limits. */
  public EmbeddedConfig(
      RuntimeSettings settings,
      ClockMode clock,
      Instant manualClockStart,
      KubernetesWrites kubernetes,
      JournalSettings journal) {
    this(settings, clock, manualClockStart, kubernetes, journal, HttpLimits.DEFAULT);
  }

  /** The configuration with the default journal (H2). */
  public EmbeddedConfig(
      RuntimeSettings settings,
      ClockMode clock,
      Instant manualClockStart,
      KubernetesWrites kubernetes) {
    this(settings, clock, manualClockStart, kubernetes, JournalSettings.DEFAULT);
  }

  /** {@code gpushare.kubernetes}: what {@code --kubernetes} writes, and how fast. */
  public record KubernetesWrites(
      NodeStatusMode nodeStatusMode, double qps, int burst, Duration maxBackoff) {
    public static final KubernetesWrites DEFAULT =
        new KubernetesWrites(
            NodeStatusMode.KUBELET,
            KubeSyncSettings.DEFAULT_QPS,
            KubeSyncSettings.DEFAULT_BURST,
            KubeSyncSettings.DEFAULT_MAX_BACKOFF);

    public KubeSyncSettings settings(String reportingInstance) {
      return new KubeSyncSettings(nodeStatusMode, qps, burst, maxBackoff, reportingInstance);
    }
  }

  public static final String RESOURCE = "gpushare-embedded.conf";

  static final Duration MAX_ASK_TIMEOUT = Duration.ofMinutes(10);
  static final int MAX_GPUS = 128;

  private static final Set<String> KEYS =
      Set.of(
          "clock",
          "manual-clock-start",
          "ask-timeout",
          "passivate-idle-pods-after",
          "placement",
          "reserved-per-gpu",
          "nodes",
          "kubernetes",
          "journal",
          "gpu",
          "http",
          "pod-side");
  private static final Set<String> KUBERNETES_KEYS =
      Set.of("node-status-mode", "qps", "burst", "max-backoff");
  private static final Set<String> RESERVED_KEYS = Set.of("cpu", "memory");
  private static final Set<String> NODE_KEYS =
      Set.of(
          "name",
          "labels",
          "annotations",
          "capacity",
          "allocatable",
          "gpu-model",
          "gpu-memory-mib");

  /** The built-in configuration alone (unresolved). */
  public static Config builtIn() {
    return ConfigFactory.parseResources(
        EmbeddedConfig.class.getClassLoader(),
        RESOURCE,
        ConfigParseOptions.defaults().setAllowMissing(false));
  }

  /**
   * The user's file (if any) over the built-in configuration, unresolved; a {@link LaunchException}
   * names the file when it cannot be read or is not HOCON.
   */
  public static Config load(Optional<Path> file) {
    if (file.isEmpty()) {
      return builtIn();
    }
    Path path = file.get();
    if (!Files.exists(path)) {
      throw new LaunchException("--config " + path + ": no such file; expected a HOCON file");
    }
    if (!Files.isRegularFile(path)) {
      throw new LaunchException("--config " + path + ": not a regular file; expected a HOCON file");
    }
    if (!Files.isReadable(path)) {
      throw new LaunchException("--config " + path + ": cannot be read (permission denied)");
    }
    try {
      return ConfigFactory.parseFile(
              path.toFile(), ConfigParseOptions.defaults().setAllowMissing(false))
          .withFallback(builtIn());
    } catch (ConfigException e) {
      throw new LaunchException(
          "--config " + path + ": not valid HOCON: " + e.getMessage() + "; see --help");
    }
  }

  /** Resolves substitutions against {@code fallback}; a {@link LaunchException} if one fails. */
  public static Config resolve(Config config, Config fallback) {
    try {
      return config.withFallback(fallback).resolve();
    } catch (ConfigException e) {
      throw new LaunchException("configuration: " + e.getMessage());
    }
  }

  /** Reads and checks the {@code gpushare} section of a resolved configuration. */
  public static EmbeddedConfig from(Config config) {
    return from(config, System::getenv);
  }

  /**
   * Reads and checks the {@code gpushare} section; {@code environment} answers the variable that
   * {@code gpushare.journal.postgres.password-env} names and {@code GPUSHARE_MPS_ROOT}, the default
   * of {@code gpushare.gpu.mps-root} ({@code null} when unset).
   */
  public static EmbeddedConfig from(Config config, Function<String, String> environment) {
    ConfigErrors errors = new ConfigErrors();
    ConfigValue root = config.root().get("gpushare");
    if (root == null || root.valueType() != ConfigValueType.OBJECT) {
      errors.add(
          "gpushare", root, "expected an object with keys " + String.join(", ", sorted(KEYS)));
      errors.throwIfAny();
    }
    ConfigObject section = (ConfigObject) root;
    errors.unknownKeys(section, "gpushare", KEYS);

    ClockMode clock =
        errors.scalar(section, "clock", "gpushare", ClockMode.accepted(), ClockMode::parse);
    Instant start =
        errors.scalar(
            section,
            "manual-clock-start",
            "gpushare",
            "an ISO-8601 instant such as \"2026-01-01T00:00:00Z\"",
            EmbeddedConfig::instant);
    Duration askTimeout = askTimeout(config, section, errors);
    positiveDuration(config, section, "passivate-idle-pods-after", "2m", errors);
    errors.scalar(
        section,
        "placement",
        "gpushare",
        GpuChoice.keys()
            + " (which fitting GPU of a node a grant or pin takes; best-fit is SPEC §5's rule)",
        GpuChoice::byKey);
    ReservedPerGpu reserved = reserved(section, errors);
    List<ConfiguredNode> nodes = nodes(section, errors);
    KubernetesWrites kubernetes = kubernetes(config, section, errors);
    JournalSettings journal = JournalConfig.read(section, errors, environment);
    GpuSettings gpu = GpuConfig.read(section, errors, environment);
    HttpLimits http = HttpConfig.read(section, errors);
    PodSideSettings podSide =
        PodSideConfig.read(section, errors, gpu == null ? Optional.empty() : gpu.mpsRoot());
    errors.throwIfAny();
    return new EmbeddedConfig(
        new RuntimeSettings(nodes, reserved, askTimeout, gpu),
        clock,
        start,
        kubernetes,
        journal,
        http,
        podSide);
  }

  private static KubernetesWrites kubernetes(
      Config config, ConfigObject section, ConfigErrors errors) {
    ConfigObject k = errors.object(section, "kubernetes", "gpushare", false);
    if (k == null) {
      return KubernetesWrites.DEFAULT;
    }
    String at = "gpushare.kubernetes";
    errors.unknownKeys(k, at, KUBERNETES_KEYS);
    KubernetesWrites d = KubernetesWrites.DEFAULT;
    NodeStatusMode mode =
        k.get("node-status-mode") == null
            ? d.nodeStatusMode()
            : errors.scalar(
                k,
                "node-status-mode",
                at,
                "kubelet (ordinary nodes: only the percentage resources and conditions are"
                    + " written) or virtual (no kubelet: allocatable cpu/memory too)",
                v ->
                    switch (v) {
                      case "kubelet" -> Optional.of(NodeStatusMode.KUBELET);
                      case "virtual" -> Optional.of(NodeStatusMode.VIRTUAL);
                      default -> Optional.empty();
                    });
    Double qps =
        k.get("qps") == null
            ? d.qps()
            : errors.scalar(
                k,
                "qps",
                at,
                "requests per second, a number above 0 such as 20",
                v -> {
                  try {
                    double q = Double.parseDouble(v);
                    return q > 0 && !Double.isInfinite(q) ? Optional.of(q) : Optional.empty();
                  } catch (NumberFormatException e) {
                    return Optional.empty();
                  }
                });
    Integer burst =
        k.get("burst") == null
            ? d.burst()
            : errors.scalar(
                k,
                "burst",
                at,
                "a whole number of requests of at least 1, such as 40",
                v -> {
                  try {
                    int b = Integer.parseInt(v);
                    return b >= 1 ? Optional.of(b) : Optional.empty();
                  } catch (NumberFormatException e) {
                    return Optional.empty();
                  }
                });
    Duration maxBackoff = d.maxBackoff();
    if (k.get("max-backoff") != null) {
      try {
        maxBackoff = config.getDuration(at + ".max-backoff");
        if (maxBackoff.isNegative() || maxBackoff.isZero()) {
          throw new ConfigException.BadValue(at + ".max-backoff", "not above 0");
        }
      } catch (ConfigException e) {
        errors.add(
            at + ".max-backoff", k.get("max-backoff"), "expected a duration above 0 such as 30s");
        maxBackoff = null;
      }
    }
    if (mode == null || qps == null || burst == null || maxBackoff == null) {
      return null;
    }
    return new KubernetesWrites(mode, qps, burst, maxBackoff);
  }

  private static Duration askTimeout(Config config, ConfigObject section, ConfigErrors errors) {
    String rule = "expected a duration above 0 and at most 10 minutes, such as 10s or 500ms";
    ConfigValue value = section.get("ask-timeout");
    if (value == null) {
      errors.add("gpushare.ask-timeout", null, rule);
      return null;
    }
    try {
      Duration d = config.getDuration("gpushare.ask-timeout");
      if (!d.isNegative() && !d.isZero() && d.compareTo(MAX_ASK_TIMEOUT) <= 0) {
        return d;
      }
    } catch (ConfigException e) {
      // reported below, with the accepted form
    }
    errors.add("gpushare.ask-timeout", value, rule);
    return null;
  }

  /**
   * Checks an optional {@code gpushare.<key>} duration above 0 (the runtime reads it from the actor
   * system's configuration, where the file's value wins).
   */
  private static void positiveDuration(
      Config config, ConfigObject section, String key, String example, ConfigErrors errors) {
    ConfigValue value = section.get(key);
    if (value == null) {
      return;
    }
    try {
      Duration d = config.getDuration("gpushare." + key);
      if (!d.isNegative() && !d.isZero()) {
        return;
      }
    } catch (ConfigException e) {
      // reported below, with the accepted form
    }
    errors.add("gpushare." + key, value, "expected a duration above 0 such as " + example);
  }

  private static ReservedPerGpu reserved(ConfigObject section, ConfigErrors errors) {
    ConfigObject reserved = errors.object(section, "reserved-per-gpu", "gpushare", true);
    if (reserved == null) {
      return null;
    }
    String at = "gpushare.reserved-per-gpu";
    errors.unknownKeys(reserved, at, RESERVED_KEYS);
    String cpu = errors.quantity(reserved.get("cpu"), at + ".cpu", true);
    String memory = errors.quantity(reserved.get("memory"), at + ".memory", true);
    return new ReservedPerGpu(cpu, memory);
  }

  private static List<ConfiguredNode> nodes(ConfigObject section, ConfigErrors errors) {
    ConfigValue list = section.get("nodes");
    if (list == null || list.valueType() != ConfigValueType.LIST) {
      errors.add(
          "gpushare.nodes", list, "expected a list of node objects (it may be empty: nodes = [])");
      return List.of();
    }
    List<ConfiguredNode> nodes = new ArrayList<>();
    Set<String> names = new HashSet<>();
    List<?> items = (List<?>) list;
    for (int i = 0; i < items.size(); i++) {
      String at = "gpushare.nodes[" + i + "]";
      ConfigValue item = (ConfigValue) items.get(i);
      if (item.valueType() != ConfigValueType.OBJECT) {
        errors.add(
            at, item, "expected a node object with keys " + String.join(", ", sorted(NODE_KEYS)));
        continue;
      }
      ConfiguredNode node = node((ConfigObject) item, at, errors);
      if (node != null && node.manifest().name() != null && !names.add(node.manifest().name())) {
        errors.add(
            at + ".name",
            ((ConfigObject) item).get("name"),
            "another node has the same name; node names are unique");
      }
      if (node != null) {
        nodes.add(node);
      }
    }
    return Collections.unmodifiableList(nodes);
  }

  private static ConfiguredNode node(ConfigObject node, String at, ConfigErrors errors) {
    errors.unknownKeys(node, at, NODE_KEYS);
    String name =
        errors.scalar(
            node,
            "name",
            at,
            "a node name: a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')",
            text ->
                KubernetesNames.isDns1123Subdomain(text) ? Optional.of(text) : Optional.empty());
    Map<String, String> labels = errors.stringMap(node, "labels", at);
    Map<String, String> annotations = errors.stringMap(node, "annotations", at);
    Map<String, String> capacity = errors.quantities(node, "capacity", at, true);
    Map<String, String> allocatable = errors.quantities(node, "allocatable", at, false);
    if (capacity != null) {
      gpuCount((ConfigObject) node.get("capacity"), capacity, at, errors);
    }
    String model =
        node.get("gpu-model") == null
            ? RuntimeSettings.DEFAULT_GPU_MODEL
            : errors.scalar(
                node,
                "gpu-model",
                at,
                "a non-empty GPU model name such as \"NVIDIA H800\"",
                text -> text.isBlank() ? Optional.empty() : Optional.of(text));
    Long memory =
        node.get("gpu-memory-mib") == null
            ? RuntimeSettings.DEFAULT_GPU_MEMORY_MIB
            : errors.scalar(
                node,
                "gpu-memory-mib",
                at,
                "a whole number of MiB above 0, such as 81559",
                EmbeddedConfig::positiveLong);
    if (name == null || capacity == null || model == null || memory == null) {
      return null;
    }
    return new ConfiguredNode(
        new NodeManifest(
            name, labels, annotations, capacity, allocatable == null ? Map.of() : allocatable),
        model,
        memory);
  }

  /** {@code capacity."nvidia.com/gpu"} is the number of simulated GPUs: required, 1 to 128. */
  private static void gpuCount(
      ConfigObject capacityObject, Map<String, String> capacity, String at, ConfigErrors errors) {
    String rule = "expected the number of GPUs, an integer from 1 to " + MAX_GPUS;
    ConfigValue gpus = capacityObject.get("nvidia.com/gpu");
    String field = at + ".capacity.\"nvidia.com/gpu\"";
    if (gpus == null) {
      errors.add(field, null, "required; " + rule);
      return;
    }
    String text = capacity.get("nvidia.com/gpu");
    if (text == null) {
      return;
    }
    Optional<Long> count = positiveLong(text);
    if (count.isEmpty() || count.get() > MAX_GPUS) {
      errors.add(field, gpus, rule);
    }
  }

  private static Optional<Instant> instant(String text) {
    try {
      return Optional.of(Instant.parse(text));
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }

  private static Optional<Long> positiveLong(String text) {
    try {
      long value = Long.parseLong(text);
      return value > 0 ? Optional.of(value) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  private static List<String> sorted(Set<String> keys) {
    return keys.stream().sorted().toList();
  }
}
