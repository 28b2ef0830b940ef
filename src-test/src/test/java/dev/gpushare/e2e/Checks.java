package dev.gpushare.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** Assertions on the views of API.md, and the invariants of ARCHITECTURE.md §6. */
public final class Checks {
  private Checks() {}

  /**
   * Fields that move with time and are ignored when comparing snapshots: clocks, and a Running
   * pod's GPU telemetry ({@code usage}: the latest sample, absent until the first one after a
   * start).
   */
  static final Set<String> TIME_FIELDS =
      Set.of("waitingSeconds", "runningSeconds", "lastHeartbeatTime", "usage");

  public static boolean isNull(JsonNode n) {
    return n == null || n.isNull() || n.isMissingNode();
  }

  public static String key(JsonNode pod) {
    return pod.path("namespace").asText() + "/" + pod.path("name").asText();
  }

  public static String key(String name) {
    return Api.NS + "/" + name;
  }

  public static void assertHibernation(JsonNode pod) {
    assertEquals("Hibernation", pod.path("state").asText(), () -> "state of " + pod);
    assertTrue(isNull(pod.get("gpu")), () -> "a Hibernation pod holds no GPU: " + pod);
    assertTrue(isNull(pod.get("queuePosition")), () -> "a Hibernation pod is not queued: " + pod);
  }

  public static void assertReady(JsonNode pod, int position) {
    assertEquals("Ready", pod.path("state").asText(), () -> "state of " + pod);
    assertEquals(position, pod.path("queuePosition").asInt(-1), () -> "queuePosition: " + pod);
    assertTrue(isNull(pod.get("gpu")), () -> "a Ready pod holds no GPU: " + pod);
  }

  /** Running with {@code gpu.index == index} and a non-empty uuid. */
  public static void assertRunningOn(JsonNode pod, int index) {
    assertEquals("Running", pod.path("state").asText(), () -> "state of " + pod);
    JsonNode gpu = pod.get("gpu");
    assertFalse(isNull(gpu), () -> "a Running pod reports its GPU: " + pod);
    assertEquals(index, gpu.path("index").asInt(-1), () -> "gpu.index: " + pod);
    assertFalse(gpu.path("uuid").asText("").isBlank(), () -> "gpu.uuid: " + pod);
    assertTrue(isNull(pod.get("queuePosition")), () -> "a Running pod is not queued: " + pod);
  }

  /** The GpuView with this index. */
  public static JsonNode gpu(JsonNode node, int index) {
    for (JsonNode g : node.path("gpus")) {
      if (g.path("index").asInt(-1) == index) {
        return g;
      }
    }
    throw new AssertionError("node has no GPU " + index + ": " + node);
  }

  public static Set<String> podsOf(JsonNode gpuView) {
    Set<String> s = new TreeSet<>();
    gpuView.path("pods").forEach(p -> s.add(p.asText()));
    return s;
  }

  /** GPU {@code index} of {@code node}: inUse core/memory and exactly these pods (names). */
  public static void assertGpu(JsonNode node, int index, int core, int memory, String... pods) {
    JsonNode g = gpu(node, index);
    assertEquals(core, g.path("inUse").path("core").asInt(-1), () -> "inUse.core of " + g);
    assertEquals(memory, g.path("inUse").path("memory").asInt(-1), () -> "inUse.memory of " + g);
    Set<String> expected = new TreeSet<>();
    for (String p : pods) {
      expected.add(key(p));
    }
    assertEquals(expected, podsOf(g), () -> "pods on GPU " + index + ": " + g);
  }

  /** Queue items (queue endpoint or NodeView.queue) as "ns/name" in position order. */
  public static List<String> queueOrder(JsonNode items) {
    List<String> l = new ArrayList<>();
    int expected = 1;
    for (JsonNode it : items) {
      assertEquals(expected++, it.path("position").asInt(-1), () -> "positions 1..n: " + items);
      l.add(it.path("pod").asText());
    }
    return l;
  }

  public static List<String> keys(String... names) {
    List<String> l = new ArrayList<>();
    for (String n : names) {
      l.add(key(n));
    }
    return l;
  }

  /** The event with this reason on a pod (or node) view, or null. */
  public static JsonNode event(JsonNode view, String reason) {
    for (JsonNode e : view.path("events")) {
      if (reason.equals(e.path("reason").asText())) {
        return e;
      }
    }
    return null;
  }

  public static List<JsonNode> events(JsonNode view, String reason) {
    List<JsonNode> l = new ArrayList<>();
    for (JsonNode e : view.path("events")) {
      if (reason.equals(e.path("reason").asText())) {
        l.add(e);
      }
    }
    return l;
  }

  /** The condition of this type, or null. */
  public static JsonNode condition(JsonNode conditions, String type) {
    for (JsonNode c : conditions) {
      if (type.equals(c.path("type").asText())) {
        return c;
      }
    }
    return null;
  }

  public static JsonNode nodeCondition(JsonNode node, String type) {
    JsonNode c = condition(node.path("status").path("conditions"), type);
    assertNotNull(c, () -> "node condition " + type + " missing: " + node.path("status"));
    return c;
  }

  /** A deep copy without the fields that move with time. */
  public static JsonNode withoutTimes(JsonNode n) {
    JsonNode copy = n.deepCopy();
    strip(copy);
    return copy;
  }

  private static void strip(JsonNode n) {
    if (n instanceof ObjectNode o) {
      o.remove(TIME_FIELDS);
      o.forEach(Checks::strip);
    } else if (n instanceof ArrayNode a) {
      a.forEach(Checks::strip);
    }
  }

  /**
   * The decision state of the whole server: every pod's state, GPU and queue position, every node's
   * queue (from the queue endpoint) and GPU holders (pods sorted).
   */
  public static ObjectNode snapshot(Api api) {
    ObjectNode s = Api.JSON.createObjectNode();
    ObjectNode pods = s.putObject("pods");
    Map<String, JsonNode> sorted = new TreeMap<>();
    api.allPods().forEach(p -> sorted.put(key(p), p));
    sorted.forEach(
        (k, p) -> {
          ObjectNode v = pods.putObject(k);
          v.put("node", p.path("node").asText());
          v.put("state", p.path("state").asText());
          v.set("gpu", isNull(p.get("gpu")) ? null : p.get("gpu"));
          v.set("queuePosition", isNull(p.get("queuePosition")) ? null : p.get("queuePosition"));
        });
    ObjectNode nodes = s.putObject("nodes");
    Map<String, JsonNode> sortedNodes = new TreeMap<>();
    api.nodes().forEach(n -> sortedNodes.put(n.path("name").asText(), n));
    sortedNodes.forEach(
        (name, n) -> {
          ObjectNode v = nodes.putObject(name);
          v.put("policy", n.path("policy").asText());
          ArrayNode q = v.putArray("queue");
          for (JsonNode it : api.queue(name)) {
            q.addObject()
                .put("pod", it.path("pod").asText())
                .put("position", it.path("position").asInt())
                .set("limits", it.path("limits"));
          }
          ArrayNode gpus = v.putArray("gpus");
          for (JsonNode g : n.path("gpus")) {
            ObjectNode gv = gpus.addObject();
            gv.put("index", g.path("index").asInt());
            gv.put("uuid", g.path("uuid").asText());
            gv.set("inUse", g.path("inUse"));
            ArrayNode ps = gv.putArray("pods");
            podsOf(g).forEach(ps::add);
          }
        });
    return s;
  }

  /**
   * ARCHITECTURE §6 as far as the API shows it, on every node: per GPU Σ core and Σ memory limits
   * of Running share-pool pods ≤ 100 (requests for static pods), each pod on at most one GPU and on
   * the one it reports, queue positions 1..n contiguous and equal to the Ready pods.
   */
  public static void assertInvariants(Api api) {
    JsonNode allPods = api.allPods();
    Map<String, JsonNode> podsByKey = new HashMap<>();
    allPods.forEach(p -> podsByKey.put(key(p), p));
    for (JsonNode node : api.nodes()) {
      String name = node.path("name").asText();
      boolean isStatic = "static".equals(node.path("policy").asText());
      Map<Integer, int[]> sums = new HashMap<>();
      Map<Integer, Set<String>> runningOn = new HashMap<>();
      Set<String> ready = new HashSet<>();
      for (JsonNode p : allPods) {
        if (!name.equals(p.path("node").asText()) || isNull(p.get("state"))) {
          continue;
        }
        String state = p.path("state").asText();
        JsonNode gpu = p.get("gpu");
        if ("Running".equals(state)) {
          assertFalse(isNull(gpu), () -> "Running pod without gpu: " + p);
          int idx = gpu.path("index").asInt();
          JsonNode amount =
              "static".equals(p.path("policy").asText()) ? p.path("requests") : p.path("limits");
          int[] sum = sums.computeIfAbsent(idx, i -> new int[2]);
          sum[0] += amount.path("core").asInt();
          sum[1] += amount.path("memory").asInt();
          runningOn.computeIfAbsent(idx, i -> new TreeSet<>()).add(key(p));
          assertEquals(
              gpu(node, idx).path("uuid").asText(),
              gpu.path("uuid").asText(),
              () -> "pod's gpu uuid must be the node's GPU uuid: " + p);
        } else {
          assertTrue(isNull(gpu), () -> "only Running pods hold a GPU: " + p);
        }
        if ("Ready".equals(state)) {
          ready.add(key(p));
        }
      }
      sums.forEach(
          (idx, sum) -> {
            assertTrue(sum[0] <= 100, () -> name + " GPU " + idx + " core over 100%: " + sum[0]);
            assertTrue(sum[1] <= 100, () -> name + " GPU " + idx + " memory over 100%: " + sum[1]);
          });
      Set<String> seen = new HashSet<>();
      for (JsonNode g : node.path("gpus")) {
        int idx = g.path("index").asInt();
        Set<String> listed = podsOf(g);
        for (String p : listed) {
          assertTrue(seen.add(p), () -> name + ": pod " + p + " listed on two GPUs: " + node);
        }
        assertEquals(
            runningOn.getOrDefault(idx, Set.of()),
            listed,
            () ->
                name
                    + " GPU "
                    + idx
                    + ": the node view's holders differ from the pods Running on it");
        assertTrue(g.path("inUse").path("core").asInt() <= 100, () -> "inUse.core > 100: " + g);
        assertTrue(g.path("inUse").path("memory").asInt() <= 100, () -> "inUse.memory > 100: " + g);
        if (!isStatic) {
          int[] sum = sums.getOrDefault(idx, new int[2]);
          assertEquals(sum[0], g.path("inUse").path("core").asInt(), () -> "inUse.core: " + g);
          assertEquals(sum[1], g.path("inUse").path("memory").asInt(), () -> "inUse.mem: " + g);
        }
      }
      JsonNode queue = api.queue(name);
      List<String> order = queueOrder(queue);
      assertEquals(order.size(), new HashSet<>(order).size(), () -> "duplicate in queue " + queue);
      assertEquals(ready, new HashSet<>(order), () -> name + ": queue must be the Ready pods");
      if (isStatic) {
        assertTrue(order.isEmpty(), () -> "a static node's queue is empty: " + queue);
      }
      for (int i = 0; i < order.size(); i++) {
        int pos = i + 1;
        JsonNode p = podsByKey.get(order.get(i));
        if (p == null) {
          fail("queued pod unknown: " + order.get(i));
        }
        assertEquals(pos, p.path("queuePosition").asInt(-1), () -> "queuePosition of " + p);
      }
    }
  }

  /** Iterates field names (for readability in tests). */
  public static List<String> fieldNames(JsonNode n) {
    List<String> l = new ArrayList<>();
    Iterator<String> it = n.fieldNames();
    it.forEachRemaining(l::add);
    return l;
  }
}
