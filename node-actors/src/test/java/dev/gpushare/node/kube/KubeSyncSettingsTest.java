package dev.gpushare.node.kube;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class KubeSyncSettingsTest {

  @Test
  void defaultsAreKubeletModeTwentyQpsBurstForty() {
    KubeSyncSettings s = KubeSyncSettings.defaults("gpushare-0");
    assertEquals(NodeStatusMode.KUBELET, s.mode());
    assertEquals(20, s.qps());
    assertEquals(40, s.burst());
    assertEquals(Duration.ofSeconds(30), s.maxBackoff());
  }

  @Test
  void badSettingsAreRefusedNamingFieldValueAndWhatIsAccepted() {
    assertEquals(
        "qps is -1.0; want a finite number of requests per second above 0",
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    new KubeSyncSettings(
                        NodeStatusMode.KUBELET, -1, 40, Duration.ofSeconds(1), "x"))
            .getMessage());
    assertEquals(
        "maxBackoff is PT0S; want a duration above 0, such as PT30S",
        assertThrows(
                IllegalArgumentException.class,
                () -> new KubeSyncSettings(NodeStatusMode.KUBELET, 1, 1, Duration.ZERO, "x"))
            .getMessage());
    assertEquals(
        "reportingInstance is \"\"; want a name of 1 to 128 characters, such as the pod's name",
        assertThrows(
                IllegalArgumentException.class,
                () -> new KubeSyncSettings(NodeStatusMode.KUBELET, 1, 1, Duration.ofSeconds(1), ""))
            .getMessage());
  }
}
