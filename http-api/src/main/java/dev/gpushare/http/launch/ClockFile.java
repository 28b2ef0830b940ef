package dev.gpushare.http.launch;

import dev.gpushare.persistence.DataDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.Set;

/**
 * Where a manual clock stands, kept in {@code <data>/clock.txt} (one ISO-8601 instant) so that a
 * restart on the same data directory resumes there: simulated time never goes backwards. Each
 * {@link #record(Instant)} replaces the file atomically (written beside it, synced, renamed), and
 * an instant earlier than the one already recorded is ignored, so advances that complete out of
 * order cannot move the file back. The file is the owner's alone (0600), like everything in the
 * data directory. Thread-safe.
 */
public final class ClockFile {
  public static final String NAME = "clock.txt";

  private final Path file;
  private Instant recorded;

  public ClockFile(Path dataDir) {
    this.file = dataDir.resolve(NAME);
  }

  public Path path() {
    return file;
  }

  /**
   * The recorded instant, if the file exists; a {@link LaunchException} naming the file and its
   * content when it is not an instant.
   */
  public synchronized Optional<Instant> read() {
    if (!Files.exists(file)) {
      return Optional.empty();
    }
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      throw new LaunchException(file + ": cannot be read (" + e.getMessage() + ")");
    }
    try {
      recorded = Instant.parse(text);
      return Optional.of(recorded);
    } catch (DateTimeParseException e) {
      throw new LaunchException(
          file
              + ": '"
              + text
              + "' is not an ISO-8601 instant such as 2026-01-01T00:00:00Z; it records where"
              + " the manual clock stopped: correct it, or delete it to start from"
              + " gpushare.manual-clock-start");
    }
  }

  /** Records {@code now} unless a later instant is recorded already. */
  public synchronized void record(Instant now) {
    if (recorded != null && !now.isAfter(recorded)) {
      return;
    }
    Path temp = file.resolveSibling(NAME + ".tmp");
    try {
      try (FileChannel channel =
          FileChannel.open(
              temp,
              Set.of(
                  StandardOpenOption.CREATE,
                  StandardOpenOption.TRUNCATE_EXISTING,
                  StandardOpenOption.WRITE),
              ownerOnly(temp))) {
        if (Files.getFileAttributeView(temp, PosixFileAttributeView.class) != null) {
          // a temp file left behind by an older version keeps its mode through CREATE
          Files.setPosixFilePermissions(temp, DataDirectory.FILE_MODE);
        }
        channel.write(ByteBuffer.wrap((now + "\n").getBytes(StandardCharsets.UTF_8)));
        channel.force(true);
      }
      try {
        Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(
          "the manual clock moved to " + now + " but " + file + " could not be written", e);
    }
    recorded = now;
  }

  private static FileAttribute<?>[] ownerOnly(Path file) {
    return Files.getFileAttributeView(file.getParent(), PosixFileAttributeView.class) == null
        ? new FileAttribute<?>[0]
        : new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(DataDirectory.FILE_MODE)};
  }
}
