package dev.gpushare.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code run} gives CMD the LD_PRELOAD it got, without libgpushare.so. */
class PreloadTest {

  static Optional<String> without(String value) {
    return Preload.withoutLibrary(value);
  }

  @Test
  void theLibraryIsDroppedWhereverItIsAndTheRestKept() {
    assertEquals(Optional.empty(), without("/opt/gpushare/lib/libgpushare.so"));
    assertEquals(Optional.empty(), without("libgpushare.so"));
    assertEquals(
        Optional.of("/usr/lib/libfoo.so"),
        without("/opt/gpushare/lib/libgpushare.so:/usr/lib/libfoo.so"));
    assertEquals(
        Optional.of("/usr/lib/libfoo.so"), without("/usr/lib/libfoo.so /opt/x/libgpushare.so"));
    assertEquals(
        Optional.of("a.so:/b/c.so"), without("a.so::/lib/libgpushare.so  /b/c.so:libgpushare.so:"));
    assertEquals(Optional.empty(), without(" : /a/libgpushare.so : "));
  }

  @Test
  void otherLibrariesOfSimilarNamesStay() {
    assertEquals(Optional.of("/lib/libgpushare.so.1"), without("/lib/libgpushare.so.1"));
    assertEquals(Optional.of("/lib/mylibgpushare.so"), without("/lib/mylibgpushare.so"));
    assertEquals(
        Optional.of("/libgpushare.so/x.so"), without("/libgpushare.so/x.so:/y/libgpushare.so"));
  }

  @Test
  void aValueWithoutTheLibraryIsLeftAsItIs() {
    assertEquals(Optional.of("/a.so /b.so"), without("/a.so /b.so"));
    assertEquals(Optional.of("/a.so::"), without("/a.so::"));
    assertEquals(Optional.empty(), without(null));
    assertEquals(Optional.empty(), without(""));
    assertEquals(Optional.empty(), without("  "));
  }

  @Test
  void cmdsVariableComesFromTheCommandsOwn() {
    Map<String, String> child = new HashMap<>(Map.of("LD_PRELOAD", "/jvm/own.so", "PATH", "/bin"));
    Preload.apply(child, "/opt/gpushare/lib/libgpushare.so:/u.so");
    assertEquals(Map.of("LD_PRELOAD", "/u.so", "PATH", "/bin"), child);
    Preload.apply(child, "/opt/gpushare/lib/libgpushare.so");
    assertEquals(Map.of("PATH", "/bin"), child);
    Preload.apply(child, null);
    assertEquals(Map.of("PATH", "/bin"), child);
  }
}
