package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.api.ServiceException;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.JournalOperation;
import org.apache.pekko.persistence.testkit.PersistenceTestKitPlugin;
import org.apache.pekko.persistence.testkit.PersistenceTestKitSnapshotPlugin;
import org.apache.pekko.persistence.testkit.ProcessingPolicy;
import org.apache.pekko.persistence.testkit.ProcessingResult;
import org.apache.pekko.persistence.testkit.ProcessingSuccess;
import org.apache.pekko.persistence.testkit.StorageFailure;
import org.apache.pekko.persistence.testkit.WriteEvents;
import org.apache.pekko.persistence.testkit.javadsl.PersistenceTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The service over a journal that cannot write ({@link JournalStatus}): writes are refused at once
 * with the reason and the service says it is not ready; a write that fails in the journal fails its
 * request at once instead of leaving it to the ask timeout (60 s here).
 */
class JournalStatusTest {

  /** What the H2 journal's health would say, scripted. */
  static final class ScriptedJournal implements JournalStatus {
    volatile String unwritable;
    final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

    @Override
    public Optional<String> unwritable() {
      return Optional.ofNullable(unwritable);
    }

    @Override
    public void onWriteFailure(Consumer<String> listener) {
      listeners.add(listener);
    }

    void writeFailed(String reason) {
      listeners.forEach(l -> l.accept(reason));
    }
  }

  static final String FULL = "a journal write failed in /data: no space left on device";

  static ActorTestKit kit;
  static PersistenceTestKit journalKit;
  static GpuShareService service;
  static final ScriptedJournal journal = new ScriptedJournal();

  @BeforeAll
  static void start() throws Exception {
    Config config =
        ConfigFactory.parseString(
                "pekko.loglevel = ERROR\n"
                    + "pekko.actor.testkit.typed.system-shutdown-default = 30s\n"
                    + "pekko.actor.serialization-bindings {\n"
                    + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                    + "}\n")
            .withFallback(PersistenceTestKitPlugin.config())
            .withFallback(PersistenceTestKitSnapshotPlugin.config())
            .withFallback(GpuShareRuntime.config())
            .withFallback(ConfigFactory.load());
    kit = ActorTestKit.create("journal-status-test", config);
    journalKit = PersistenceTestKit.create(kit.system());
    service =
        await(
            GpuShareRuntime.start(
                kit.system(),
                new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(60)),
                new ManualClock(Instant.parse("2026-01-01T00:00:00Z")),
                Optional.empty(),
                journal));
  }

  @AfterAll
  static void stop() {
    kit.shutdownTestKit();
  }

  @BeforeEach
  void writable() {
    journal.unwritable = null;
    journalKit.resetPolicy();
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
  }

  static ServiceException refusal(CompletionStage<?> stage) {
    ExecutionException e =
        assertThrows(
            ExecutionException.class, () -> stage.toCompletableFuture().get(30, TimeUnit.SECONDS));
    return assertInstanceOf(ServiceException.class, e.getCause());
  }

  @Test
  void whileTheJournalCannotWriteWritesAreRefusedAtOnceWithTheReasonAndNothingChanges()
      throws Exception {
    await(service.putNode(GpuShareServiceTest.node("gate", 1, null)));
    await(service.createPod(GpuShareServiceTest.pod("gate", "a", 10, 100)));
    String low = "the file system of /data has 1 MiB free, less than the minimum";
    journal.unwritable = low;

    ServiceException refused = refusal(service.demand("default", "a"));
    assertEquals(ServiceException.Kind.UNAVAILABLE, refused.kind());
    assertEquals(
        "the journal cannot write: "
            + low
            + "; nothing was changed: retry once GET /readyz answers 200",
        refused.getMessage());
    assertEquals(Optional.of("the journal cannot write: " + low), service.notReady());
    assertEquals(
        ServiceException.Kind.UNAVAILABLE,
        refusal(service.createPod(GpuShareServiceTest.pod("gate", "b", 10, 100))).kind());
    assertEquals(
        PodState.HIBERNATION, await(service.pod("default", "a")).state(), "reads still work");

    journal.unwritable = null;
    assertEquals(Optional.empty(), service.notReady());
    assertEquals(PodState.RUNNING, await(service.demand("default", "a")).state());
  }

  @Test
  void aJournalWriteThatFailsFailsTheRequestInFlightAtOnce() throws Exception {
    await(service.putNode(GpuShareServiceTest.node("full", 1, null)));
    await(service.createPod(GpuShareServiceTest.pod("full", "c", 10, 100)));
    journalKit.withPolicy(
        new ProcessingPolicy<JournalOperation>() {
          @Override
          public ProcessingResult tryProcess(String persistenceId, JournalOperation op) {
            if (op instanceof WriteEvents && persistenceId.equals("NodeArbiter|full")) {
              journal.writeFailed(FULL); // as the H2 journal's DAO tells its health
              return StorageFailure.create(new IOException("No space left on device"));
            }
            return ProcessingSuccess.getInstance();
          }
        });

    ServiceException failed = refusal(service.demand("default", "c"));
    assertEquals(ServiceException.Kind.UNAVAILABLE, failed.kind());
    assertTrue(
        failed
            .getMessage()
            .startsWith(FULL + "; this request is not acknowledged: once GET /readyz answers 200"),
        failed.getMessage());

    journalKit.resetPolicy();
    // The arbiter restarted and recovered without the failed write: the demand can be made again.
    assertEquals(PodState.HIBERNATION, await(service.pod("default", "c")).state());
    assertEquals(PodState.RUNNING, await(service.demand("default", "c")).state());
  }
}
