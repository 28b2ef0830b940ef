package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.text;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.gpushare.arbiter.ShareRequestRules;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Patches land over others' changes without a read; a 409 reads afresh; 429/5xx back off and retry;
 * other 4xx are dropped until the next change.
 */
class KubeWriterFailureTest extends KubeWriterNodeFixture {
  static final String GET = "GET /api/v1/nodes/" + NODE;
  static final String PATCH = "PATCH /api/v1/nodes/" + NODE + "/status";

  Node node() {
    return api.other.nodes().withName(NODE).get();
  }

  @Test
  void aStatusPatchLandsOverSomeoneElsesChangeWithoutARead() throws Exception {
    AtomicBoolean once = new AtomicBoolean();
    // between the writer's look at its cache and its write, someone labels the node (a patch
    // without resourceVersion, as a kubelet writes)
    service.onNodeRead =
        n -> {
          if (once.compareAndSet(false, true)) {
            api.other
                .nodes()
                .withName(NODE)
                .patch(
                    PatchContext.of(PatchType.JSON_MERGE),
                    "{\"metadata\":{\"labels\":{\"team\":\"vision\"}}}");
          }
        };
    startAndFlush();

    assertEquals(
        List.of(
            GET + " → 200", // the other client's (fabric8 reads before it patches by name)
            "PATCH /api/v1/nodes/" + NODE + " → 202",
            PATCH + " → 202"),
        api.exchanges().stream().sorted().toList(),
        "the label patch and the writer's one write: no read of its own, no conflict");
    Node node = node();
    assertEquals("vision", node.getMetadata().getLabels().get("team"));
    assertEquals("1600", text(node.getStatus().getAllocatable(), ShareRequestRules.CORE));
    assertEquals(0, writer.readsSent());
  }

  @Test
  void aConflictIsReadAfreshAndWrittenAgain() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 409, 1);
    startAndFlush();
    assertEquals(
        List.of(PATCH + " → 409", GET + " → 200", PATCH + " → 202"),
        api.exchanges(),
        "the refused write, the one read, the write");
    assertEquals("1600", text(node().getStatus().getAllocatable(), ShareRequestRules.CORE));
  }

  @Test
  void serverErrorsAndThrottlingAreRetriedWithBackoff() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 503, 2);
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 429, 1);
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 500, 1);
    startAndFlush();

    assertEquals(
        List.of(
            PATCH + " → 503",
            PATCH + " → 503",
            PATCH + " → 429",
            PATCH + " → 500",
            PATCH + " → 202"),
        api.exchanges(),
        "each retry writes again, from the cache: no read");
    assertEquals("1600", text(node().getStatus().getCapacity(), ShareRequestRules.CORE));
  }

  @Test
  void anInvalidWriteIsDroppedUntilTheNextChange() throws Exception {
    api.failNext("PATCH", "/api/v1/nodes/" + NODE + "/status", 422, 1);
    startAndFlush();
    assertEquals(List.of(PATCH + " → 422"), api.exchanges());
    assertNull(text(node().getStatus().getCapacity(), ShareRequestRules.CORE));

    service.nodeChanged(NODE);
    writer.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertEquals("1600", text(node().getStatus().getCapacity(), ShareRequestRules.CORE));
  }
}
