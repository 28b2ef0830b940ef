package dev.gpushare.e2e;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.atomic.AtomicInteger;

/** Node and Pod manifests as users write them (Kubernetes shape), as mutable JSON trees. */
public final class Manifests {
  private Manifests() {}

  public static final String POLICY_LABEL = "alibabacloud.com/gpu-share-policy";
  public static final String COMPUTE_CLASS = "alibabacloud.com/compute-class";
  public static final String QOS_ANNOTATION = "alibabacloud.com/gpu-share-qos-config";
  public static final String CORE = "alibabacloud.com/gpu-core.percentage";
  public static final String MEMORY = "alibabacloud.com/gpu-memory.percentage";

  private static final AtomicInteger SEQ = new AtomicInteger();

  /** A fresh DNS-1123 name, unique within this JVM. */
  public static String unique(String prefix) {
    return prefix + "-" + SEQ.incrementAndGet();
  }

  /**
   * A Node manifest: 32 CPUs, 256Gi memory, 1Ti ephemeral storage, {@code gpus} GPUs; {@code
   * policy} null = no label; {@code qosJson} null = no annotation.
   */
  public static ObjectNode node(String name, int gpus, String policy, String qosJson) {
    return node(name, gpus, policy, qosJson, "32", "256Gi", "1Ti");
  }

  public static ObjectNode node(
      String name,
      int gpus,
      String policy,
      String qosJson,
      String cpu,
      String memory,
      String ephemeral) {
    ObjectNode n = Api.JSON.createObjectNode();
    n.put("apiVersion", "v1").put("kind", "Node");
    ObjectNode meta = n.putObject("metadata");
    meta.put("name", name);
    ObjectNode labels = meta.putObject("labels");
    if (policy != null) {
      labels.put(POLICY_LABEL, policy);
    }
    ObjectNode ann = meta.putObject("annotations");
    if (qosJson != null) {
      ann.put(QOS_ANNOTATION, qosJson);
    }
    ObjectNode cap = n.putObject("status").putObject("capacity");
    cap.put("cpu", cpu);
    cap.put("memory", memory);
    cap.put("ephemeral-storage", ephemeral);
    cap.put("nvidia.com/gpu", String.valueOf(gpus));
    return n;
  }

  /** A share-pool pod pinned to {@code node}: requests {@code req}/{@code req}, limits lim/lim. */
  public static ObjectNode sharePod(String name, String node, int req, int lim) {
    return pod(name, node, "share-pool", req, req, lim, lim);
  }

  /** A static pod pinned to {@code node}. */
  public static ObjectNode staticPod(String name, String node, int req, int lim) {
    return pod(name, node, "static", req, req, lim, lim);
  }

  /** A sharing pod with one container {@code main}, quantities written as integers. */
  public static ObjectNode pod(
      String name, String node, String policy, int reqCore, int reqMem, int limCore, int limMem) {
    ObjectNode p = Api.JSON.createObjectNode();
    p.put("apiVersion", "v1").put("kind", "Pod");
    ObjectNode meta = p.putObject("metadata");
    meta.put("name", name).put("namespace", Api.NS);
    ObjectNode labels = meta.putObject("labels");
    labels.put(COMPUTE_CLASS, "gpu-hpn");
    if (policy != null) {
      labels.put(POLICY_LABEL, policy);
    }
    ObjectNode spec = p.putObject("spec");
    if (node != null) {
      spec.put("nodeName", node);
    }
    ObjectNode c = spec.putArray("containers").addObject();
    c.put("name", "main").put("image", "registry.example/stress:v1");
    ObjectNode res = c.putObject("resources");
    ObjectNode limits = res.putObject("limits");
    limits.put("cpu", "1").put("memory", "1Gi").put(CORE, limCore).put(MEMORY, limMem);
    ObjectNode requests = res.putObject("requests");
    requests.put("cpu", "1").put("memory", "1Gi").put(CORE, reqCore).put(MEMORY, reqMem);
    return p;
  }

  /** A pod that does not share a GPU: one container with CPU and memory only, no labels. */
  public static ObjectNode cpuOnlyPod(String name, String node) {
    ObjectNode p = Api.JSON.createObjectNode();
    p.put("apiVersion", "v1").put("kind", "Pod");
    p.putObject("metadata").put("name", name).put("namespace", Api.NS);
    ObjectNode spec = p.putObject("spec");
    spec.put("nodeName", node);
    ObjectNode c = spec.putArray("containers").addObject();
    c.put("name", "main").put("image", "registry.example/app:v1");
    ObjectNode res = c.putObject("resources");
    res.putObject("limits").put("cpu", "1").put("memory", "1Gi");
    res.putObject("requests").put("cpu", "1").put("memory", "1Gi");
    return p;
  }

  public static String qos(boolean preemptEnabled, int podMaxDurationMinutes) {
    return "{\"preemptEnabled\":"
        + preemptEnabled
        + ",\"podMaxDurationMinutes\":"
        + podMaxDurationMinutes
        + "}";
  }
}
