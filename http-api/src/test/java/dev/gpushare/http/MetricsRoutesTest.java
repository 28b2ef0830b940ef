package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.node.api.Views.GpuRef;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.api.Views.UsageView;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MetricsRoutesTest {

  @Test
  void exposesQueueGpuAndPodGaugesInStableOrder() {
    String text =
        MetricsRoutes.render(
            List.of(FakeGpuShareService.node("node-1", Map.of(), Map.of())),
            List.of(
                FakeGpuShareService.pod("default", "a", "node-1", "Running"),
                FakeGpuShareService.pod("default", "b", "node-1", "Ready"),
                FakeGpuShareService.pod("default", "c", "node-1", "Ready")));
    assertEquals(
        """
        # HELP gpushare_queue_length Pods waiting in the node's ready queue.
        # TYPE gpushare_queue_length gauge
        gpushare_queue_length{node="node-1"} 1
        # HELP gpushare_gpu_core_in_use_percent Sum of the core limits of the pods holding the GPU, in percent of the GPU.
        # TYPE gpushare_gpu_core_in_use_percent gauge
        gpushare_gpu_core_in_use_percent{node="node-1",gpu="0",uuid="GPU-0"} 50
        gpushare_gpu_core_in_use_percent{node="node-1",gpu="1",uuid="GPU-1"} 0
        # HELP gpushare_gpu_memory_in_use_percent Sum of the memory limits of the pods holding the GPU, in percent of the GPU.
        # TYPE gpushare_gpu_memory_in_use_percent gauge
        gpushare_gpu_memory_in_use_percent{node="node-1",gpu="0",uuid="GPU-0"} 50
        gpushare_gpu_memory_in_use_percent{node="node-1",gpu="1",uuid="GPU-1"} 0
        # HELP gpushare_gpu_healthy 1 when the GPU is healthy, else 0.
        # TYPE gpushare_gpu_healthy gauge
        gpushare_gpu_healthy{node="node-1",gpu="0",uuid="GPU-0"} 1
        gpushare_gpu_healthy{node="node-1",gpu="1",uuid="GPU-1"} 0
        # HELP gpushare_pods Pods that share a GPU, by node and state.
        # TYPE gpushare_pods gauge
        gpushare_pods{node="node-1",state="Hibernation"} 0
        gpushare_pods{node="node-1",state="Pending"} 0
        gpushare_pods{node="node-1",state="Ready"} 2
        gpushare_pods{node="node-1",state="Running"} 1
        # HELP gpushare_pod_gpu_memory_used_mib GPU memory used by a Running pod's processes, MiB (latest telemetry sample).
        # TYPE gpushare_pod_gpu_memory_used_mib gauge
        # HELP gpushare_pod_gpu_utilization_percent SM utilisation of a Running pod: kind=absolute of the whole GPU, kind=relative to the pod's core limit (SPEC 7).
        # TYPE gpushare_pod_gpu_utilization_percent gauge
        """,
        text);
  }

  @Test
  void aRunningPodsTelemetryIsExposedAbsoluteAndRelativeToItsLimit() {
    PodView running = FakeGpuShareService.pod("default", "a", "node-1", "Running");
    PodView used =
        new PodView(
            running.namespace(),
            running.name(),
            running.uid(),
            running.node(),
            running.policy(),
            running.state(),
            running.requests(),
            running.limits(),
            running.gpu(),
            null,
            null,
            12L,
            List.of(),
            List.of(),
            new UsageView(2048, 81559, 30, 30, 1),
            null);
    PodView unreported =
        new PodView(
            "default",
            "b",
            "uid-b",
            "node-1",
            "share-pool",
            "Running",
            null,
            null,
            new GpuRef(0, "GPU-0"),
            null,
            null,
            1L,
            List.of(),
            List.of(),
            new UsageView(0, 40779, null, null, -1),
            null);
    String text = MetricsRoutes.render(List.of(), List.of(unreported, used));
    assertTrue(
        text.contains(
            "gpushare_pod_gpu_memory_used_mib{namespace=\"default\",pod=\"a\",node=\"node-1\","
                + "gpu=\"1\",uuid=\"GPU-1\"} 2048\n"
                + "gpushare_pod_gpu_memory_used_mib{namespace=\"default\",pod=\"b\","),
        text);
    assertTrue(
        text.contains(
            "gpushare_pod_gpu_utilization_percent{namespace=\"default\",pod=\"a\",node=\"node-1\","
                + "gpu=\"1\",uuid=\"GPU-1\",kind=\"absolute\"} 30\n"
                + "gpushare_pod_gpu_utilization_percent{namespace=\"default\",pod=\"a\","
                + "node=\"node-1\",gpu=\"1\",uuid=\"GPU-1\",kind=\"relative\"} 30\n"),
        text);
    assertTrue(!text.contains("pod=\"b\",node=\"node-1\",gpu=\"0\",uuid=\"GPU-0\",kind"), text);
  }

  @Test
  void labelValuesAreEscaped() {
    String text =
        MetricsRoutes.render(
            List.of(), List.of(FakeGpuShareService.pod("default", "a", "we\"ird\\", "Ready")));
    assertTrue(text.contains("gpushare_pods{node=\"we\\\"ird\\\\\",state=\"Ready\"} 1\n"), text);
  }
}
