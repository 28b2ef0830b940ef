package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The simulated GPU-HPN node: stable identities, scriptable health and shape. */
class SimulatedGpuBackendTest {

  @Test
  void uuidsAreStablePerNodeAndIndexAndLookLikeNvidiaUuids() {
    String uuid = SimulatedGpuBackend.uuidOf("gpu-node-1", 0);

    assertEquals(uuid, SimulatedGpuBackend.uuidOf("gpu-node-1", 0));
    assertNotEquals(uuid, SimulatedGpuBackend.uuidOf("gpu-node-1", 1));
    assertNotEquals(uuid, SimulatedGpuBackend.uuidOf("gpu-node-2", 0));
    assertTrue(uuid.startsWith("GPU-"), uuid);
    assertEquals(uuid.substring(4), UUID.fromString(uuid.substring(4)).toString());
  }

  @Test
  void devicesAreOrderedByIndexAndTheSameAfterARestart() {
    SimulatedGpuBackend backend = new SimulatedGpuBackend("gpu-node-1", 4, "NVIDIA H20", 97_871);

    List<GpuDevice> devices = backend.devices();
    assertEquals(
        IntStream.range(0, 4)
            .mapToObj(
                i ->
                    new GpuDevice(
                        i, SimulatedGpuBackend.uuidOf("gpu-node-1", i), "NVIDIA H20", 97_871))
            .toList(),
        devices);
    assertEquals(4, devices.stream().map(GpuDevice::uuid).distinct().count());
    assertEquals(
        devices,
        new SimulatedGpuBackend("gpu-node-1", 4, "NVIDIA H20", 97_871).devices(),
        "a new backend for the same node (a restart) reports the same devices");
    assertEquals("simulated", backend.name());
  }

  @Test
  void healthTogglesPerDevice() {
    SimulatedGpuBackend backend = new SimulatedGpuBackend("gpu-node-1", 2, "NVIDIA H20", 97_871);
    String gpu0 = SimulatedGpuBackend.uuidOf("gpu-node-1", 0);
    String gpu1 = SimulatedGpuBackend.uuidOf("gpu-node-1", 1);
    assertTrue(backend.healthy(gpu0));
    assertTrue(backend.healthy(gpu1));

    backend.setHealthy(1, false);
    assertTrue(backend.healthy(gpu0));
    assertFalse(backend.healthy(gpu1));

    backend.setHealthy(1, false);
    assertFalse(backend.healthy(gpu1), "failing twice is still failed");

    backend.setHealthy(1, true);
    assertTrue(backend.healthy(gpu1));
  }

  @Test
  void resizingKeepsTheIdentitiesOfTheRemainingDevices() {
    SimulatedGpuBackend backend = new SimulatedGpuBackend("gpu-node-1", 4, "NVIDIA H20", 97_871);
    List<GpuDevice> four = backend.devices();

    backend.resize(2);
    assertEquals(four.subList(0, 2), backend.devices());

    backend.resize(6);
    assertEquals(6, backend.devices().size());
    assertEquals(four, backend.devices().subList(0, 4));

    backend.resize(0);
    assertEquals(List.of(), backend.devices());
  }

  @Test
  void negativeCountsAreRejected() {
    IllegalArgumentException created =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SimulatedGpuBackend("gpu-node-1", -1, "NVIDIA H20", 97_871));
    assertTrue(created.getMessage().contains("-1"), created.getMessage());
    assertTrue(created.getMessage().contains("gpu-node-1"), created.getMessage());

    SimulatedGpuBackend backend = new SimulatedGpuBackend("gpu-node-1", 2, "NVIDIA H20", 97_871);
    IllegalArgumentException resized =
        assertThrows(IllegalArgumentException.class, () -> backend.resize(-3));
    assertTrue(resized.getMessage().contains("-3"), resized.getMessage());
    assertEquals(2, backend.devices().size(), "a rejected resize changes nothing");
  }

  @Test
  void aSampleShowsEveryDeviceIdleWithItsHealth() {
    SimulatedGpuBackend backend = new SimulatedGpuBackend("gpu-node-1", 2, "NVIDIA H20", 97_871);
    backend.setHealthy(1, false);

    List<GpuSample> samples = backend.sample();

    assertEquals(2, samples.size());
    GpuSample gpu0 = samples.get(0);
    assertEquals(
        new GpuSample(
            0,
            SimulatedGpuBackend.uuidOf("gpu-node-1", 0),
            0,
            97_871,
            OptionalInt.of(0),
            List.of(),
            GpuHealth.HEALTHY,
            Optional.of(false)),
        gpu0);
    GpuSample gpu1 = samples.get(1);
    assertEquals(1, gpu1.index());
    assertFalse(gpu1.health().healthy());
    assertTrue(gpu1.health().reason().isPresent());
    assertEquals(List.of(), new SimulatedGpuBackend("cpu-node", 0, "none", 0).sample());
  }

  @Test
  void aNodeWithoutGpusHasNoDevices() {
    assertEquals(List.of(), new SimulatedGpuBackend("cpu-node", 0, "none", 0).devices());
  }
}
