package dev.gpushare.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.cli.TokenLookup.Credentials;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The order: flags, then $GPUSHARE_TOKEN / $GPUSHARE_TOKEN_FILE, ./data/admin-token, the SA. */
class TokenLookupTest {

  @TempDir Path dir;
  Path cwd;
  Path sa;
  Path flagFile;
  Path envFile;
  Map<String, String> env = new HashMap<>();

  @BeforeEach
  void files() throws IOException {
    cwd = Files.createDirectories(dir.resolve("cwd"));
    Files.createDirectories(cwd.resolve("data"));
    Files.writeString(cwd.resolve("data/admin-token"), "admin\n");
    sa = dir.resolve("sa-token");
    Files.writeString(sa, "service-account");
    flagFile = dir.resolve("flag-token");
    Files.writeString(flagFile, "  from-flag-file \n");
    envFile = dir.resolve("env-token");
    Files.writeString(envFile, "from-env-file");
    env.put("GPUSHARE_TOKEN", "from-env");
    env.put("GPUSHARE_TOKEN_FILE", envFile.toString());
  }

  private Optional<String> find(String flag, Path file) {
    return TokenLookup.find(flag, file, env, cwd, sa).token();
  }

  @Test
  void theTokenFlagComesFirst() {
    assertEquals(Optional.of("from-flag"), find("from-flag", null));
  }

  @Test
  void thenTheTokenFileFlagStripped() {
    Credentials c = TokenLookup.find(null, flagFile, env, cwd, sa);
    assertEquals(Optional.of("from-flag-file"), c.token());
    assertTrue(c.source().contains("--token-file"), c.source());
  }

  @Test
  void bothFlagsAreAUsageError() {
    CliException e = assertThrows(CliException.class, () -> find("x", flagFile));
    assertTrue(e.getMessage().contains("not both"), e.getMessage());
  }

  @Test
  void thenTheEnvironmentTokenThenItsFile() {
    assertEquals(Optional.of("from-env"), find(null, null));
    env.put("GPUSHARE_TOKEN", " ");
    assertEquals(Optional.of("from-env-file"), find(null, null));
  }

  @Test
  void thenTheAdminTokenOfTheWorkingDirectoryThenTheServiceAccountToken() throws IOException {
    env.clear();
    Credentials admin = TokenLookup.find(null, null, env, cwd, sa);
    assertEquals(Optional.of("admin"), admin.token());
    assertTrue(admin.source().endsWith("data/admin-token"), admin.source());
    Files.delete(cwd.resolve("data/admin-token"));
    Credentials c = TokenLookup.find(null, null, env, cwd, sa);
    assertEquals(Optional.of("service-account"), c.token());
    assertTrue(c.source().contains("ServiceAccount"), c.source());
  }

  @Test
  void withoutAnyTokenNoneIsSentAndTheSourceSaysWhereItLooked() throws IOException {
    env.clear();
    Files.delete(cwd.resolve("data/admin-token"));
    Files.delete(sa);
    Credentials c = TokenLookup.find(null, null, env, cwd, sa);
    assertFalse(c.token().isPresent());
    assertTrue(c.source().startsWith("no token found"), c.source());
    assertTrue(c.source().contains("--token-file"), c.source());
  }

  @Test
  void aTokenFromAFileIsReadAgainForEveryRequest() throws IOException {
    env.clear();
    Files.delete(cwd.resolve("data/admin-token"));
    Credentials c = TokenLookup.find(null, null, env, cwd, sa);
    assertEquals(Optional.of("service-account"), c.current());
    Files.writeString(sa, "rotated\n");
    assertEquals(Optional.of("rotated"), c.current());
    Files.delete(sa);
    assertEquals(Optional.of("service-account"), c.current(), "the first one when unreadable");
    assertEquals(
        Optional.of("from-flag"), TokenLookup.find("from-flag", null, env, cwd, sa).current());
  }

  @Test
  void anImplicitFileThatCannotBeReadIsSkipped() throws IOException {
    env.clear();
    Path admin = cwd.resolve("data/admin-token");
    Files.writeString(admin, "  \n");
    Credentials c = TokenLookup.find(null, null, env, cwd, sa);
    assertEquals(Optional.of("service-account"), c.token());
    if (!"root".equals(System.getProperty("user.name"))) {
      Files.writeString(admin, "admin");
      Files.setPosixFilePermissions(admin, PosixFilePermissions.fromString("---------"));
      assertEquals(Optional.of("service-account"), find(null, null));
    }
  }

  @Test
  void anExplicitFileThatIsMissingOrEmptyIsAUsageError() throws IOException {
    CliException missing = assertThrows(CliException.class, () -> find(null, dir.resolve("nope")));
    assertTrue(missing.getMessage().contains("--token-file"), missing.getMessage());
    Files.writeString(envFile, "\n");
    env.remove("GPUSHARE_TOKEN");
    CliException empty = assertThrows(CliException.class, () -> find(null, null));
    assertTrue(empty.getMessage().contains("$GPUSHARE_TOKEN_FILE"), empty.getMessage());
    assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
  }
}
