package dev.gpushare.gpu;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a command (a compiler, a child JVM) for the fake-driver tests, with its standard output and
 * error together: without {@code LD_LIBRARY_PATH} and {@code LD_BIND_NOW} (the JNI wrappers must
 * bind lazily), within 60 s.
 */
public final class ChildProcess {
  private ChildProcess() {}

  /** The exit status (-1: could not start, -2: timed out) and the output. */
  public record Result(int rc, String out) {}

  public static Result run(List<String> cmd, Map<String, String> env) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    pb.environment().remove("LD_LIBRARY_PATH");
    pb.environment().remove("LD_BIND_NOW");
    File log = Files.createTempFile("fake-driver", ".log").toFile();
    pb.redirectOutput(log);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      return new Result(-1, e.toString());
    }
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return new Result(-2, "timed out: " + cmd);
    }
    String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
    Files.delete(log.toPath());
    return new Result(p.exitValue(), out);
  }

  /** The command line of a child JVM with this one's class path that runs {@code main}. */
  public static List<String> java(List<String> properties, Class<?> main, List<String> args) {
    List<String> cmd = new java.util.ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.addAll(properties);
    cmd.add(main.getName());
    cmd.addAll(args);
    return cmd;
  }
}
