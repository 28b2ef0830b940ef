package dev.gpushare.cli;

import static dev.gpushare.cli.StubServer.Answer.json;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --server} and {@code $GPUSHARE_SERVER}: http(s) URLs and {@code unix:/path}, bad values
 * named with what is accepted; and the rule that a pod's credential (a token file under
 * /var/run/secrets/, the ServiceAccount token) never goes over plain http to a host that is not
 * loopback, while one's own token may.
 */
class ServerOptionTest {
  static final String REMOTE = "http://gpushare-node.gpushare-system.svc:8080";

  record Result(int status, String out, String err) {}

  @TempDir Path dir;
  Path podSecrets;
  Path projected;
  Path serviceAccount;
  StubServer stub;
  final Map<String, String> env = new HashMap<>();

  @BeforeEach
  void files() throws IOException {
    podSecrets = dir.resolve("var/run/secrets");
    projected = podSecrets.resolve("gpushare.dev/token/token");
    Files.createDirectories(projected.getParent());
    Files.writeString(projected, "projected");
    serviceAccount = dir.resolve("elsewhere/sa-token");
    Files.createDirectories(serviceAccount.getParent());
    stub = new StubServer();
    stub.on("GET", "/v1/nodes", json("{\"items\":[]}"));
  }

  @AfterEach
  void stop() {
    stub.close();
  }

  Result cli(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int status =
        GpushareCli.execute(
            args,
            env,
            dir,
            serviceAccount,
            List.of(podSecrets),
            Signals.posix(),
            new PrintWriter(out, true),
            new PrintWriter(err, true));
    return new Result(status, out.toString(), err.toString());
  }

  // ------------------------------------------------------------------ server values

  @Test
  void badUnixValuesAreUsageErrorsNamingThemAndWhatIsAccepted() {
    String accepted =
        "give an http:// or https:// URL with a host (e.g. http://127.0.0.1:8080) or unix:/PATH,"
            + " the absolute path of the node's data-plane socket (e.g."
            + " unix:/run/gpushare/data-plane/gpushare.sock)\n";
    Result empty = cli("nodes", "--server", "unix:");
    assertEquals(2, empty.status(), empty::toString);
    assertEquals("error: --server 'unix:': no socket path after unix:; " + accepted, empty.err());

    Result relative = cli("nodes", "--server", "unix:run/gpushare.sock");
    assertEquals(2, relative.status(), relative::toString);
    assertEquals(
        "error: --server 'unix:run/gpushare.sock': not an absolute path after unix:; " + accepted,
        relative.err());

    env.put("GPUSHARE_SERVER", "unix:./gpushare.sock");
    Result fromEnv = cli("pods");
    assertEquals(2, fromEnv.status(), fromEnv::toString);
    assertEquals(
        "error: $GPUSHARE_SERVER 'unix:./gpushare.sock': not an absolute path after unix:; "
            + accepted,
        fromEnv.err());

    String tooLong = "/run/" + "s".repeat(100) + ".sock";
    env.put("GPUSHARE_SERVER", "unix:" + tooLong);
    Result longPath = cli("run", "--pod", "default/w", "--", "true");
    assertEquals(2, longPath.status(), longPath::toString);
    assertEquals(
        "error: $GPUSHARE_SERVER 'unix:"
            + tooLong
            + "': the socket path has 110 bytes, a Unix socket's at most 107; "
            + accepted,
        longPath.err());

    env.put("GPUSHARE_SERVER", "gpushare-node:8080");
    Result noScheme = cli("nodes");
    assertEquals(2, noScheme.status(), noScheme::toString);
    assertTrue(noScheme.err().startsWith("error: $GPUSHARE_SERVER 'gpushare-node:8080': give"));
    assertEquals(0, stub.requests.size(), "nothing was sent");
  }

  @Test
  void serversAreNamedAsGiven() {
    assertEquals(
        "unix:/run/gpushare/data-plane/gpushare.sock",
        Transport.of(" unix:/run/gpushare/data-plane/gpushare.sock ", "--server").server());
    assertEquals("unix:/run/x.sock", Transport.of("unix:///run/x.sock", "--server").server());
    assertInstanceOf(UnixTransport.class, Transport.of("UNIX:/run/x.sock", "--server"));
    assertEquals(REMOTE, Transport.of(REMOTE + "/", "--server").server());
    assertInstanceOf(HttpTransport.class, Transport.of("https://gpushare.example", "--server"));
  }

  @Test
  void loopbackIsLocalhost127SlashEightAndColonColonOne() {
    for (String host : List.of("localhost", "LocalHost", "127.0.0.1", "127.255.3.4", "[::1]")) {
      assertTrue(HttpTransport.isLoopback(host), host);
    }
    for (String host :
        List.of(
            "10.0.0.7",
            "128.0.0.1",
            "127.0.0.256",
            "127.0.0.1.nip.io",
            "localhost.example",
            "gpushare-node.gpushare-system.svc",
            "[::2]",
            "[fe80::1]")) {
      assertFalse(HttpTransport.isLoopback(host), host);
    }
    assertEquals(
        Optional.of("10.0.0.7"), Transport.of("http://10.0.0.7:8080", "x").clearTextHost());
    assertEquals(Optional.empty(), Transport.of("http://[::1]:8080", "x").clearTextHost());
    assertEquals(Optional.empty(), Transport.of("https://10.0.0.7", "x").clearTextHost());
  }

  // ------------------------------------------------------------------ pod credentials

  @Test
  void aPodsTokenFileIsNeverSentOverPlainHttpToAnotherHost() {
    env.put("GPUSHARE_TOKEN_FILE", projected.toString());
    Result r = cli("nodes", "--server", REMOTE);
    assertEquals(2, r.status(), r::toString);
    assertEquals(
        "error: will not send the pod's token (from $GPUSHARE_TOKEN_FILE ("
            + projected
            + ")) to "
            + REMOTE
            + ": plain http to gpushare-node.gpushare-system.svc, which is not loopback, would"
            + " carry it across the network in clear text; use the node's data-plane socket"
            + " (--server unix:/run/gpushare/data-plane/gpushare.sock, what the webhook sets in"
            + " $GPUSHARE_SERVER) or an https:// server\n",
        r.err());

    env.remove("GPUSHARE_TOKEN_FILE");
    Result flag = cli("nodes", "--token-file", projected.toString(), "--server", REMOTE);
    assertEquals(2, flag.status(), flag::toString);
    assertTrue(flag.err().contains("(from --token-file " + projected + ")"), flag.err());
  }

  @Test
  void theServiceAccountTokenFoundByItselfIsAPodCredentialToo() throws IOException {
    Files.writeString(serviceAccount, "sa");
    Result r = cli("pod", "default/w", "--server", "http://10.0.0.7:8080");
    assertEquals(2, r.status(), r::toString);
    assertTrue(
        r.err().startsWith("error: will not send the pod's token (from the ServiceAccount token "),
        r.err());
  }

  @Test
  void aPodsTokenGoesToLoopback() {
    env.put("GPUSHARE_TOKEN_FILE", projected.toString());
    Result r = cli("nodes", "--server", stub.uri().toString());
    assertEquals(0, r.status(), r::toString);
    assertEquals("Bearer projected", stub.requests.get(0).authorization());
  }

  @Test
  void whoseTokenItIsDecides() {
    TokenLookup.Credentials own = TokenLookup.find("mine", null, Map.of(), dir, serviceAccount);
    TokenLookup.Credentials pods =
        TokenLookup.find(null, projected, Map.of(), dir, serviceAccount, List.of(podSecrets));
    TokenLookup.Credentials none = TokenLookup.Credentials.none("no token found");
    Transport remote = Transport.of(REMOTE, "--server");
    // an admin's own token through whatever URL they choose (their port-forward, their proxy)
    assertDoesNotThrow(() -> GpushareCli.refuseClearText(remote, own));
    assertDoesNotThrow(() -> GpushareCli.refuseClearText(remote, none));
    assertThrows(CliException.class, () -> GpushareCli.refuseClearText(remote, pods));
    for (String fine :
        List.of("https://gpushare.example", "http://127.0.0.1:8080", "unix:/run/x.sock")) {
      assertDoesNotThrow(
          () -> GpushareCli.refuseClearText(Transport.of(fine, "--server"), pods), fine);
    }
  }

  @Test
  void podCredentialsAreFilesUnderThePodsSecretsAsWrittenOrLinked() throws IOException {
    assertTrue(TokenLookup.isUnder(projected, List.of(podSecrets)));
    assertTrue(
        TokenLookup.isUnder(
            podSecrets.resolve("x/../gpushare.dev/token/token"), List.of(podSecrets)));
    assertFalse(TokenLookup.isUnder(serviceAccount, List.of(podSecrets)));
    assertFalse(TokenLookup.isUnder(podSecrets, List.of(podSecrets)));
    Path link = dir.resolve("link-to-token");
    Files.createSymbolicLink(link, projected);
    assertTrue(TokenLookup.isUnder(link, List.of(podSecrets)), "a link into the secrets");
    assertEquals(
        List.of(Path.of("/var/run/secrets"), Path.of("/run/secrets")), TokenLookup.POD_SECRETS);
    assertTrue(
        TokenLookup.isUnder(
            Path.of("/var/run/secrets/gpushare.dev/token/token"), TokenLookup.POD_SECRETS));
  }
}
