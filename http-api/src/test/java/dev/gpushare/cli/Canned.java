package dev.gpushare.cli;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** API answers as the server writes them (API.md), trimmed to what the CLI reads. */
final class Canned {
  private Canned() {}

  static final String UUID0 = "GPU-00000000-0000-0000-0000-000000000000";
  static final String UUID1 = "GPU-11111111-1111-1111-1111-111111111111";

  static final String NODES =
      """
      {"items":[
       {"name":"demo","labels":{"alibabacloud.com/gpu-share-policy":"share-pool"},"annotations":{},
        "policy":"share-pool",
        "qos":{"preemptEnabled":true,"podMaxDurationMinutes":120,"reservedEphemeralStorage":"0"},
        "status":{"capacity":{"alibabacloud.com/gpu-core.percentage":"200","nvidia.com/gpu":"2"},
                  "allocatable":{"alibabacloud.com/gpu-core.percentage":"200"},
                  "conditions":[{"type":"GPUSharePolicyValid","status":"True","reason":"Valid",
                    "message":"gpu share policy config is valid.",
                    "lastHeartbeatTime":"2026-01-01T00:00:00Z",
                    "lastTransitionTime":"2026-01-01T00:00:00Z"}]},
        "gpus":[{"index":0,"uuid":"GPU-00000000-0000-0000-0000-000000000000","model":"NVIDIA H800",
                 "memoryMiB":81559,"health":"Healthy","inUse":{"core":50,"memory":50},
                 "pods":["default/a"]},
                {"index":1,"uuid":"GPU-11111111-1111-1111-1111-111111111111","model":"NVIDIA H800",
                 "memoryMiB":81559,"health":"Unhealthy","inUse":{"core":0,"memory":0},"pods":[]}],
        "queue":[{"pod":"default/d","position":1,"waitingSeconds":75,
                  "limits":{"core":100,"memory":100}},
                 {"pod":"default/b","position":2,"waitingSeconds":3,
                  "limits":{"core":50,"memory":50}}],
        "events":[]},
       {"name":"node-1","labels":{},"annotations":{},"policy":"none","qos":null,
        "status":{"capacity":{},"allocatable":{},"conditions":[]},
        "gpus":[],"queue":[],"events":[]}
      ]}
      """;

  static final String QUEUE =
      """
      {"items":[{"pod":"default/d","position":1,"waitingSeconds":75,"limits":{"core":100,"memory":100}},
                {"pod":"default/b","position":2,"waitingSeconds":3,"limits":{"core":50,"memory":50}}]}
      """;

  /** A share-pool pod's view on node {@code demo}. */
  static ObjectNode pod(String name, String state) {
    ObjectNode p = Output.JSON.createObjectNode();
    p.put("namespace", "default")
        .put("name", name)
        .put("uid", "uid-" + name)
        .put("node", "demo")
        .put("policy", "share-pool")
        .put("state", state);
    p.putObject("requests").put("core", 50).put("memory", 50);
    p.putObject("limits").put("core", 100).put("memory", 100);
    p.putNull("gpu");
    p.putNull("queuePosition");
    p.putNull("waitingSeconds");
    p.putNull("runningSeconds");
    p.putArray("conditions");
    p.putArray("events");
    p.putNull("usage");
    p.putNull("workload");
    return p;
  }

  static ObjectNode ready(String name, int position, long waitingSeconds) {
    ObjectNode p = pod(name, "Ready");
    p.put("queuePosition", position).put("waitingSeconds", waitingSeconds);
    return p;
  }

  static ObjectNode running(String name, int index, String uuid, long runningSeconds) {
    ObjectNode p = pod(name, "Running");
    p.putObject("gpu").put("index", index).put("uuid", uuid);
    p.put("runningSeconds", runningSeconds);
    ObjectNode env = p.putObject("workload").putObject("env");
    env.put("CUDA_VISIBLE_DEVICES", uuid)
        .put("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100")
        .put("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", uuid + "=81559M");
    return p;
  }

  static String items(ObjectNode... views) {
    ObjectNode all = Output.JSON.createObjectNode();
    com.fasterxml.jackson.databind.node.ArrayNode items = all.putArray("items");
    for (ObjectNode v : views) {
      items.add(v);
    }
    return all.toString();
  }
}
