package dev.gpushare.e2e;

import static dev.gpushare.e2e.Checks.assertHibernation;
import static dev.gpushare.e2e.Checks.assertInvariants;
import static dev.gpushare.e2e.Checks.assertReady;
import static dev.gpushare.e2e.Checks.assertRunningOn;
import static dev.gpushare.e2e.Manifests.sharePod;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The data directory's disk fills up (a real tmpfs of 8 MiB): writes fail at once with the reason,
 * {@code /readyz} says so, and nothing acknowledged is lost. Two ways: free space below {@code
 * gpushare.journal.min-free-space} (the server refuses writes itself and carries on once space
 * returns), and a write that H2 cannot make (H2 closes the database; the server answers 503 and
 * exits with status 3, and a restart recovers from the file).
 */
class StorageFaultTest {

  private static final String NO_PREEMPTION = Manifests.qos(false, 120);
  private static final Duration AWAIT = Duration.ofSeconds(60);

  @TempDir Path temp;

  private Path config(String minFreeSpace) throws Exception {
    // A 30 s ask timeout: a write left to time out would answer "outcome unknown" after it.
    return Files.writeString(
        temp.resolve("storage.conf"),
        "gpushare.nodes = []\n"
            + "gpushare.ask-timeout = 30s\n"
            + "gpushare.journal.min-free-space = "
            + minFreeSpace
            + "\n");
  }

  /** The value of the unlabelled metric {@code name} in {@code GET /metrics}. */
  private static double metric(Api api, String name) {
    Api.Resp r = api.get("/metrics");
    assertEquals(200, r.status(), r.body());
    for (String line : r.body().split("\n")) {
      if (line.startsWith(name + " ")) {
        return Double.parseDouble(line.substring(name.length() + 1).strip());
      }
    }
    return fail("no " + name + " in GET /metrics:\n" + r.body());
  }

  @Test
  void belowTheMinimumFreeSpaceWritesAreRefusedAtOnceAndResumeWhenSpaceReturns() throws Exception {
    Path conf = config("\"2 MiB\"");
    try (Tmpfs disk = Tmpfs.mount(temp.resolve("disk"), "8m")) {
      Path data = disk.dir().resolve("data");
      ServerProcess server =
          ServerProcess.start("StorageFaultTest-space", data, "--config", conf.toString());
      try {
        Api api = server.api();
        String node = "space";
        api.putNode(node, 2, "share-pool", NO_PREEMPTION);
        api.createPod(sharePod("a", node, 10, 100));
        api.createPod(sharePod("b", node, 10, 100));
        assertRunningOn(api.demand("a"), 0); // acknowledged before the disk fills
        // The metrics show the data directory's file system and the journal's minimum.
        assertEquals(1, metric(api, "gpushare_member_ready"));
        assertEquals(2 * 1024 * 1024, metric(api, "gpushare_data_directory_min_free_bytes"));
        double size = metric(api, "gpushare_data_directory_size_bytes");
        assertTrue(size > 7 * 1024 * 1024 && size <= 8 * 1024 * 1024, "size " + size);
        assertTrue(
            metric(api, "gpushare_data_directory_available_bytes") > 2 * 1024 * 1024,
            "available before the fill");

        disk.fillLeaving(1024 * 1024); // 1 MiB left: under the minimum, H2 itself still writes
        JsonNode notReady = awaitReadyz(api, 503);
        // What the low-space and not-ready alerts read (deploy/monitoring).
        assertEquals(0, metric(api, "gpushare_member_ready"));
        double available = metric(api, "gpushare_data_directory_available_bytes");
        assertTrue(available < 2 * 1024 * 1024, "available after the fill: " + available);
        String why = notReady.path("detail").asText();
        assertTrue(why.contains("the journal cannot write"), why);
        assertTrue(why.contains(data.toString()), "names the data directory: " + why);
        assertTrue(why.contains("gpushare.journal.min-free-space (2 MiB)"), why);

        JsonNode refused = Api.problem(api.post(Api.podPath("b") + "/demand", null, null), 503);
        String detail = refused.path("detail").asText();
        assertTrue(detail.startsWith("the journal cannot write: the file system of "), detail);
        assertTrue(detail.contains("nothing was changed"), detail);
        assertHibernation(api.pod("b"));

        disk.free();
        awaitReadyz(api, 200);
        assertEquals(1, metric(api, "gpushare_member_ready"));
        assertRunningOn(api.demand("b"), 1);
        assertRunningOn(api.pod("a"), 0);
        assertTrue(server.isAlive());

        server.crash();
        server.restart();
        api = server.api();
        assertRunningOn(api.pod("a"), 0);
        assertRunningOn(api.pod("b"), 1);
        assertInvariants(api);
      } finally {
        server.stop();
      }
    }
  }

  @Test
  void aWriteThatFailsOnAFullDiskAnswers503AtOnceAndTheServerExitsToRecoverOnRestart()
      throws Exception {
    Path conf = config("0"); // no minimum: the write goes to H2 and fails there
    try (Tmpfs disk = Tmpfs.mount(temp.resolve("disk"), "8m")) {
      Path data = disk.dir().resolve("data");
      ServerProcess server =
          ServerProcess.start("StorageFaultTest-full", data, "--config", conf.toString());
      try {
        Api api = server.api();
        String node = "full";
        api.putNode(node, 1, "share-pool", NO_PREEMPTION);
        api.createPod(sharePod("a", node, 10, 100));
        api.createPod(sharePod("b", node, 10, 100));
        api.createPod(sharePod("c", node, 10, 100));
        assertRunningOn(api.demand("a"), 0);
        assertReady(api.demand("b"), 1); // both acknowledged before the disk fills

        disk.fillUp();
        // H2 reuses the free space inside its file at once (RETENTION_TIME=0), so the first writes
        // after the disk fills may still fit; c demands and withdraws until one does not.
        String lastAcked = "Hibernation";
        String attempted = null;
        Api.Resp answer = null;
        for (int i = 0; i < 2000; i++) {
          boolean withdraw = lastAcked.equals("Ready");
          attempted = withdraw ? "Hibernation" : "Ready";
          answer =
              withdraw
                  ? api.delete(Api.podPath("c") + "/demand")
                  : api.post(Api.podPath("c") + "/demand", null, null);
          if (answer.status() != 200) {
            break;
          }
          lastAcked = answer.json().path("state").asText();
        }
        JsonNode failed = Api.problem(answer, 503);
        String detail = failed.path("detail").asText();
        assertTrue(detail.contains("a journal write failed in " + data), detail);
        assertTrue(
            detail.contains("no space left on device") || detail.contains("H2 has closed"),
            "says why: " + detail);
        assertTrue(detail.contains("not acknowledged"), detail);

        Optional<Integer> status = server.awaitExit(AWAIT.toSeconds());
        assertEquals(Optional.of(3), status, "exit status once H2 closed the database");
        String log = Files.readString(server.logFile());
        assertTrue(log.contains("H2 has closed the journal database"), "the log says why");
        assertTrue(log.contains("exiting with status 3"), "the log says what happens");

        disk.free();
        server.restart();
        api = server.api();
        assertRunningOn(api.pod("a"), 0);
        assertReady(api.pod("b"), 1);
        // c as last acknowledged, or as the refused request would have left it: a 503 for a
        // failed write says the request may or may not have taken effect.
        String c = api.pod("c").path("state").asText();
        assertTrue(
            c.equals(lastAcked) || c.equals(attempted),
            "c is " + c + "; acknowledged " + lastAcked + ", refused " + attempted);
        assertInvariants(api);
        assertEquals(200, api.get("/readyz").status());
      } finally {
        server.stop();
      }
    }
  }

  /** Polls {@code /readyz} until it answers {@code status}; answers the last body. */
  private static JsonNode awaitReadyz(Api api, int status) throws InterruptedException {
    long deadline = System.nanoTime() + AWAIT.toNanos();
    Api.Resp last = null;
    while (System.nanoTime() < deadline) {
      last = api.get("/readyz");
      if (last.status() == status) {
        return last.json();
      }
      Thread.sleep(100);
    }
    fail("/readyz did not answer " + status + " within " + AWAIT + "; last: " + last);
    return null;
  }
}
