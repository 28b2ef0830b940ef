package dev.gpushare.http.admission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.LauncherOptions;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The launcher's webhook flags: off by default, the three go together, errors name the flag. */
class WebhookOptionsTest {

  private static String refused(String... args) {
    return assertThrows(LaunchException.class, () -> LauncherOptions.parse(List.of(args)))
        .getMessage();
  }

  @Test
  void theWebhookIsOffByDefault() {
    assertEquals(LauncherOptions.Webhook.OFF, LauncherOptions.defaults().webhook());
    assertEquals(LauncherOptions.Webhook.OFF, LauncherOptions.parse(List.of()).webhook());
    assertFalse(LauncherOptions.parse(List.of("--webhook-port", "0")).webhook().enabled());
  }

  @Test
  void theThreeFlagsAreRead() {
    LauncherOptions o =
        LauncherOptions.parse(
            List.of(
                "--webhook-port",
                "8443",
                "--tls-cert=/etc/gpushare/tls/tls.crt",
                "--tls-key",
                "/etc/gpushare/tls/tls.key"));
    assertEquals(
        new LauncherOptions.Webhook(
            8443,
            Optional.of(Path.of("/etc/gpushare/tls/tls.crt")),
            Optional.of(Path.of("/etc/gpushare/tls/tls.key"))),
        o.webhook());
    assertTrue(o.webhook().enabled());
    assertTrue(LauncherOptions.usage().contains("--webhook-port N"));
  }

  @Test
  void aWebhookPortNeedsACertificateAndAKey() {
    assertTrue(
        refused("--webhook-port", "8443", "--tls-key", "k")
            .startsWith("--webhook-port 8443: --tls-cert missing; the webhook serves HTTPS only"));
    assertTrue(
        refused("--webhook-port", "8443", "--tls-cert", "c")
            .startsWith("--webhook-port 8443: --tls-key missing;"));
  }

  @Test
  void aCertificateOrKeyWithoutAWebhookPortIsRefused() {
    assertTrue(
        refused("--tls-cert", "c", "--tls-key", "k")
            .startsWith("--tls-cert: given without --webhook-port;"));
    assertTrue(refused("--tls-key", "k").startsWith("--tls-key: given without --webhook-port;"));
  }

  @Test
  void badPortsAreRefusedNamingTheFlag() {
    assertTrue(
        refused("--webhook-port", "https").startsWith("--webhook-port: 'https' given; expected"));
    assertTrue(refused("--webhook-port", "70000").startsWith("--webhook-port: '70000' given;"));
    assertTrue(
        refused("--port", "8443", "--webhook-port", "8443", "--tls-cert", "c", "--tls-key", "k")
            .startsWith("--webhook-port 8443: the same port as --port;"));
  }
}
