package dev.gpushare.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The wrapper scripts {@code gpushare} and {@code kubectl-gpushare} (POSIX sh), run by {@code sh}
 * with a fake {@code $JAVA_HOME/bin/java} that prints the command line it was given: which jar they
 * find ($GPUSHARE_JAR, next to the script, the repository's build), and that they pass every
 * argument through unchanged.
 */
class ScriptsTest {

  static final Path SCRIPTS = Path.of(System.getProperty("basedir", "."), "src", "main", "scripts");

  record Result(int status, String out, String err) {}

  @TempDir Path dir;
  Path javaHome;

  @BeforeEach
  void fakeJava() throws IOException {
    javaHome = dir.resolve("jdk");
    Path java = Files.createDirectories(javaHome.resolve("bin")).resolve("java");
    Files.writeString(java, "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n");
    Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  Path install(String name, Path where) throws IOException {
    Files.createDirectories(where);
    Path script = where.resolve(name);
    Files.copy(SCRIPTS.resolve(name), script);
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
    return script;
  }

  Result run(Path script, Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("sh", script.toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().remove("GPUSHARE_JAR");
    pb.environment().remove("GPUSHARE_JAVA_OPTS");
    pb.environment().put("JAVA_HOME", javaHome.toString());
    pb.environment().putAll(env);
    Process p = pb.start();
    try {
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the script ends");
      return new Result(p.exitValue(), out, err);
    } finally {
      // on every path (a failure, the class's timeout): the script and what it started
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
    }
  }

  static List<String> javaArgs(String jar, String name, String... args) {
    List<String> all =
        new ArrayList<>(
            List.of(
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC",
                "-Dgpushare.cli.name=" + name,
                "-cp",
                jar,
                "dev.gpushare.cli.GpushareCli"));
    all.addAll(List.of(args));
    return all;
  }

  @Test
  void theJarFromGpushareJarComesFirstAndArgumentsPassUnchanged() throws Exception {
    Path script = install("gpushare", dir.resolve("bin"));
    Files.createFile(dir.resolve("bin/gpushare.jar"));
    Path jar = Files.createFile(dir.resolve("elsewhere.jar"));
    Result r =
        run(script, Map.of("GPUSHARE_JAR", jar.toString()), "run", "--", "sh", "-c", "echo a  b");
    assertEquals(0, r.status(), r::toString);
    assertEquals(
        javaArgs(jar.toString(), "gpushare", "run", "--", "sh", "-c", "echo a  b"),
        r.out().lines().toList());
  }

  @Test
  void thenTheJarNextToTheScriptFollowingSymbolicLinks() throws Exception {
    Path script = install("kubectl-gpushare", dir.resolve("dist"));
    Files.createFile(dir.resolve("dist/gpushare.jar"));
    Path link = Files.createDirectories(dir.resolve("path")).resolve("kubectl-gpushare");
    Files.createSymbolicLink(link, script);
    Result r = run(link, Map.of(), "nodes");
    assertEquals(0, r.status(), r::toString);
    List<String> args = r.out().lines().toList();
    assertEquals(dir.resolve("dist/gpushare.jar").toRealPath(), Path.of(args.get(4)).toRealPath());
    assertEquals("-Dgpushare.cli.name=kubectl gpushare", args.get(2));
    assertEquals(List.of("dev.gpushare.cli.GpushareCli", "nodes"), args.subList(5, 7));
  }

  @Test
  void thenTheBuildOfTheRepositoryTheScriptIsIn() throws Exception {
    Path repo = dir.resolve("repo");
    Path script = install("gpushare", repo.resolve("http-api/src/main/scripts"));
    Path target = Files.createDirectories(repo.resolve("http-api/target"));
    Files.createFile(target.resolve("gpushare.jar"));
    Result r = run(script, Map.of(), "pods");
    assertEquals(0, r.status(), r::toString);
    String jar = r.out().lines().toList().get(4);
    assertEquals(target.resolve("gpushare.jar").toRealPath(), Path.of(jar).toRealPath());
  }

  @Test
  void withoutAJarItSaysWhereItLooked() throws Exception {
    Path script = install("gpushare", dir.resolve("bin"));
    Result r = run(script, Map.of(), "nodes");
    assertEquals(2, r.status(), r::toString);
    assertEquals("", r.out());
    assertTrue(r.err().startsWith("gpushare: cannot find gpushare.jar"), r.err());
    assertTrue(r.err().contains("GPUSHARE_JAR"), r.err());
  }

  @Test
  void javaOptionsCanBeReplaced() throws Exception {
    Path script = install("gpushare", dir.resolve("bin"));
    Path jar = Files.createFile(dir.resolve("bin/gpushare.jar"));
    Result r = run(script, Map.of("GPUSHARE_JAVA_OPTS", "-Xmx64m -Dx=y"), "nodes");
    List<String> args = r.out().lines().toList();
    assertEquals(
        List.of("-Xmx64m", "-Dx=y", "-Dgpushare.cli.name=gpushare", "-cp"),
        args.subList(0, 4),
        r::toString);
    assertEquals(jar.toRealPath(), Path.of(args.get(4)).toRealPath());
    assertEquals(List.of("dev.gpushare.cli.GpushareCli", "nodes"), args.subList(5, 7));
  }
}
