package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Upgrades keep their decisions: a data directory written by release 0.1 (commit 44fda3f, whose GPU
 * actors kept ledgers and whose pod actors journaled every status; recorded by {@code
 * src-test/src/test/resources/upgrade/record-0.1.sh}) recovers under this code with every view as
 * that release showed it — states, GPUs, holders, queue order and times, Events and conditions —
 * and goes on deciding from there.
 */
class UpgradeTest {

  private static final String FIXTURE = "/upgrade/journal-44fda3f/";

  @Test
  void aDataDirectoryOfRelease01RecoversWithEveryDecisionAndGoesOn(@TempDir Path dir)
      throws Exception {
    Path data = dir.resolve("data");
    Files.createDirectories(data);
    copy(FIXTURE + "journal.mv.db", data.resolve("journal.mv.db"));
    copy(FIXTURE + "clock.txt", data.resolve("clock.txt"));
    List<JsonNode> recorded = new ArrayList<>();
    for (String line : resource("/upgrade/views-44fda3f.jsonl").split("\n")) {
      if (!line.isBlank()) {
        recorded.add(Api.JSON.readTree(line));
      }
    }

    ServerProcess server = ServerProcess.start("UpgradeTest", data);
    try {
      Api api = server.api();
      assertEquals(recorded.get(0), api.node("demo"), "node demo as 0.1 showed it");
      assertEquals(recorded.get(1), api.node("fixed"), "node fixed as 0.1 showed it");
      assertEquals(recorded.get(2), api.node("spare"), "node spare as 0.1 showed it");
      assertEquals(
          withoutUsage(recorded.get(3).path("items")),
          asOf01(api.allPods()),
          "every pod as 0.1 showed it");
      assertInvariants(api);

      // The GPU actors' ledger events recover too: every GPU takes a health change.
      JsonNode down =
          Api.ok(
              api.put(
                  "/v1/nodes/spare/gpus/0/health",
                  "{\"health\":\"Unhealthy\"}",
                  "application/json"));
      assertEquals("Unhealthy", down.path("gpus").get(0).path("health").asText());
      Api.ok(
          api.put("/v1/nodes/spare/gpus/0/health", "{\"health\":\"Healthy\"}", "application/json"));

      // And it goes on: a and b leave GPU 1, the queue head c (limit 100) gets it.
      assertHibernation(api.release("a"));
      assertHibernation(api.release("b"));
      assertRunningOn(api.pod("c"), 1);
      assertRunningOn(api.pod("d"), 0);
      JsonNode events =
          Api.ok(
              api.get(
                  "/v1/journal/events?persistenceId="
                      + Api.enc("NodeArbiter|demo")
                      + "&fromSequenceNr=1&limit=1000"));
      JsonNode last = events.path("items").get(events.path("items").size() - 1);
      assertEquals("NodeArbiter.Granted", last.path("type").asText(), last.toString());
      assertTrue(last.path("event").path("pod").asText().startsWith("default/c/"), last::toString);
      assertInvariants(api);

      // a's history: its record of 0.1 (written before tags: found through the name's index),
      // then the decision taken since; the arbiter's decisions of 0.1 carry no tag (EVENTS.md).
      JsonNode history = Api.ok(api.get(Api.podPath("a") + "/history?limit=1000")).path("items");
      String record = "Pod|default/a/4b2a9089-1be8-4b0d-908e-15a007c79397";
      for (int seq = 1; seq <= 6; seq++) {
        JsonNode e = history.get(seq - 1);
        assertEquals(record, e.path("persistenceId").asText(), history::toString);
        assertEquals(seq, e.path("sequenceNr").asInt(), history::toString);
      }
      assertEquals("PodActor.SpecSeen", history.get(0).path("type").asText(), history::toString);
      JsonNode released = history.get(history.size() - 1);
      assertEquals("NodeArbiter|demo", released.path("persistenceId").asText(), history::toString);
      assertEquals("NodeArbiter.Released", released.path("type").asText(), history::toString);
      for (JsonNode e : history) {
        assertTrue(
            e.path("persistenceId").asText().equals(record)
                || e.path("cursor").asLong() > history.get(5).path("cursor").asLong(),
            history::toString);
      }

      JsonNode before = api.allPods();
      server.stop();
      server.restart();
      assertEquals(
          withoutUsage(before),
          withoutUsage(server.api().allPods()),
          "and it recovers what it wrote itself");
      assertFalse(
          Files.readString(server.logFile()).contains("ERROR"),
          "no errors in the log: " + server.logFile());
    } finally {
      server.close();
    }
  }

  /**
   * The pods without {@code usage}: telemetry is sampled live (every 5 s of the real clock), so
   * whether a view has a sample yet depends on how fast the server started; decisions do not.
   */
  private static JsonNode withoutUsage(JsonNode pods) {
    JsonNode copy = pods.deepCopy();
    for (JsonNode p : copy) {
      ((ObjectNode) p).remove("usage");
    }
    return copy;
  }

  /**
   * The pods as 0.1 showed them: without {@code usage}, and without the fields added since
   * (extending the API, never changing it), which a journal of 0.1 must leave at null or at their
   * start: {@code checkpoint} (nothing of 0.1 was checkpointed) and {@code computeLimit} (the
   * node's setting, no report yet: no library of 0.1's pods ever reported).
   */
  private static JsonNode asOf01(JsonNode pods) {
    JsonNode copy = withoutUsage(pods);
    for (JsonNode p : copy) {
      assertTrue(p.has("checkpoint") && p.get("checkpoint").isNull(), p.toString());
      ((ObjectNode) p).remove("checkpoint");
      JsonNode limit = p.get("computeLimit");
      assertTrue(limit != null, p.toString());
      if (!limit.isNull()) {
        assertTrue(limit.path("reportedAt").isNull(), p.toString());
        assertTrue(limit.path("heldSeconds").asDouble() == 0, p.toString());
      }
      ((ObjectNode) p).remove("computeLimit");
    }
    return copy;
  }

  private static void copy(String resource, Path to) throws IOException {
    try (InputStream in = UpgradeTest.class.getResourceAsStream(resource)) {
      Files.copy(in, to);
    }
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = UpgradeTest.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
