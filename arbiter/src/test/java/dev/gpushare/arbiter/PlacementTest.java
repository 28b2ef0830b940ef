package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class PlacementTest {

  @Test
  void best_fit_takes_the_gpu_left_with_least_free_room() {
    List<GpuLoad> gpus =
        List.of(
            new GpuLoad(0, true, Map.of()),
            new GpuLoad(1, true, Map.of("a", new Share(30, 30))),
            new GpuLoad(2, true, Map.of("b", new Share(60, 60))));
    assertEquals(OptionalInt.of(2), Placement.bestFit(gpus, new Share(40, 40)));
    assertEquals(OptionalInt.of(1), Placement.bestFit(gpus, new Share(50, 50)));
  }

  @Test
  void ties_go_to_the_lowest_index() {
    List<GpuLoad> gpus = List.of(new GpuLoad(1, true, Map.of()), new GpuLoad(0, true, Map.of()));
    assertEquals(OptionalInt.of(0), Placement.bestFit(gpus, new Share(10, 10)));
  }

  @Test
  void a_share_fits_only_within_100_percent_on_both_resources() {
    List<GpuLoad> gpus = List.of(new GpuLoad(0, true, Map.of("a", new Share(50, 10))));
    assertEquals(OptionalInt.of(0), Placement.bestFit(gpus, new Share(50, 90)));
    assertTrue(Placement.bestFit(gpus, new Share(51, 10)).isEmpty());
    assertTrue(Placement.bestFit(gpus, new Share(10, 91)).isEmpty());
  }

  @Test
  void unhealthy_gpus_take_nothing() {
    List<GpuLoad> gpus = List.of(new GpuLoad(0, false, Map.of()));
    assertTrue(Placement.bestFit(gpus, new Share(1, 1)).isEmpty());
  }
}
