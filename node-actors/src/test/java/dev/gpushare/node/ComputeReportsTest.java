package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.file.Path;
import java.time.Instant;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compute reports a member keeps: the latest per pod, none for a deleted pod; a report travels
 * to the other members as JSON.
 */
class ComputeReportsTest {
  static Changes.ComputeReported report(String pod, double held) {
    return new Changes.ComputeReported(
        "member", "n1", pod, 30, 29.5, held, Instant.parse("2026-01-01T00:00:00Z"));
  }

  @Test
  void theLatestReportOfEachPodIsKept() {
    ComputeReports reports = new ComputeReports();
    reports.put(report("ns/a/u1", 1));
    reports.put(report("ns/b/u2", 2));
    reports.put(report("ns/a/u1", 3));
    assertEquals(3.0, reports.get("ns/a/u1").heldSeconds());
    assertEquals(2.0, reports.get("ns/b/u2").heldSeconds());
    assertEquals(2, reports.size());
  }

  @Test
  void aDeletedPodsReportGoesAndOneArrivingLaterIsNotKept() {
    ComputeReports reports = new ComputeReports();
    reports.put(report("ns/a/u1", 1));
    reports.deleted("ns/a/u1");
    assertNull(reports.get("ns/a/u1"));
    reports.put(report("ns/a/u1", 2));
    assertNull(reports.get("ns/a/u1"), "a report still in flight when the pod went");
    assertEquals(0, reports.size());
    reports.put(report("ns/a/u9", 2));
    assertEquals(2.0, reports.get("ns/a/u9").heldSeconds(), "a new pod of the name: a new uid");
  }

  @Test
  void theDeletedAreRememberedUpToTheLimit() {
    ComputeReports reports = new ComputeReports();
    for (int i = 0; i <= ComputeReports.DELETED_REMEMBERED; i++) {
      reports.deleted("ns/p/" + i);
    }
    reports.put(report("ns/p/0", 1));
    assertEquals(1.0, reports.get("ns/p/0").heldSeconds(), "the oldest is forgotten");
    reports.put(report("ns/p/1", 1));
    assertNull(reports.get("ns/p/1"));
  }

  @Test
  void aReportTravelsToTheOtherMembers(@TempDir Path snapshots) {
    ActorTestKit kit = ActorTestKit.create("compute-reports", TestSystems.config(snapshots));
    try {
      Changes.ComputeReported r = report("ns/a/u1", 12.5);
      assertEquals(r, kit.serializationTestKit().verifySerialization(r, true));
    } finally {
      kit.shutdownTestKit();
    }
  }
}
