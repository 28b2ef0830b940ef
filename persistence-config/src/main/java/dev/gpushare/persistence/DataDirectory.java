package dev.gpushare.persistence;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The server's {@code --data} directory (journal and other files). {@link #prepare(Path)} either
 * returns a usable directory or throws {@link IllegalArgumentException} with a message of the form
 * {@code --data <dir>: <reason>; give a writable directory}, fit to print before exiting.
 *
 * <p>The directory is the owner's alone (mode 0700) and so is every file in it (0600): the journal
 * holds every decision and the admin token grants everything. H2 creates its files with the process
 * umask (0644, or 0666 under umask 000), so {@link #restrictFiles} is run again once the journal is
 * open; meanwhile the directory's mode keeps them from other users. Where the file system has no
 * POSIX permissions nothing is changed.
 */
public final class DataDirectory {

  /** The data directory's mode. */
  public static final Set<PosixFilePermission> DIRECTORY_MODE =
      PosixFilePermissions.fromString("rwx------");

  /** The mode of every file in it. */
  public static final Set<PosixFilePermission> FILE_MODE =
      PosixFilePermissions.fromString("rw-------");

  private static final Set<PosixFilePermission> GROUP_OR_OTHERS =
      EnumSet.of(
          PosixFilePermission.GROUP_READ,
          PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_EXECUTE,
          PosixFilePermission.OTHERS_READ,
          PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_EXECUTE);

  private DataDirectory() {}

  /** As {@link #prepare(Path, Consumer)}, telling nobody what was tightened. */
  public static Path prepare(Path dir) {
    return prepare(dir, line -> {});
  }

  /**
   * Creates {@code dir} (and missing parents) if absent, with mode 0700, checks that it is a
   * writable directory and returns it absolute and normalized. An existing directory or file in it
   * that others may use is made the owner's alone; {@code log} gets one line for the directory and
   * one for its files saying what was changed.
   */
  public static Path prepare(Path dir, Consumer<String> log) {
    Objects.requireNonNull(dir, "dir");
    Path absolute = dir.toAbsolutePath().normalize();
    if (Files.exists(absolute) && !Files.isDirectory(absolute)) {
      throw unusable(dir, "exists and is not a directory");
    }
    try {
      if (!Files.isDirectory(absolute)) {
        if (absolute.getParent() != null) {
          Files.createDirectories(absolute.getParent());
        }
        createPrivateDirectory(absolute);
      }
    } catch (FileAlreadyExistsException e) {
      throw unusable(dir, "a path element is not a directory (" + e.getFile() + ")");
    } catch (IOException | SecurityException e) {
      throw unusable(dir, "cannot be created (" + e + ")");
    }
    if (!Files.isWritable(absolute)) {
      throw unusable(dir, "is not writable");
    }
    probeWrite(dir, absolute);
    restrictDirectory(absolute, log);
    List<String> tightened = restrictFiles(absolute);
    if (!tightened.isEmpty()) {
      log.accept(
          "--data "
              + absolute
              + ": files made readable by their owner only (0600): "
              + String.join(", ", tightened));
    }
    return absolute;
  }

  /**
   * Sets every regular file directly in {@code dir} that its group or others may use to 0600 and
   * answers them as {@code name (was 0644)}; symbolic links and subdirectories are left alone.
   * Failures are reported in the answer, not thrown: the directory's own mode already keeps others
   * out.
   */
  public static List<String> restrictFiles(Path dir) {
    List<String> changed = new ArrayList<>();
    if (!posix(dir)) {
      return changed;
    }
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
      for (Path file : files) {
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
          continue;
        }
        try {
          Set<PosixFilePermission> mode =
              Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
          if (!overlaps(mode, GROUP_OR_OTHERS)) {
            continue;
          }
          Files.setPosixFilePermissions(file, FILE_MODE);
          changed.add(file.getFileName() + " (was " + octal(mode) + ")");
        } catch (IOException | SecurityException e) {
          changed.add(file.getFileName() + " (not changed: " + e + ")");
        }
      }
    } catch (IOException | SecurityException e) {
      changed.add("(the directory could not be listed: " + e + ")");
    }
    return changed;
  }

  /**
   * Creates the empty file {@code file} with mode 0600 (where the file system has POSIX
   * permissions), so that it never has the umask's mode.
   *
   * @throws java.nio.file.FileAlreadyExistsException when it exists
   */
  public static void createPrivateFile(Path file) throws IOException {
    if (posix(file.getParent())) {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(FILE_MODE));
    } else {
      Files.createFile(file);
    }
  }

  /** A file system's size and what of it this process may still use ({@code usable}), bytes. */
  public record Space(long usable, long total) {}

  /**
   * The space of the file system {@code dir} is on, read now: what the journal's free-space check
   * ({@link JournalHealth#watchFreeSpace}) and the metrics ({@code
   * gpushare_data_directory_available_bytes}) both read. {@code usable} is what this process may
   * still write (the file system's free space less what it keeps for root).
   */
  public static Space space(Path dir) throws IOException {
    FileStore store = Files.getFileStore(dir);
    return new Space(store.getUsableSpace(), store.getTotalSpace());
  }

  /** {@code mode} as {@code 0644}. */
  static String octal(Set<PosixFilePermission> mode) {
    int bits = 0;
    for (PosixFilePermission p : mode) {
      bits |= 1 << (8 - p.ordinal());
    }
    return String.format("0%03o", bits);
  }

  private static void createPrivateDirectory(Path absolute) throws IOException {
    if (posix(absolute.getParent() == null ? absolute : absolute.getParent())) {
      Files.createDirectory(absolute, PosixFilePermissions.asFileAttribute(DIRECTORY_MODE));
    } else {
      Files.createDirectory(absolute);
    }
  }

  private static void restrictDirectory(Path absolute, Consumer<String> log) {
    if (!posix(absolute)) {
      return;
    }
    try {
      Set<PosixFilePermission> mode = Files.getPosixFilePermissions(absolute);
      if (!overlaps(mode, GROUP_OR_OTHERS)) {
        return;
      }
      Files.setPosixFilePermissions(absolute, DIRECTORY_MODE);
      log.accept(
          "--data "
              + absolute
              + ": mode "
              + octal(mode)
              + " let other users in; set to 0700 (the journal and the admin token are the"
              + " owner's alone)");
    } catch (IOException | SecurityException e) {
      log.accept(
          "--data "
              + absolute
              + ": other users may read it, and its mode cannot be set to 0700 ("
              + e
              + "); make the server's user its owner, or chmod 700 it");
    }
  }

  private static boolean posix(Path path) {
    return Files.getFileAttributeView(path, PosixFileAttributeView.class) != null;
  }

  private static boolean overlaps(Set<PosixFilePermission> a, Set<PosixFilePermission> b) {
    for (PosixFilePermission p : a) {
      if (b.contains(p)) {
        return true;
      }
    }
    return false;
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
