package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.persistence.PostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SPEC §5, the reference example, and every other test of {@link ReferenceExampleTest}, on a
 * PostgreSQL journal: a real PostgreSQL server, the schema created once with the CLI ({@code
 * init-schema --config FILE}), then the real server process started with the same {@code --config}
 * ({@code gpushare.journal.kind = postgres}, the password from the environment). The journal CLI
 * reads the events from PostgreSQL while the server runs, and no H2 file is ever created.
 */
class PostgresReferenceExampleTest extends ReferenceExampleTest {

  private PostgresServer postgres;
  private String url;
  private Path config;
  private Path dataDir;

  @Override
  @BeforeAll
  void startServer(@TempDir Path dir) {
    postgres = PostgresServer.start(dir.resolve("pgdata"));
    url = postgres.createDatabase("gpushare");
    config = PostgresJournalConfig.file(dir, url);
    CommandProcess.Result init =
        CommandProcess.run(env(), "init-schema", "--config", config.toString());
    assertEquals(0, init.status(), init::toString);
    assertTrue(
        init.out().startsWith("init-schema: postgres journal database " + url + ", schema script"),
        init::toString);
    assertTrue(
        init.out().contains("created:         event_journal, event_tag, snapshot, durable_state"),
        init::toString);
    dataDir = dir.resolve("data");
    server =
        ServerProcess.start(
            getClass().getSimpleName(), dataDir, List.of(), env(), "--config", config.toString());
    api = server.api();
  }

  @Override
  @AfterAll
  void stopServer() {
    try {
      super.stopServer();
    } finally {
      if (postgres != null) {
        postgres.close();
      }
    }
  }

  private static Map<String, String> env() {
    return Map.of(PostgresJournalConfig.PASSWORD_ENV, PostgresServer.PASSWORD);
  }

  @Test
  void theEventsAreInPostgresAndTheCliReadsThemWhileTheServerRuns() {
    String node = Manifests.unique("pgcli");
    api.putNode(node, 1, "share-pool", null);
    String pod = node + "-p";
    String uid = api.createPod(sharePod(pod, node, 10, 100)).path("uid").asText();
    assertRunningOn(api.demand(pod), 0);
    api.release(pod);
    String podId = "Pod|" + Api.NS + "/" + pod + "/" + uid;
    String arbiterId = "NodeArbiter|" + node;

    long podRows =
        PostgresServer.queryLong(
            url, "SELECT count(*) FROM event_journal WHERE persistence_id = '" + podId + "'");
    assertEquals(1, podRows, "the pod's own record: its spec seen, nothing for a grant");
    long rows =
        PostgresServer.queryLong(
            url, "SELECT count(*) FROM event_journal WHERE persistence_id = '" + arbiterId + "'");
    assertTrue(rows >= 5, () -> "the node's decisions are rows of event_journal: " + rows);
    assertFalse(
        Files.exists(dataDir.resolve("journal.mv.db")), "no H2 journal beside the PostgreSQL one");

    CommandProcess.Result ids =
        CommandProcess.run(env(), "journal", "--ids", "--config", config.toString());
    assertEquals(0, ids.status(), ids::toString);
    assertTrue(ids.lines().contains(podId), ids::toString);
    assertEquals(ids.lines().stream().sorted().toList(), ids.lines(), "sorted");

    CommandProcess.Result events =
        CommandProcess.run(env(), "journal", arbiterId, "--config", config.toString());
    assertEquals(0, events.status(), events::toString);
    List<String> lines = events.lines();
    assertEquals(rows, lines.size(), events::toString);
    for (int i = 0; i < lines.size(); i++) {
      String[] columns = lines.get(i).strip().split("  +", 4);
      assertEquals(4, columns.length, () -> "sequence, time, type, JSON: " + events);
      assertEquals(Long.toString(i + 1), columns[0], events::toString);
      assertTrue(
          columns[1].matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"),
          events::toString);
      assertTrue(columns[3].startsWith("{") && columns[3].endsWith("}"), events::toString);
    }

    CommandProcess.Result page =
        CommandProcess.run(
            env(),
            "journal",
            arbiterId,
            "--from",
            "2",
            "--limit",
            "1",
            "--config",
            config.toString());
    assertEquals(0, page.status(), page::toString);
    assertEquals(1, page.lines().size(), page::toString);
    assertTrue(page.lines().get(0).startsWith("2  "), page::toString);
  }
}
