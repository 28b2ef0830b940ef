package dev.gpushare.node.kube;

import static dev.gpushare.node.kube.Fixtures.T0;

import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.node.fake.FakeGpuShareReader;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * One share-pool node, {@value #NODE}, known to the mock API server (as its kubelet shows it) and
 * to the fake service; a {@link KubeWriter} started on demand with fast retries (1000 QPS, back-off
 * capped at 50 ms, jitter 0 — no timing is asserted) and closed after each test.
 */
abstract class KubeWriterNodeFixture {
  static final String NODE = "gpu-hpn-1";

  MockApi api;
  FakeGpuShareReader service;
  KubeWriter writer;

  @BeforeEach
  void setUp() {
    api = new MockApi();
    service = Fixtures.service();
    api.other.nodes().resource(Fixtures.kubeletNode(NODE)).create();
    service.setNode(Fixtures.nodeView(NODE, SharePolicy.SHARE_POOL, 16, T0));
    api.clearRequests();
  }

  @AfterEach
  void tearDown() {
    if (writer != null) {
      writer.close();
    }
    api.close();
  }

  /** Starts the writer and waits until it has written everything it knows. */
  void startAndFlush() throws Exception {
    writer =
        new KubeWriter(
                api.client,
                service,
                new KubeSyncSettings(
                    NodeStatusMode.KUBELET, 1000, 1000, Duration.ofMillis(50), "gpushare-0"),
                System::nanoTime,
                () -> 0.0)
            .start();
    writer.flushed().toCompletableFuture().get(30, TimeUnit.SECONDS);
  }
}
