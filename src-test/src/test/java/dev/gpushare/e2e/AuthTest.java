package dev.gpushare.e2e;

import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Embedded mode's access (ISSUE 6 point 1) through the server process: loopback by default, a
 * random admin token made on first start in the data directory (its path printed once), every
 * endpoint but health and readiness refused without it, and a refused request changes nothing.
 */
class AuthTest {

  @Test
  void withoutTheAdminTokenNothingIsAnsweredAndNothingChanges(@TempDir Path dir) throws Exception {
    ServerProcess server = ServerProcess.start("AuthTest", dir.resolve("data"));
    try {
      Api admin = server.api();
      Path file = server.dataDir().resolve("admin-token");
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
      // Printed right after the ready line; the harness copies the output to the log as it comes.
      String line = "gpushare admin token written to " + file.toAbsolutePath().normalize();
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
      while (!Files.readString(server.logFile()).contains(line) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      String log = Files.readString(server.logFile());
      assertTrue(log.contains(line), log);
      assertTrue(server.baseUri().getHost().equals("127.0.0.1"), "loopback by default");

      String node = Manifests.unique("auth");
      admin.putNode(node, 1, "share-pool", null);
      admin.createPod(sharePod(node + "-a", node, 50, 50));
      JsonNode before = Checks.snapshot(admin);

      Api none = admin.withToken(Optional.empty());
      Api wrong = admin.withToken(Optional.of("not-the-token"));
      for (Api bad : new Api[] {none, wrong}) {
        Api.Resp demand = bad.post(Api.podPath(node + "-a") + "/demand", null, null);
        assertEquals(401, demand.status(), () -> "" + demand);
        assertTrue(demand.body().contains("\"field\":\"Authorization\""), demand.body());
        assertFalse(demand.body().contains("not-the-token"), "a token is never echoed");
        for (String path : new String[] {"/v1/nodes", "/v1/pods", "/metrics", "/v1/clock"}) {
          Api.Resp r = bad.get(path);
          assertEquals(401, r.status(), () -> path + ": " + r);
        }
        assertEquals(401, bad.put("/v1/nodes/" + node, "{}", "application/json").status());
        assertEquals(401, bad.delete(Api.podPath(node + "-a")).status());
      }
      assertEquals(200, none.get("/healthz").status());
      assertEquals(200, none.get("/readyz").status());
      assertEquals(
          Checks.withoutTimes(before), Checks.withoutTimes(Checks.snapshot(admin)), "unchanged");
      assertEquals("Hibernation", admin.pod(node + "-a").path("state").asText());

      // The token is kept across restarts and its path is not printed again.
      String token = admin.token().orElseThrow();
      server.stop();
      server.restart();
      assertEquals(Optional.of(token), server.adminToken());
      assertEquals("Running", server.api().demand(node + "-a").path("state").asText());
      String again = Files.readString(server.logFile());
      assertFalse(again.contains("admin token written"), again);
    } finally {
      server.stop();
    }
  }
}
