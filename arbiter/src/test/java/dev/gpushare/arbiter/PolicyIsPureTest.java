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
import org.junit.jupiter.api.io.TempDir;

/**
 * The domain and policy package stays pure Java (ARCHITECTURE.md §1): no actors, no I/O, nothing of
 * Kubernetes, HTTP, JDBC or JavaCPP. Only the {@code actor} subpackage wires it to Pekko; every
 * other subpackage (such as {@code fragmentation}) is held to the same rule.
 */
class PolicyIsPureTest {
  private static final Pattern FORBIDDEN =
      Pattern.compile(
          "^import\\s+(static\\s+)?(org\\.apache\\.pekko|io\\.fabric8|org\\.bytedeco|java\\.sql"
              + "|javax\\.sql|java\\.net|java\\.nio\\.file|java\\.io\\.File)",
          Pattern.MULTILINE);

  private static final Path ROOT = Path.of("src/main/java/dev/gpushare/arbiter");

  /** The one subpackage allowed to wire the policy to Pekko. */
  private static final Path ACTOR = ROOT.resolve("actor");

  @Test
  void the_policy_packages_import_no_actor_io_or_platform_library() throws IOException {
    assertTrue(Files.isDirectory(ROOT), "run from the arbiter module: " + ROOT.toAbsolutePath());
    assertEquals(List.of(), offenders(ROOT));
  }

  @Test
  void the_check_reaches_into_subpackages() throws IOException {
    List<String> checked = checked(ROOT);
    assertTrue(checked.contains("ShareBook.java"), "the top package: " + checked);
    assertTrue(
        checked.contains("fragmentation/FgdPolicy.java"), "the fragmentation package: " + checked);
    assertTrue(
        checked.stream().noneMatch(f -> f.startsWith("actor/")), "actor is exempt: " + checked);
  }

  @Test
  void a_forbidden_import_in_a_nested_package_is_found(@TempDir Path temp) throws IOException {
    Path nested = Files.createDirectories(temp.resolve("fragmentation/deeper"));
    Files.writeString(nested.resolve("Ok.java"), "package x;\nimport java.util.List;\n");
    Files.writeString(
        nested.resolve("Bad.java"), "package x;\nimport org.apache.pekko.actor.typed.ActorRef;\n");
    assertEquals(List.of("fragmentation/deeper/Bad.java"), offenders(temp));
  }

  /** The Java files under {@code root} and all its subpackages but {@code actor}, relative. */
  private static List<String> checked(Path root) throws IOException {
    Path actor = root.resolve(ROOT.relativize(ACTOR));
    try (Stream<Path> files = Files.walk(root)) {
      return files
          .filter(f -> f.toString().endsWith(".java"))
          .filter(f -> !f.startsWith(actor))
          .map(f -> root.relativize(f).toString().replace('\\', '/'))
          .sorted()
          .toList();
    }
  }

  private static List<String> offenders(Path root) throws IOException {
    return checked(root).stream()
        .filter(f -> FORBIDDEN.matcher(read(root.resolve(f))).find())
        .toList();
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
