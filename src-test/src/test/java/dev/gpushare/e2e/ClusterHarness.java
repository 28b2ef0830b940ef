package dev.gpushare.e2e;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * A gpushare cluster on loopback for end-to-end tests: one embedded PostgreSQL server (the shared
 * journal) and {@code n} members, each a child JVM ({@link ServerProcess}) with its own data
 * directory, HTTP port, Artery port and cluster role {@code node:<name>}, joined through the seed
 * nodes of the first two members. Each member can be killed for real ({@link
 * ServerProcess#crash()}) and restarted on the same address.
 *
 * <p>Members log the sharding regions' "Starting shard" lines (DEBUG for {@code
 * org.apache.pekko.cluster.sharding.ShardRegion} only), so that a test can tell which member hosts
 * which shard: {@link #shardStarts(ServerProcess)}.
 */
final class ClusterHarness implements AutoCloseable {

  /** Seconds a member may take to start (the JVM, journal recovery, joining the cluster). */
  static final long START_DEADLINE_SECONDS = 150;

  /** {@code <entity type>: Starting shard [<shard>] in region} (Pekko's ShardRegion, DEBUG). */
  private static final Pattern SHARD_STARTED =
      Pattern.compile("(\\w+): Starting shard \\[([^\\]]+)\\] in region");

  private final Path dir;
  private final String label;
  private final EmbeddedPostgres postgres;
  private final List<String> nodeNames;
  private final int[] arteryPorts;
  private final Path logbackFile;
  private final Map<String, String> environment;
  private final List<ServerProcess> members = new ArrayList<>();
  private final String pekkoOverrides;

  private ClusterHarness(
      Path dir,
      String label,
      EmbeddedPostgres postgres,
      List<String> nodeNames,
      String pekkoOverrides) {
    this.dir = dir;
    this.label = label;
    this.postgres = postgres;
    this.nodeNames = List.copyOf(nodeNames);
    this.pekkoOverrides = pekkoOverrides;
    this.arteryPorts = new int[nodeNames.size()];
    for (int i = 0; i < arteryPorts.length; i++) {
      arteryPorts[i] = freePort();
    }
    this.logbackFile = dir.resolve("logback-cluster.xml");
    Map<String, String> env = new HashMap<>();
    // Outside Kubernetes: no cluster bootstrap, no node taken from the environment.
    env.put("KUBERNETES_SERVICE_HOST", null);
    env.put("NODE_NAME", null);
    env.put("POD_IP", null);
    this.environment = env;
  }

  /**
   * Starts PostgreSQL under {@code dir} and prepares (does not start) one member per node name:
   * member {@code i} runs on node {@code nodeNames[i]}. {@code pekkoOverrides} is HOCON added to
   * every member's {@code pekko} section (timings of the failure detector and the split-brain
   * resolver).
   */
  static ClusterHarness create(
      Path dir, String label, List<String> nodeNames, String pekkoOverrides) {
    EmbeddedPostgres pg;
    try {
      Files.createDirectories(dir);
      pg =
          EmbeddedPostgres.builder()
              .setDataDirectory(dir.resolve("postgres"))
              .setCleanDataDirectory(true)
              .setServerConfig("max_connections", "60")
              .setServerConfig("listen_addresses", "127.0.0.1")
              .setPGStartupWait(Duration.ofSeconds(60))
              .setOutputRedirector(
                  ProcessBuilder.Redirect.appendTo(dir.resolve("postgres.log").toFile()))
              .setErrorRedirector(
                  ProcessBuilder.Redirect.appendTo(dir.resolve("postgres.log").toFile()))
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException("starting the embedded PostgreSQL server", e);
    }
    ClusterHarness h = new ClusterHarness(dir, label, pg, nodeNames, pekkoOverrides);
    try {
      h.writeFiles();
    } catch (RuntimeException e) {
      h.close();
      throw e;
    }
    return h;
  }

  /**
   * A TCP port that was free a moment ago, taken below Linux's ephemeral range (32768–60999 by
   * default): a port picked in advance for a member's remoting must not be handed to another
   * process's {@code --port 0} (or an outgoing connection) before that member binds it.
   */
  static int freePort() {
    java.util.Random random = new java.util.Random();
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = 20_000 + random.nextInt(12_000);
      try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        s.setReuseAddress(true);
        return s.getLocalPort();
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IllegalStateException("no free port between 20000 and 32000 after 200 tries");
  }

  String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + postgres.getPort() + "/postgres";
  }

  int size() {
    return nodeNames.size();
  }

  String nodeOf(int i) {
    return nodeNames.get(i);
  }

  Path configFile(int i) {
    return dir.resolve("member-" + (i + 1) + ".conf");
  }

  Path dataDir(int i) {
    return dir.resolve("data-" + (i + 1));
  }

  String memberLabel(int i) {
    return label + "-m" + (i + 1);
  }

  /** The member's Artery address, e.g. {@code pekko://gpushare@127.0.0.1:25520}. */
  String address(int i) {
    return "pekko://gpushare@127.0.0.1:" + arteryPorts[i];
  }

  private void writeFiles() {
    try {
      Files.writeString(
          logbackFile,
          """
          <?xml version="1.0" encoding="UTF-8"?>
          <configuration>
            <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
              <target>System.err</target>
              <encoder>
                <pattern>%d{HH:mm:ss.SSS} %-5level %logger{36} - %msg%n</pattern>
              </encoder>
            </appender>
            <logger name="org.apache.pekko.cluster.sharding.ShardRegion" level="DEBUG"/>
            <logger name="com.zaxxer.hikari" level="WARN"/>
            <logger name="slick" level="WARN"/>
            <root level="INFO">
              <appender-ref ref="STDERR"/>
            </root>
          </configuration>
          """,
          StandardCharsets.UTF_8);
      String seeds =
          (size() > 1 ? List.of(address(0), address(1)) : List.of(address(0)))
              .stream().map(a -> "\"" + a + "\"").collect(Collectors.joining(", "));
      for (int i = 0; i < size(); i++) {
        String conf =
            """
            gpushare {
              nodes = []
              journal {
                kind = postgres
                postgres {
                  url = "%s"
                  user = "postgres"
                  password = "unused-with-trust"
                }
              }
            }
            pekko {
              # only the ShardRegion logger is at DEBUG (logback file); the rest stays at INFO
              loglevel = "DEBUG"
              remote.artery.canonical {
                hostname = "127.0.0.1"
                port = %d
              }
              cluster {
                seed-nodes = [%s]
                roles = ["node:%s"]
              }
            }
            pekko {
            %s
            }
            """
                .formatted(jdbcUrl(), arteryPorts[i], seeds, nodeOf(i), pekkoOverrides);
        Files.writeString(configFile(i), conf, StandardCharsets.UTF_8);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Runs {@code dev.gpushare.http.Main init-schema --config <member 1's file>} as a child JVM;
   * answers its output; fails unless it exits 0.
   */
  String initSchema() {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx256m");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(ServerProcess.classPath());
    cmd.add("dev.gpushare.http.Main");
    cmd.add("init-schema");
    cmd.add("--config");
    cmd.add(configFile(0).toString());
    cmd.add("--data");
    cmd.add(dir.resolve("init-schema-data").toString());
    Path out = dir.resolve("init-schema.log");
    ProcessBuilder pb =
        new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
    environment.forEach(
        (k, v) -> {
          if (v == null) {
            pb.environment().remove(k);
          } else {
            pb.environment().put(k, v);
          }
        });
    try {
      Process p = pb.start();
      if (!p.waitFor(120, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
        throw new AssertionError("init-schema did not finish within 120 s: " + read(out));
      }
      String text = read(out);
      if (p.exitValue() != 0) {
        throw new AssertionError("init-schema exited " + p.exitValue() + ":\n" + text);
      }
      return text;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Launches member {@code i} (blocks until it listens); it replaces any earlier member i. */
  ServerProcess startMember(int i) {
    ServerProcess m =
        ServerProcess.startWithClock(
            memberLabel(i),
            dataDir(i),
            "system",
            List.of(
                "-Xmx256m",
                "-XX:+HeapDumpOnOutOfMemoryError",
                "-XX:HeapDumpPath=" + dir,
                "-Dlogback.configurationFile=" + logbackFile),
            environment,
            "--config",
            configFile(i).toString());
    synchronized (members) {
      while (members.size() <= i) {
        members.add(null);
      }
      members.set(i, m);
    }
    return m;
  }

  /**
   * Starts member 1 (the first seed node, which forms the cluster), then the others in parallel
   * (they join it).
   */
  void startAll() {
    startMember(0);
    List<CompletableFuture<ServerProcess>> rest = new ArrayList<>();
    for (int i = 1; i < size(); i++) {
      int idx = i;
      rest.add(CompletableFuture.supplyAsync(() -> startMember(idx)));
    }
    // Wait for every one before failing, so that none is left starting after close().
    RuntimeException failure = null;
    for (CompletableFuture<ServerProcess> f : rest) {
      try {
        f.get(START_DEADLINE_SECONDS, TimeUnit.SECONDS);
      } catch (Exception e) {
        if (failure == null) {
          failure = new IllegalStateException("a member did not start: " + e, e);
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  ServerProcess member(int i) {
    synchronized (members) {
      return members.get(i);
    }
  }

  Api api(int i) {
    return member(i).api();
  }

  /**
   * The shards this member's process has started, by entity type: {@code type → [shard, …]} in the
   * order the log shows them (from its current log file, i.e. since its latest start).
   */
  static Map<String, List<String>> shardStarts(ServerProcess member) {
    Map<String, List<String>> out = new TreeMap<>();
    for (String line : lines(member.logFile())) {
      Matcher m = SHARD_STARTED.matcher(line);
      if (m.find()) {
        out.computeIfAbsent(m.group(1), t -> new ArrayList<>()).add(m.group(2));
      }
    }
    return out;
  }

  /** Entity types for which this member's log shows shard {@code shard} starting. */
  static List<String> typesStarted(ServerProcess member, String shard) {
    List<String> types = new ArrayList<>();
    shardStarts(member)
        .forEach(
            (type, shards) -> {
              if (shards.contains(shard)) {
                types.add(type);
              }
            });
    return types;
  }

  /**
   * The time of day of the first line of the member's current log that contains {@code text}, or
   * null. Every member runs on this machine, so the times of different members compare.
   */
  static java.time.LocalTime firstLogTime(ServerProcess member, String text) {
    for (String line : lines(member.logFile())) {
      if (line.contains(text) && line.length() >= 12) {
        try {
          return java.time.LocalTime.parse(line.substring(0, 12));
        } catch (java.time.format.DateTimeParseException e) {
          // not a log line of the pattern; keep looking
        }
      }
    }
    return null;
  }

  /** The member's log lines at level ERROR (and WARN when {@code warnings}). */
  static List<String> problems(ServerProcess member, boolean warnings) {
    List<String> out = new ArrayList<>();
    for (String line : lines(member.logFile())) {
      if (line.contains(" ERROR ") || (warnings && line.contains(" WARN "))) {
        out.add(line);
      }
    }
    return out;
  }

  static List<String> lines(Path file) {
    if (file == null || !Files.exists(file)) {
      return List.of();
    }
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      // the pump may be writing an incomplete UTF-8 sequence; read what is there
      try {
        return List.of(
            new String(Files.readAllBytes(file), StandardCharsets.UTF_8).split("\n", -1));
      } catch (IOException e2) {
        throw new UncheckedIOException(e2);
      }
    }
  }

  private static String read(Path file) {
    return String.join("\n", lines(file));
  }

  /** Where each member is: label → base URI (or "down"), for messages. */
  Map<String, String> describe() {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < size(); i++) {
      ServerProcess p = i < members.size() ? member(i) : null;
      m.put(
          memberLabel(i) + " (" + nodeOf(i) + ", " + address(i) + ")",
          p == null || !p.isAlive() ? "down" : p.baseUri() + " log " + p.logFile());
    }
    return m;
  }

  /**
   * Kills every member (SIGKILL, in parallel is not needed: each goes at once), then PostgreSQL.
   */
  @Override
  public void close() {
    List<ServerProcess> all;
    synchronized (members) {
      all = new ArrayList<>(members);
    }
    for (ServerProcess m : all) {
      if (m != null) {
        try {
          m.crash();
        } catch (RuntimeException e) {
          // keep stopping the others
        }
      }
    }
    try {
      postgres.close();
    } catch (IOException e) {
      throw new UncheckedIOException("stopping the embedded PostgreSQL server", e);
    }
  }
}
