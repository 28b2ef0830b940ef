package dev.gpushare.arbiter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The book's persistent map against {@link TreeMap}, and old versions left as they were. */
class PersistentSortedMapTest {

  @Test
  void randomChangesMatchATreeMapAndEveryOlderVersionStaysAsItWas() {
    Random random = new Random(7);
    PersistentSortedMap<Integer, String> map = PersistentSortedMap.empty();
    TreeMap<Integer, String> expected = new TreeMap<>();
    List<PersistentSortedMap<Integer, String>> versions = new ArrayList<>();
    List<TreeMap<Integer, String>> snapshots = new ArrayList<>();
    for (int i = 0; i < 5_000; i++) {
      int key = random.nextInt(400);
      if (random.nextInt(3) == 0) {
        map = map.minus(key);
        expected.remove(key);
      } else {
        map = map.plus(key, "v" + i);
        expected.put(key, "v" + i);
      }
      if (i % 250 == 0) {
        versions.add(map);
        snapshots.add(new TreeMap<>(expected));
      }
      if (i % 97 == 0) {
        assertEquals(expected, map);
        assertEquals(new ArrayList<>(expected.keySet()), new ArrayList<>(map.keySet()));
        int probe = random.nextInt(400);
        assertEquals(expected.headMap(probe).size(), map.rank(probe));
        assertEquals(expected.isEmpty() ? null : expected.firstKey(), key(map.first()));
        assertEquals(expected.isEmpty() ? null : expected.lastKey(), key(map.last()));
      }
    }
    assertEquals(expected, map);
    for (int v = 0; v < versions.size(); v++) {
      assertEquals(snapshots.get(v), versions.get(v), "version " + v + " is unchanged");
    }
  }

  @Test
  void aLargeMapStaysBalanced() {
    PersistentSortedMap<Integer, Integer> map = PersistentSortedMap.empty();
    for (int i = 0; i < 100_000; i++) {
      map = map.plus(i, i);
    }
    assertEquals(100_000, map.size());
    assertEquals(50_000, map.rank(50_000));
    assertEquals(99_999, map.get(99_999));
    // Recursion depth is the tree's height: 100,000 sorted inserts would overflow an unbalanced
    // one.
    for (int i = 0; i < 100_000; i += 2) {
      map = map.minus(i);
    }
    assertEquals(50_000, map.size());
    assertEquals(1, map.first().getKey());
  }

  @Test
  void removingAnAbsentKeyIsTheSameMapAndNullsAreRefused() {
    PersistentSortedMap<String, String> map =
        PersistentSortedMap.<String, String>empty().plus("a", "1");
    assertSame(map, map.minus("b"));
    assertNull(map.get("b"));
    assertNull(map.get(42), "a key of another type is simply absent");
    assertThrows(NullPointerException.class, () -> map.plus("c", null));
    assertTrue(PersistentSortedMap.copyOf(Map.of("x", "y")).containsKey("x"));
    assertSame(map, PersistentSortedMap.copyOf(map));
  }

  private static Integer key(Map.Entry<Integer, String> e) {
    return e == null ? null : e.getKey();
  }
}
