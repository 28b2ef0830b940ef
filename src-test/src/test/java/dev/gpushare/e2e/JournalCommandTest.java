package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code java -jar gpushare.jar journal} on the embedded H2 journal: refused with a clear message
 * while the server holds the file, and once the server is stopped the same timeline as the HTTP
 * journal endpoints gave while it ran.
 */
class JournalCommandTest {

  @TempDir Path dir;

  @Test
  void theCliReadsTheH2JournalOnceTheServerIsStopped() {
    Path data = dir.resolve("data");
    ServerProcess server = ServerProcess.start("JournalCommandTest", data);
    String podId;
    String podRef;
    JsonNode httpEvents;
    JsonNode httpHistory;
    try {
      Api api = server.api();
      String node = Manifests.unique("cli");
      api.putNode(node, 1, "share-pool", null);
      String pod = node + "-p";
      String uid = api.createPod(sharePod(pod, node, 10, 100)).path("uid").asText();
      assertRunningOn(api.demand(pod), 0);
      api.release(pod);
      podId = "Pod|" + Api.NS + "/" + pod + "/" + uid;
      podRef = Api.NS + "/" + pod;
      httpHistory = Api.ok(api.get(Api.podPath(pod) + "/history")).path("items");
      httpEvents =
          Api.ok(api.get("/v1/journal/events?persistenceId=" + Api.enc(podId))).path("items");

      CommandProcess.Result locked =
          CommandProcess.run(Map.of(), "journal", "--ids", "--data", data.toString());
      assertEquals(1, locked.status(), locked::toString);
      assertEquals("", locked.out(), locked::toString);
      assertTrue(
          locked
              .err()
              .contains(
                  " is in use by another process: the embedded H2 journal is locked"
                      + " while the gpushare server that uses this --data directory runs; stop that"
                      + " server"),
          locked::toString);
      assertTrue(locked.err().contains("GET /v1/journal/events?persistenceId="), locked::toString);
    } finally {
      server.stop();
    }

    CommandProcess.Result ids =
        CommandProcess.run(Map.of(), "journal", "--ids", "--data", data.toString());
    assertEquals(0, ids.status(), ids::toString);
    assertTrue(ids.lines().contains(podId), ids::toString);

    CommandProcess.Result events =
        CommandProcess.run(Map.of(), "journal", podId, "--data", data.toString());
    assertEquals(0, events.status(), events::toString);
    List<String> expected = new ArrayList<>();
    for (JsonNode e : httpEvents) {
      expected.add(
          e.path("sequenceNr").asText() + " " + e.path("type").asText() + " " + e.path("event"));
    }
    List<String> printed = new ArrayList<>();
    for (String line : events.lines()) {
      String[] columns = line.strip().split("  +", 4);
      printed.add(columns[0] + " " + columns[2] + " " + columns[3]);
    }
    assertEquals(expected, printed, "the CLI prints what GET /v1/journal/events answered");

    // A pod's whole history, offline: the same entries as GET …/history, in the same order.
    CommandProcess.Result history =
        CommandProcess.run(Map.of(), "journal", "--pod", podRef, "--data", data.toString());
    assertEquals(0, history.status(), history::toString);
    List<String> expectedHistory = new ArrayList<>();
    for (JsonNode e : httpHistory) {
      expectedHistory.add(
          e.path("cursor").asText()
              + " "
              + e.path("persistenceId").asText()
              + " "
              + e.path("sequenceNr").asText()
              + " "
              + e.path("type").asText()
              + " "
              + e.path("event"));
    }
    assertTrue(expectedHistory.size() >= 4, expectedHistory::toString);
    List<String> printedHistory = new ArrayList<>();
    for (String line : history.lines()) {
      String[] columns = line.strip().split("  +", 6);
      printedHistory.add(
          columns[0] + " " + columns[2] + " " + columns[3] + " " + columns[4] + " " + columns[5]);
    }
    assertEquals(expectedHistory, printedHistory, "journal --pod prints what GET …/history did");

    CommandProcess.Result page =
        CommandProcess.run(
            Map.of(),
            "journal",
            "--pod",
            podRef,
            "--after",
            httpHistory.get(0).path("cursor").asText(),
            "--limit",
            "1",
            "--data",
            data.toString());
    assertEquals(0, page.status(), page::toString);
    assertEquals(1, page.lines().size(), page::toString);
    assertTrue(
        page.lines().get(0).strip().startsWith(httpHistory.get(1).path("cursor").asText() + "  "),
        page::toString);
    String more = httpHistory.get(1).path("cursor").asText();
    assertTrue(
        page.err().contains("more after cursor " + more + " (give --after " + more + ")"),
        page::toString);

    CommandProcess.Result bad =
        CommandProcess.run(
            Map.of(), "journal", "--pod", "default/Not_A_Name", "--data", data.toString());
    assertEquals(2, bad.status(), bad::toString);
    assertTrue(bad.err().contains("name 'Not_A_Name' is not a DNS-1123 subdomain"), bad::toString);
    CommandProcess.Result both =
        CommandProcess.run(
            Map.of(), "journal", "--pod", podRef, "--from", "2", "--data", data.toString());
    assertEquals(2, both.status(), both::toString);
  }
}
