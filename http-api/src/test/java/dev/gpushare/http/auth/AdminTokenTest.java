package dev.gpushare.http.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AdminTokenTest {

  @Test
  void madeOnceInTheDataDirectoryReadableByTheOwnerOnlyAndKept(@TempDir Path dir) throws Exception {
    List<Path> told = new ArrayList<>();
    Path data = dir.resolve("data");
    AdminToken first = AdminToken.inDataDirectory(data, told::add);
    Path file = data.resolve(AdminToken.FILE);
    assertEquals(List.of(file), told, "the path is told once, when made");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    String token = Files.readString(file).strip();
    assertTrue(token.length() >= 43, "32 random bytes, base64url: " + token);
    assertTrue(first.matches(token));

    AdminToken again = AdminToken.inDataDirectory(data, told::add);
    assertEquals(1, told.size(), "not told again on a restart");
    assertTrue(again.matches(token), "the same token across restarts");
    assertFalse(again.matches(token + "x"));
    assertFalse(again.matches(""));
  }

  @Test
  void decidesEverythingForItselfAndNothingForOthers() throws Exception {
    AdminToken admin = AdminToken.of("s3cret");
    Scope scope = Scope.of("PUT", "/v1/nodes/n1");
    assertInstanceOf(
        Access.Allowed.class,
        admin.decide(Optional.of("s3cret"), scope).toCompletableFuture().get());
    Access.Decision wrong = admin.decide(Optional.of("guess"), scope).toCompletableFuture().get();
    assertInstanceOf(Access.Unauthenticated.class, wrong);
    Access.Decision none = admin.decide(Optional.empty(), scope).toCompletableFuture().get();
    assertTrue(((Access.Unauthenticated) none).why().contains("admin-token"), none.toString());
  }
}
