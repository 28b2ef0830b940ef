package dev.gpushare.http.auth;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * The member's own admin token: 32 random bytes (base64url), made on first start in {@code
 * <data>/admin-token} (mode 0600, readable by the owner only) and kept across restarts. Whoever
 * presents it may do everything; nothing else is accepted here. Comparison is constant-time.
 */
public final class AdminToken implements Access {
  public static final String FILE = "admin-token";

  private final byte[] token;

  private AdminToken(String token) {
    this.token = token.getBytes(StandardCharsets.UTF_8);
  }

  /** A token given as is (tests). */
  public static AdminToken of(String token) {
    if (token.isBlank()) {
      throw new IllegalArgumentException("an admin token cannot be blank");
    }
    return new AdminToken(token.strip());
  }

  /**
   * The token in {@code dataDir/admin-token}, made there first if missing; {@code created} is told
   * the file's path when this call made it (the launcher prints it once).
   */
  public static AdminToken inDataDirectory(Path dataDir, Consumer<Path> created) {
    Path file = dataDir.resolve(FILE);
    try {
      Files.createDirectories(dataDir);
      if (!Files.exists(file)) {
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        String fresh = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        try {
          Files.createFile(
              file,
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
          Files.writeString(file, fresh + "\n", StandardCharsets.UTF_8);
          created.accept(file);
        } catch (FileAlreadyExistsException raced) {
          // another start made it first: read it below
        }
      }
      String text = Files.readString(file, StandardCharsets.UTF_8).strip();
      if (text.isEmpty()) {
        throw new IllegalStateException(
            file + " is empty; delete it and start again to make a new admin token");
      }
      return new AdminToken(text);
    } catch (IOException e) {
      throw new UncheckedIOException("reading or making the admin token " + file, e);
    }
  }

  /** Whether {@code presented} is this token. */
  public boolean matches(String presented) {
    return MessageDigest.isEqual(token, presented.strip().getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public CompletionStage<Decision> decide(Optional<String> presented, Scope scope) {
    if (presented.isEmpty()) {
      return CompletableFuture.completedFuture(
          new Unauthenticated(
              "no bearer token: send \"Authorization: Bearer <token>\" (the admin token is in the"
                  + " data directory, file "
                  + FILE
                  + ")"));
    }
    return CompletableFuture.completedFuture(
        matches(presented.get())
            ? new Allowed("admin")
            : new Unauthenticated("the bearer token is not valid"));
  }
}
