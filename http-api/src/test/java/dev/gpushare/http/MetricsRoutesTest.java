package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        """,
        text);
  }

  @Test
  void labelValuesAreEscaped() {
    String text =
        MetricsRoutes.render(
            List.of(), List.of(FakeGpuShareService.pod("default", "a", "we\"ird\\", "Ready")));
    assertTrue(text.contains("gpushare_pods{node=\"we\\\"ird\\\\\",state=\"Ready\"} 1\n"), text);
  }
}
