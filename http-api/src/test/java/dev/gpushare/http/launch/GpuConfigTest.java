package dev.gpushare.http.launch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.UsageRules;
import dev.gpushare.arbiter.UsageRules.IdleSettings;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.node.GpuSettings;
import dev.gpushare.node.api.Views.ComputeLimitMode;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code gpushare.gpu}: the GPU backend, telemetry, idle release, memory enforcement, MPS,
 * checkpoints, the compute limit.
 */
class GpuConfigTest {

  private static final Map<String, String> NO_ENV = Map.of();

  /** The user's text over the built-in configuration, as the launcher reads it. */
  private static GpuSettings read(String userConf, Map<String, String> env) {
    Config user = ConfigFactory.parseString(userConf);
    return EmbeddedConfig.from(user.withFallback(EmbeddedConfig.builtIn()).resolve(), env::get)
        .settings()
        .gpu();
  }

  private static GpuSettings read(String userConf) {
    return read(userConf, NO_ENV);
  }

  private static String refused(String userConf, Map<String, String> env) {
    return assertThrows(LaunchException.class, () -> read(userConf, env)).getMessage();
  }

  private static String refused(String userConf) {
    return refused(userConf, NO_ENV);
  }

  @Test
  void theDefaultsAreThoseOfGpuSettings() {
    assertEquals(GpuSettings.DEFAULT, read(""));
    assertEquals(GpuSettings.DEFAULT, read("gpushare.gpu {}"));
    Config withoutSection = EmbeddedConfig.builtIn().resolve().withoutPath("gpushare.gpu");
    assertEquals(
        GpuSettings.DEFAULT,
        EmbeddedConfig.from(withoutSection, NO_ENV::get).settings().gpu(),
        "no gpushare.gpu section at all");
  }

  @Test
  void everyKeyIsRead() {
    GpuSettings gpu =
        read(
            """
            gpushare.gpu {
              backend = nvml
              telemetry-interval = 500ms
              idle-release-after = 10m
              idle-release-grace = 0s
              memory-limit-enforcement = off
              mps-root = "/run/gpushare/mps"
              checkpoint = off
              checkpoint-host-memory-limit = 1.5Gi
              checkpoint-lock-timeout = 2s
              compute-limit = off
            }
            """);
    assertEquals(
        new GpuSettings(
            GpuBackends.Mode.NVML,
            Duration.ofMillis(500),
            new IdleSettings(Optional.of(Duration.ofMinutes(10)), Duration.ZERO),
            false,
            Optional.of("/run/gpushare/mps"),
            new GpuSettings.Checkpoints(false, 3L << 29, Duration.ofSeconds(2)),
            GpuSettings.ComputeLimit.OFF),
        gpu);
    assertEquals(
        GpuSettings.Checkpoints.DEFAULT, read("gpushare.gpu { backend = nvml }").checkpoints());
  }

  @Test
  void simulatedAndOnAreAccepted() {
    GpuSettings gpu =
        read("gpushare.gpu { backend = simulated, memory-limit-enforcement = on, mps-root = off }");
    assertEquals(GpuBackends.Mode.SIMULATED, gpu.backend());
    assertTrue(gpu.enforceMemory());
    assertEquals(Optional.empty(), gpu.mpsRoot());
    assertEquals(IdleSettings.OFF, read("gpushare.gpu.idle-release-after = off").idle());
  }

  @Test
  void theComputeLimitIsAutoOrOffAndAutoFollowsMps() {
    assertEquals(GpuSettings.ComputeLimit.AUTO, read("").computeLimit(), "the default");
    assertEquals(
        GpuSettings.ComputeLimit.AUTO, read("gpushare.gpu.compute-limit = auto").computeLimit());
    assertEquals(
        GpuSettings.ComputeLimit.AUTO, read("gpushare.gpu.compute-limit = AUTO").computeLimit());
    assertEquals(
        GpuSettings.ComputeLimit.OFF, read("gpushare.gpu.compute-limit = off").computeLimit());
    assertEquals(
        GpuSettings.ComputeLimit.OFF, read("gpushare.gpu.compute-limit = \"off\"").computeLimit());
    // what the pod view shows: the library limits unless MPS does or the setting is off
    assertEquals(ComputeLimitMode.LIBRARY, read("").computeLimitMode());
    assertEquals(
        ComputeLimitMode.MPS,
        read("", Map.of(GpuConfig.MPS_ROOT_ENV, "/run/gpushare/mps")).computeLimitMode());
    assertEquals(
        ComputeLimitMode.MPS,
        read("gpushare.gpu { mps-root = \"/mps\", compute-limit = auto }").computeLimitMode());
    assertEquals(
        ComputeLimitMode.OFF,
        read("gpushare.gpu { mps-root = \"/mps\", compute-limit = off }").computeLimitMode());
    assertEquals(ComputeLimitMode.OFF, read("gpushare.gpu.compute-limit = off").computeLimitMode());
  }

  @Test
  void aBadComputeLimitIsNamedWithWhereItWasSetAndWhatIsAccepted() {
    String message = refused("gpushare.gpu.compute-limit = limited");
    assertTrue(message.startsWith("invalid configuration (1 error):"), message);
    assertTrue(message.contains("gpushare.gpu.compute-limit: 'limited' given at "), message);
    assertTrue(
        message.contains(
            "expected auto (libgpushare.so keeps each pod's compute at or under its core limit"
                + " when the node runs no MPS; under MPS, MPS does) or off (the library never"
                + " limits compute)"),
        message);
  }

  @Test
  void ungrantedProcessesAreReportedByDefaultOrKilled() {
    assertEquals(UsageRules.UngrantedAction.REPORT, read("").ungrantedProcesses(), "the default");
    assertEquals(
        UsageRules.UngrantedAction.REPORT,
        read("gpushare.gpu.ungranted-processes = report").ungrantedProcesses());
    assertEquals(
        UsageRules.UngrantedAction.KILL,
        read("gpushare.gpu.ungranted-processes = KILL").ungrantedProcesses());
  }

  @Test
  void aBadUngrantedProcessesValueIsNamedWithWhereItWasSetAndWhatIsAccepted() {
    String message = refused("gpushare.gpu.ungranted-processes = stop");
    assertTrue(message.startsWith("invalid configuration (1 error):"), message);
    assertTrue(message.contains("gpushare.gpu.ungranted-processes: 'stop' given at "), message);
    assertTrue(
        message.contains(
            "expected report (a pod's process on a GPU the pod does not hold gets an Event and a"
                + " metric) or kill (and the member ends it with SIGKILL)"),
        message);
  }

  @Test
  void theHostsProcIsProcByDefaultOrWhereItIsMounted() {
    assertEquals(java.nio.file.Path.of("/proc"), read("").hostProc(), "the default");
    assertEquals(
        java.nio.file.Path.of("/host/proc"),
        read("gpushare.gpu.host-proc = \"/host/proc/\"").hostProc());
  }

  @Test
  void aRelativeHostProcIsNamedWithWhereItWasSetAndWhatIsAccepted() {
    String message = refused("gpushare.gpu.host-proc = \"host/proc\"");
    assertTrue(message.startsWith("invalid configuration (1 error):"), message);
    assertTrue(message.contains("gpushare.gpu.host-proc: 'host/proc' given at "), message);
    assertTrue(
        message.contains(
            "expected the absolute path at which this member sees the host's /proc, such as"
                + " \"/proc\""),
        message);
  }

  @Test
  void mpsRootDefaultsToTheEnvironment() {
    Map<String, String> env = Map.of(GpuConfig.MPS_ROOT_ENV, "/run/gpushare/mps");
    assertEquals(Optional.of("/run/gpushare/mps"), read("", env).mpsRoot());
    assertEquals(
        Optional.empty(), read("", Map.of(GpuConfig.MPS_ROOT_ENV, "")).mpsRoot(), "empty = off");
    assertEquals(Optional.empty(), read("gpushare.gpu.mps-root = off", env).mpsRoot());
    assertEquals(Optional.of("/mps"), read("gpushare.gpu.mps-root = \"/mps\"", env).mpsRoot());
  }

  @Test
  void aRelativeMpsRootFromTheEnvironmentIsRefusedNamingTheVariable() {
    String message = refused("", Map.of(GpuConfig.MPS_ROOT_ENV, "run/mps"));
    assertTrue(
        message.contains(
            "gpushare.gpu.mps-root: 'run/mps' given by the environment variable GPUSHARE_MPS_ROOT"),
        message);
    assertTrue(message.contains("absolute path"), message);
  }

  @Test
  void anUnknownKeyIsNamedWithTheAcceptedOnes() {
    String message = refused("gpushare.gpu.backnd = nvml");
    assertTrue(message.contains("gpushare.gpu.backnd: 'nvml' given at "), message);
    assertTrue(
        message.contains(
            "unknown key; accepted keys: backend, checkpoint, checkpoint-host-memory-limit,"
                + " checkpoint-lock-timeout, compute-limit, host-proc, idle-release-after,"
                + " idle-release-grace, memory-limit-enforcement, mps-root, telemetry-interval,"
                + " ungranted-processes"),
        message);
  }

  static Stream<Arguments> badValues() {
    return Stream.of(
        arguments("backend = cuda", "backend: 'cuda' given", "auto | nvml | simulated"),
        arguments("backend = [nvml]", "backend: '[\"nvml\"]' given", "auto | nvml | simulated"),
        arguments("telemetry-interval = 0s", "telemetry-interval: '0s' given", "above 0"),
        arguments("telemetry-interval = soon", "telemetry-interval: 'soon' given", "5s"),
        arguments("idle-release-after = 0", "idle-release-after: '0' given", "off"),
        arguments("idle-release-after = never", "idle-release-after: 'never' given", "above 0"),
        arguments("idle-release-grace = -1s", "idle-release-grace: '-1s' given", "at least 0"),
        arguments(
            "memory-limit-enforcement = maybe",
            "memory-limit-enforcement: 'maybe' given",
            "on or off"),
        arguments("mps-root = \"run/mps\"", "mps-root: 'run/mps' given", "absolute path"),
        arguments("mps-root = 5", "mps-root: '5' given", "off"),
        arguments("checkpoint = sometimes", "checkpoint: 'sometimes' given", "on or off"),
        arguments(
            "checkpoint-host-memory-limit = lots",
            "checkpoint-host-memory-limit: 'lots' given",
            "a Kubernetes quantity of bytes, such as 64Gi"),
        arguments(
            "checkpoint-host-memory-limit = 0.5",
            "checkpoint-host-memory-limit: '0.5' given",
            "64Gi"),
        arguments("checkpoint-lock-timeout = 0s", "checkpoint-lock-timeout: '0s' given", "above 0"),
        arguments("compute-limit = on", "compute-limit: 'on' given", "auto (libgpushare.so"),
        arguments("compute-limit = false", "compute-limit: 'false' given", "or off"),
        arguments("compute-limit = [auto]", "compute-limit: '[\"auto\"]' given", "auto"),
        arguments("compute-limit = 100", "compute-limit: '100' given", "auto"));
  }

  @ParameterizedTest
  @MethodSource("badValues")
  void aBadValueIsNamedWithWhatIsAccepted(String setting, String named, String accepted) {
    String message = refused("gpushare.gpu." + setting);
    assertTrue(message.startsWith("invalid configuration (1 error):"), message);
    assertTrue(message.contains("gpushare.gpu." + named), message);
    assertTrue(message.contains(accepted), message);
  }

  @Test
  void aSectionThatIsNotAnObjectIsRefused() {
    String message = refused("gpushare.gpu = nvml");
    assertTrue(message.contains("gpushare.gpu: 'nvml' given"), message);
    assertTrue(message.contains("expected an object"), message);
  }

  @Test
  void everyBadKeyIsReportedAtOnce() {
    String message =
        refused("gpushare.gpu { backend = cuda, telemetry-interval = 0s, mps-root = x }");
    assertTrue(message.startsWith("invalid configuration (3 errors):"), message);
  }
}
