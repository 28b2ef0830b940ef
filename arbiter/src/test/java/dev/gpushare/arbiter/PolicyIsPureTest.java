package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The domain and policy package stays pure Java (ARCHITECTURE.md §1): no actors, no I/O, nothing of
 * Kubernetes, HTTP, JDBC or JavaCPP. Only the {@code actor} subpackage wires it to Pekko.
 */
class PolicyIsPureTest {
  private static final Pattern FORBIDDEN =
      Pattern.compile(
          "^import\\s+(static\\s+)?(org\\.apache\\.pekko|io\\.fabric8|org\\.bytedeco|java\\.sql"
              + "|javax\\.sql|java\\.net|java\\.nio\\.file|java\\.io\\.File)",
          Pattern.MULTILINE);

  @Test
  void the_policy_package_imports_no_actor_io_or_platform_library() throws IOException {
    Path dir = Path.of("src/main/java/dev/gpushare/arbiter");
    assertTrue(Files.isDirectory(dir), "run from the arbiter module: " + dir.toAbsolutePath());
    List<String> offenders;
    try (Stream<Path> files = Files.list(dir)) {
      offenders =
          files
              .filter(f -> f.toString().endsWith(".java"))
              .filter(f -> FORBIDDEN.matcher(read(f)).find())
              .map(f -> f.getFileName().toString())
              .toList();
    }
    assertEquals(List.of(), offenders);
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
