package dev.gpushare.node;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.api.GpuShareService;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;

/** Actor-system config for tests: the runtime's cluster settings over in-memory persistence. */
final class TestSystems {
  private TestSystems() {}

  static Config config(Path snapshots) {
    return ConfigFactory.parseString(
            "pekko.loglevel = WARNING\n"
                // A loaded CI machine may need more than the default 10 s for the shard regions'
                // hand-off at shutdown (a request still buffered for a stopping shard).
                + "pekko.actor.testkit.typed.system-shutdown-default = 30s\n"
                + "pekko.persistence.journal.plugin = \"pekko.persistence.journal.inmem\"\n"
                + "pekko.persistence.journal.inmem.test-serialization = on\n"
                + "pekko.persistence.snapshot-store.plugin = \"pekko.persistence.snapshot-store.local\"\n"
                + "pekko.persistence.snapshot-store.local.dir = \""
                + snapshots.toString().replace("\\", "/")
                + "\"\n"
                + "pekko.actor.serialization-bindings {\n"
                + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                + "}\n")
        .withFallback(GpuShareRuntime.config())
        .withFallback(ConfigFactory.load());
  }

  /** {@link #config(Path)} with {@code settings} (HOCON) over it. */
  static Config config(Path snapshots, String settings) {
    return ConfigFactory.parseString(settings).withFallback(config(snapshots));
  }

  /** The runtime on {@code kit}'s system: no configured nodes, default reserve, 10 s asks. */
  static GpuShareService startRuntime(ActorTestKit kit, ArbiterClock clock) throws Exception {
    return GpuShareRuntime.start(
            kit.system(),
            new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(10)),
            clock)
        .toCompletableFuture()
        .get(30, TimeUnit.SECONDS);
  }
}
