package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertGpu;
import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Checks.keys;
import static dev.gpushare.e2e.Checks.queueOrder;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.gpushare.persistence.PostgresServer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * ARCHITECTURE §6 across a crash on the PostgreSQL journal: the server is killed with SIGKILL and
 * started again (a new process, the same database); states, devices and the ready queue are as they
 * were, and the arbiter goes on from them. A server on a database without the schema refuses to
 * start and names the command that creates it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresCrashRecoveryTest {

  private static final String NO_PREEMPTION = Manifests.qos(false, 120);

  private Path dir;
  private PostgresServer postgres;

  @BeforeAll
  void startPostgres(@TempDir Path dir) {
    this.dir = dir;
    postgres = PostgresServer.start(dir.resolve("pgdata"));
  }

  @AfterAll
  void stopPostgres() {
    if (postgres != null) {
      postgres.close();
    }
  }

  private static Map<String, String> env() {
    return Map.of(PostgresJournalConfig.PASSWORD_ENV, PostgresServer.PASSWORD);
  }

  @Test
  void statesDevicesAndQueueSurviveSigkill() {
    String url = postgres.createDatabase("crash");
    Path config = PostgresJournalConfig.file(dir.resolve("crash"), url);
    CommandProcess.Result init =
        CommandProcess.run(env(), "init-schema", "--config", config.toString());
    assertEquals(0, init.status(), init::toString);
    ServerProcess server =
        ServerProcess.start(
            "PostgresCrashRecoveryTest",
            dir.resolve("crash-data"),
            List.of(),
            env(),
            "--config",
            config.toString());
    try {
      Api api = server.api();
      String node = Manifests.unique("pgcrash");
      api.putNode(node, 2, "share-pool", NO_PREEMPTION);
      String[] p = new String[7];
      int[] limits = {0, 100, 50, 60, 100, 30, 100};
      for (int i = 1; i < p.length; i++) {
        p[i] = node + "-p" + i;
        api.createPod(sharePod(p[i], node, 10, limits[i]));
      }
      assertRunningOn(api.demand(p[1]), 0); // 100 on GPU 0
      assertRunningOn(api.demand(p[2]), 1); // 50 on GPU 1
      assertReady(api.demand(p[3]), 1); // 60 fits nowhere: the head
      assertReady(api.demand(p[4]), 2);
      assertReady(api.demand(p[5]), 3); // 30 would fit GPU 1, but waits behind the head
      api.release(p[4]); // withdrawn from the middle of the queue
      assertHibernation(api.pod(p[4]));
      assertReady(api.demand(p[4]), 3); // and back at the tail
      // p6 is never demanded

      ObjectNode before = Checks.snapshot(api);
      JsonNode queueBefore = api.queue(node);
      server.crash();
      server.restart();
      api = server.api();
      assertEquals(before, Checks.snapshot(api), "decisions after SIGKILL and restart");
      assertEquals(
          queueOrder(queueBefore), queueOrder(api.queue(node)), "ready queue after restart");
      assertEquals(keys(p[3], p[5], p[4]), queueOrder(api.queue(node)));
      assertReady(api.pod(p[3]), 1);
      assertReady(api.pod(p[5]), 2);
      assertReady(api.pod(p[4]), 3);
      assertGpu(api.node(node), 0, 100, 100, p[1]);
      assertGpu(api.node(node), 1, 50, 50, p[2]);
      assertHibernation(api.pod(p[6]));
      assertInvariants(api);

      // The arbiter goes on from the recovered state: p1 frees GPU 0, the head p3 (60) gets it,
      // then p5 (30) fits beside it; p4 (100) is the head and waits.
      api.release(p[1]);
      assertRunningOn(api.pod(p[3]), 0);
      JsonNode p5 = api.pod(p[5]);
      assertEquals("Running", p5.path("state").asText(), p5::toString);
      assertEquals(keys(p[4]), queueOrder(api.queue(node)));
      assertInvariants(api);

      long rows = PostgresServer.queryLong(url, "SELECT count(*) FROM event_journal");
      assertTrue(rows > 0, "the decisions are rows of the PostgreSQL journal");
    } finally {
      server.stop();
    }
  }

  @Test
  void aServerOnADatabaseWithoutTheSchemaRefusesToStartAndNamesInitSchema() {
    String url = postgres.createDatabase("noschema");
    Path config = PostgresJournalConfig.file(dir.resolve("noschema"), url);
    IllegalStateException refused =
        assertThrows(
            IllegalStateException.class,
            () ->
                ServerProcess.start(
                    "PostgresNoSchema",
                    dir.resolve("noschema-data"),
                    List.of(),
                    env(),
                    "--config",
                    config.toString()));
    String message = refused.getMessage();
    assertTrue(message.contains("server exited before listening"), message);
    assertTrue(
        message.contains(
            "journal database "
                + url
                + " has no gpushare schema: tables [event_journal,"
                + " event_tag, snapshot] are missing"),
        message);
    assertTrue(
        message.contains("run `java -jar gpushare.jar init-schema --config " + config + "` once"),
        message);
    assertEquals(
        0L,
        PostgresServer.queryLong(url, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
        "the server created nothing");
  }
}
