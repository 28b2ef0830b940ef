package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LauncherOptionsTest {

  private static LaunchException refused(String... args) {
    return assertThrows(LaunchException.class, () -> LauncherOptions.parse(List.of(args)));
  }

  @Test
  void withoutFlagsEverythingIsDefault() {
    assertEquals(LauncherOptions.defaults(), LauncherOptions.parse(List.of()));
    LauncherOptions d = LauncherOptions.defaults();
    assertEquals("127.0.0.1", d.host());
    assertEquals(8080, d.port());
    assertEquals(Path.of("data"), d.data());
    assertEquals(Optional.empty(), d.clock());
    assertEquals(Optional.empty(), d.config());
    assertFalse(d.help());
  }

  @Test
  void everyFlagIsRead() {
    LauncherOptions o =
        LauncherOptions.parse(
            List.of(
                "--port",
                "0",
                "--host",
                "0.0.0.0",
                "--data",
                "/tmp/x",
                "--clock",
                "manual",
                "--config",
                "my.conf"));
    assertEquals(
        new LauncherOptions(
            "0.0.0.0",
            0,
            Path.of("/tmp/x"),
            Optional.of(ClockMode.MANUAL),
            Optional.of(Path.of("my.conf")),
            false),
        o);
  }

  @Test
  void aValueMayFollowAnEqualsSign() {
    LauncherOptions o = LauncherOptions.parse(List.of("--port=65535", "--clock=system"));
    assertEquals(65535, o.port());
    assertEquals(Optional.of(ClockMode.SYSTEM), o.clock());
  }

  @Test
  void helpWinsOverEverythingElse() {
    assertTrue(LauncherOptions.parse(List.of("--port", "nope", "--help")).help());
    assertTrue(LauncherOptions.parse(List.of("-h")).help());
    assertTrue(LauncherOptions.usage().contains("--clock system|manual"));
  }

  @Test
  void anUnknownFlagIsNamedWithTheAcceptedOnes() {
    String message = refused("--prot", "1").getMessage();
    assertTrue(message.contains("'--prot'"), message);
    assertTrue(message.contains("--port N"), message);
    assertTrue(refused("-x").getMessage().contains("'-x'"));
  }

  @Test
  void aMissingValueNamesTheFlag() {
    assertEquals(
        "--port: missing value; expected an integer from 0 to 65535 (0 picks a free port)",
        refused("--port").getMessage());
    assertTrue(refused("--data", "--port", "1").getMessage().startsWith("--data: missing value"));
    assertTrue(refused("--clock").getMessage().contains("system or manual"));
    assertTrue(refused("--config").getMessage().startsWith("--config: missing value"));
    assertTrue(refused("--host").getMessage().startsWith("--host: missing value"));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"abc", "-1", "65536", "80.5", "", "99999999999", " 8080", "8080 ", "\t8080"})
  void aBadPortIsNamedWithItsRange(String port) {
    String message = refused("--port=" + port).getMessage();
    assertEquals(
        "--port: '" + port + "' given; expected an integer from 0 to 65535 (0 picks a free port)",
        message);
  }

  @Test
  void aNegativePortAsNextArgumentIsAValueNotAFlag() {
    assertTrue(refused("--port", "-1").getMessage().startsWith("--port: '-1' given"));
  }

  @Test
  void aBadClockNamesTheAcceptedValues() {
    assertEquals(
        "--clock: 'fast' given; expected system or manual",
        refused("--clock", "fast").getMessage());
  }

  @Test
  void emptyValuesAreRefused() {
    assertTrue(refused("--host", " ").getMessage().startsWith("--host: empty value"));
    assertTrue(refused("--data=").getMessage().startsWith("--data: empty value"));
  }

  @Test
  void aFlagGivenTwiceIsRefused() {
    assertEquals(
        "--port: given more than once; give it once",
        refused("--port", "1", "--port", "2").getMessage());
  }

  @Test
  void aStrayArgumentIsRefused() {
    assertTrue(refused("serve").getMessage().startsWith("unexpected argument 'serve'"));
  }

  @Test
  void theSchedulerExtenderListenerNeedsItsClientCaAndTheWebhooksTlsPair() {
    LauncherOptions o =
        LauncherOptions.parse(
            List.of(
                "--webhook-port",
                "8443",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--extender-port",
                "8444",
                "--extender-client-ca",
                "ca.pem"));
    assertEquals(new LauncherOptions.Extender(8444, Optional.of(Path.of("ca.pem"))), o.extender());
    assertEquals(LauncherOptions.Extender.OFF, LauncherOptions.defaults().extender());
    assertTrue(
        refused("--extender-port", "8444").getMessage().contains("--extender-client-ca missing"));
    assertTrue(
        refused("--extender-client-ca", "ca.pem")
            .getMessage()
            .startsWith("--extender-client-ca: given without --extender-port"));
    assertTrue(
        refused("--extender-port", "8444", "--extender-client-ca", "ca.pem")
            .getMessage()
            .contains("needs --webhook-port, --tls-cert and --tls-key"));
    assertTrue(
        refused(
                "--webhook-port",
                "8443",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--extender-port",
                "8443",
                "--extender-client-ca",
                "ca.pem")
            .getMessage()
            .contains("already taken by --webhook-port"));
  }

  @Test
  void freshStartIsAFlagWithoutValueGivenOnce() {
    assertFalse(LauncherOptions.defaults().freshStart());
    assertTrue(LauncherOptions.parse(List.of("--fresh-start")).freshStart());
    assertEquals(
        "--fresh-start: takes no value, 'yes' given", refused("--fresh-start=yes").getMessage());
    assertEquals(
        "--fresh-start: given more than once; give it once",
        refused("--fresh-start", "--fresh-start").getMessage());
    assertTrue(LauncherOptions.usage().contains("--fresh-start"));
  }
}
