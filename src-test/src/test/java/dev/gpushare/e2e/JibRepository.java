package dev.gpushare.e2e;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The local Maven repository of the nested {@code mvn -pl http-api jib:buildTar} ({@link
 * NodeImages#member}): the project's own modules ({@code dev.gpushare}) exactly as they are on this
 * test's class path — the reactor's jars or class folders, or the local repository's where the test
 * runs alone — and everything else linked from the user's local repository. So the image holds the
 * code under test, and nothing of this checkout is installed into {@code ~/.m2}, which other
 * checkouts share.
 */
final class JibRepository {

  private static final List<String> MODULES =
      List.of("arbiter", "gpu-actors", "node-actors", "persistence-config", "http-api");
  private static final Pattern VERSION =
      Pattern.compile("<artifactId>gpushare-parent</artifactId>\\s*<version>([^<]+)</version>");

  private final Path root;
  private final Path home;
  private final List<String> digests = new ArrayList<>();
  private Path httpApi;

  private JibRepository(Path root, Path home) {
    this.root = root;
    this.home = home;
  }

  /** Lays the repository out afresh in {@code root}. */
  static JibRepository of(Path root) throws IOException {
    String local = System.getProperty("maven.repo.local");
    Path home =
        local != null && !local.isBlank()
            ? Path.of(local)
            : Path.of(System.getProperty("user.home"), ".m2", "repository");
    JibRepository repo = new JibRepository(root, home);
    repo.lay();
    return repo;
  }

  Path root() {
    return root;
  }

  /**
   * A copy of http-api's project for the nested build: the root pom and http-api's pom as they are
   * in the checkout, and as its {@code target/classes} the http-api on this test's class path (a
   * class folder, or its jar unpacked), so that Jib packs what the tests run.
   */
  Path project(Path at) throws IOException {
    if (httpApi == null) {
      throw new AssertionError("http-api is not on the test class path");
    }
    Path checkout = KubeControlPlane.repositoryRoot();
    KubeControlPlane.deleteTree(at);
    Path module = Files.createDirectories(at.resolve("http-api"));
    Files.copy(checkout.resolve("pom.xml"), at.resolve("pom.xml"));
    Files.copy(checkout.resolve("http-api/pom.xml"), module.resolve("pom.xml"));
    Path classes = Files.createDirectories(module.resolve("target/classes"));
    if (Files.isDirectory(httpApi)) {
      try (var walk = Files.walk(httpApi)) {
        for (Path p : walk.toList()) {
          Path to = classes.resolve(httpApi.relativize(p).toString());
          if (Files.isDirectory(p)) {
            Files.createDirectories(to);
          } else {
            Files.copy(p, to);
          }
        }
      }
    } else {
      try (var zip = new java.util.zip.ZipInputStream(Files.newInputStream(httpApi))) {
        for (var e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
          Path to = classes.resolve(e.getName()).normalize();
          if (!to.startsWith(classes)) {
            continue;
          }
          if (e.isDirectory()) {
            Files.createDirectories(to);
          } else {
            Files.createDirectories(to.getParent());
            Files.copy(zip, to, StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    }
    return module.resolve("pom.xml");
  }

  /**
   * Whether an earlier build here resolved the Jib plugin and all it needs (then the build runs
   * offline; else Maven fetches what is missing from Maven Central).
   */
  boolean resolved() {
    return Files.exists(root.resolve(".jib-resolved"));
  }

  /** Says that a build here has resolved everything ({@link #resolved}). */
  void markResolved() throws IOException {
    Files.writeString(root.resolve(".jib-resolved"), "");
  }

  /** A hash of the project's artifacts it holds: the image is made again when it changes. */
  String key() {
    return NodeImages.hash(digests.toArray(String[]::new));
  }

  /**
   * Links every group of the user's repository not here yet (what a build here downloaded itself
   * stays: a group the user's repository did not have), and puts the project's artifacts afresh.
   */
  private void lay() throws IOException {
    Files.createDirectories(root);
    KubeControlPlane.deleteTree(root.resolve("dev/gpushare"));
    if (Files.isDirectory(home)) {
      try (var children = Files.list(home)) {
        for (Path c : children.toList()) {
          String name = c.getFileName().toString();
          if (name.equals("dev")) {
            Path dev = Files.createDirectories(root.resolve("dev"));
            try (var groups = Files.list(c)) {
              for (Path g : groups.toList()) {
                link(dev.resolve(g.getFileName().toString()), g);
              }
            }
          } else {
            link(root.resolve(name), c);
          }
        }
      }
    }
    Path checkout = KubeControlPlane.repositoryRoot();
    String version = version(checkout);
    put("gpushare-parent", version, null, "pom", checkout.resolve("pom.xml"));
    for (String module : MODULES) {
      put(module, version, null, "pom", checkout.resolve(module).resolve("pom.xml"));
    }
    for (String entry : ServerProcess.classPath().split(java.io.File.pathSeparator)) {
      Path p = Path.of(entry).toAbsolutePath().normalize();
      for (String module : MODULES) {
        Path target = checkout.resolve(module).resolve("target");
        String tests = null;
        if (p.equals(target.resolve("classes"))) {
          tests = "";
        } else if (p.equals(target.resolve("test-classes"))) {
          tests = "tests";
        } else if (p.startsWith(target) && p.toString().endsWith(".jar")) {
          tests = p.getFileName().toString().endsWith("-tests.jar") ? "tests" : "";
        } else if (p.startsWith(home.resolve("dev/gpushare").resolve(module))) {
          tests = p.getFileName().toString().endsWith("-tests.jar") ? "tests" : "";
        }
        if (tests != null) {
          put(module, version, tests.isEmpty() ? null : tests, "jar", p);
          if (module.equals("http-api") && tests.isEmpty()) {
            httpApi = p;
          }
        }
      }
    }
  }

  private static void link(Path at, Path target) throws IOException {
    if (at.getFileName().toString().equals("gpushare")
        || Files.exists(at, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    Files.createSymbolicLink(at, target);
  }

  /** {@code source} (a file, or a class folder to jar) as that artifact. */
  private void put(String artifact, String version, String classifier, String type, Path source)
      throws IOException {
    Path dir =
        Files.createDirectories(root.resolve("dev/gpushare").resolve(artifact).resolve(version));
    String name =
        artifact + "-" + version + (classifier == null ? "" : "-" + classifier) + "." + type;
    Path file = dir.resolve(name);
    if (Files.isDirectory(source)) {
      jar(source, file);
    } else {
      Files.copy(source, file, StandardCopyOption.REPLACE_EXISTING);
    }
    digests.add(name + "=" + NodeImages.digest(file));
  }

  private static void jar(Path classes, Path jar) throws IOException {
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream j = new JarOutputStream(out);
        var walk = Files.walk(classes)) {
      for (Path p : walk.sorted().toList()) {
        if (p.equals(classes)) {
          continue;
        }
        String name = classes.relativize(p).toString() + (Files.isDirectory(p) ? "/" : "");
        JarEntry e = new JarEntry(name);
        e.setTime(Files.getLastModifiedTime(p).toMillis());
        j.putNextEntry(e);
        if (!Files.isDirectory(p)) {
          Files.copy(p, j);
        }
        j.closeEntry();
      }
    }
  }

  private static String version(Path checkout) {
    try {
      Matcher m = VERSION.matcher(Files.readString(checkout.resolve("pom.xml")));
      if (!m.find()) {
        throw new IllegalStateException("no gpushare-parent version in the root pom.xml");
      }
      return m.group(1);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
