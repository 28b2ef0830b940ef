package dev.gpushare.http;

import dev.gpushare.arbiter.PodState;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.Views.GpuView;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PodView;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /metrics}: Prometheus text format 0.0.4, computed on each scrape from the service's
 * nodes and pods. Per node: {@code gpushare_queue_length}; per GPU: {@code
 * gpushare_gpu_core_in_use_percent}, {@code gpushare_gpu_memory_in_use_percent}, {@code
 * gpushare_gpu_healthy}; per node and state: {@code gpushare_pods} (sharing pods only; every state
 * is written, zeros included, so that series do not come and go); per Running pod with telemetry:
 * {@code gpushare_pod_gpu_memory_used_mib} and {@code gpushare_pod_gpu_utilization_percent} ({@code
 * kind} absolute or relative to its core limit).
 */
public final class MetricsRoutes extends ApiDirectives {
  static final ContentType PROMETHEUS_TEXT =
      ContentTypes.parse("text/plain; version=0.0.4; charset=utf-8");

  private final GpuShareService service;

  public MetricsRoutes(GpuShareService service) {
    this.service = service;
  }

  public Route route() {
    return path(
        "metrics",
        () ->
            get(
                () ->
                    answer(
                        () ->
                            service
                                .nodes()
                                .thenCombine(service.pods(Optional.empty()), MetricsRoutes::render),
                        text ->
                            HttpResponse.create()
                                .withEntity(
                                    HttpEntities.create(
                                        PROMETHEUS_TEXT, text.getBytes(StandardCharsets.UTF_8))))));
  }

  /** The exposition text for these nodes and pods; sorted, so equal input gives equal text. */
  static String render(List<NodeView> nodes, List<PodView> pods) {
    List<NodeView> sorted = nodes.stream().sorted(Comparator.comparing(NodeView::name)).toList();
    StringBuilder out = new StringBuilder();

    header(out, "gpushare_queue_length", "Pods waiting in the node's ready queue.");
    for (NodeView node : sorted) {
      sample(
          out, "gpushare_queue_length", Map.of("node", node.name()), listOf(node.queue()).size());
    }

    header(
        out,
        "gpushare_gpu_core_in_use_percent",
        "Sum of the core limits of the pods holding the GPU, in percent of the GPU.");
    gpuSamples(out, sorted, "gpushare_gpu_core_in_use_percent", GpuMetric.CORE);
    header(
        out,
        "gpushare_gpu_memory_in_use_percent",
        "Sum of the memory limits of the pods holding the GPU, in percent of the GPU.");
    gpuSamples(out, sorted, "gpushare_gpu_memory_in_use_percent", GpuMetric.MEMORY);
    header(out, "gpushare_gpu_healthy", "1 when the GPU is healthy, else 0.");
    gpuSamples(out, sorted, "gpushare_gpu_healthy", GpuMetric.HEALTHY);

    header(out, "gpushare_pods", "Pods that share a GPU, by node and state.");
    Map<String, Map<String, Integer>> counts = new TreeMap<>();
    for (NodeView node : sorted) {
      Map<String, Integer> byState = counts.computeIfAbsent(node.name(), n -> new TreeMap<>());
      for (PodState state : PodState.values()) {
        byState.put(state.display(), 0);
      }
    }
    for (PodView pod : pods) {
      if (pod.state() != null) {
        counts
            .computeIfAbsent(Objects.requireNonNullElse(pod.node(), ""), n -> new TreeMap<>())
            .merge(pod.state(), 1, Integer::sum);
      }
    }
    counts.forEach(
        (node, byState) ->
            byState.forEach(
                (state, count) ->
                    sample(out, "gpushare_pods", labels("node", node, "state", state), count)));

    // A Running pod's latest GPU telemetry (SPEC §7): absent until its member's first sample.
    List<PodView> used =
        pods.stream()
            .filter(p -> p.usage() != null && p.gpu() != null)
            .sorted(Comparator.comparing((PodView p) -> p.namespace() + "/" + p.name()))
            .toList();
    header(
        out,
        "gpushare_pod_gpu_memory_used_mib",
        "GPU memory used by a Running pod's processes, MiB (latest telemetry sample).");
    for (PodView p : used) {
      sample(
          out, "gpushare_pod_gpu_memory_used_mib", podLabels(p, null), p.usage().memoryUsedMiB());
    }
    header(
        out,
        "gpushare_pod_gpu_utilization_percent",
        "SM utilisation of a Running pod: kind=absolute of the whole GPU, kind=relative to the"
            + " pod's core limit (SPEC 7).");
    for (PodView p : used) {
      if (p.usage().absoluteUtilization() != null) {
        sample(
            out,
            "gpushare_pod_gpu_utilization_percent",
            podLabels(p, "absolute"),
            p.usage().absoluteUtilization());
      }
      if (p.usage().relativeUtilization() != null) {
        sample(
            out,
            "gpushare_pod_gpu_utilization_percent",
            podLabels(p, "relative"),
            p.usage().relativeUtilization());
      }
    }
    return out.toString();
  }

  private static Map<String, String> podLabels(PodView p, String kind) {
    Map<String, String> l =
        labels(
            "namespace",
            p.namespace(),
            "pod",
            p.name(),
            "node",
            Objects.requireNonNullElse(p.node(), ""),
            "gpu",
            Integer.toString(p.gpu().index()),
            "uuid",
            Objects.requireNonNullElse(p.gpu().uuid(), ""));
    if (kind != null) {
      l.put("kind", kind);
    }
    return l;
  }

  private enum GpuMetric {
    CORE,
    MEMORY,
    HEALTHY
  }

  private static void gpuSamples(
      StringBuilder out, List<NodeView> nodes, String name, GpuMetric metric) {
    for (NodeView node : nodes) {
      List<GpuView> gpus =
          listOf(node.gpus()).stream().sorted(Comparator.comparingInt(GpuView::index)).toList();
      for (GpuView gpu : gpus) {
        long value =
            switch (metric) {
              case CORE -> gpu.inUse() == null ? 0 : gpu.inUse().core();
              case MEMORY -> gpu.inUse() == null ? 0 : gpu.inUse().memory();
              case HEALTHY -> "Healthy".equals(gpu.health()) ? 1 : 0;
            };
        sample(
            out,
            name,
            labels(
                "node",
                node.name(),
                "gpu",
                Integer.toString(gpu.index()),
                "uuid",
                Objects.requireNonNullElse(gpu.uuid(), "")),
            value);
      }
    }
  }

  private static Map<String, String> labels(String... keyValues) {
    Map<String, String> labels = new LinkedHashMap<>();
    for (int i = 0; i < keyValues.length; i += 2) {
      labels.put(keyValues[i], keyValues[i + 1]);
    }
    return labels;
  }

  private static void header(StringBuilder out, String name, String help) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(" gauge\n");
  }

  private static void sample(
      StringBuilder out, String name, Map<String, String> labels, long value) {
    out.append(name).append('{');
    String sep = "";
    for (Map.Entry<String, String> l : labels.entrySet()) {
      out.append(sep).append(l.getKey()).append("=\"").append(escape(l.getValue())).append('"');
      sep = ",";
    }
    out.append("} ").append(value).append('\n');
  }

  private static String escape(String value) {
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  private static <T> List<T> listOf(List<T> list) {
    return list == null ? List.of() : list;
  }
}
