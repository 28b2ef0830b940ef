package dev.gpushare.http.tools;

import dev.gpushare.http.launch.CommandArgs;
import dev.gpushare.http.launch.ExitStatus;
import dev.gpushare.http.launch.LaunchException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * {@code java -jar gpushare.jar install-library DIR}: copies the pod-side library {@code
 * libgpushare.so}, which the jar holds as the resource {@value #RESOURCE}, to {@code
 * DIR/libgpushare.so} and prints {@code installed DIR/libgpushare.so (N bytes, sha256 HEX)}. The
 * webhook's init container runs it to put the library into a sharing pod's {@code emptyDir}.
 *
 * <p>The copy is written beside its place ({@code DIR/.libgpushare.*.tmp}), flushed to the disk,
 * made {@code 0755} and renamed over {@code DIR/libgpushare.so}: a process never loads a library
 * half written, and a second run replaces the first's copy whole. It starts nothing else (no actor
 * system, no configuration), so an init container is done in the time the JVM takes to start.
 *
 * <p>Exit status 0 when installed; 2 for a bad argument (no {@code DIR}, more than one, a {@code
 * DIR} that does not exist, is not a directory or cannot be written); 1 when the jar holds no
 * library (built without a C compiler) or the copy fails.
 */
public final class InstallLibraryCommand {

  public static final String NAME = "install-library";

  /** Where the gpu-actors jar (and so the product's) holds the library. */
  public static final String RESOURCE = "dev/gpushare/native/libgpushare.so";

  /** The installed file's name in {@code DIR}. */
  public static final String FILE = "libgpushare.so";

  private static final String FLAGS = "DIR, --help";

  private InstallLibraryCommand() {}

  static String usage() {
    return """
        Usage: java -jar gpushare.jar install-library DIR

        Copies libgpushare.so, the pod-side library this jar holds, to DIR/libgpushare.so
        (mode 0755; written beside and renamed, so nobody sees it half written; an existing
        copy is replaced) and prints one line: installed DIR/libgpushare.so (N bytes,
        sha256 HEX). The mutating webhook's init container runs it to put the library into a
        sharing pod, where it is preloaded (LD_PRELOAD) into the GPU container's processes.

        DIR must exist and be writable; it is not created.

        Flags:
          --help          this text

        Exit status: 0 when installed, 2 for a bad argument, 1 when this jar holds no library
        (it was built without a C compiler) or the copy fails.
        """;
  }

  /** Runs the command; answers its exit status. */
  public static int run(List<String> args, PrintStream out, PrintStream err) {
    return run(args, out, err, RESOURCE);
  }

  /** The same with the library read from {@code resource} (tests: a resource that is missing). */
  static int run(List<String> args, PrintStream out, PrintStream err, String resource) {
    Path dir;
    try {
      CommandArgs parsed = CommandArgs.parse(args, Set.of(), Set.of("--help"), FLAGS);
      if (parsed.has("--help")) {
        out.print(usage());
        out.flush();
        return 0;
      }
      dir = directory(parsed.positional());
    } catch (LaunchException e) {
      return usageError(err, e.getMessage());
    }
    try (InputStream library =
        InstallLibraryCommand.class.getClassLoader().getResourceAsStream(resource)) {
      if (library == null) {
        return failure(
            err,
            "this jar holds no library ("
                + resource
                + "): it was built without a C compiler; build it on a machine with gcc"
                + " (gpu-actors/src/main/native/build.sh)");
      }
      Path target = dir.resolve(FILE);
      Installed installed = install(library, dir, target);
      out.println(
          "installed "
              + target
              + " ("
              + installed.bytes()
              + " bytes, sha256 "
              + installed.sha256()
              + ")");
      out.flush();
      return 0;
    } catch (NotWritable e) {
      return usageError(err, e.getMessage());
    } catch (IOException e) {
      return failure(err, "DIR " + dir + ": copying the library failed: " + e);
    }
  }

  private record Installed(long bytes, String sha256) {}

  /** A directory the library cannot be written into: a bad argument, not a failure. */
  private static final class NotWritable extends IOException {
    NotWritable(String message) {
      super(message);
    }
  }

  private static Path directory(List<String> positional) {
    if (positional.isEmpty()) {
      throw new LaunchException("missing DIR: the directory to copy libgpushare.so into");
    }
    if (positional.size() > 1) {
      throw new LaunchException(
          "unexpected argument '" + positional.get(1) + "'; give one DIR: " + FLAGS);
    }
    String text = positional.get(0);
    Path dir;
    try {
      if (text.isBlank()) {
        throw new InvalidPathException(text, "empty");
      }
      dir = Path.of(text);
    } catch (InvalidPathException e) {
      throw new LaunchException("DIR '" + text + "': not a valid path (" + e.getReason() + ")");
    }
    if (!Files.exists(dir)) {
      throw new LaunchException(
          "DIR " + dir + ": no such directory; it must exist (it is not created)");
    }
    if (!Files.isDirectory(dir)) {
      throw new LaunchException("DIR " + dir + ": not a directory");
    }
    if (!Files.isWritable(dir)) {
      throw new LaunchException(
          "DIR " + dir + ": not writable by this user; give a directory it may write into");
    }
    return dir;
  }

  private static Installed install(InputStream library, Path dir, Path target) throws IOException {
    Path temporary;
    try {
      temporary = Files.createTempFile(dir, ".libgpushare.", ".tmp");
    } catch (AccessDeniedException e) {
      throw new NotWritable(
          "DIR " + dir + ": not writable by this user; give a directory it may write into");
    } catch (FileSystemException e) {
      throw new NotWritable(
          "DIR "
              + dir
              + ": cannot create a file there ("
              + (e.getReason() == null ? e.toString() : e.getReason())
              + "); give a writable directory");
    }
    boolean moved = false;
    try {
      MessageDigest sha256 = sha256();
      long bytes = 0;
      try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
        byte[] buffer = new byte[64 * 1024];
        for (int n; (n = library.read(buffer)) > 0; ) {
          sha256.update(buffer, 0, n);
          ByteBuffer chunk = ByteBuffer.wrap(buffer, 0, n);
          while (chunk.hasRemaining()) {
            out.write(chunk);
          }
          bytes += n;
        }
        out.force(true);
      }
      Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString("rwxr-xr-x"));
      Files.move(
          temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      moved = true;
      syncDirectory(dir);
      return new Installed(bytes, HexFormat.of().formatHex(sha256.digest()));
    } finally {
      if (!moved) {
        Files.deleteIfExists(temporary);
      }
    }
  }

  /** The rename reaches the disk too; a file system that cannot sync a directory is let be. */
  private static void syncDirectory(Path dir) {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      // the copy is in place; only its durability across a power loss is weaker
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static int usageError(PrintStream err, String message) {
    err.println("gpushare " + NAME + ": " + message);
    err.println("gpushare " + NAME + ": run `java -jar gpushare.jar " + NAME + " --help`");
    err.flush();
    return ExitStatus.USAGE;
  }

  private static int failure(PrintStream err, String message) {
    err.println("gpushare " + NAME + ": " + message);
    err.flush();
    return ExitStatus.FAILED;
  }
}
