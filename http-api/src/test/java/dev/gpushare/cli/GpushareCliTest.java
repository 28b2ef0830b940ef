package dev.gpushare.cli;

import static dev.gpushare.cli.StubServer.Answer.json;
import static dev.gpushare.cli.StubServer.Answer.problem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The commands against canned API answers: tables, -o, tokens, errors and exit statuses. */
class GpushareCliTest {

  record Result(int status, String out, String err) {}

  @TempDir Path cwd;
  StubServer stub;
  Map<String, String> env = new HashMap<>();

  @BeforeEach
  void start() throws IOException {
    stub = new StubServer();
    env.put("GPUSHARE_SERVER", stub.uri().toString());
  }

  @AfterEach
  void stop() {
    stub.close();
  }

  Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status =
        GpushareCli.execute(
            args,
            env,
            cwd,
            cwd.resolve("no-service-account"),
            Signals.posix(),
            new PrintWriter(out),
            new PrintWriter(err));
    return new Result(status, out.toString(), err.toString());
  }

  // ------------------------------------------------------------------ tables

  @Test
  void nodesIsATableOfNamePolicyGpusHealthyQueue() {
    stub.on("GET", "/v1/nodes", json(Canned.NODES));
    Result r = run("nodes");
    assertEquals(0, r.status(), r::toString);
    assertEquals(
        "NAME     POLICY       GPUS   HEALTHY   QUEUE\n"
            + "demo     share-pool   2      1         2\n"
            + "node-1   none         0      0         0\n",
        r.out());
  }

  @Test
  void queueListsTheWaitingPodsHeadFirst() {
    stub.on("GET", "/v1/nodes/demo/queue", json(Canned.QUEUE));
    Result r = run("queue", "demo");
    assertEquals(0, r.status(), r::toString);
    assertEquals(
        "POSITION   POD         WAITING   LIMITS\n"
            + "1          default/d   1m15s     100/100\n"
            + "2          default/b   3s        50/50\n",
        r.out());
    stub.on("GET", "/v1/nodes/empty/queue", json("{\"items\":[]}"));
    assertEquals("The ready queue of node empty is empty.\n", run("queue", "empty").out());
  }

  @Test
  void podsIsATableWithStateGpuLimitsPositionAndTimes() {
    stub.on(
        "GET",
        "/v1/pods",
        json(
            Canned.items(
                Canned.running("a", 0, Canned.UUID0, 3700),
                Canned.ready("d", 1, 75),
                Canned.pod("c", "Hibernation"))));
    Result r = run("pods", "--node", "demo");
    assertEquals(0, r.status(), r::toString);
    assertEquals(
        "NAMESPACE   NAME   NODE   STATE         GPU   LIMITS    POSITION   WAITING   RUNNING\n"
            + "default     a      demo   Running       0     100/100   -          -         1h1m\n"
            + "default     d      demo   Ready         -     100/100   1          1m15s     -\n"
            + "default     c      demo   Hibernation   -     100/100   -          -         -\n",
        r.out());
    assertEquals("node=demo", stub.requests("GET", "/v1/pods").get(0).query());
  }

  @Test
  void podDescribesStateDeviceAndTheWorkloadEnvironment() {
    stub.on(
        "GET",
        "/v1/namespaces/default/pods/a",
        json(Canned.running("a", 1, Canned.UUID1, 12).toString()));
    Result r = run("pod", "default/a");
    assertEquals(0, r.status(), r::toString);
    assertTrue(r.out().contains("Name:         a\n"), r.out());
    assertTrue(r.out().contains("State:        Running\n"), r.out());
    assertTrue(r.out().contains("Limits:       core 100%, memory 100%\n"), r.out());
    assertTrue(r.out().contains("GPU:          1 (" + Canned.UUID1 + ")\n"), r.out());
    assertTrue(r.out().contains("Running:      12s\n"), r.out());
    assertTrue(
        r.out().contains("Workload env:\n  CUDA_VISIBLE_DEVICES=" + Canned.UUID1 + "\n"), r.out());
  }

  @Test
  void nodeDescribesGpusQueueAndConditions() {
    String demo = Output.JSON.valueToTree(parse(Canned.NODES).path("items").get(0)).toString();
    stub.on("GET", "/v1/nodes/demo", json(demo));
    Result r = run("node", "demo");
    assertEquals(0, r.status(), r::toString);
    assertTrue(r.out().contains("Policy:       share-pool\n"), r.out());
    assertTrue(
        r.out().contains("QoS:          preemptEnabled=true, podMaxDurationMinutes=120"), r.out());
    assertTrue(
        r.out()
            .contains(
                "  0       "
                    + Canned.UUID0
                    + "   NVIDIA H800   81559 MiB   Healthy     50/50    default/a\n"),
        r.out());
    assertTrue(r.out().contains("  GPUSharePolicyValid   True     Valid    gpu share"), r.out());
    assertTrue(r.out().contains("  1          default/d   1m15s     100/100\n"), r.out());
    assertTrue(r.out().contains("Events:       <none>\n"), r.out());
  }

  @Test
  void demandAndReleaseSayWhereThePodIs() {
    stub.on(
        "POST", "/v1/namespaces/default/pods/d/demand", json(Canned.ready("d", 2, 0).toString()));
    stub.on(
        "DELETE",
        "/v1/namespaces/default/pods/a/demand",
        json(Canned.pod("a", "Hibernation").toString()));
    stub.on(
        "POST",
        "/v1/namespaces/default/pods/r/demand",
        json(Canned.running("r", 1, Canned.UUID1, 0).toString()));
    assertEquals(
        "default/d: Ready, position 2 in the queue of node demo, waiting 0s\n",
        run("demand", "default/d").out());
    assertEquals("default/a: Hibernation\n", run("release", "default/a").out());
    assertEquals(
        "default/r: Running on GPU 1 (" + Canned.UUID1 + ") of node demo\n",
        run("demand", "default/r").out());
  }

  // ------------------------------------------------------------------ -o

  @Test
  void outputJsonAndYamlAreTheApisAnswer() throws IOException {
    stub.on("GET", "/v1/nodes", json(Canned.NODES));
    Result j = run("nodes", "-o", "json");
    assertEquals(0, j.status(), j::toString);
    assertEquals(parse(Canned.NODES), parse(j.out()));
    assertTrue(j.out().contains("\n  \"items\" : ["), "pretty-printed: " + j.out());
    Result y = run("-o", "yaml", "nodes");
    assertEquals(2, y.status(), "-o belongs to the command: " + y);
    y = run("nodes", "--output=YAML");
    assertEquals(0, y.status(), y::toString);
    assertTrue(y.out().startsWith("items:\n- name: demo\n"), y.out());
    assertEquals(parse(Canned.NODES), Output.YAML.readTree(y.out()));
    assertEquals(2, run("nodes", "-o", "xml").status());
  }

  // ------------------------------------------------------------------ journal

  @Test
  void journalPrintsATimelineReadPageByPage() {
    stub.on(
        "GET",
        "/v1/journal/events",
        (r, x) -> {
          Map<String, String> q = query(r.query());
          long from = Long.parseLong(q.get("fromSequenceNr"));
          int limit = Integer.parseInt(q.get("limit"));
          ObjectNode all = Output.JSON.createObjectNode();
          ArrayNode items = all.putArray("items");
          for (long s = from; s < from + limit && s <= 1500; s++) {
            ObjectNode e = items.addObject();
            e.put("persistenceId", q.get("persistenceId"))
                .put("sequenceNr", s)
                .put("timestamp", "2026-01-01T00:00:00Z")
                .put("type", s == 1 ? "PodActor.SpecSeen" : "PodActor.Granted");
            e.putObject("event").put("n", s);
          }
          StubServer.send(x, json(all.toString()));
        });
    Result r = run("journal", "Pod|default/a/u");
    assertEquals(0, r.status(), r::toString);
    List<String> lines = r.out().lines().toList();
    assertEquals(1500, lines.size());
    assertEquals("   1  2026-01-01T00:00:00Z  PodActor.SpecSeen  {\"n\":1}", lines.get(0));
    assertEquals("1500  2026-01-01T00:00:00Z  PodActor.Granted   {\"n\":1500}", lines.get(1499));
    List<StubServer.Request> pages = stub.requests("GET", "/v1/journal/events");
    assertEquals(2, pages.size());
    assertEquals("Pod|default/a/u", query(pages.get(0).query()).get("persistenceId"));
    assertEquals("1001", query(pages.get(1).query()).get("fromSequenceNr"));

    Result some = run("journal", "Pod|default/a/u", "--from", "1490", "--limit", "5", "-o", "json");
    assertEquals(5, parse(some.out()).path("items").size(), some::toString);
    assertEquals(1490, parse(some.out()).path("items").get(0).path("sequenceNr").asLong());

    Result none = run("journal", "Pod|default/a/u", "--from", "2000");
    assertEquals(0, none.status());
    assertEquals("", none.out());
    assertTrue(none.err().startsWith("no events for Pod|default/a/u"), none.err());
    assertEquals(2, run("journal").status());
    assertEquals(2, run("journal", "x", "--limit", "0").status());
  }

  // ------------------------------------------------------------------ history

  /**
   * A history of 2500 entries, cursors 10, 20, …: a grant, a preemption by team/a, then notes; the
   * stub pages as the server does ({@code next} when the page is full and more follow).
   */
  private void historyStub() {
    stub.on(
        "GET",
        "/v1/namespaces/team/pods/b/history",
        (r, x) -> {
          Map<String, String> q = query(r.query());
          long after = Long.parseLong(q.get("after"));
          int limit = Integer.parseInt(q.get("limit"));
          ObjectNode page = Output.JSON.createObjectNode();
          ArrayNode items = page.putArray("items");
          long last = 0;
          for (long c = (after / 10 + 1) * 10; c <= 25000 && items.size() < limit; c += 10) {
            ObjectNode e = items.addObject().put("cursor", c);
            if (c == 10) {
              e.put("persistenceId", "NodeArbiter|n1").put("type", "NodeArbiter.Granted");
              e.putObject("event").put("pod", "team/b/u-b").put("gpu", 1);
            } else if (c == 20) {
              e.put("persistenceId", "NodeArbiter|n1").put("type", "NodeArbiter.Preempted");
              e.putObject("event")
                  .put("by", "team/a/u-a")
                  .put("gpu", 1)
                  .putArray("victims")
                  .add("team/b/u-b");
            } else {
              e.put("persistenceId", "Pod|team/b/u-b").put("type", "PodActor.Noted");
              e.putObject("event")
                  .putArray("events")
                  .addObject()
                  .put("reason", "GPUSharePreempted")
                  .put("message", "GPU is preempted by a.");
            }
            e.put("sequenceNr", c / 10).put("timestamp", "2026-01-01T00:00:00Z");
            last = c;
          }
          if (items.size() == limit && last < 25000) {
            page.put("next", last);
          } else {
            page.putNull("next");
          }
          StubServer.send(x, json(page.toString()));
        });
  }

  @Test
  void historyPrintsTheFirstHundredEntriesAsATableAndSaysThereAreMore() {
    historyStub();
    Result r = run("history", "team/b");
    assertEquals(0, r.status(), r::toString);
    List<String> lines = r.out().lines().toList();
    assertEquals(101, lines.size(), r::toString);
    assertEquals(
        List.of("TIME", "ENTITY", "EVENT", "SUMMARY"), List.of(lines.get(0).split(" {3,}")));
    assertTrue(
        lines.get(1).matches("2026-01-01T00:00:00Z +arbiter n1 +Granted +granted GPU 1"),
        lines.get(1));
    assertTrue(
        lines.get(2).matches(".*arbiter n1 +Preempted +preempted on GPU 1 by team/a"),
        lines.get(2));
    assertTrue(
        lines.get(3).matches(".*pod u-b +Noted +Event GPUSharePreempted: GPU is preempted by a\\."),
        lines.get(3));
    assertTrue(r.err().startsWith("more entries after these 100"), r.err());
    List<StubServer.Request> pages = stub.requests("GET", "/v1/namespaces/team/pods/b/history");
    assertEquals(1, pages.size());
    assertEquals("0", query(pages.get(0).query()).get("after"));
    assertEquals("100", query(pages.get(0).query()).get("limit"));
  }

  @Test
  void historyAllWalksEveryPageAndJsonIsTheApisShape() {
    historyStub();
    Result all = run("history", "team/b", "--all", "-o", "json");
    assertEquals(0, all.status(), all::toString);
    JsonNode whole = parse(all.out());
    assertEquals(2500, whole.path("items").size());
    assertTrue(whole.path("next").isNull());
    assertEquals(25000, whole.path("items").get(2499).path("cursor").asLong());
    List<StubServer.Request> pages = stub.requests("GET", "/v1/namespaces/team/pods/b/history");
    assertEquals(3, pages.size(), "pages of 1000 after the cursor each answer gave");
    assertEquals("10000", query(pages.get(1).query()).get("after"));
    assertEquals("20000", query(pages.get(2).query()).get("after"));
    assertEquals("", all.err());

    Result some = run("history", "team/b", "--limit", "1500", "-o", "json");
    JsonNode five = parse(some.out());
    assertEquals(1500, five.path("items").size());
    assertEquals(15000, five.path("next").asLong());
  }

  @Test
  void historyRefusesBadUsageBeforeAskingAnything() {
    historyStub();
    Result both = run("history", "team/b", "--all", "--limit", "5");
    assertEquals(2, both.status(), both::toString);
    assertTrue(both.err().contains("--all and --limit 5: give one of them"), both.err());
    Result zero = run("history", "team/b", "--limit", "0");
    assertEquals(2, zero.status(), zero::toString);
    assertTrue(zero.err().contains("--limit 0: give a number of entries, 1 or more"), zero.err());
    Result name = run("history", "team/B_b");
    assertEquals(2, name.status(), name::toString);
    assertTrue(name.err().contains("is not a Kubernetes name"), name.err());
    assertEquals(2, run("history").status());
    assertEquals(List.of(), stub.requests("GET", "/v1/namespaces/team/pods/b/history"));
  }

  @Test
  void journalIdsListsThePersistenceIds() {
    stub.on(
        "GET",
        "/v1/journal/persistence-ids",
        json("{\"items\":[\"Node|demo\",\"NodeArbiter|demo\"]}"));
    Result r = run("journal", "--ids");
    assertEquals("Node|demo\nNodeArbiter|demo\n", r.out(), r::toString);
    assertEquals(2, run("journal", "--ids", "Node|demo").status());
  }

  // ------------------------------------------------------------------ tokens

  @Test
  void theTokenIsSentAsABearerHeader() {
    stub.on("GET", "/v1/nodes", json(Canned.NODES));
    env.put("GPUSHARE_TOKEN", "s3cret");
    run("nodes");
    assertEquals("Bearer s3cret", stub.requests.get(0).authorization());
    run("nodes", "--token", "other");
    assertEquals("Bearer other", stub.requests.get(1).authorization());
    env.remove("GPUSHARE_TOKEN");
    run("nodes");
    assertNull(stub.requests.get(2).authorization(), "no token, no header");
  }

  @Test
  void unauthenticatedAndForbiddenExitWithThree() {
    stub.on(
        "GET",
        "/v1/nodes",
        problem(
            401,
            "{\"type\":\"about:blank\",\"title\":\"Unauthorized\",\"status\":401,"
                + "\"detail\":\"the bearer token is not valid\",\"field\":\"Authorization\"}"));
    stub.on(
        "GET",
        "/v1/journal/persistence-ids",
        problem(
            403,
            "{\"type\":\"about:blank\",\"title\":\"Forbidden\",\"status\":403,"
                + "\"detail\":\"user alice may not get journal\"}"));
    Result r = run("nodes", "--token", "bad");
    assertEquals(3, r.status(), r::toString);
    assertEquals(
        "error: not authenticated: the bearer token is not valid (token from --token)\n", r.err());
    Result f = run("journal", "--ids", "--token", "alice");
    assertEquals(3, f.status(), f::toString);
    assertTrue(f.err().startsWith("error: not allowed: user alice may not get journal"), f.err());
    Result none = run("nodes");
    assertTrue(none.err().contains("(no token found: "), none.err());
  }

  // ------------------------------------------------------------------ errors

  @Test
  void aProblemIsPrintedWithEveryFieldErrorAndExitsWithOne() {
    stub.on(
        "POST",
        "/v1/namespaces/default/pods/x/demand",
        problem(
            422,
            "{\"type\":\"https://gpushare.dev/problems/invalid\",\"title\":\"Invalid\","
                + "\"status\":422,\"detail\":\"the pod's share is against the rules\","
                + "\"field\":\"limits.core\",\"errors\":["
                + "{\"field\":\"limits.core\",\"value\":\"120\",\"message\":\"at most 100\"},"
                + "{\"field\":\"requests.memory\",\"value\":null,\"message\":\"required\"}]}"));
    Result r = run("demand", "default/x");
    assertEquals(1, r.status(), r::toString);
    assertEquals(
        "error: the pod's share is against the rules\n"
            + "  limits.core: at most 100 (given: 120)\n"
            + "  requests.memory: required\n",
        r.err());
  }

  @Test
  void anAnswerThatIsNoProblemNamesTheStatus() {
    stub.on("GET", "/v1/nodes", new StubServer.Answer(502, "text/html", "<h1>Bad Gateway</h1>"));
    Result r = run("nodes");
    assertEquals(1, r.status());
    assertEquals("error: HTTP 502: <h1>Bad Gateway</h1>\n", r.err());
  }

  @Test
  void anUnreachableServerIsNamed() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Result r = run("nodes", "--server", "http://127.0.0.1:" + port);
    assertEquals(1, r.status());
    assertEquals(
        "error: cannot reach the gpushare server at http://127.0.0.1:"
            + port
            + ": connection refused\n",
        r.err());
  }

  @Test
  void badUsageExitsWithTwo() {
    assertEquals(2, run().status());
    assertEquals(2, run("frobnicate").status());
    assertEquals(2, run("pod", "no-slash").status());
    assertEquals(2, run("pod", "a/b/c").status());
    assertEquals(2, run("node").status());
    assertEquals(2, run("nodes", "--server", "ftp://x").status());
    assertEquals(2, run("run", "--pod", "default/a").status(), "CMD is required");
    assertEquals(2, run("run", "--interval", "soon", "--pod", "default/a", "true").status());
    Result r = run("pod", "no-slash");
    assertTrue(r.err().startsWith("error: NS/NAME 'no-slash': give the pod as NAMESPACE/NAME"));
    assertEquals(0, stub.requests.size(), "nothing reached the server");
  }

  @Test
  void runsOptionsEndAtTheCommand() {
    CommandLine cl = GpushareCli.commandLine(env, cwd, cwd.resolve("none"), Signals.posix());
    CommandLine.ParseResult pr =
        cl.parseArgs(
            "run", "--pod", "ns/p", "--interval", "2s", "sh", "-c", "echo --pod x --grace 1s");
    RunCommand run = (RunCommand) pr.subcommand().commandSpec().userObject();
    assertEquals("ns/p", run.pod);
    assertEquals(Duration.ofSeconds(2), run.interval);
    assertEquals(Duration.ofSeconds(30), run.grace);
    assertEquals(List.of("sh", "-c", "echo --pod x --grace 1s"), run.command);

    cl = GpushareCli.commandLine(env, cwd, cwd.resolve("none"), Signals.posix());
    pr = cl.parseArgs("run", "--grace", "5s", "--", "python", "--version");
    run = (RunCommand) pr.subcommand().commandSpec().userObject();
    assertEquals(Duration.ofSeconds(5), run.grace);
    assertEquals(Duration.ofSeconds(10), run.interval);
    assertEquals(List.of("python", "--version"), run.command);
  }

  @Test
  void theWorkloadsPodComesFromTheFlagThenGpusharePodThenTheDownwardApi() {
    Map<String, String> e = new HashMap<>();
    e.put("GPUSHARE_POD", "team/from-env");
    e.put("POD_NAMESPACE", "kube");
    e.put("POD_NAME", "downward");
    assertEquals(new PodRef("ns", "flag"), PodRef.ofWorkload("ns/flag", e));
    assertEquals(new PodRef("team", "from-env"), PodRef.ofWorkload(null, e));
    e.remove("GPUSHARE_POD");
    assertEquals(new PodRef("kube", "downward"), PodRef.ofWorkload(null, e));
    e.remove("POD_NAME");
    CliException none =
        org.junit.jupiter.api.Assertions.assertThrows(
            CliException.class, () -> PodRef.ofWorkload(null, e));
    assertTrue(none.getMessage().contains("--pod"), none.getMessage());
  }

  @Test
  void aPodRefIsANamespaceLabelAndASubdomainName() {
    assertEquals(new PodRef("ns", "my.pod-1"), PodRef.parse("ns/my.pod-1", "--pod"));
    CliException dotted =
        org.junit.jupiter.api.Assertions.assertThrows(
            CliException.class, () -> PodRef.parse("a.b/x", "--pod"));
    assertTrue(
        dotted.getMessage().contains("'a.b' is not a Kubernetes namespace"), dotted.getMessage());
    assertTrue(dotted.getMessage().contains("DNS-1123 label"), dotted.getMessage());
    String long64 = "n".repeat(64);
    CliException tooLong =
        org.junit.jupiter.api.Assertions.assertThrows(
            CliException.class, () -> PodRef.parse("ns/" + "x".repeat(254), "--pod"));
    assertTrue(tooLong.getMessage().contains("is not a Kubernetes name"), tooLong.getMessage());
    assertTrue(tooLong.getMessage().contains("DNS-1123 subdomain"), tooLong.getMessage());
    org.junit.jupiter.api.Assertions.assertThrows(
        CliException.class, () -> PodRef.parse(long64 + "/x", "--pod"));
  }

  // ------------------------------------------------------------------ pieces

  private static com.fasterxml.jackson.databind.JsonNode parse(String json) {
    try {
      return Output.JSON.readTree(json);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  static Map<String, String> query(String raw) {
    Map<String, String> q = new HashMap<>();
    for (String kv : raw.split("&")) {
      int eq = kv.indexOf('=');
      q.put(
          java.net.URLDecoder.decode(kv.substring(0, eq), java.nio.charset.StandardCharsets.UTF_8),
          java.net.URLDecoder.decode(
              kv.substring(eq + 1), java.nio.charset.StandardCharsets.UTF_8));
    }
    return q;
  }
}
