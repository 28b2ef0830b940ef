package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.gpushare.e2e.DeployManifestsTest.Doc;
import dev.gpushare.http.auth.Scope;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The monitoring component {@code deploy/monitoring/} (issue 27): the PrometheusRule's alerts are
 * complete (severity, summary, description, runbook line, a runbook section in the README), every
 * alert has promtool unit tests that see it fire and not fire, and {@code promtool check rules} and
 * {@code promtool test rules} pass on the rules extracted from the PrometheusRule's {@code spec}
 * (written to {@code target/monitoring/} beside copies of the tests); every dashboard parses, each
 * panel reads the {@code ${datasource}} variable and uses template variables only as {@code
 * label=~"$var"}, and its queries parse (promtool); the PodMonitor scrapes the members' plain-HTTP
 * port with a token that RBAC allows exactly what {@code GET /metrics} needs ({@link Scope}); and
 * {@code kubectl kustomize} renders the component in an overlay with the dashboards as ConfigMaps.
 *
 * <p>The promtool checks are skipped when promtool is not on PATH (Debian's {@code prometheus}
 * package has it), the kustomize one when kubectl is not.
 */
class MonitoringRulesTest {

  static final Path MONITORING = DeployManifestsTest.DEPLOY.resolve("monitoring");
  static final Path RULE = MONITORING.resolve("prometheusrule.yaml");
  static final Path TESTS = MONITORING.resolve("tests");
  static final Path DASHBOARDS = MONITORING.resolve("dashboards");
  static final Path README = MONITORING.resolve("README.md");

  /** Where the extracted rules and the copied tests go. */
  static final Path WORK = Path.of("target", "monitoring").toAbsolutePath();

  /** The rule file every test names (its {@code rule_files}), beside the tests. */
  static final String RULES_FILE = "gpushare-rules.yaml";

  /** The alerts the product promises (names are a contract: the e2e test and runbooks use them). */
  static final Set<String> ALERTS =
      Set.of(
          "GpushareMemberDown",
          "GpushareMembersAbsent",
          "GpushareMemberNotReady",
          "GpushareJournalWriteErrors",
          "GpushareDataDirectoryLowSpace",
          "GpushareDecisionLatencyHigh",
          "GpushareQueueHeadStuck",
          "GpusharePreemptionBurst",
          "GpusharePodOverMemoryLimit",
          "GpusharePodUngrantedGpuUse",
          "GpushareCheckpointFailures",
          "GpushareKubernetesWritesFailing");

  /** The dashboards, by file, with their stable uid. */
  static final Map<String, String> DASHBOARD_UIDS =
      Map.of(
          "gpushare-node.json", "gpushare-node",
          "gpushare-pod.json", "gpushare-pod",
          "gpushare-control-plane.json", "gpushare-control-plane");

  static final String SKIP_PROMTOOL =
      "promtool not found: install Debian's prometheus package (.ci/run does), or see"
          + " deploy/monitoring/README.md \"Run the rule tests\"";

  static final ObjectMapper YAML =
      new ObjectMapper(new YAMLFactory().disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER));
  static final ObjectMapper JSON = new ObjectMapper();

  static JsonNode rule;

  @BeforeAll
  static void read() throws IOException {
    DeployManifestsTest.readManifests();
    rule = readRule();
  }

  /** The PrometheusRule as shipped. */
  static JsonNode readRule() throws IOException {
    return YAML.readTree(RULE.toFile());
  }

  // ---------------------------------------------------------------- the alerts

  /** Every alert rule of the PrometheusRule, by name. */
  static Map<String, JsonNode> alerts() {
    Map<String, JsonNode> alerts = new TreeMap<>();
    for (JsonNode group : rule.path("spec").path("groups")) {
      for (JsonNode r : group.path("rules")) {
        if (r.has("alert")) {
          assertEquals(
              null, alerts.put(r.path("alert").asText(), r), "twice: " + r.path("alert").asText());
        }
      }
    }
    return alerts;
  }

  @Test
  void thePrometheusRuleHasTheAlertsOfTheContractEachOnTheScrapeJob() {
    assertEquals("monitoring.coreos.com/v1", rule.path("apiVersion").asText());
    assertEquals("PrometheusRule", rule.path("kind").asText());
    assertEquals(DeployManifestsTest.NS, rule.path("metadata").path("namespace").asText());
    Map<String, JsonNode> alerts = alerts();
    assertEquals(new TreeSet<>(ALERTS), alerts.keySet());
    alerts.forEach(
        (name, r) ->
            assertTrue(
                r.path("expr").asText().contains("job=\"gpushare\""),
                name + " must select the scrape job gpushare: " + r.path("expr").asText()));
    // A failed persist is serious at once.
    assertEquals("0m", alerts.get("GpushareJournalWriteErrors").path("for").asText());
  }

  @Test
  void everyAlertHasASeveritySummaryDescriptionAndOneRunbookLine() {
    alerts()
        .forEach(
            (name, r) -> {
              String severity = r.path("labels").path("severity").asText();
              assertTrue(Set.of("warning", "critical").contains(severity), name + ": " + severity);
              JsonNode a = r.path("annotations");
              for (String key : List.of("summary", "description", "runbook")) {
                assertFalse(a.path(key).asText().isBlank(), name + " has no annotation " + key);
              }
              assertTrue(
                  a.path("description").asText().contains("{{"),
                  name + ": the description says which object and value ({{ $labels.* }})");
              String runbook = a.path("runbook").asText();
              assertFalse(runbook.contains("\n"), name + ": the runbook is one line");
              assertTrue(
                  runbook.endsWith("runbook " + name + " in deploy/monitoring/README.md."),
                  name + ": the runbook line points to its section: " + runbook);
            });
  }

  @Test
  void everyAlertHasARunbookSectionInTheReadme() throws IOException {
    Set<String> anchors = new TreeSet<>();
    for (String line : Files.readAllLines(README)) {
      Matcher m = Pattern.compile("^#{2,4} (\\S+)\\s*$").matcher(line);
      if (m.matches()) {
        anchors.add(m.group(1).toLowerCase(java.util.Locale.ROOT));
      }
    }
    for (String alert : alerts().keySet()) {
      assertTrue(
          anchors.contains(alert.toLowerCase(java.util.Locale.ROOT)),
          "deploy/monitoring/README.md has no section '### "
              + alert
              + "' (anchor #"
              + alert.toLowerCase(java.util.Locale.ROOT)
              + ")");
    }
  }

  /** The promtool test files, parsed. */
  static Map<Path, JsonNode> testFiles() throws IOException {
    Map<Path, JsonNode> files = new TreeMap<>();
    try (Stream<Path> s = Files.list(TESTS)) {
      for (Path p : s.filter(f -> f.toString().endsWith(".test.yaml")).sorted().toList()) {
        files.put(p, YAML.readTree(p.toFile()));
      }
    }
    assertFalse(files.isEmpty(), "no *.test.yaml in " + TESTS);
    return files;
  }

  @Test
  void everyAlertIsUnitTestedFiringAndNotFiring() throws IOException {
    Set<String> fires = new TreeSet<>();
    Set<String> quiet = new TreeSet<>();
    for (Map.Entry<Path, JsonNode> file : testFiles().entrySet()) {
      JsonNode t = file.getValue();
      assertEquals(
          List.of(RULES_FILE),
          YAML.convertValue(t.path("rule_files"), List.class),
          file.getKey().getFileName() + ": rule_files");
      for (JsonNode test : t.path("tests")) {
        for (JsonNode art : test.path("alert_rule_test")) {
          String name = art.path("alertname").asText();
          assertTrue(ALERTS.contains(name), file.getKey().getFileName() + ": unknown " + name);
          JsonNode exp = art.path("exp_alerts");
          if (exp.isEmpty()) {
            quiet.add(name);
            continue;
          }
          for (JsonNode e : exp) {
            assertTrue(
                e.path("exp_labels").has("severity") && e.path("exp_labels").size() >= 2,
                name + ": exp_labels name the severity and the alerting object: " + e);
            assertEquals(
                Set.of("summary", "description", "runbook"),
                fieldNames(e.path("exp_annotations")),
                name + ": exp_annotations");
          }
          fires.add(name);
        }
      }
    }
    assertEquals(new TreeSet<>(ALERTS), fires, "alerts with a promtool case where they fire");
    assertEquals(new TreeSet<>(ALERTS), quiet, "alerts with a promtool case where they must not");
  }

  /** Writes the PrometheusRule's spec and copies of the tests to {@link #WORK}. */
  static List<String> prepareWork() throws IOException {
    Files.createDirectories(WORK);
    Files.writeString(WORK.resolve(RULES_FILE), YAML.writeValueAsString(rule.path("spec")));
    List<String> names = new ArrayList<>();
    for (Path p : testFiles().keySet()) {
      Files.copy(
          p, WORK.resolve(p.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      names.add(p.getFileName().toString());
    }
    return names;
  }

  @Test
  void promtoolChecksTheRulesAndPassesEveryUnitTest() throws Exception {
    Path promtool = promtool();
    List<String> tests = prepareWork();
    run(promtool, List.of("check", "rules", RULES_FILE), "promtool check rules");
    List<String> args = new ArrayList<>(List.of("test", "rules"));
    args.addAll(tests);
    String out = run(promtool, args, "promtool test rules");
    for (String t : tests) {
      assertTrue(out.contains("Unit Testing:  " + t), out);
    }
  }

  @Test
  void promtoolFailsATestThatExpectsTheWrongAlert() throws Exception {
    // The harness sees a failing promtool: a test that wants a member down that is up.
    Path promtool = promtool();
    prepareWork();
    Path broken = WORK.resolve("broken.test.yaml.tmp");
    Files.writeString(
        broken,
        "rule_files: ["
            + RULES_FILE
            + "]\n"
            + "evaluation_interval: 1m\n"
            + "tests:\n"
            + "- interval: 1m\n"
            + "  input_series:\n"
            + "  - series: 'up{job=\"gpushare\", instance=\"a:8080\"}'\n"
            + "    values: '1x10'\n"
            + "  alert_rule_test:\n"
            + "  - eval_time: 9m\n"
            + "    alertname: GpushareMemberDown\n"
            + "    exp_alerts:\n"
            + "    - exp_labels: {severity: critical, job: gpushare, instance: 'a:8080'}\n");
    Process p =
        new ProcessBuilder(promtool.toString(), "test", "rules", broken.getFileName().toString())
            .directory(WORK.toFile())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "promtool did not finish");
    assertEquals(1, p.exitValue(), out);
    assertTrue(out.contains("FAILED"), out);
    Files.delete(broken);
  }

  // ---------------------------------------------------------------- dashboards

  static Map<String, JsonNode> dashboards() throws IOException {
    Map<String, JsonNode> out = new TreeMap<>();
    try (Stream<Path> s = Files.list(DASHBOARDS)) {
      for (Path p : s.sorted().toList()) {
        out.put(p.getFileName().toString(), JSON.readTree(p.toFile()));
      }
    }
    return out;
  }

  /** Every panel with queries, rows' panels included. */
  static List<JsonNode> panels(JsonNode dashboard) {
    List<JsonNode> out = new ArrayList<>();
    for (JsonNode p : dashboard.path("panels")) {
      if (p.path("type").asText().equals("row")) {
        for (JsonNode inner : p.path("panels")) {
          assertFalse(inner.path("type").asText().equals("row"), "a row inside a row");
          out.add(inner);
        }
      } else {
        out.add(p);
      }
    }
    return out;
  }

  static final Pattern VARIABLE = Pattern.compile("\\$\\{?(\\w+)\\}?");
  static final Pattern VARIABLE_USE = Pattern.compile("\\w+=~\"\\$(\\w+)\"");
  static final Set<String> BUILT_INS = Set.of("__rate_interval", "__interval");

  @Test
  void everyDashboardParsesAndEveryPanelReadsTheDatasourceVariable() throws IOException {
    Map<String, JsonNode> dashboards = dashboards();
    assertEquals(DASHBOARD_UIDS.keySet(), dashboards.keySet(), "files in " + DASHBOARDS);
    for (Map.Entry<String, JsonNode> e : dashboards.entrySet()) {
      String file = e.getKey();
      JsonNode d = e.getValue();
      assertEquals(DASHBOARD_UIDS.get(file), d.path("uid").asText(), file + ": uid");
      assertTrue(d.path("schemaVersion").asInt() >= 36, file + ": schemaVersion");
      Map<String, JsonNode> variables = new TreeMap<>();
      for (JsonNode v : d.path("templating").path("list")) {
        variables.put(v.path("name").asText(), v);
      }
      JsonNode ds = variables.get("datasource");
      assertNotNull(ds, file + ": no datasource variable");
      assertEquals("datasource", ds.path("type").asText(), file);
      assertEquals("prometheus", ds.path("query").asText(), file);
      assertTrue(variables.containsKey("node"), file + ": no node variable");
      for (JsonNode v : variables.values()) {
        if (v.path("type").asText().equals("query")) {
          assertEquals("${datasource}", v.path("datasource").path("uid").asText(), file);
          assertTrue(
              v.path("definition").asText().startsWith("label_values("),
              file + ": variable " + v.path("name").asText());
          assertVariablesUsedAsRegexMatches(file, v.path("definition").asText(), variables);
        }
      }
      List<JsonNode> panels = panels(d);
      assertFalse(panels.isEmpty(), file + ": no panel");
      Set<Integer> ids = new TreeSet<>();
      for (JsonNode p : panels) {
        String where = file + " panel '" + p.path("title").asText() + "'";
        assertTrue(ids.add(p.path("id").asInt()), where + ": id used twice");
        assertEquals("prometheus", p.path("datasource").path("type").asText(), where);
        assertEquals("${datasource}", p.path("datasource").path("uid").asText(), where);
        assertFalse(p.path("targets").isEmpty(), where + ": no query");
        for (JsonNode t : p.path("targets")) {
          assertEquals("${datasource}", t.path("datasource").path("uid").asText(), where);
          String expr = t.path("expr").asText();
          assertFalse(expr.isBlank(), where + ": empty expr");
          assertTrue(expr.contains("job=\"gpushare\""), where + ": not on job gpushare: " + expr);
          assertVariablesUsedAsRegexMatches(where, expr, variables);
        }
      }
    }
  }

  /** Template variables only as {@code label=~"$var"}; built-ins only those Grafana always has. */
  static void assertVariablesUsedAsRegexMatches(
      String where, String expr, Map<String, JsonNode> variables) {
    String rest = VARIABLE_USE.matcher(expr).replaceAll("");
    Matcher m = VARIABLE.matcher(rest);
    while (m.find()) {
      assertTrue(
          BUILT_INS.contains(m.group(1)),
          where + ": $" + m.group(1) + " is used other than as label=~\"$var\": " + expr);
    }
    Matcher uses = VARIABLE_USE.matcher(expr);
    while (uses.find()) {
      assertTrue(variables.containsKey(uses.group(1)), where + ": unknown $" + uses.group(1));
    }
  }

  @Test
  void everyPanelQueryParses() throws Exception {
    Path promtool = promtool();
    Files.createDirectories(WORK);
    ArrayNode rules = YAML.createArrayNode();
    for (Map.Entry<String, JsonNode> e : dashboards().entrySet()) {
      for (JsonNode p : panels(e.getValue())) {
        for (JsonNode t : p.path("targets")) {
          String expr =
              t.path("expr")
                  .asText()
                  .replace("$__rate_interval", "2m")
                  .replace("$__interval", "1m")
                  .replaceAll("\\$\\w+", ".*");
          ObjectNode r = rules.addObject();
          r.put("record", "gpushare:panel_query:" + rules.size());
          r.put("expr", expr);
        }
      }
    }
    ObjectNode file = YAML.createObjectNode();
    file.putArray("groups").addObject().put("name", "panel-queries").set("rules", rules);
    Files.writeString(WORK.resolve("panel-queries.yaml"), YAML.writeValueAsString(file));
    run(promtool, List.of("check", "rules", "panel-queries.yaml"), "promtool check rules");
  }

  // ---------------------------------------------------------------- the component

  @Test
  void theComponentListsEveryFileAndGeneratesOneConfigMapPerDashboard() throws IOException {
    JsonNode k = YAML.readTree(MONITORING.resolve("kustomization.yaml").toFile());
    assertEquals("kustomize.config.k8s.io/v1alpha1", k.path("apiVersion").asText());
    assertEquals("Component", k.path("kind").asText());
    Set<String> listed = new TreeSet<>();
    k.path("resources").forEach(r -> listed.add(r.asText()));
    Set<String> present;
    try (Stream<Path> s = Files.list(MONITORING)) {
      present =
          s.map(p -> p.getFileName().toString())
              .filter(n -> n.endsWith(".yaml") && !n.equals("kustomization.yaml"))
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertEquals(present, listed, "kustomization.yaml resources vs deploy/monitoring/*.yaml");
    assertTrue(k.path("generatorOptions").path("disableNameSuffixHash").asBoolean());
    assertEquals("1", k.path("generatorOptions").path("labels").path("grafana_dashboard").asText());
    Set<String> generated = new TreeSet<>();
    for (JsonNode g : k.path("configMapGenerator")) {
      assertEquals(DeployManifestsTest.NS, g.path("namespace").asText());
      g.path("files").forEach(f -> generated.add(f.asText()));
    }
    assertEquals(
        DASHBOARD_UIDS.keySet().stream()
            .map(f -> "dashboards/" + f)
            .collect(Collectors.toCollection(TreeSet::new)),
        generated);
  }

  /** Fields of the Prometheus Operator's PodMonitor (monitoring.coreos.com/v1) used or allowed. */
  static final Set<String> POD_MONITOR_SPEC =
      Set.of(
          "jobLabel",
          "podTargetLabels",
          "podMetricsEndpoints",
          "selector",
          "namespaceSelector",
          "sampleLimit",
          "targetLimit",
          "labelLimit",
          "labelNameLengthLimit",
          "labelValueLengthLimit",
          "attachMetadata");

  static final Set<String> POD_METRICS_ENDPOINT =
      Set.of(
          "port",
          "targetPort",
          "path",
          "scheme",
          "params",
          "interval",
          "scrapeTimeout",
          "tlsConfig",
          "bearerTokenSecret",
          "honorLabels",
          "honorTimestamps",
          "basicAuth",
          "oauth2",
          "authorization",
          "metricRelabelings",
          "relabelings",
          "proxyUrl",
          "followRedirects",
          "enableHttp2",
          "filterRunning");

  @Test
  void thePodMonitorScrapesEveryMembersHttpPortWithTheMetricsToken() throws IOException {
    JsonNode pm = YAML.readTree(MONITORING.resolve("podmonitor.yaml").toFile());
    assertEquals("PodMonitor", pm.path("kind").asText());
    assertEquals(DeployManifestsTest.NS, pm.path("metadata").path("namespace").asText());
    JsonNode spec = pm.path("spec");
    assertTrue(POD_MONITOR_SPEC.containsAll(fieldNames(spec)), "unknown fields: " + spec);
    // It selects the DaemonSet's pods, in their namespace.
    assertEquals(
        DeployManifestsTest.daemonSetSelector(),
        YAML.convertValue(spec.path("selector").path("matchLabels"), Map.class));
    assertEquals(
        List.of(DeployManifestsTest.NS),
        YAML.convertValue(spec.path("namespaceSelector").path("matchNames"), List.class));
    assertEquals(1, spec.path("podMetricsEndpoints").size());
    JsonNode ep = spec.path("podMetricsEndpoints").get(0);
    assertTrue(POD_METRICS_ENDPOINT.containsAll(fieldNames(ep)), "unknown fields: " + ep);
    // The port the DaemonSet names http: plain HTTP (the members serve TLS on the webhook only).
    assertEquals("http", ep.path("port").asText());
    assertEquals(
        8080,
        DeployManifestsTest.arbiter().getPorts().stream()
            .filter(p -> p.getName().equals("http"))
            .findFirst()
            .orElseThrow()
            .getContainerPort());
    assertEquals("8080", DeployManifestsTest.argValue("--port"), "the API's port, plain HTTP");
    assertEquals("http", ep.path("scheme").asText());
    assertEquals("/metrics", ep.path("path").asText());
    assertFalse(ep.has("tlsConfig"));
    // The bearer token: the Secret of the component's ServiceAccount.
    assertEquals("Bearer", ep.path("authorization").path("type").asText());
    assertEquals(
        "gpushare-metrics-token",
        ep.path("authorization").path("credentials").path("name").asText());
    assertEquals("token", ep.path("authorization").path("credentials").path("key").asText());
    // job="gpushare", as every alert selects.
    boolean job = false;
    for (JsonNode r : ep.path("relabelings")) {
      if (r.path("targetLabel").asText().equals("job")) {
        assertEquals("replace", r.path("action").asText());
        assertEquals("gpushare", r.path("replacement").asText());
        assertFalse(r.has("sourceLabels"), "job is set, not copied: " + r);
        job = true;
      }
    }
    assertTrue(job, "no relabeling sets job");
  }

  @Test
  void theScrapeCredentialMayGetMetricsAndNothingElse() throws IOException {
    Scope metrics = Scope.of("GET", "/metrics");
    assertFalse(metrics.isPublic());
    ServiceAccount sa = typed("serviceaccount-gpushare-metrics.yaml");
    Secret token = typed("secret-gpushare-metrics-token.yaml");
    ClusterRole role = typed("clusterrole-gpushare-metrics.yaml");
    ClusterRoleBinding binding = typed("clusterrolebinding-gpushare-metrics.yaml");
    assertEquals(DeployManifestsTest.NS, sa.getMetadata().getNamespace());
    assertEquals(Boolean.FALSE, sa.getAutomountServiceAccountToken());
    assertEquals("kubernetes.io/service-account-token", token.getType());
    assertEquals(DeployManifestsTest.NS, token.getMetadata().getNamespace());
    assertEquals(
        sa.getMetadata().getName(),
        token.getMetadata().getAnnotations().get("kubernetes.io/service-account.name"));
    assertEquals(
        Map.of(Scope.API_GROUP + "/" + metrics.resource(), Set.of(metrics.verb())),
        DeployManifestsTest.grants(role.getRules()));
    DeployManifestsTest.assertEveryRuleHasAReason(
        MONITORING.resolve("clusterrole-gpushare-metrics.yaml"));
    assertEquals("ClusterRole", binding.getRoleRef().getKind());
    assertEquals(role.getMetadata().getName(), binding.getRoleRef().getName());
    assertEquals(1, binding.getSubjects().size());
    assertEquals("ServiceAccount", binding.getSubjects().get(0).getKind());
    assertEquals(sa.getMetadata().getName(), binding.getSubjects().get(0).getName());
    assertEquals(DeployManifestsTest.NS, binding.getSubjects().get(0).getNamespace());
  }

  @Test
  void kubectlKustomizeRendersAnOverlayWithTheMonitoringComponent() throws Exception {
    List<Doc> rendered = DeployManifestsTest.kustomize("monitoring");
    Set<String> keys = rendered.stream().map(Doc::key).collect(Collectors.toSet());
    String ns = DeployManifestsTest.NS;
    for (String key :
        List.of(
            "PrometheusRule/" + ns + "/gpushare",
            "PodMonitor/" + ns + "/gpushare",
            "ServiceAccount/" + ns + "/gpushare-metrics",
            "Secret/" + ns + "/gpushare-metrics-token",
            "ClusterRole/gpushare-metrics",
            "ClusterRoleBinding/gpushare-metrics")) {
      assertTrue(keys.contains(key), key + " not rendered: " + keys);
    }
    // The base is unchanged beside it: its objects, the component's six, three dashboards.
    assertEquals(DeployManifestsTest.docs.size() + 6 + 3, keys.size(), keys.toString());
    Map<String, JsonNode> dashboards = dashboards();
    for (String file : DASHBOARD_UIDS.keySet()) {
      String name = "gpushare-dashboard-" + file.substring("gpushare-".length(), file.length() - 5);
      Doc cm =
          rendered.stream()
              .filter(d -> d.key().equals("ConfigMap/" + ns + "/" + name))
              .findFirst()
              .orElseThrow(() -> new AssertionError("no ConfigMap " + name + ": " + keys));
      assertEquals(
          "1", cm.tree().path("metadata").path("labels").path("grafana_dashboard").asText());
      String data = cm.tree().path("data").path(file).asText();
      assertEquals(
          Files.readString(DASHBOARDS.resolve(file)), data, name + " holds " + file + " as it is");
      assertEquals(dashboards.get(file), JSON.readTree(data));
    }
    // The base's own ConfigMap does not become a dashboard.
    Doc config =
        rendered.stream()
            .filter(d -> d.key().equals("ConfigMap/" + ns + "/gpushare-config"))
            .findFirst()
            .orElseThrow();
    assertFalse(config.tree().path("metadata").path("labels").has("grafana_dashboard"));
  }

  @Test
  void kubectlKustomizeRendersTheComponentAloneForKubectlApply() throws Exception {
    // kubectl apply -k deploy/monitoring/ beside an installed deploy/: the component's own objects.
    Optional<Path> kubectl =
        DeployManifestsTest.onPath("kubectl").or(KubeControlPlane::builtKubectl);
    Assumptions.assumeTrue(
        kubectl.isPresent(),
        "kubectl is not on PATH, and src-test/kube (bash src-test/kube/build.sh) is not built");
    Process p =
        new ProcessBuilder(kubectl.get().toString(), "kustomize", MONITORING.toString())
            .redirectErrorStream(false)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "kubectl kustomize did not finish");
    assertEquals(0, p.exitValue(), err);
    Set<String> keys = new TreeSet<>();
    for (JsonNode t : DeployManifestsTest.yamlDocuments(out)) {
      keys.add(new Doc(MONITORING, t).key());
    }
    String ns = DeployManifestsTest.NS;
    assertEquals(
        new TreeSet<>(
            List.of(
                "PrometheusRule/" + ns + "/gpushare",
                "PodMonitor/" + ns + "/gpushare",
                "ServiceAccount/" + ns + "/gpushare-metrics",
                "Secret/" + ns + "/gpushare-metrics-token",
                "ClusterRole/gpushare-metrics",
                "ClusterRoleBinding/gpushare-metrics",
                "ConfigMap/" + ns + "/gpushare-dashboard-node",
                "ConfigMap/" + ns + "/gpushare-dashboard-pod",
                "ConfigMap/" + ns + "/gpushare-dashboard-control-plane")),
        keys);
  }

  // ---------------------------------------------------------------- helpers

  static <T extends HasMetadata> T typed(String file) throws IOException {
    Path p = MONITORING.resolve(file);
    List<JsonNode> trees = DeployManifestsTest.yamlDocuments(Files.readString(p));
    assertEquals(1, trees.size(), file + ": one object per file");
    Doc d = new Doc(p, trees.get(0));
    T typed = DeployManifestsTest.typed(d);
    assertEquals(List.of(), DeployManifestsTest.unknownFields(typed), file + ": unknown fields");
    return typed;
  }

  static Set<String> fieldNames(JsonNode node) {
    Set<String> names = new TreeSet<>();
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      names.add(it.next());
    }
    return names;
  }

  static Path promtool() {
    Optional<Path> promtool = DeployManifestsTest.onPath("promtool");
    Assumptions.assumeTrue(promtool.isPresent(), SKIP_PROMTOOL);
    return promtool.get();
  }

  /** Runs promtool in {@link #WORK}; fails with its output unless it exits 0. */
  static String run(Path promtool, List<String> args, String what) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(promtool.toString());
    command.addAll(args);
    Process p =
        new ProcessBuilder(command).directory(WORK.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(what + " did not finish within 120 s:\n" + out);
    }
    if (p.exitValue() != 0) {
      fail(what + " failed (exit " + p.exitValue() + ") in " + WORK + ":\n" + out);
    }
    return out;
  }
}
