package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The module's packages by job, as http-api/README.md draws them: each package uses only the
 * packages below it in {@link #LAYERS}, so no import runs back up (the entry point is used by
 * nobody, the routes never reach into the launcher); the CLI is a client of the API: besides the
 * API over HTTP it uses only the domain's own rules ({@code dev.gpushare.arbiter}: the one name
 * validator, the one JSON mapper provider), never the server's code. Read from the sources, imports
 * and fully qualified names alike.
 */
class PackageLayersTest {
  /** Top first: a package may use those after it. */
  static final List<String> LAYERS =
      List.of(
          "dev.gpushare.http",
          "dev.gpushare.http.tools",
          "dev.gpushare.http.admission",
          "dev.gpushare.http.api",
          "dev.gpushare.http.extender",
          "dev.gpushare.http.tls",
          "dev.gpushare.http.launch",
          "dev.gpushare.http.server",
          "dev.gpushare.http.auth");

  private static final Path SOURCES = Path.of("src/main/java");
  private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
  private static final Pattern PROJECT_CLASS =
      Pattern.compile("\\b(dev\\.gpushare(?:\\.[a-z]\\w*)*)\\.[A-Z]");

  @Test
  void everyPackageUsesOnlyThePackagesBelowIt() {
    List<String> violations = new ArrayList<>();
    TreeSet<String> unknown = new TreeSet<>();
    for (Path file : sources()) {
      String text = read(file);
      String from = packageOf(text, file);
      Matcher uses = PROJECT_CLASS.matcher(code(text.substring(text.indexOf(';') + 1)));
      while (uses.find()) {
        String to = uses.group(1);
        if (to.equals(from)) {
          continue;
        }
        if (from.equals("dev.gpushare.cli")) {
          if (!to.equals("dev.gpushare.arbiter")) {
            violations.add(
                file
                    + ": the CLI uses "
                    + to
                    + " (it may use the API and dev.gpushare.arbiter only)");
          }
        } else if (to.startsWith("dev.gpushare.http") || to.equals("dev.gpushare.cli")) {
          int a = LAYERS.indexOf(from);
          int b = LAYERS.indexOf(to);
          if (a < 0 || b < 0) {
            unknown.add(a < 0 ? from : to);
          } else if (b < a) {
            violations.add(file + ": " + from + " uses " + to + ", which is above it");
          }
        }
      }
    }
    assertEquals(
        new TreeSet<>(), unknown, "packages missing from LAYERS (and from http-api/README.md)");
    assertEquals(List.of(), violations);
  }

  @Test
  void theReadmeDrawsTheSameLayers() {
    String readme = read(Path.of("README.md"));
    int at = 0;
    for (String layer : LAYERS) {
      String shown =
          layer.equals("dev.gpushare.http") ? "`" + layer + "`" : "`…" + layer.substring(13) + "`";
      int found = readme.indexOf("| " + shown + " |", at);
      assertTrue(found >= 0, "http-api/README.md lists " + shown + " after the packages above it");
      at = found;
    }
  }

  private static List<Path> sources() {
    assertTrue(
        Files.isDirectory(SOURCES), "run from the http-api module: " + SOURCES.toAbsolutePath());
    try (Stream<Path> files = Files.walk(SOURCES)) {
      return files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The text without comments and string literals (a help text may name a class it runs). */
  static String code(String text) {
    return text.replaceAll("(?s)\"\"\".*?\"\"\"", "\"\"")
        .replaceAll("(?s)/\\*.*?\\*/", "")
        .replaceAll("//[^\n]*", "")
        .replaceAll("\"(?:[^\"\\\\\n]|\\\\.)*\"", "\"\"");
  }

  private static String packageOf(String text, Path file) {
    Matcher m = PACKAGE.matcher(text);
    assertTrue(m.find(), file + " has no package declaration");
    return m.group(1);
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
