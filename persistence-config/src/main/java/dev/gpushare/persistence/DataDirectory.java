package dev.gpushare.persistence;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The server's {@code --data} directory (journal and other files). {@link #prepare(Path)} either
 * returns a usable directory or throws {@link IllegalArgumentException} with a message of the form
 * {@code --data <dir>: <reason>; give a writable directory}, fit to print before exiting.
 */
public final class DataDirectory {

  private DataDirectory() {}

  /**
   * Creates {@code dir} (and missing parents) if absent, checks that it is a writable directory and
   * returns it absolute and normalized.
   */
  public static Path prepare(Path dir) {
    Objects.requireNonNull(dir, "dir");
    Path absolute = dir.toAbsolutePath().normalize();
    if (Files.exists(absolute) && !Files.isDirectory(absolute)) {
      throw unusable(dir, "exists and is not a directory");
    }
    try {
      Files.createDirectories(absolute);
    } catch (FileAlreadyExistsException e) {
      throw unusable(dir, "a path element is not a directory (" + e.getFile() + ")");
    } catch (IOException | SecurityException e) {
      throw unusable(dir, "cannot be created (" + e + ")");
    }
    if (!Files.isWritable(absolute)) {
      throw unusable(dir, "is not writable");
    }
    probeWrite(dir, absolute);
    return absolute;
  }

  /** {@code isWritable} trusts permission bits; a read-only mount or full disk shows only here. */
  private static void probeWrite(Path dir, Path absolute) {
    Path probe;
    try {
      probe = Files.createTempFile(absolute, ".gpushare-write-check", ".tmp");
    } catch (IOException | SecurityException e) {
      throw unusable(dir, "a file cannot be created in it (" + e + ")");
    }
    try {
      Files.delete(probe);
    } catch (IOException e) {
      throw unusable(dir, "a file created in it cannot be deleted (" + e + ")");
    }
  }

  private static IllegalArgumentException unusable(Path dir, String reason) {
    return new IllegalArgumentException(
        "--data " + dir + ": " + reason + "; give a writable directory");
  }
}
