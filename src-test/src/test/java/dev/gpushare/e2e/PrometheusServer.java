package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real Prometheus server (Debian's {@code prometheus} package, which {@code .ci/run} installs) as
 * a child process on a loopback port, with its TSDB in a temporary directory: it scrapes the
 * targets given to {@link #start} every second with a bearer token read from a file, and evaluates
 * the given rule files every second. {@link #start} skips the test (a JUnit assumption that says
 * why and how to get it) when no {@code prometheus} binary is found; {@link #close} stops it.
 */
final class PrometheusServer implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration START_DEADLINE = Duration.ofSeconds(60);

  private final Process process;
  private final URI base;
  private final Path log;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private PrometheusServer(Process process, URI base, Path log) {
    this.process = process;
    this.base = base;
    this.log = log;
  }

  /** The {@code prometheus} binary: {@code $PROMETHEUS}, else the first on {@code PATH}. */
  static Optional<Path> binary() {
    String explicit = System.getenv("PROMETHEUS");
    if (explicit != null && !explicit.isBlank()) {
      Path p = Path.of(explicit);
      return Files.isExecutable(p) ? Optional.of(p) : Optional.empty();
    }
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path p = Path.of(dir, "prometheus");
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /**
   * Starts Prometheus in {@code dir}: job {@code gpushare} scraping {@code targets} ({@code
   * host:port}, plain HTTP, path {@code /metrics}) with the bearer token in {@code tokenFile},
   * evaluating {@code ruleFiles}; scrape and evaluation interval 1 s.
   */
  static PrometheusServer start(
      Path dir, List<String> targets, Path tokenFile, List<Path> ruleFiles) throws IOException {
    Optional<Path> bin = binary();
    assumeTrue(
        bin.isPresent(),
        "prometheus not found on PATH (nor $PROMETHEUS): install Debian's prometheus package"
            + " (apt-get install prometheus; .ci/run does) to run the real-Prometheus test");
    int port = freePort();
    StringBuilder config = new StringBuilder();
    config.append("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n");
    config.append("rule_files:\n");
    for (Path r : ruleFiles) {
      config.append("  - ").append(quoted(r.toString())).append('\n');
    }
    config.append("scrape_configs:\n");
    config.append("  - job_name: gpushare\n");
    config.append("    scrape_timeout: 1s\n");
    config.append("    metrics_path: /metrics\n");
    config.append("    authorization:\n");
    config.append("      type: Bearer\n");
    config.append("      credentials_file: ").append(quoted(tokenFile.toString())).append('\n');
    config.append("    static_configs:\n      - targets:\n");
    for (String t : targets) {
      config.append("          - ").append(quoted(t)).append('\n');
    }
    Path configFile = Files.writeString(dir.resolve("prometheus.yml"), config.toString());
    Path tsdb = Files.createDirectories(dir.resolve("tsdb"));
    Path log = dir.resolve("prometheus.log");
    Process p =
        new ProcessBuilder(
                bin.get().toString(),
                "--config.file=" + configFile,
                "--storage.tsdb.path=" + tsdb,
                "--web.listen-address=127.0.0.1:" + port,
                "--log.level=warn")
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    PrometheusServer server = new PrometheusServer(p, URI.create("http://127.0.0.1:" + port), log);
    try {
      server.awaitReady();
    } catch (RuntimeException | Error e) {
      server.close();
      throw e;
    }
    return server;
  }

  private void awaitReady() {
    Instant deadline = Instant.now().plus(START_DEADLINE);
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new AssertionError(
            "prometheus exited at start (" + process.exitValue() + "):\n" + log());
      }
      try {
        HttpResponse<String> r = send("/-/ready");
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      pause(200);
    }
    throw new AssertionError("prometheus not ready within " + START_DEADLINE + ":\n" + log());
  }

  /** {@code GET /api/v1/query?query=…}: the whole answer; asserts HTTP 200 and status success. */
  JsonNode query(String promql) {
    JsonNode answer =
        get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
    if (!"success".equals(answer.path("status").asText())) {
      throw new AssertionError("query " + promql + " failed: " + answer);
    }
    return answer.path("data");
  }

  /** The raw answer of a query, whatever its status (for parse errors). */
  JsonNode queryAnswer(String promql) {
    return get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
  }

  /** The series an instant query returns ({@code data.result}, a vector). */
  List<JsonNode> series(String promql) {
    List<JsonNode> out = new ArrayList<>();
    query(promql).path("result").forEach(out::add);
    return out;
  }

  /** {@code GET /api/v1/alerts}: the active (pending or firing) alerts. */
  List<JsonNode> alerts() {
    List<JsonNode> out = new ArrayList<>();
    get("/api/v1/alerts").path("data").path("alerts").forEach(out::add);
    return out;
  }

  /** {@code GET /api/v1/rules}: every rule with its health and last error. */
  List<JsonNode> rules() {
    List<JsonNode> out = new ArrayList<>();
    for (JsonNode group : get("/api/v1/rules").path("data").path("groups")) {
      group.path("rules").forEach(out::add);
    }
    return out;
  }

  /** {@code GET /api/v1/targets}: the active targets. */
  List<JsonNode> targets() {
    List<JsonNode> out = new ArrayList<>();
    get("/api/v1/targets").path("data").path("activeTargets").forEach(out::add);
    return out;
  }

  /** Prometheus' own log so far (for failure messages). */
  String log() {
    try {
      String all = Files.readString(log);
      return all.length() > 4000 ? "…" + all.substring(all.length() - 4000) : all;
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  private JsonNode get(String pathAndQuery) {
    try {
      HttpResponse<String> r = send(pathAndQuery);
      return JSON.readTree(r.body());
    } catch (IOException e) {
      throw new UncheckedIOException("GET " + pathAndQuery + " from prometheus", e);
    }
  }

  private HttpResponse<String> send(String pathAndQuery) throws IOException {
    HttpRequest req =
        HttpRequest.newBuilder(base.resolve(pathAndQuery)).timeout(Duration.ofSeconds(10)).build();
    try {
      return http.send(req, HttpResponse.BodyHandlers.ofString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  private static String quoted(String s) {
    return "'" + s.replace("'", "''") + "'";
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
