package dev.gpushare.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code LD_PRELOAD} for the command {@code gpushare run} starts: without {@code libgpushare.so}.
 * In a pod the admission webhook completed, every process inherits {@code
 * LD_PRELOAD=/opt/gpushare/lib/libgpushare.so[:…]}; loaded into CMD, the library would raise the
 * pod's demand at CMD's first CUDA call and run its own signal contract beside {@code run}'s. Under
 * {@code run}, the wrapper's contract replaces the library's, so CMD gets every other entry and not
 * that one.
 */
final class Preload {
  static final String VARIABLE = "LD_PRELOAD";
  static final String LIBRARY = "libgpushare.so";

  private Preload() {}

  /**
   * {@code value} without the entries whose file name is {@code libgpushare.so}; entries are
   * separated by {@code :} or spaces, as the dynamic linker reads them. Unchanged when it has no
   * such entry; the rest joined with {@code :} when it had; empty when nothing is left (the
   * variable is then dropped).
   */
  static Optional<String> withoutLibrary(String value) {
    if (value == null) {
      return Optional.empty();
    }
    List<String> kept = new ArrayList<>();
    boolean dropped = false;
    for (String entry : value.split("[: ]+")) {
      if (entry.isEmpty()) {
        continue;
      }
      if (entry.substring(entry.lastIndexOf('/') + 1).equals(LIBRARY)) {
        dropped = true;
      } else {
        kept.add(entry);
      }
    }
    if (!dropped) {
      return value.isBlank() ? Optional.empty() : Optional.of(value);
    }
    return kept.isEmpty() ? Optional.empty() : Optional.of(String.join(":", kept));
  }

  /**
   * Sets CMD's {@code LD_PRELOAD} from this command's own ({@code inherited}), the library left
   * out.
   */
  static void apply(Map<String, String> childEnv, String inherited) {
    childEnv.remove(VARIABLE);
    withoutLibrary(inherited).ifPresent(v -> childEnv.put(VARIABLE, v));
  }
}
