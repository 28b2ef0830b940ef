package dev.gpushare.node;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.nio.file.Path;

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
}
