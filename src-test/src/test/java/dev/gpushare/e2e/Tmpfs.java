package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A small tmpfs mounted on a directory, to fill a data directory's disk for real. Needs root and
 * {@code mount}: {@link #mount} skips the test (a JUnit assumption that says why) otherwise. {@link
 * #close()} unmounts, lazily if something still holds it.
 */
final class Tmpfs implements AutoCloseable {

  private final Path dir;
  private final Path filler;

  private Tmpfs(Path dir) {
    this.dir = dir;
    this.filler = dir.resolve("filler");
  }

  /** A tmpfs of {@code size} (e.g. {@code 8m}) on {@code dir}, created if absent. */
  static Tmpfs mount(Path dir, String size) {
    Ran id = run(List.of("id", "-u"));
    assumeTrue(
        id.status() == 0 && id.output().strip().equals("0"),
        () -> "mounting a tmpfs needs root; this test runs as uid " + id.output().strip());
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Ran mounted =
        run(List.of("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", dir.toString()));
    assumeTrue(
        mounted.status() == 0,
        () -> "mount -t tmpfs on " + dir + " is not available here: " + mounted.output());
    return new Tmpfs(dir);
  }

  /**
   * Whether {@link #mount} can be tried here: root, with {@code mount} on the path (it may still
   * fail, e.g. without the capability; {@link #mount} then skips).
   */
  static boolean canMount() {
    Ran id = run(List.of("id", "-u"));
    return id.status() == 0
        && id.output().strip().equals("0")
        && run(List.of("sh", "-c", "command -v mount")).status() == 0;
  }

  Path dir() {
    return dir;
  }

  long usable() {
    try {
      return Files.getFileStore(dir).getUsableSpace();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes a filler file until the file system has about {@code free} bytes left. */
  void fillLeaving(long free) {
    long toWrite = usable() - free;
    byte[] block = new byte[64 * 1024];
    try (OutputStream out = Files.newOutputStream(filler)) {
      for (long written = 0; written < toWrite; written += block.length) {
        out.write(block, 0, (int) Math.min(block.length, toWrite - written));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes a filler file until the file system is full (no space left on device). */
  void fillUp() {
    byte[] block = new byte[4096];
    try (OutputStream out = Files.newOutputStream(filler)) {
      while (true) {
        out.write(block);
        out.flush();
      }
    } catch (IOException full) {
      // no space left on device: that was the point
    }
  }

  /** Deletes the filler: the space is back. */
  void free() {
    try {
      Files.deleteIfExists(filler);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    free();
    if (run(List.of("umount", dir.toString())).status() != 0) {
      run(List.of("umount", "-l", dir.toString()));
    }
  }

  private record Ran(int status, String output) {}

  /** Runs a command to its end (status -1 when it cannot be run or does not finish). */
  private static Ran run(List<String> command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return new Ran(-1, String.join(" ", command) + ": did not finish");
      }
      return new Ran(p.exitValue(), output);
    } catch (IOException e) {
      return new Ran(-1, String.join(" ", command) + ": " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Ran(-1, String.join(" ", command) + ": interrupted");
    }
  }
}
