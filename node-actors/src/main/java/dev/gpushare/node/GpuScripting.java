package dev.gpushare.node;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.gpu.GpuProcess;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.NodeView;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Scripting a simulated GPU: the compute processes (each of a pod, by UID) that the next telemetry
 * samples report, the stand-in for a workload using its GPU. Only on the member that samples the
 * node ({@link LocalGpus}) and only for simulated GPUs (CONFLICT otherwise); each process is
 * checked field by field.
 */
final class GpuScripting {
  private final ServiceAsks asks;
  private final NodeReads reads;
  private final LocalGpus local;

  GpuScripting(ServiceAsks asks, NodeReads reads, LocalGpus local) {
    this.asks = asks;
    this.reads = reads;
    this.local = local;
  }

  CompletionStage<NodeView> scriptGpu(String node, int index, List<GpuProcess> processes) {
    return reads
        .knownNode(node)
        .thenCompose(d -> asks.nodeRecord(node))
        .thenCompose(
            record -> {
              if (!local.samples(node)) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "node",
                        node,
                        "the GPUs of node "
                            + node
                            + " are sampled by the member that runs on it; script them there"));
              }
              if (local.real(node).isPresent()) {
                throw ServiceException.of(
                    Kind.CONFLICT,
                    new FieldError(
                        "node",
                        node,
                        "node "
                            + node
                            + " has real GPUs ("
                            + local.real(node).get().name()
                            + "): there is nothing to script"));
              }
              if (index < 0 || index >= record.gpus().size()) {
                throw NodeReads.noSuchGpu(node, index, record.gpus().size());
              }
              List<FieldError> errors = checked(processes);
              if (!errors.isEmpty()) {
                throw ServiceException.invalid(errors);
              }
              local.scriptable(node, record.gpus()).script(index, processes);
              return reads.nodeView(node);
            });
  }

  /** What is wrong with each process, field by field. */
  private static List<FieldError> checked(List<GpuProcess> processes) {
    List<FieldError> errors = new ArrayList<>();
    for (int i = 0; i < processes.size(); i++) {
      GpuProcess p = processes.get(i);
      String at = "processes[" + i + "]";
      if (p.pid() <= 0) {
        errors.add(new FieldError(at + ".pid", Long.toString(p.pid()), at + ".pid must be > 0"));
      }
      if (p.podUid() == null || p.podUid().isBlank()) {
        errors.add(
            new FieldError(
                at + ".podUid",
                String.valueOf(p.podUid()),
                at + ".podUid is required: the UID of the pod the process belongs to"));
      }
      if (p.usedMemoryMiB() < 0) {
        errors.add(
            new FieldError(
                at + ".usedMemoryMiB",
                Long.toString(p.usedMemoryMiB()),
                at + ".usedMemoryMiB must be >= 0"));
      }
      if (p.smUtilizationPercent().isPresent()
          && (p.smUtilizationPercent().getAsInt() < 0
              || p.smUtilizationPercent().getAsInt() > 100)) {
        errors.add(
            new FieldError(
                at + ".smUtilizationPercent",
                Integer.toString(p.smUtilizationPercent().getAsInt()),
                at + ".smUtilizationPercent must be 0..100 (or absent: not reported)"));
      }
    }
    return errors;
  }
}
