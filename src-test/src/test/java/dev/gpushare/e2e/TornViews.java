package dev.gpushare.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What no single view may ever show (ARCHITECTURE §6, invariants 1–3), for tests that sample views
 * while decisions stream and members fail: each view is one snapshot of its node's arbiter, so each
 * must hold on its own. Every check returns the violations it found (empty: none).
 */
final class TornViews {
  private TornViews() {}

  /**
   * A NodeView: per GPU inUse ≤ 100, no pod on two GPUs, none both queued and on a GPU, queue
   * positions 1..n.
   */
  static List<String> ofNode(JsonNode n) {
    List<String> violations = new ArrayList<>();
    Set<String> held = new HashSet<>();
    for (JsonNode g : n.path("gpus")) {
      int core = g.path("inUse").path("core").asInt();
      int mem = g.path("inUse").path("memory").asInt();
      if (core > 100 || mem > 100) {
        violations.add("GPU over 100%: " + g);
      }
      for (JsonNode p : g.path("pods")) {
        if (!held.add(p.asText())) {
          violations.add("pod on two GPUs: " + p.asText() + " in " + n.path("gpus"));
        }
      }
    }
    int pos = 1;
    for (JsonNode q : n.path("queue")) {
      if (q.path("position").asInt() != pos++) {
        violations.add("queue positions not 1..n: " + n.path("queue"));
        break;
      }
      if (held.contains(q.path("pod").asText())) {
        violations.add("pod both queued and on a GPU: " + q.path("pod").asText() + " in " + n);
      }
    }
    return violations;
  }

  /**
   * A pod list ({@code {"items":[…]}}) of one node: every Running pod on exactly one GPU and not
   * queued, every Ready pod queued and on none, others on none and not queued, per GPU Σ held
   * (limits in share-pool, requests in static) ≤ 100, queue positions 1..n.
   */
  static List<String> ofPodList(JsonNode list) {
    List<String> violations = new ArrayList<>();
    Map<Integer, int[]> sums = new HashMap<>();
    List<Integer> positions = new ArrayList<>();
    for (JsonNode p : list.path("items")) {
      String state = p.path("state").asText();
      boolean onGpu = !Checks.isNull(p.get("gpu"));
      boolean queued = !Checks.isNull(p.get("queuePosition"));
      if ("Running".equals(state)) {
        if (!onGpu || queued) {
          violations.add("Running pod not on exactly one GPU, or queued: " + p);
        } else {
          JsonNode held =
              "static".equals(p.path("policy").asText()) ? p.path("requests") : p.path("limits");
          int[] sum = sums.computeIfAbsent(p.path("gpu").path("index").asInt(), i -> new int[2]);
          sum[0] += held.path("core").asInt();
          sum[1] += held.path("memory").asInt();
        }
      } else if ("Ready".equals(state)) {
        if (onGpu || !queued) {
          violations.add("Ready pod on a GPU, or not queued: " + p);
        } else {
          positions.add(p.path("queuePosition").asInt());
        }
      } else if (onGpu || queued) {
        violations.add(state + " pod on a GPU or queued: " + p);
      }
    }
    sums.forEach(
        (gpu, sum) -> {
          if (sum[0] > 100 || sum[1] > 100) {
            violations.add("GPU " + gpu + " over 100%: " + list);
          }
        });
    positions.sort(null);
    for (int i = 0; i < positions.size(); i++) {
      if (positions.get(i) != i + 1) {
        violations.add("queue positions not 1..n: " + positions);
        break;
      }
    }
    return violations;
  }
}
