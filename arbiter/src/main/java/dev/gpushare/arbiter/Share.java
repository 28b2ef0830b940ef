package dev.gpushare.arbiter;

/**
 * A slice of one GPU in integer percent: compute ({@code gpu-core}) and memory ({@code
 * gpu-memory}). Used both for requests and for limits.
 */
public record Share(int core, int memory) {
  public static final Share NONE = new Share(0, 0);
  public static final Share WHOLE = new Share(100, 100);

  public Share plus(Share other) {
    return new Share(core + other.core, memory + other.memory);
  }

  public Share minus(Share other) {
    return new Share(core - other.core, memory - other.memory);
  }

  /** Whether this share, added to {@code used}, stays within one whole GPU on both resources. */
  public boolean fitsBeside(Share used) {
    return used.core + core <= 100 && used.memory + memory <= 100;
  }

  public boolean withinWhole() {
    return core <= 100 && memory <= 100;
  }

  @Override
  public String toString() {
    return "core " + core + "%, memory " + memory + "%";
  }
}
