package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.node.GpuSettings;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.persistence.JournalSettings;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code gpushare.pod-side}: the data-plane socket and what the webhook adds, checked. */
class PodSideConfigTest {

  /** The user's text over the built-in configuration, as the launcher reads it. */
  private static PodSideSettings read(String userConf, Map<String, String> env) {
    Config user = ConfigFactory.parseString(userConf);
    return EmbeddedConfig.from(user.withFallback(EmbeddedConfig.builtIn()).resolve(), env::get)
        .podSide();
  }

  private static PodSideSettings read(String userConf) {
    return read(userConf, Map.of());
  }

  private static String refused(String userConf) {
    return assertThrows(LaunchException.class, () -> read(userConf)).getMessage();
  }

  @Test
  void theDefaultsAreThoseOfPodSideSettings() {
    assertEquals(PodSideSettings.DEFAULT, read(""));
    assertEquals(PodSideSettings.DEFAULT, read("gpushare.pod-side {}"));
    Config without = EmbeddedConfig.builtIn().resolve().withoutPath("gpushare.pod-side");
    assertEquals(
        PodSideSettings.DEFAULT,
        EmbeddedConfig.from(without, name -> null).podSide(),
        "no gpushare.pod-side section at all");
    assertEquals(
        new PodSideSettings(
            Optional.empty(),
            true,
            "gpushare:0.1.0",
            "IfNotPresent",
            "/opt/gpushare/lib",
            "gpushare",
            Duration.ofMinutes(10),
            Optional.empty(),
            Optional.empty(),
            1000),
        PodSideSettings.DEFAULT,
        "the defaults the README and the built-in configuration document");
  }

  @Test
  void everyKeyIsRead() {
    assertEquals(
        new PodSideSettings(
            Optional.of("/run/gpushare/data-plane/gpushare.sock"),
            false,
            "registry.example:5000/team/gpushare@sha256:0123abcd",
            "Always",
            "/usr/local/gpushare",
            "gpushare.example.com",
            Duration.ofHours(48),
            Optional.of("nvidia"),
            Optional.empty(),
            65534),
        read(
            """
            gpushare.pod-side {
              socket = "/run/gpushare/data-plane/gpushare.sock"
              inject = off
              image = "registry.example:5000/team/gpushare@sha256:0123abcd"
              image-pull-policy = Always
              library-dir = "/usr/local/gpushare"
              token-audience = "gpushare.example.com"
              token-expiration = 48h
              runtime-class = nvidia
              mps-uid = 65534
            }
            """));
  }

  @Test
  void theMpsRootIsTheGpuSectionsWhereverItComesFrom() {
    assertEquals(
        Optional.of("/run/gpushare/mps"),
        read("gpushare.gpu.mps-root = \"/run/gpushare/mps\"").mpsRoot());
    assertEquals(
        Optional.of("/var/mps"),
        read("gpushare.pod-side.mps-uid = 7", Map.of("GPUSHARE_MPS_ROOT", "/var/mps")).mpsRoot());
    assertEquals(Optional.empty(), read("gpushare.gpu.mps-root = off").mpsRoot());
  }

  @Test
  void offAndNoneTurnTheOptionalOnesOff() {
    PodSideSettings s =
        read("gpushare.pod-side { socket = off, runtime-class = none, inject = false }");
    assertEquals(Optional.empty(), s.socket());
    assertEquals(Optional.empty(), s.runtimeClass());
    assertEquals(false, s.inject());
    assertEquals(Optional.empty(), read("gpushare.pod-side.socket = false").socket());
    assertEquals(true, read("gpushare.pod-side.inject = on").inject());
  }

  @Test
  void theTokenLivesFromTenMinutesToTwoDays() {
    assertEquals(
        Duration.ofMinutes(10),
        read("gpushare.pod-side.token-expiration = 600s").tokenExpiration());
    assertEquals(
        Duration.ofHours(1), read("gpushare.pod-side.token-expiration = 1h").tokenExpiration());
  }

  @Test
  void aSocketPathOf99BytesIsTheLongest() {
    String dir = "/run/";
    String longest = dir + "s".repeat(PodSideConfig.MAX_SOCKET_BYTES - dir.length());
    assertEquals(99, longest.length());
    assertEquals(
        Optional.of(longest), read("gpushare.pod-side.socket = \"" + longest + "\"").socket());
    String message = refused("gpushare.pod-side.socket = \"" + longest + "s\"");
    assertTrue(message.contains("shorter than 100 bytes"), message);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "socket = relative/gpushare.sock | gpushare.pod-side.socket: 'relative/gpushare.sock' given",
        "socket = \"/gpushare.sock\" | in a directory other than '/'",
        "socket = \"/run/gpushare/../x.sock\" | normalized (no '.', '..', '//' or trailing '/')",
        "socket = \"/run//x.sock\" | gpushare.pod-side.socket: '/run//x.sock' given",
        "socket = \"/run/x.sock/\" | gpushare.pod-side.socket: '/run/x.sock/' given",
        "socket = \"/run/my socket\" | without ':' or spaces",
        "socket = \"/run/a:b.sock\" | gpushare.pod-side.socket: '/run/a:b.sock' given",
        "socket = on | gpushare.pod-side.socket: 'on' given",
        "socket = [] | gpushare.pod-side.socket: '[]' given",
        "inject = maybe | gpushare.pod-side.inject: 'maybe' given",
        "inject = maybe | expected on (the mutating webhook completes share-pool and static pods",
        "image = \"\" | gpushare.pod-side.image: '' given",
        "image = \"gpushare 0.1\" | a container image reference without spaces",
        "image = \"-gpushare\" | gpushare.pod-side.image: '-gpushare' given",
        "image-pull-policy = always | gpushare.pod-side.image-pull-policy: 'always' given",
        "image-pull-policy = Sometimes | expected Always, IfNotPresent or Never",
        "library-dir = lib | gpushare.pod-side.library-dir: 'lib' given",
        "library-dir = \"/\" | an absolute, normalized directory path other than '/'",
        "library-dir = \"/opt/a:b\" | without ':' or spaces (it goes into LD_PRELOAD)",
        "library-dir = \"/opt/gpushare lib\" | gpushare.pod-side.library-dir: '/opt/gpushare lib'",
        "token-audience = \"\" | gpushare.pod-side.token-audience: '' given",
        "token-audience = \"gpu share\" | a non-empty audience without spaces",
        "token-expiration = 9m | gpushare.pod-side.token-expiration: '9m' given",
        "token-expiration = 49h | a duration of whole seconds from 10m to 48h",
        "token-expiration = 600500ms | a duration of whole seconds from 10m to 48h",
        "token-expiration = soon | gpushare.pod-side.token-expiration: 'soon' given",
        "runtime-class = NVIDIA | gpushare.pod-side.runtime-class: 'NVIDIA' given",
        "runtime-class = \"a_b\" | none (pods keep their runtime class) or the RuntimeClass",
        "mps-uid = 0 | gpushare.pod-side.mps-uid: '0' given",
        "mps-uid = 2147483648 | a UID from 1 to 2147483647",
        "mps-uid = root | gpushare.pod-side.mps-uid: 'root' given",
        "socket-path = \"/x\" | gpushare.pod-side.socket-path: '/x' given",
      })
  void aBadValueIsRefusedNamingTheKeyTheValueAndWhatIsAccepted(String line, String expected) {
    String message = refused("gpushare.pod-side { " + line + " }");
    assertTrue(message.contains(expected), message);
    assertTrue(message.startsWith("invalid configuration (1 error):"), message);
  }

  @Test
  void theMessageSaysWhereTheValueWasSet() {
    String message = refused("gpushare.pod-side {\n  mps-uid = -1\n}");
    assertTrue(message.contains("gpushare.pod-side.mps-uid: '-1' given at "), message);
    assertTrue(message.contains(":2; expected a UID from 1 to 2147483647"), message);
  }

  @Test
  void anUnknownKeyListsTheAcceptedOnes() {
    String message = refused("gpushare.pod-side { sock = \"/run/x/y.sock\" }");
    assertTrue(
        message.contains(
            "unknown key; accepted keys: image, image-pull-policy, inject, library-dir,"
                + " mps-uid, runtime-class, socket, token-audience, token-expiration"),
        message);
  }

  @ParameterizedTest
  @ValueSource(strings = {"pod-side = 3", "pod-side = [socket]", "pod-side = off"})
  void aSectionThatIsNotAnObjectIsRefused(String line) {
    String message = refused("gpushare." + line);
    assertTrue(message.contains("gpushare.pod-side: '"), message);
    assertTrue(message.contains("expected an object"), message);
  }

  @Test
  void everyErrorIsReportedAtOnce() {
    String message =
        refused("gpushare.pod-side { socket = x, inject = x, image-pull-policy = x, mps-uid = x }");
    assertTrue(message.startsWith("invalid configuration (4 errors):"), message);
  }

  @Test
  void theOlderConstructorsTakeTheDefaultsWithTheGpuSidesMpsRoot() {
    GpuSettings gpu =
        new GpuSettings(
            GpuSettings.DEFAULT.backend(),
            GpuSettings.DEFAULT.telemetryInterval(),
            GpuSettings.DEFAULT.idle(),
            true,
            Optional.of("/run/gpushare/mps"));
    RuntimeSettings builtIn = EmbeddedConfig.from(EmbeddedConfig.builtIn().resolve()).settings();
    RuntimeSettings settings =
        new RuntimeSettings(List.of(), builtIn.reservedPerGpu(), builtIn.askTimeout(), gpu);
    EmbeddedConfig config =
        new EmbeddedConfig(
            settings,
            ClockMode.SYSTEM,
            Instant.EPOCH,
            EmbeddedConfig.KubernetesWrites.DEFAULT,
            JournalSettings.DEFAULT,
            HttpLimits.DEFAULT);
    assertEquals(
        PodSideSettings.DEFAULT.withMpsRoot(Optional.of("/run/gpushare/mps")), config.podSide());
    assertEquals(
        config.podSide(),
        new EmbeddedConfig(
                settings, ClockMode.SYSTEM, Instant.EPOCH, EmbeddedConfig.KubernetesWrites.DEFAULT)
            .podSide());
  }
}
