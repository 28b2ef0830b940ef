package dev.gpushare.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The human-readable forms of the API's answers: kubectl-like tables for lists ({@code get}), a
 * {@code describe}-like page for one node or pod, a timeline for the journal. Absent values print
 * as {@code -}. Limits and shares are {@code CORE/MEMORY} in percent of one GPU.
 */
final class Printers {
  private Printers() {}

  // ------------------------------------------------------------------ lists

  /** {@code GET /v1/nodes}: NAME POLICY GPUS HEALTHY QUEUE. */
  static String nodes(JsonNode answer) {
    Table t = new Table("NAME", "POLICY", "GPUS", "HEALTHY", "QUEUE");
    for (JsonNode n : answer.path("items")) {
      int healthy = 0;
      for (JsonNode g : n.path("gpus")) {
        if ("Healthy".equals(text(g, "health"))) {
          healthy++;
        }
      }
      t.row(
          text(n, "name"),
          text(n, "policy"),
          n.path("gpus").size(),
          healthy,
          n.path("queue").size());
    }
    return t.isEmpty() ? "No nodes.\n" : t.render();
  }

  /** {@code GET /v1/nodes/{node}/queue}: POSITION POD WAITING LIMITS. */
  static String queue(String node, JsonNode answer) {
    Table t = queueTable(answer.path("items"));
    return t.isEmpty() ? "The ready queue of node " + node + " is empty.\n" : t.render();
  }

  private static Table queueTable(JsonNode items) {
    Table t = new Table("POSITION", "POD", "WAITING", "LIMITS");
    for (JsonNode q : items) {
      t.row(
          text(q, "position"),
          text(q, "pod"),
          seconds(q.get("waitingSeconds")),
          share(q.get("limits")));
    }
    return t;
  }

  /** {@code GET /v1/pods}: NAMESPACE NAME NODE STATE GPU LIMITS POSITION WAITING RUNNING. */
  static String pods(JsonNode answer) {
    Table t =
        new Table(
            "NAMESPACE",
            "NAME",
            "NODE",
            "STATE",
            "GPU",
            "LIMITS",
            "POSITION",
            "WAITING",
            "RUNNING");
    for (JsonNode p : answer.path("items")) {
      t.row(
          text(p, "namespace"),
          text(p, "name"),
          text(p, "node"),
          text(p, "state"),
          gpuIndex(p.get("gpu")),
          share(p.get("limits")),
          text(p, "queuePosition"),
          seconds(p.get("waitingSeconds")),
          seconds(p.get("runningSeconds")));
    }
    return t.isEmpty() ? "No pods.\n" : t.render();
  }

  // ------------------------------------------------------------------ one object

  /** {@code GET /v1/nodes/{node}}, described. */
  static String node(JsonNode n) {
    StringBuilder out = new StringBuilder();
    field(out, "Name", text(n, "name"));
    field(out, "Policy", text(n, "policy"));
    field(out, "QoS", keyValues(n.get("qos")));
    map(out, "Labels", n.get("labels"));
    map(out, "Annotations", n.get("annotations"));
    JsonNode status = n.path("status");
    map(out, "Capacity", status.get("capacity"));
    map(out, "Allocatable", status.get("allocatable"));
    Table conditions = new Table("TYPE", "STATUS", "REASON", "MESSAGE");
    for (JsonNode c : status.path("conditions")) {
      conditions.row(text(c, "type"), text(c, "status"), text(c, "reason"), text(c, "message"));
    }
    section(out, "Conditions", conditions);
    Table gpus = new Table("INDEX", "UUID", "MODEL", "MEMORY", "HEALTH", "IN USE", "PODS");
    for (JsonNode g : n.path("gpus")) {
      gpus.row(
          text(g, "index"),
          text(g, "uuid"),
          text(g, "model"),
          g.hasNonNull("memoryMiB") ? g.get("memoryMiB").asLong() + " MiB" : null,
          text(g, "health"),
          share(g.get("inUse")),
          join(g.get("pods")));
    }
    section(out, "GPUs", gpus);
    section(out, "Queue", queueTable(n.path("queue")));
    section(out, "Events", events(n.path("events")));
    return out.toString();
  }

  /** {@code GET /v1/namespaces/{ns}/pods/{name}}, described. */
  static String pod(JsonNode p) {
    StringBuilder out = new StringBuilder();
    field(out, "Name", text(p, "name"));
    field(out, "Namespace", text(p, "namespace"));
    field(out, "UID", text(p, "uid"));
    field(out, "Node", text(p, "node"));
    field(out, "Policy", text(p, "policy"));
    field(out, "State", text(p, "state"));
    field(out, "Requests", percents(p.get("requests")));
    field(out, "Limits", percents(p.get("limits")));
    JsonNode gpu = p.get("gpu");
    field(
        out,
        "GPU",
        gpu == null || gpu.isNull() ? null : text(gpu, "index") + " (" + text(gpu, "uuid") + ")");
    field(out, "Position", text(p, "queuePosition"));
    field(out, "Waiting", seconds(p.get("waitingSeconds")));
    field(out, "Running", seconds(p.get("runningSeconds")));
    field(out, "Usage", usage(p.get("usage")));
    JsonNode env = p.path("workload").get("env");
    if (env != null && env.isObject() && env.size() > 0) {
      out.append("Workload env:\n");
      for (Map.Entry<String, JsonNode> e : env.properties()) {
        out.append("  ").append(e.getKey()).append('=').append(e.getValue().asText()).append('\n');
      }
    }
    Table conditions = new Table("TYPE", "STATUS", "REASON", "MESSAGE");
    for (JsonNode c : p.path("conditions")) {
      conditions.row(text(c, "type"), text(c, "status"), text(c, "reason"), text(c, "message"));
    }
    section(out, "Conditions", conditions);
    section(out, "Events", events(p.path("events")));
    return out.toString();
  }

  /**
   * One line for {@code demand}/{@code release}: {@code default/a: Running on GPU 1 (GPU-…)},
   * {@code default/d: Ready, position 1, waiting 3s}, {@code default/c: Hibernation}.
   */
  static String podLine(JsonNode p) {
    String key = text(p, "namespace") + "/" + text(p, "name");
    String state = text(p, "state");
    if (state == null) {
      return key + ": shares no GPU\n";
    }
    JsonNode gpu = p.get("gpu");
    if ("Running".equals(state) && gpu != null && !gpu.isNull()) {
      return key
          + ": Running on GPU "
          + text(gpu, "index")
          + " ("
          + text(gpu, "uuid")
          + ") of node "
          + text(p, "node")
          + "\n";
    }
    if ("Ready".equals(state)) {
      return key
          + ": Ready, position "
          + text(p, "queuePosition")
          + " in the queue of node "
          + text(p, "node")
          + ", waiting "
          + seconds(p.get("waitingSeconds"))
          + "\n";
    }
    return key + ": " + state + "\n";
  }

  /**
   * {@code GET /v1/journal/events}, as a timeline: sequence number, write time, type, the event as
   * compact JSON, columns two spaces apart (as the launcher's own {@code journal} command).
   */
  static String journal(JsonNode items) {
    int seqWidth = 1;
    int typeWidth = 1;
    for (JsonNode e : items) {
      seqWidth = Math.max(seqWidth, e.path("sequenceNr").asText().length());
      typeWidth = Math.max(typeWidth, e.path("type").asText().length());
    }
    StringBuilder out = new StringBuilder();
    for (JsonNode e : items) {
      out.append(
          String.format(
              "%" + seqWidth + "s  %s  %-" + typeWidth + "s  %s%n",
              e.path("sequenceNr").asText(),
              e.path("timestamp").asText(),
              e.path("type").asText(),
              e.path("event").toString()));
    }
    return out.toString();
  }

  /**
   * {@code GET /v1/namespaces/{ns}/pods/{name}/history}: TIME ENTITY EVENT SUMMARY, oldest first.
   * ENTITY is {@code arbiter NODE} for a decision, {@code pod UID} for the pod's own record; EVENT
   * the event's type without its entity; SUMMARY what it says, in words ({@link #summary}).
   */
  static String history(PodRef pod, JsonNode items) {
    Table t = new Table("TIME", "ENTITY", "EVENT", "SUMMARY");
    for (JsonNode e : items) {
      String type = e.path("type").asText();
      t.row(
          text(e, "timestamp"),
          entity(e.path("persistenceId").asText()),
          type.substring(type.lastIndexOf('.') + 1),
          summary(pod, type, e.path("event")));
    }
    return t.isEmpty() ? "No history for pod " + pod + ".\n" : t.render();
  }

  /** {@code NodeArbiter|n1} as {@code arbiter n1}, {@code Pod|ns/name/uid} as {@code pod uid}. */
  static String entity(String persistenceId) {
    int bar = persistenceId.indexOf('|');
    if (bar < 0) {
      return persistenceId;
    }
    String kind = persistenceId.substring(0, bar);
    String id = persistenceId.substring(bar + 1);
    if (kind.equals("NodeArbiter")) {
      return "arbiter " + id;
    }
    if (kind.equals("Pod")) {
      return "pod " + id.substring(id.lastIndexOf('/') + 1);
    }
    return persistenceId;
  }

  /** What one event of a pod's history says, in a few words; compact JSON for an unknown type. */
  static String summary(PodRef pod, String type, JsonNode e) {
    String gpu = "GPU " + e.path("gpu").asText();
    switch (type) {
      case "NodeArbiter.PodAdded":
        return "bound to the node (uid " + e.path("key").path("uid").asText() + ")";
      case "NodeArbiter.PodRemoved":
        return "removed from the node";
      case "NodeArbiter.Enqueued":
        return "entered the ready queue";
      case "NodeArbiter.Withdrawn":
        return "left the ready queue (demand withdrawn)";
      case "NodeArbiter.Granted":
        return "granted " + gpu;
      case "NodeArbiter.Released":
        {
          String reason = text(e, "reason");
          String message = text(e.path("note"), "message");
          return (reason == null ? "released its GPU" : "GPU taken back (" + reason + ")")
              + (message == null ? "" : ": " + message);
        }
      case "NodeArbiter.Preempted":
        {
          List<String> victims = new ArrayList<>();
          e.path("victims").forEach(v -> victims.add(ref(v.asText())));
          String by = ref(e.path("by").asText());
          return by.equals(pod.toString())
              ? "preempted " + String.join(", ", victims) + " on " + gpu
              : "preempted on " + gpu + " by " + by;
        }
      case "NodeArbiter.Pinned":
        return "pinned to " + gpu;
      case "NodeArbiter.PinDeferred":
        return "pin deferred: " + e.path("message").asText();
      case "NodeArbiter.SuspendRequested":
        {
          String by = text(e, "by");
          return "checkpoint requested on "
              + gpu
              + " ("
              + e.path("reason").asText()
              + (by == null ? "" : " for " + ref(by))
              + ")";
        }
      case "NodeArbiter.CheckpointReported":
        return e.path("held").asBoolean()
            ? "checkpoint held in host memory (" + e.path("bytes").asLong() + " bytes)"
            : "checkpoint not held: " + e.path("message").asText();
      case "NodeArbiter.CheckpointCleared":
        return text(e, "reason") == null
            ? "restored from its checkpoint"
            : "checkpoint given up: " + e.path("reason").asText();
      case "PodActor.SpecSeen":
        return "record: spec seen on node " + e.path("status").path("node").asText();
      case "PodActor.Noted":
        {
          List<String> said = new ArrayList<>();
          e.path("events")
              .forEach(
                  n -> said.add("Event " + n.path("reason").asText() + ": " + text(n, "message")));
          e.path("conditions")
              .forEach(
                  c ->
                      said.add(
                          "condition "
                              + c.path("type").asText()
                              + "="
                              + c.path("status").asText()
                              + (text(c, "reason") == null ? "" : " (" + text(c, "reason") + ")")));
          return String.join("; ", said);
        }
      case "PodActor.Deleted":
        return "record: pod deleted";
      default:
        if (type.startsWith("PodActor.") && e.has("status")) {
          return "record: " + e.path("status").path("state").asText(); // before 0.2
        }
        String json = e.toString();
        return json.length() > 120 ? json.substring(0, 117) + "..." : json;
    }
  }

  /** {@code ns/name/uid} as {@code ns/name}. */
  private static String ref(String entityId) {
    int last = entityId.lastIndexOf('/');
    return last > entityId.indexOf('/') ? entityId.substring(0, last) : entityId;
  }

  // ------------------------------------------------------------------ pieces

  static String text(JsonNode node, String field) {
    if (node == null) {
      return null;
    }
    JsonNode v = node.get(field);
    return v == null || v.isNull() ? null : v.asText();
  }

  /** {@code {"core":50,"memory":100}} as {@code 50/100}. */
  static String share(JsonNode s) {
    if (s == null || s.isNull() || !s.has("core")) {
      return null;
    }
    return s.path("core").asText() + "/" + s.path("memory").asText();
  }

  /** {@code {"core":50,"memory":100}} as {@code core 50%, memory 100%}. */
  static String percents(JsonNode s) {
    if (s == null || s.isNull() || !s.has("core")) {
      return null;
    }
    return "core " + s.path("core").asText() + "%, memory " + s.path("memory").asText() + "%";
  }

  static String seconds(JsonNode s) {
    return s == null || s.isNull() ? null : Durations.human(s.asLong());
  }

  private static String gpuIndex(JsonNode gpu) {
    return gpu == null || gpu.isNull() ? null : gpu.path("index").asText();
  }

  private static String usage(JsonNode u) {
    if (u == null || u.isNull()) {
      return null;
    }
    StringBuilder s =
        new StringBuilder()
            .append("memory ")
            .append(u.path("memoryUsedMiB").asText())
            .append(" of ")
            .append(u.path("memoryLimitMiB").asText())
            .append(" MiB");
    if (u.hasNonNull("absoluteUtilization")) {
      s.append(", utilisation ").append(u.get("absoluteUtilization").asText()).append(" %");
      if (u.hasNonNull("relativeUtilization")) {
        s.append(" (").append(u.get("relativeUtilization").asText()).append(" % of the limit)");
      }
    }
    int processes = u.path("processes").asInt(-1);
    if (processes >= 0) {
      s.append(", ").append(processes).append(processes == 1 ? " process" : " processes");
    }
    return s.toString();
  }

  private static Table events(JsonNode events) {
    Table t = new Table("TYPE", "REASON", "TIME", "MESSAGE");
    for (JsonNode e : events) {
      t.row(text(e, "type"), text(e, "reason"), text(e, "time"), text(e, "message"));
    }
    return t;
  }

  private static String join(JsonNode array) {
    if (array == null || !array.isArray() || array.isEmpty()) {
      return null;
    }
    StringBuilder s = new StringBuilder();
    for (JsonNode x : array) {
      if (s.length() > 0) {
        s.append(',');
      }
      s.append(x.asText());
    }
    return s.toString();
  }

  private static String keyValues(JsonNode object) {
    if (object == null || !object.isObject()) {
      return null;
    }
    StringBuilder s = new StringBuilder();
    for (Map.Entry<String, JsonNode> e : object.properties()) {
      if (s.length() > 0) {
        s.append(", ");
      }
      s.append(e.getKey()).append('=').append(e.getValue().asText());
    }
    return s.toString();
  }

  private static final int LABEL_WIDTH = 14;

  private static void field(StringBuilder out, String label, String value) {
    String head = label + ":";
    out.append(head)
        .append(" ".repeat(Math.max(1, LABEL_WIDTH - head.length())))
        .append(value == null || value.isEmpty() ? "-" : value)
        .append('\n');
  }

  private static void map(StringBuilder out, String label, JsonNode object) {
    if (object == null || !object.isObject() || object.isEmpty()) {
      field(out, label, null);
      return;
    }
    boolean first = true;
    for (Map.Entry<String, JsonNode> e : object.properties()) {
      String kv = e.getKey() + "=" + e.getValue().asText();
      if (first) {
        field(out, label, kv);
        first = false;
      } else {
        out.append(" ".repeat(LABEL_WIDTH)).append(kv).append('\n');
      }
    }
  }

  private static void section(StringBuilder out, String label, Table table) {
    if (table.isEmpty()) {
      field(out, label, "<none>");
    } else {
      out.append(label).append(":\n").append(table.render("  "));
    }
  }
}
