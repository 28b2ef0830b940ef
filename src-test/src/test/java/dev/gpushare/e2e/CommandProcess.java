package dev.gpushare.e2e;

import dev.gpushare.gpu.ChildProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A launcher command ({@code init-schema}, {@code journal}) run as its own JVM, as a person runs
 * {@code java -jar gpushare.jar COMMAND …}: the same main class and class path as {@link
 * ServerProcess}, stdout and stderr captured separately.
 */
final class CommandProcess {

  private static final long DEADLINE_SECONDS = 120;

  /** The outcome: exit status, stdout, stderr. */
  record Result(int status, String out, String err) {
    List<String> lines() {
      return out.isEmpty() ? List.of() : List.of(out.split("\n"));
    }

    @Override
    public String toString() {
      return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
    }
  }

  private CommandProcess() {}

  static Result run(Map<String, String> environment, String... args) {
    try {
      Path dir = Files.createTempDirectory("gpushare-command");
      Path out = dir.resolve("stdout");
      Path err = dir.resolve("stderr");
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-Xmx256m");
      cmd.add("-XX:+UseSerialGC");
      cmd.add("-XX:TieredStopAtLevel=1");
      cmd.add("-cp");
      cmd.add(classPath());
      cmd.add("dev.gpushare.http.Main");
      cmd.addAll(List.of(args));
      ProcessBuilder pb =
          new ProcessBuilder(cmd)
              .redirectOutput(out.toFile())
              .redirectError(err.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
      pb.environment().putAll(environment);
      Process p = pb.start();
      boolean ended = false;
      try {
        ended = p.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS);
      } finally {
        if (!ended) {
          ChildProcess.killTree(p.toHandle()); // timed out, or the test's timeout interrupted it
        }
      }
      if (!ended) {
        throw new IllegalStateException(
            String.join(" ", args) + " did not finish in " + DEADLINE_SECONDS + " s");
      }
      Result result =
          new Result(
              p.exitValue(),
              Files.readString(out, StandardCharsets.UTF_8),
              Files.readString(err, StandardCharsets.UTF_8));
      Files.delete(out);
      Files.delete(err);
      Files.delete(dir);
      return result;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static String classPath() {
    String cp = System.getProperty("surefire.test.class.path");
    return cp == null || cp.isBlank() ? System.getProperty("java.class.path") : cp;
  }
}
