package dev.gpushare.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.PodState;
import dev.gpushare.bench.BenchSupport.Runtime;
import dev.gpushare.persistence.DataDirectory;
import dev.gpushare.persistence.PersistenceProfiles;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import javax.management.ObjectName;

/**
 * Heap per idle pod (src-test/BENCHMARKS.md, "Heap per pod"): the real runtime over the embedded H2
 * journal profile, {@code --nodes} share-pool nodes of 8 GPUs, then {@code --pods} pods created
 * through the service ({@code createPod}, request 1 %, limits 10..100 %), all left in Hibernation.
 * The used heap after full GCs (MemoryMXBean, after {@code System.gc()} until it stops shrinking)
 * is read with no pods, half of them and all of them; per pod = the difference divided by the pods,
 * each reading taken after {@code --idle-seconds} without requests (the asks' 30 s timeout tasks
 * gone). A class histogram ({@code GC.class_histogram}, the DiagnosticCommand MBean, as {@code
 * jcmd} prints it) is taken with no pods and with all of them, and the classes that grew most are
 * listed per pod.
 *
 * <p>Arguments: {@code [--pods 100000] [--nodes 128] [--h2-cache-mb 16] [--top 40] [--idle-seconds
 * 40] [--passivate-after 20s]} (the last sets {@code gpushare.passivate-idle-pods-after}; {@code
 * 1d} keeps every pod's actors alive, the baseline). H2 keeps a page cache in the heap (64 MB by
 * default); {@code --h2-cache-mb} sets it (CACHE_SIZE) so that it is small and full early: the
 * slope from half to all pods does not see it at all.
 */
public final class PodHeapBenchmark {
  private PodHeapBenchmark() {}

  public static void main(String[] args) throws Exception {
    int pods = Integer.parseInt(BenchSupport.option(args, "--pods", "100000"));
    int nodes = Integer.parseInt(BenchSupport.option(args, "--nodes", "128"));
    int cacheMb = Integer.parseInt(BenchSupport.option(args, "--h2-cache-mb", "16"));
    int top = Integer.parseInt(BenchSupport.option(args, "--top", "40"));
    int idle = Integer.parseInt(BenchSupport.option(args, "--idle-seconds", "40"));
    // Shorter than production's 2m so that a reading after --idle-seconds sees idle pods
    // passivated; the baseline without passivation: --passivate-after 1d.
    String passivate = BenchSupport.option(args, "--passivate-after", "20s");
    Path temp = Files.createTempDirectory("gpushare-heap");
    System.out.printf(
        Locale.ROOT,
        "gpushare heap per pod: %,d pods on %d nodes (8 GPUs each), H2 journal (cache %d MB),"
            + " idle pods passivated after %s; %d cores, Java %s, max heap %d MiB, GC %s%n",
        pods,
        nodes,
        cacheMb,
        passivate,
        java.lang.Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        java.lang.Runtime.getRuntime().maxMemory() >> 20,
        ManagementFactory.getGarbageCollectorMXBeans().get(0).getName());
    try {
      Config h2 = PersistenceProfiles.embeddedH2(DataDirectory.prepare(temp.resolve("h2")));
      String urlPath = PersistenceProfiles.SHARED_DATABASE + ".db.url";
      Config profile =
          ConfigFactory.parseMap(
                  Map.of(
                      urlPath,
                      h2.getString(urlPath) + ";CACHE_SIZE=" + (cacheMb * 1024),
                      "gpushare.passivate-idle-pods-after",
                      passivate))
              .withFallback(h2);
      try (Runtime runtime = Runtime.start("heap", profile)) {
        List<String> names = new ArrayList<>();
        for (int n = 0; n < nodes; n++) {
          names.add("node-" + n);
        }
        BenchSupport.inParallel(
            nodes, 8, n -> runtime.service.putNode(BenchSupport.node(names.get(n), 8)));
        Thread.sleep(idle * 1000L);
        long empty = settledHeap();
        Map<String, long[]> before = histogram();
        System.out.printf(Locale.ROOT, "%d nodes, no pods: heap %,d bytes%n", nodes, empty);
        Random random = new Random(11);
        int half = pods / 2;
        long start = System.nanoTime();
        create(runtime, names, 0, half, random);
        // Idle: the asks' timeout tasks (30 s) have run out, nothing is in flight.
        Thread.sleep(idle * 1000L);
        long atHalf = settledHeap();
        System.out.printf(
            Locale.ROOT,
            "%,d pods (%.0f s): heap %,d bytes%n",
            half,
            (System.nanoTime() - start) / 1e9,
            atHalf);
        create(runtime, names, half, pods, random);
        Thread.sleep(idle * 1000L);
        long atAll = settledHeap();
        Map<String, long[]> after = histogram();
        System.out.printf(
            Locale.ROOT,
            "%,d pods (%.0f s): heap %,d bytes%n",
            pods,
            (System.nanoTime() - start) / 1e9,
            atAll);
        // Every pod is still there, idle. The first listing recovers every (passivated) pod of
        // the node from the journal; the second finds them alive: the price of passivation.
        long cold = System.nanoTime();
        List<dev.gpushare.node.api.Views.PodView> onFirst =
            BenchSupport.await(
                runtime.service.pods(java.util.Optional.of(names.get(0))),
                java.time.Duration.ofMinutes(2));
        cold = System.nanoTime() - cold;
        long warm = System.nanoTime();
        BenchSupport.await(
            runtime.service.pods(java.util.Optional.of(names.get(0))),
            java.time.Duration.ofMinutes(2));
        warm = System.nanoTime() - warm;
        System.out.printf(
            Locale.ROOT,
            "node-0: %d pods, %d in Hibernation; listing them: %.0f ms idle (%.2f ms per pod),"
                + " %.0f ms again right after (%.2f ms per pod)%n",
            onFirst.size(),
            onFirst.stream().filter(p -> p.state() == PodState.HIBERNATION).count(),
            cold / 1e6,
            cold / 1e6 / onFirst.size(),
            warm / 1e6,
            warm / 1e6 / onFirst.size());
        // One pod at a time (node-1's first 100, none asked about since creation): its view
        // needs its index entry and its actor, both recovered when passivated.
        double[] coldOne = new double[100];
        double[] warmOne = new double[100];
        for (int round = 0; round < 2; round++) {
          double[] into = round == 0 ? coldOne : warmOne;
          for (int i = 0; i < into.length; i++) {
            long t = System.nanoTime();
            BenchSupport.await(
                runtime.service.pod(BenchSupport.NS, "pod-" + (1 + i * nodes)),
                java.time.Duration.ofMinutes(1));
            into[i] = (System.nanoTime() - t) / 1e6;
          }
          java.util.Arrays.sort(into);
        }
        System.out.printf(
            Locale.ROOT,
            "one pod's view, 100 pods one after another: idle p50 %.2f ms, p99 %.2f ms;"
                + " again right after p50 %.2f ms, p99 %.2f ms%n",
            coldOne[49],
            coldOne[98],
            warmOne[49],
            warmOne[98]);
        System.out.println();
        System.out.println("| measurement | heap used after GC | per pod |");
        System.out.println("|---|---|---|");
        System.out.printf(
            Locale.ROOT, "| %d nodes, no pods (baseline) | %,d MiB | - |%n", nodes, empty >> 20);
        System.out.printf(
            Locale.ROOT,
            "| %,d pods | %,d MiB | %,.0f bytes |%n",
            half,
            atHalf >> 20,
            (double) (atHalf - empty) / half);
        System.out.printf(
            Locale.ROOT,
            "| %,d pods | %,d MiB | %,.0f bytes |%n",
            pods,
            atAll >> 20,
            (double) (atAll - empty) / pods);
        System.out.printf(
            Locale.ROOT,
            "| slope from %,d to %,d pods | | %,.0f bytes |%n",
            half,
            pods,
            (double) (atAll - atHalf) / (pods - half));

        System.out.println();
        System.out.println("| class | instances per pod | bytes per pod | share |");
        System.out.println("|---|---|---|---|");
        List<Map.Entry<String, long[]>> grown = new ArrayList<>();
        long total = 0;
        for (Map.Entry<String, long[]> e : after.entrySet()) {
          long[] b = before.getOrDefault(e.getKey(), new long[2]);
          long[] d = {e.getValue()[0] - b[0], e.getValue()[1] - b[1]};
          if (d[1] > 0) {
            total += d[1];
          }
          grown.add(Map.entry(e.getKey(), d));
        }
        grown.sort((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]));
        long listed = 0;
        for (int i = 0; i < Math.min(top, grown.size()); i++) {
          long[] d = grown.get(i).getValue();
          listed += d[1];
          System.out.printf(
              Locale.ROOT,
              "| %s | %.2f | %,.0f | %.1f %% |%n",
              grown.get(i).getKey(),
              (double) d[0] / pods,
              (double) d[1] / pods,
              100.0 * d[1] / total);
        }
        System.out.printf(
            Locale.ROOT,
            "| (all other classes) | | %,.0f | %.1f %% |%n",
            (double) (total - listed) / pods,
            100.0 * (total - listed) / total);
        System.out.printf(
            Locale.ROOT,
            "| **total grown (histogram)** | | **%,.0f** | |%n",
            (double) total / pods);

        // The same growth by who holds it.
        Map<String, Long> byGroup = new java.util.LinkedHashMap<>();
        for (String g : GROUPS) {
          byGroup.put(g, 0L);
        }
        for (Map.Entry<String, long[]> e : grown) {
          if (e.getValue()[1] > 0) {
            byGroup.merge(group(e.getKey()), e.getValue()[1], Long::sum);
          }
        }
        System.out.println();
        System.out.println("| group | bytes per pod | share |");
        System.out.println("|---|---|---|");
        long totalGrown = total;
        byGroup.forEach(
            (g, b) ->
                System.out.printf(
                    Locale.ROOT,
                    "| %s | %,.0f | %.1f %% |%n",
                    g,
                    (double) b / pods,
                    100.0 * b / totalGrown));
        long cells =
            after.getOrDefault("org.apache.pekko.actor.ActorCell", new long[2])[0]
                - before.getOrDefault("org.apache.pekko.actor.ActorCell", new long[2])[0];
        System.out.printf(
            Locale.ROOT,
            "%nactors grown per pod: %.2f (ActorCell instances)%n",
            (double) cells / pods);
      }
    } finally {
      BenchSupport.deleteTree(temp);
    }
    System.exit(0);
  }

  static final List<String> GROUPS =
      List.of(
          "Pekko actors and typed persistence (org.apache.pekko.*, scala.*)",
          "text (java.lang.String and byte[])",
          "JDK collections and other java.*",
          "gpushare state (dev.gpushare.*)",
          "H2 (org.h2.*)",
          "other");

  /** Which group a class (as the histogram names it) belongs to. */
  static String group(String name) {
    if (name.startsWith("org.apache.pekko.") || name.startsWith("scala.")) {
      return GROUPS.get(0);
    }
    if (name.equals("java.lang.String") || name.equals("[B")) {
      return GROUPS.get(1);
    }
    if (name.startsWith("java.") || name.startsWith("[")) {
      return GROUPS.get(2);
    }
    if (name.startsWith("dev.gpushare.")) {
      return GROUPS.get(3);
    }
    if (name.startsWith("org.h2.")) {
      return GROUPS.get(4);
    }
    return GROUPS.get(5);
  }

  private static void create(Runtime runtime, List<String> nodes, int from, int to, Random random) {
    int[] limits = new int[to - from];
    for (int i = 0; i < limits.length; i++) {
      limits[i] = BenchSupport.limit(random);
    }
    long[] last = {System.nanoTime()};
    BenchSupport.inParallel(
        to - from,
        32,
        i -> {
          int p = from + i;
          if (p % 10_000 == 0 && p > from) {
            long now = System.nanoTime();
            System.out.printf(
                Locale.ROOT,
                "  %,d pods created (%.0f pods/s)%n",
                p,
                10_000 / ((now - last[0]) / 1e9));
            last[0] = now;
          }
          String node = nodes.get(p % nodes.size());
          return runtime.service.createPod(BenchSupport.pod(node, "pod-" + p, 1, limits[i]));
        });
  }

  /** Used heap after full GCs, once it stops shrinking. */
  static long settledHeap() throws InterruptedException {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    long previous = Long.MAX_VALUE;
    long used = 0;
    for (int i = 0; i < 10; i++) {
      System.gc();
      Thread.sleep(500);
      used = memory.getHeapMemoryUsage().getUsed();
      if (previous != Long.MAX_VALUE && Math.abs(previous - used) < (1 << 20)) {
        break;
      }
      previous = used;
    }
    return used;
  }

  /** {@code GC.class_histogram} (a full GC first): class name → {instances, bytes}. */
  static Map<String, long[]> histogram() throws Exception {
    String text =
        (String)
            ManagementFactory.getPlatformMBeanServer()
                .invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "gcClassHistogram",
                    new Object[] {new String[0]},
                    new String[] {String[].class.getName()});
    Map<String, long[]> classes = new HashMap<>();
    for (String line : text.split("\n")) {
      String[] f = line.trim().split("\\s+");
      if (f.length >= 4 && f[0].endsWith(":")) {
        classes.put(f[3], new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])});
      }
    }
    return classes;
  }
}
