package dev.gpushare.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.PodManifest;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.persistence.SchemaSetup;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * What the benchmarks of this package share: options, percentiles, the runtime over a real journal
 * profile, simulated nodes and pods, an embedded PostgreSQL server and a look into the journal.
 * Benchmarks only (plain {@code main}s, never run by Surefire); see src-test/BENCHMARKS.md.
 */
final class BenchSupport {
  private BenchSupport() {}

  static final String NS = "bench";

  static String option(String[] args, String name, String fallback) {
    for (int i = 0; i < args.length - 1; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return fallback;
  }

  static int[] ints(String csv) {
    return Arrays.stream(csv.split(",")).mapToInt(s -> Integer.parseInt(s.trim())).toArray();
  }

  /** The value at quantile {@code p} of ascending {@code sorted}, NaN when empty. */
  static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[Math.min(sorted.length - 1, (int) Math.floor(p * sorted.length))];
  }

  static <T> T await(CompletionStage<T> stage, Duration timeout) {
    try {
      return stage.toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Runs {@code count} asynchronous tasks with at most {@code parallel} in flight; completes when
   * all have, failing with the first failure.
   */
  static void inParallel(int count, int parallel, IntFunction<CompletionStage<?>> task) {
    Semaphore permits = new Semaphore(parallel);
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      permits.acquireUninterruptibly();
      CompletableFuture<?> f = task.apply(i).toCompletableFuture();
      f.whenComplete((v, e) -> permits.release());
      all.add(f);
    }
    await(CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)), Duration.ofMinutes(30));
  }

  /** A running arbiter: an actor system over {@code profile} and the service on it. */
  static final class Runtime implements AutoCloseable {
    final ActorSystem<Void> system;
    final GpuShareService service;

    private Runtime(ActorSystem<Void> system, GpuShareService service) {
      this.system = system;
      this.service = service;
    }

    /**
     * The runtime as the launcher starts it (GpuShareServiceTest's setup over a real journal
     * profile): the profile over the runtime's cluster settings, the tables created, no simulated
     * nodes configured (the benchmark registers them), the system clock.
     */
    static Runtime start(String name, Config profile) {
      Config config =
          ConfigFactory.parseString(
                  "pekko.loglevel = WARNING\n"
                      + "pekko.coordinated-shutdown.phases.cluster-sharding-shutdown-region"
                      + ".timeout = 60s\n")
              .withFallback(profile)
              .withFallback(GpuShareRuntime.config())
              .withFallback(ConfigFactory.load());
      ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config);
      try {
        await(SchemaSetup.ensure(system), Duration.ofMinutes(2));
        GpuShareService service =
            await(
                GpuShareRuntime.start(
                    system,
                    new RuntimeSettings(List.of(), ReservedPerGpu.DEFAULT, Duration.ofSeconds(30)),
                    ArbiterClock.system()),
                Duration.ofMinutes(5));
        return new Runtime(system, service);
      } catch (RuntimeException e) {
        system.terminate();
        throw e;
      }
    }

    @Override
    public void close() {
      system.terminate();
      try {
        system.getWhenTerminated().toCompletableFuture().get(3, TimeUnit.MINUTES);
      } catch (Exception e) {
        System.err.println("actor system did not terminate: " + e);
      }
    }
  }

  /** A share-pool GPU-HPN node with {@code gpus} simulated GPUs. */
  static NodeManifest node(String name, int gpus) {
    return new NodeManifest(
        name,
        Map.of("alibabacloud.com/gpu-share-policy", "share-pool"),
        Map.of(),
        Map.of("cpu", "176", "memory", "1800Gi", "nvidia.com/gpu", Integer.toString(gpus)),
        Map.of());
  }

  /** A share-pool pod on {@code node} asking for {@code request} %, limited to {@code limit} %. */
  static PodManifest pod(String node, String name, int request, int limit) {
    return new PodManifest(
        NS,
        name,
        null,
        node,
        Map.of(
            "alibabacloud.com/compute-class", "gpu-hpn",
            "alibabacloud.com/gpu-share-policy", "share-pool"),
        Map.of(),
        List.of(
            new PodManifest.ContainerResources(
                "main",
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(request),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(request)),
                Map.of(
                    "alibabacloud.com/gpu-core.percentage", Integer.toString(limit),
                    "alibabacloud.com/gpu-memory.percentage", Integer.toString(limit)))));
  }

  /** 10 % to 100 % in steps of 10, uniform: the mix of limits of the reference workload. */
  static int limit(java.util.Random random) {
    return 10 * (1 + random.nextInt(10));
  }

  // ---- the journal, read with plain JDBC ----

  /** The JDBC URL, user and password of the runtime's journal (the profile's shared database). */
  record Jdbc(String url, String user, String password) {
    static Jdbc of(Config profile) {
      Config db = profile.getConfig("pekko-persistence-jdbc.shared-databases.gpushare.db");
      return new Jdbc(db.getString("url"), db.getString("user"), db.getString("password"));
    }

    Connection connect() throws SQLException {
      return DriverManager.getConnection(url, user, password);
    }

    /** The highest {@code ordering} in the journal (0 when empty). */
    long maxOrdering() {
      try (Connection c = connect();
          Statement s = c.createStatement();
          ResultSet r = s.executeQuery("SELECT MAX(\"ordering\") FROM \"event_journal\"")) {
        r.next();
        return r.getLong(1);
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
    }

    /**
     * Rows written after {@code ordering}, by entity type (the persistence id up to its first
     * {@code |}): NodeArbiter, Pod, Gpu, Node, PodIndex...
     */
    Map<String, Long> rowsAfter(long ordering) {
      Map<String, Long> byType = new TreeMap<>();
      try (Connection c = connect();
          PreparedStatement s =
              c.prepareStatement(
                  "SELECT \"persistence_id\" FROM \"event_journal\" WHERE \"ordering\" > ?")) {
        s.setLong(1, ordering);
        try (ResultSet r = s.executeQuery()) {
          while (r.next()) {
            String id = r.getString(1);
            int bar = id.indexOf('|');
            byType.merge(bar < 0 ? id : id.substring(0, bar), 1L, Long::sum);
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException(e);
      }
      return byType;
    }
  }

  static void deleteTree(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> files = Files.walk(root)) {
      files
          .sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  // a leftover in the temporary directory
                }
              });
    } catch (IOException e) {
      // a leftover in the temporary directory
    }
  }
}
