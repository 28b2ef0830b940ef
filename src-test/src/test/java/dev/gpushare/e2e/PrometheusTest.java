package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.gpushare.arbiter.UsageRules;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The monitoring component ({@code deploy/monitoring/}) against a real Prometheus (Debian's {@code
 * prometheus}, installed by {@code .ci/run}; without it the test is skipped and says so): a real
 * member in Kubernetes mode (the fabric8 mock API server) runs a short share-pool workload — pods
 * granted and queued, a duration-based preemption on the manual clock, GPU telemetry, a compute
 * report, a process left on a GPU its pod no longer holds, Kubernetes writes — while Prometheus
 * scrapes it every second with the bearer token the members require and evaluates the shipped alert
 * rules. Then:
 *
 * <ol>
 *   <li>the target is up (the token is accepted) and every rule is loaded and evaluates healthily;
 *   <li>every alert expression parses and every metric it reads returns series;
 *   <li>every dashboard panel's query (template variables as "all", {@code $__rate_interval} as 30
 *       s) parses and returns series, and every variable's {@code label_values} has values;
 *   <li>the data directory, a real 64 MiB tmpfs (root only; else that one test is skipped), is
 *       filled until little space is left, and {@code GpushareDataDirectoryLowSpace} fires.
 * </ol>
 *
 * The rules Prometheus evaluates here are the shipped ones with every {@code for:} set to {@code
 * 0s}, so that an alert fires on the first evaluation that finds its condition; the {@code for:}
 * durations themselves are covered by the promtool unit tests ({@link MonitoringRulesTest}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PrometheusTest {

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final Duration AWAIT = Duration.ofSeconds(90);
  private static final Pattern METRIC =
      Pattern.compile("\\b(up|gpushare_[a-z0-9_]+)\\b(?!\\s*\\()");
  private static final Pattern LABEL_VALUES =
      Pattern.compile(
          "label_values\\(\\s*([a-zA-Z_:][\\w:]*)?\\s*(\\{[^}]*\\})?\\s*,\\s*(\\w+)\\s*\\)");

  /** The tmpfs size and the journal's minimum free space (the level writes are refused below). */
  private static final String DISK = "64m";

  private static final long MIN_FREE = 8L * 1024 * 1024;

  private Path root;
  private Tmpfs disk;
  private KubeApiServer kube;
  private ServerProcess server;
  private Api api;
  private PrometheusServer prometheus;

  @BeforeAll
  void start(@TempDir Path dir) throws IOException {
    assumeTrue(
        PrometheusServer.binary().isPresent(),
        "prometheus not found on PATH (nor $PROMETHEUS): install Debian's prometheus package"
            + " (apt-get install prometheus; .ci/run does) to run the real-Prometheus test");
    root = dir;
    Path data;
    if (Tmpfs.canMount()) {
      disk = Tmpfs.mount(dir.resolve("disk"), DISK);
      data = disk.dir().resolve("data");
    } else {
      data = dir.resolve("data");
    }
    kube = new KubeApiServer();
    Path config =
        Files.writeString(
            dir.resolve("gpushare.conf"),
            """
            gpushare {
              nodes = []
              journal.min-free-space = "%d B"
              gpu.telemetry-interval = 1s
              kubernetes {
                node-status-mode = kubelet
                qps = 200
                burst = 400
                max-backoff = 2s
              }
            }
            """
                .formatted(MIN_FREE));
    Map<String, String> env = KubeApiServer.outsideACluster();
    env.put("POD_NAME", KubernetesModeTest.POD_NAME);
    server =
        ServerProcess.start(
            "PrometheusTest",
            data,
            kube.clientProperties(),
            env,
            "--kubernetes",
            "--config",
            config.toString());
    api = server.api();
    Path token = Files.writeString(dir.resolve("token"), server.adminToken().orElseThrow());
    Path rules = rulesWithoutFor(dir.resolve("gpushare-rules.yaml"));
    prometheus =
        PrometheusServer.start(
            Files.createDirectories(dir.resolve("prometheus")),
            List.of(server.baseUri().getHost() + ":" + server.baseUri().getPort()),
            token,
            List.of(rules));
  }

  @AfterAll
  void stop() {
    if (prometheus != null) {
      prometheus.close();
    }
    if (server != null) {
      server.close();
    }
    if (kube != null) {
      kube.close();
    }
    if (disk != null) {
      disk.close();
    }
  }

  @Test
  @Order(1)
  void everyAlertAndEveryPanelQueryReturnsSeriesFromARealScrape() {
    workload();
    // some seconds of scrapes after the workload, so that rates over 30 s have several points
    awaitTrue(
        "30 scrapes of the member",
        () -> first(prometheus.series("count_over_time(up{job=\"gpushare\"}[1m])")) >= 30);

    List<JsonNode> targets = prometheus.targets();
    assertEquals(1, targets.size(), () -> "targets: " + targets);
    assertEquals(
        "up",
        targets.get(0).path("health").asText(),
        () -> "the member answers the scrape with its token: " + targets.get(0));

    List<String> problems = new ArrayList<>();
    List<JsonNode> rules = prometheus.rules();
    assertFalse(rules.isEmpty(), () -> "no rules loaded:\n" + prometheus.log());
    for (JsonNode rule : rules) {
      if (!"ok".equals(rule.path("health").asText())) {
        problems.add("rule " + rule.path("name").asText() + " is not healthy: " + rule);
      }
    }
    for (Map.Entry<String, String> alert : alertExpressions().entrySet()) {
      checkQuery("alert " + alert.getKey(), alert.getValue(), false, problems);
    }
    for (Map.Entry<String, String> panel : panelQueries().entrySet()) {
      checkQuery(panel.getKey(), panel.getValue(), true, problems);
    }
    for (Map.Entry<String, String> variable : variableQueries().entrySet()) {
      checkLabelValues(variable.getKey(), variable.getValue(), problems);
    }
    if (!problems.isEmpty()) {
      fail(problems.size() + " problem(s):\n  " + String.join("\n  ", problems));
    }
  }

  @Test
  @Order(2)
  void aDataDirectoryRunningOutOfSpaceFiresItsAlert() {
    assumeTrue(
        disk != null,
        "the data directory is on a tmpfs only when this test runs as root with mount(8); "
            + "the fault is not induced here");
    assertTrue(
        firing("GpushareDataDirectoryLowSpace").isEmpty(),
        () -> "low space before the fault: " + prometheus.alerts());
    disk.fillLeaving(MIN_FREE + 4L * 1024 * 1024);
    List<JsonNode> fired =
        awaitValue(
            "GpushareDataDirectoryLowSpace fires",
            () -> firing("GpushareDataDirectoryLowSpace"),
            l -> !l.isEmpty());
    JsonNode alert = fired.get(0);
    assertFalse(
        alert.path("annotations").path("summary").asText().isBlank(), () -> "summary: " + alert);
    assertFalse(
        alert.path("annotations").path("runbook").asText().isBlank(), () -> "runbook: " + alert);
  }

  // ================================================================ the workload

  private void workload() {
    String n = "prom-node";
    kube.createNode(
        KubernetesModeTest.smallNode(
            n, 2, "share-pool", "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 60}"));
    awaitTrue("the arbiter knows node " + n, () -> api.get("/v1/nodes/" + n).status() == 200);
    for (String p : List.of("a", "b", "c")) {
      kube.create(KubernetesModeTest.sharePodYaml(p, n, 50, 100));
      kube.kubeletRuns(p);
      awaitTrue("the arbiter knows pod " + p, () -> api.get(Api.podPath(p)).status() == 200);
    }
    assertRunningOn(api.demand("a"), 0);
    api.advance(60);
    assertRunningOn(api.demand("b"), 1);
    assertReady(api.demand("c"), 1);

    // a's workload on its GPU (telemetry) and its library's compute report
    JsonNode a = api.pod("a");
    Api.ok(
        api.put(
            "/v1/nodes/" + n + "/gpus/0/processes",
            "{\"processes\":[{\"pid\":4242,\"podUid\":\""
                + a.path("uid").asText()
                + "\",\"usedMemoryMiB\":2048,\"smUtilizationPercent\":40}]}",
            "application/json"));
    Api.ok(
        api.post(
            Api.podPath("a") + "/compute",
            "{\"aimPercent\":100,\"measuredPercent\":38.5,\"heldSeconds\":0}",
            "application/json"));
    awaitTrue(
        "a's telemetry reaches its view",
        () -> api.pod("a").path("usage").path("processes").asInt() == 1);

    // a has held GPU 0 for more than 60 minutes while c waits: a is preempted, c runs
    api.advance(3600);
    awaitTrue(
        "c runs after the preemption", () -> "Running".equals(api.pod("c").path("state").asText()));
    assertReady(api.pod("a"), 1);
    // a's process stays on GPU 0, which a no longer holds (a workload the library cannot enter):
    // seen by telemetry rounds for UsageRules.UNGRANTED_AFTER on the manual clock, it is ungranted
    // use (its metric, its alert). A few steps of 91 s: the first round that sees it after the
    // preemption starts the episode; together far from c's 60 minutes, so c keeps GPU 0.
    boolean reported = false;
    for (int step = 0; step < 5 && !reported; step++) {
      api.advance(UsageRules.UNGRANTED_AFTER.toSeconds() + 1);
      Instant until = Instant.now().plusSeconds(5);
      while (!reported && Instant.now().isBefore(until)) {
        reported = api.get("/metrics").body().contains("gpushare_pod_ungranted_gpu_processes{");
        if (!reported) {
          sleep(250);
        }
      }
    }
    assertTrue(reported, "a's process on GPU 0 is reported as ungranted use");
    // the view and the Kubernetes writes of the node status have happened
    awaitTrue(
        "the node's status is written to the API server",
        () ->
            kube.node(n)
                .getStatus()
                .getCapacity()
                .containsKey("alibabacloud.com/gpu-core.percentage"));
  }

  // ================================================================ checks

  private void checkQuery(String what, String expr, boolean needsSeries, List<String> problems) {
    JsonNode answer = prometheus.queryAnswer(expr);
    if (!"success".equals(answer.path("status").asText())) {
      problems.add(what + ": `" + expr + "` does not evaluate: " + answer.path("error").asText());
      return;
    }
    for (String metric : metrics(expr)) {
      if (prometheus.series("count({__name__=\"" + metric + "\"})").isEmpty()) {
        problems.add(what + ": `" + expr + "` reads " + metric + ", which has no series");
      }
    }
    if (needsSeries && answer.path("data").path("result").isEmpty()) {
      problems.add(what + ": `" + expr + "` returns no series");
    }
  }

  private void checkLabelValues(String what, String query, List<String> problems) {
    Matcher m = LABEL_VALUES.matcher(query);
    if (!m.matches()) {
      problems.add(what + ": `" + query + "` is not label_values(METRIC{…}, LABEL)");
      return;
    }
    String selector =
        (m.group(1) == null ? "" : m.group(1)) + (m.group(2) == null ? "" : m.group(2));
    String expr = "count by (" + m.group(3) + ") (" + substitute(selector) + ")";
    checkQuery(what, expr, true, problems);
  }

  /** The metric names an expression reads: {@code gpushare_*} and {@code up}. */
  static Set<String> metrics(String expr) {
    Set<String> names = new LinkedHashSet<>();
    Matcher m = METRIC.matcher(expr.replaceAll("\"[^\"]*\"", "\"\""));
    while (m.find()) {
      names.add(m.group(1));
    }
    return names;
  }

  private List<JsonNode> firing(String alert) {
    return prometheus.alerts().stream()
        .filter(a -> alert.equals(a.path("labels").path("alertname").asText()))
        .filter(a -> "firing".equals(a.path("state").asText()))
        .toList();
  }

  // ================================================================ the monitoring files

  private static JsonNode prometheusRule() {
    try {
      return MonitoringRulesTest.readRule();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The PrometheusRule's groups as a rule file, every {@code for:} set to {@code 0s}. */
  private static Path rulesWithoutFor(Path target) throws IOException {
    JsonNode spec = prometheusRule().path("spec").deepCopy();
    for (JsonNode group : spec.path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        if (rule.has("for")) {
          ((ObjectNode) rule).put("for", "0s");
        }
      }
    }
    return Files.writeString(target, YAML.writeValueAsString(spec));
  }

  /** Alert name to expression, in file order. */
  private static Map<String, String> alertExpressions() {
    Map<String, String> out = new LinkedHashMap<>();
    for (JsonNode group : prometheusRule().path("spec").path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        String name =
            rule.has("alert") ? rule.path("alert").asText() : rule.path("record").asText();
        out.put(name, rule.path("expr").asText());
      }
    }
    assertFalse(out.isEmpty(), "the PrometheusRule has no rules");
    return out;
  }

  private static Map<String, JsonNode> dashboards() {
    try {
      Map<String, JsonNode> out = MonitoringRulesTest.dashboards();
      assertFalse(out.isEmpty(), "no dashboards in deploy/monitoring/dashboards");
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** "dashboard / panel title [refId]" to the query with its variables substituted. */
  private static Map<String, String> panelQueries() {
    Map<String, String> out = new TreeMap<>();
    dashboards()
        .forEach(
            (file, dashboard) -> {
              for (JsonNode panel : MonitoringRulesTest.panels(dashboard)) {
                String title = file + " / " + panel.path("title").asText();
                for (JsonNode target : panel.path("targets")) {
                  String expr = target.path("expr").asText();
                  if (!expr.isBlank()) {
                    out.put(title + " [" + target.path("refId").asText() + "]", substitute(expr));
                  }
                }
              }
            });
    assertFalse(out.isEmpty(), "the dashboards have no panel queries");
    return out;
  }

  /** "dashboard / $variable" to its {@code label_values(…)} query. */
  private static Map<String, String> variableQueries() {
    Map<String, String> out = new TreeMap<>();
    dashboards()
        .forEach(
            (file, dashboard) -> {
              for (JsonNode v : dashboard.path("templating").path("list")) {
                if (!"query".equals(v.path("type").asText())) {
                  continue;
                }
                JsonNode q = v.path("query");
                String query = q.isTextual() ? q.asText() : q.path("query").asText();
                out.put(file + " / $" + v.path("name").asText(), query.strip());
              }
            });
    return out;
  }

  /**
   * Grafana's variables as a dashboard shows "All": {@code $__rate_interval} 30 s, {@code
   * $__interval} 5 s, {@code $__range} 5 m, and every other variable {@code .*} (the dashboards use
   * them only with {@code =~}).
   */
  static String substitute(String expr) {
    Matcher m = MonitoringRulesTest.VARIABLE.matcher(expr);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String value =
          switch (m.group(1)) {
            case "__rate_interval" -> "30s";
            case "__interval" -> "5s";
            case "__range" -> "5m";
            default -> ".*";
          };
      m.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    m.appendTail(out);
    return out.toString();
  }

  // ================================================================ waiting

  private static double first(List<JsonNode> series) {
    return series.isEmpty() ? 0 : series.get(0).path("value").path(1).asDouble();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  private void awaitTrue(String what, Supplier<Boolean> condition) {
    awaitValue(what, condition, Boolean::booleanValue);
  }

  private <T> T awaitValue(String what, Supplier<T> value, java.util.function.Predicate<T> ok) {
    Instant deadline = Instant.now().plus(AWAIT);
    T last = null;
    RuntimeException error = null;
    while (Instant.now().isBefore(deadline)) {
      try {
        last = value.get();
        error = null;
        if (ok.test(last)) {
          return last;
        }
      } catch (RuntimeException e) {
        error = e;
      }
      try {
        Thread.sleep(250);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }
    AssertionError failure =
        new AssertionError(
            "not within "
                + AWAIT
                + ": "
                + what
                + " (last: "
                + last
                + ")\nalerts: "
                + (prometheus == null ? "-" : prometheus.alerts())
                + "\nprometheus log:\n"
                + (prometheus == null ? "-" : prometheus.log()));
    if (error != null) {
      failure.initCause(error);
    }
    throw failure;
  }
}
