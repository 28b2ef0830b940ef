package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * {@link Placement#leastFragmenting}: where it departs from best fit, and that it does not in the
 * SPEC §5 reference example (the arbiter itself keeps {@link Placement#bestFit}).
 */
class FragmentationAwarePlacementTest {

  private static GpuLoad gpu(int index, Map<String, Share> held) {
    return new GpuLoad(index, true, held);
  }

  @Test
  void it_keeps_a_remainder_the_nodes_shares_can_use_where_best_fit_does_not() {
    // Node mix: 30, 60 and the incoming 50 (core = memory), one pod each.
    // On GPU 1 (best fit, 20 left): GPU 1 free 200 fits none: 3 × 200; GPU 2 free 400 fits the
    //   30 only: 2 × 400; GPU 0 empty: 0. 1400 in all.
    // On GPU 0: GPU 0 free 500 refuses the 60: 1 × 500; GPU 1 free 700 fits all; GPU 2: 800.
    //   1300 in all: GPU 0.
    List<GpuLoad> gpus =
        List.of(
            gpu(0, Map.of()),
            gpu(1, Map.of("a", new Share(30, 30))),
            gpu(2, Map.of("b", new Share(60, 60))));
    Share share = new Share(50, 50);
    assertEquals(OptionalInt.of(1), Placement.bestFit(gpus, share));
    assertEquals(OptionalInt.of(0), Placement.leastFragmenting(gpus, share));
  }

  @Test
  void the_arbiter_uses_it_only_when_the_placement_setting_asks_for_it() {
    ShareBook book = Books.node(3, SharePolicy.SHARE_POOL, QosConfig.DEFAULT);
    book = Books.pool(book, "a", 30, 30);
    book = Books.pool(book, "b", 60, 60);
    book = Books.pool(book, "c", 50, 50);
    book = book.grant("n1#1", Books.id("a"), 1, Books.T0).grant("n1#2", Books.id("b"), 2, Books.T0);
    ShareBook queued = book.enqueue(Books.id("c"), Books.T0);

    assertEquals(
        Optional.of(new ShareBook.Grant(Books.id("c"), 1)),
        queued.next(Books.T0),
        "SPEC §5 by default: best fit");
    assertEquals(
        Optional.of(new ShareBook.Grant(Books.id("c"), 1)),
        queued.next(Books.T0, GpuChoice.BEST_FIT));
    assertEquals(
        Optional.of(new ShareBook.Grant(Books.id("c"), 0)),
        queued.next(Books.T0, GpuChoice.LEAST_FRAGMENTING),
        "the same measure as the extender's score");
    ShareBook settled = queued.settle(Books.T0, GpuChoice.LEAST_FRAGMENTING);
    assertEquals(0, settled.holdings().get(Books.id("c")).gpu());

    ShareBook pins = Books.node(3, SharePolicy.STATIC, QosConfig.DEFAULT);
    pins = Books.pinned(pins, "p", 30).pin("n1#1", Books.id("p"), 1, Books.T0);
    pins = Books.pinned(pins, "q", 60).pin("n1#2", Books.id("q"), 2, Books.T0);
    pins = Books.pinned(pins, "r", 50);
    assertEquals(
        Optional.of(new ShareBook.Pin(Books.id("r"), 1)), pins.next(Books.T0, GpuChoice.BEST_FIT));
    assertEquals(
        Optional.of(new ShareBook.Pin(Books.id("r"), 0)),
        pins.next(Books.T0, GpuChoice.LEAST_FRAGMENTING),
        "static pinning by requests follows the same setting");
  }

  @Test
  void the_setting_names_its_values() {
    assertEquals(Optional.of(GpuChoice.BEST_FIT), GpuChoice.byKey("best-fit"));
    assertEquals(Optional.of(GpuChoice.LEAST_FRAGMENTING), GpuChoice.byKey("least-fragmenting"));
    assertEquals(Optional.empty(), GpuChoice.byKey("fgd"));
    assertEquals("best-fit or least-fragmenting", GpuChoice.keys());
  }

  @Test
  void it_agrees_with_best_fit_on_the_spec_reference_example() {
    Share small = new Share(50, 50); // A and B: limits 50
    Share whole = new Share(100, 100); // C and D: limits 100
    List<GpuLoad> empty = List.of(gpu(0, Map.of()), gpu(1, Map.of()));
    assertEquals(OptionalInt.of(0), Placement.bestFit(empty, small)); // A on GPU 0
    assertEquals(OptionalInt.of(0), Placement.leastFragmenting(empty, small));
    List<GpuLoad> withA = List.of(gpu(0, Map.of("A", small)), gpu(1, Map.of()));
    assertEquals(OptionalInt.of(1), Placement.leastFragmenting(withA, whole)); // C on GPU 1
    List<GpuLoad> t1 = List.of(gpu(0, Map.of("A", small)), gpu(1, Map.of("C", whole)));
    assertEquals(OptionalInt.empty(), Placement.leastFragmenting(t1, whole)); // D waits
    assertEquals(OptionalInt.empty(), Placement.bestFit(t1, whole));
    List<GpuLoad> cGone = List.of(gpu(0, Map.of("A", small)), gpu(1, Map.of()));
    assertEquals(OptionalInt.of(1), Placement.leastFragmenting(cGone, whole)); // D gets GPU 1
    List<GpuLoad> dOn = List.of(gpu(0, Map.of("A", small)), gpu(1, Map.of("D", whole)));
    assertEquals(OptionalInt.of(0), Placement.leastFragmenting(dOn, small)); // B beside A
    assertEquals(OptionalInt.of(0), Placement.bestFit(dOn, small));
  }

  @Test
  void equal_fragmentation_falls_back_to_best_fit_then_the_lowest_index() {
    // Only 10 % shares expected: nothing becomes unusable anywhere; GPUs 1 and 2 are the
    // tightest and equal: GPU 1.
    List<GpuLoad> gpus =
        List.of(
            gpu(0, Map.of()),
            gpu(2, Map.of("b", new Share(40, 40))),
            gpu(1, Map.of("a", new Share(40, 40))));
    Share share = new Share(10, 10);
    assertEquals(OptionalInt.of(1), Placement.leastFragmenting(gpus, share, Map.of(share, 5)));
  }

  @Test
  void unhealthy_gpus_take_nothing_and_count_for_nothing() {
    List<GpuLoad> gpus =
        List.of(new GpuLoad(0, false, Map.of()), gpu(1, Map.of("a", new Share(50, 50))));
    assertEquals(OptionalInt.of(1), Placement.leastFragmenting(gpus, new Share(50, 50)));
    // Only GPU 1 counts: 500 free, refused by a 60/60 share.
    assertEquals(500.0, Placement.fragmentation(gpus, Map.of(new Share(60, 60), 1)), 1e-9);
  }

  @Test
  void the_measure_counts_free_compute_a_class_cannot_use_in_thousandths() {
    // GPU 0 holds 60/60: 400 free, refused by the 50s (1 pod of 4): 400 × 1; GPU 1 empty: 0.
    // 400 / 4 pods = 100.
    List<GpuLoad> gpus = List.of(gpu(0, Map.of("a", new Share(60, 60))), gpu(1, Map.of()));
    assertEquals(
        100.0,
        Placement.fragmentation(gpus, Map.of(new Share(50, 50), 1, new Share(30, 30), 3)),
        1e-9);
    // Memory makes compute unusable too: 10 % core and 80 % memory used, a 20/30 share does not
    // fit (110 % memory): all 900 free thousandths of compute are fragment.
    List<GpuLoad> memoryBound = List.of(gpu(0, Map.of("m", new Share(10, 80))));
    assertEquals(900.0, Placement.fragmentation(memoryBound, Map.of(new Share(20, 30), 1)), 1e-9);
  }
}
