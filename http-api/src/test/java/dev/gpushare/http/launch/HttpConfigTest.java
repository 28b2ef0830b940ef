package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.http.server.HttpLimits;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code gpushare.http}: the API server's limits, their defaults and their checks. */
class HttpConfigTest {

  /** The user's text over the built-in configuration, as the launcher reads it. */
  private static HttpLimits read(String userConf) {
    Config user = ConfigFactory.parseString(userConf);
    return EmbeddedConfig.from(user.withFallback(EmbeddedConfig.builtIn()).resolve()).http();
  }

  private static String refused(String userConf) {
    return assertThrows(LaunchException.class, () -> read(userConf)).getMessage();
  }

  @Test
  void theDefaultsAreThoseOfHttpLimits() {
    assertEquals(HttpLimits.DEFAULT, read(""));
    assertEquals(
        new HttpLimits(Duration.ofSeconds(10), 4096, 1024, 128),
        HttpLimits.DEFAULT,
        "the defaults the README and the built-in configuration document");
    Config withoutSection = EmbeddedConfig.builtIn().resolve().withoutPath("gpushare.http");
    assertEquals(HttpLimits.DEFAULT, EmbeddedConfig.from(withoutSection).http());
  }

  @Test
  void everyKeyIsRead() {
    assertEquals(
        new HttpLimits(Duration.ofMillis(2500), 100, 50, 5),
        read(
            """
            gpushare.http {
              header-read-timeout = 2500ms
              max-connections = 100
              max-watches = 50
              max-watches-per-client = 5
            }
            """));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "header-read-timeout = 0s | gpushare.http.header-read-timeout: '0s' given",
        "header-read-timeout = 6m | above 0 and at most 5 minutes",
        "header-read-timeout = soon | gpushare.http.header-read-timeout: 'soon' given",
        "max-connections = 0 | gpushare.http.max-connections: '0' given",
        "max-watches = many | gpushare.http.max-watches: 'many' given",
        "max-watches-per-client = -1 | a whole number from 1 to 1000000",
        "max-watches-per-client = 2000 | expected at most gpushare.http.max-watches",
        "max-connections = 1024 | expected more connections than gpushare.http.max-watches",
        "max-body = 1m | gpushare.http.max-body: '1m' given",
      })
  void aBadValueIsRefusedNamingTheKeyTheValueAndWhatIsAccepted(String line, String expected) {
    String message = refused("gpushare.http { " + line + " }");
    assertTrue(message.contains(expected), message);
  }

  @Test
  void anUnknownKeyListsTheAcceptedOnes() {
    String message = refused("gpushare.http { idle-timeout = 1s }");
    assertTrue(message.contains("gpushare.http.idle-timeout: '1s' given"), message);
    assertTrue(
        message.contains(
            "unknown key; accepted keys: header-read-timeout, max-connections, max-watches,"
                + " max-watches-per-client"),
        message);
  }

  @Test
  void notAnObjectIsRefused() {
    String message = refused("gpushare.http = 5");
    assertTrue(message.contains("gpushare.http: '5' given"), message);
  }
}
