package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The first start says one line per start-up phase (GPU backend, cluster, journal, each node's
 * arbiter, nodes) and the ready line, and nothing of the libraries' internals: Pekko, Slick,
 * HikariCP log at WARN unless {@code GPUSHARE_LOG_LIBRARIES} asks for more
 * (http-api/src/main/resources/logback.xml).
 */
class QuietStartTest {

  /**
   * At most this many log lines before the listening line: the phases, one node, the ready line.
   */
  private static final int MAX_START_LINES = 8;

  @TempDir Path temp;

  @Test
  void theFirstStartPrintsOneLinePerPhaseAndNoLibraryInternals() throws IOException {
    List<String> lines = startLines(Map.of());
    assertTrue(lines.size() <= MAX_START_LINES, "at most " + MAX_START_LINES + ": " + lines);
    for (String line : lines) {
      assertTrue(
          line.contains(" dev.gpushare.") || line.contains(" d.gpushare."),
          "only gpushare's own lines: " + line + "\nall: " + lines);
    }
    for (String phase :
        List.of("cluster: member ", "journal: h2 ", "nodes: 1 configured (node-1)")) {
      assertTrue(lines.stream().anyMatch(l -> l.contains(" - " + phase)), phase + ": " + lines);
    }
    assertTrue(
        lines.stream().anyMatch(l -> l.contains("node node-1: arbiter active on")),
        "the node's arbiter: " + lines);
    assertTrue(
        lines.get(lines.size() - 1).contains(" - gpushare ready: "),
        "the ready line last: " + lines);
  }

  @Test
  void gpushareLogLibrariesBringsPekkosLinesBack() throws IOException {
    List<String> lines = startLines(Map.of("GPUSHARE_LOG_LIBRARIES", "INFO"));
    assertTrue(
        lines.stream().anyMatch(l -> l.contains(" INFO ") && l.contains("Slf4jLogger started")),
        "Pekko's INFO lines: " + lines);
    assertTrue(
        lines.stream().anyMatch(l -> l.contains("Starting Shard Region")),
        "Pekko's INFO lines: " + lines);
    assertTrue(
        lines.stream().anyMatch(l -> l.contains(" - gpushare ready: ")),
        "the ready line still: " + lines);
  }

  /**
   * Starts a server on a fresh data directory with {@code environment} (GPUSHARE_LOG_LIBRARIES
   * unset unless given) and answers its log lines before the listening line.
   */
  private List<String> startLines(Map<String, String> environment) throws IOException {
    Map<String, String> env = new HashMap<>();
    env.put("GPUSHARE_LOG_LIBRARIES", null);
    env.putAll(environment);
    ServerProcess server =
        ServerProcess.start(
            "QuietStartTest", temp.resolve("data-" + env.hashCode()), List.of(), env);
    try {
      List<String> lines = new ArrayList<>();
      for (String line : Files.readAllLines(server.logFile(), StandardCharsets.UTF_8)) {
        if (line.startsWith("gpushare listening on ")) {
          break;
        }
        if (!line.startsWith("# ")) { // the harness's own first line: the command
          lines.add(line);
        }
      }
      assertFalse(lines.isEmpty(), "log lines before the listening line");
      return lines;
    } finally {
      server.stop();
    }
  }
}
