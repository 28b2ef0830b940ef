package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;
import static dev.gpushare.node.ServiceAsks.done;

import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeStatusCalculator;
import dev.gpushare.arbiter.Quantity;
import dev.gpushare.arbiter.ShareBook;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.gpu.GpuActor;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.NodeView;
import dev.gpushare.node.api.Views.PutNodeResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * A node's registration and what changes it: the manifest put (its GPUs derived from the capacity
 * and the {@code nvidia.com/gpu.*} labels), labels and annotations patched, a GPU's health. Each
 * change is written by the node's {@link NodeActor} first; then its GPUs are described to their
 * actors and its arbiter is told the GPUs and the config in force ({@link #syncArbiter}), and the
 * change is published. Removing GPUs that hold shares is refused.
 */
final class NodeRegistration {
  private final WriteGate gate;
  private final ServiceAsks asks;
  private final Entities entities;
  private final Duration timeout;
  private final NodeReads reads;
  private final ChangeFanOut fanOut;

  NodeRegistration(
      WriteGate gate,
      ServiceAsks asks,
      Entities entities,
      Duration timeout,
      NodeReads reads,
      ChangeFanOut fanOut) {
    this.gate = gate;
    this.asks = asks;
    this.entities = entities;
    this.timeout = timeout;
    this.reads = reads;
    this.fanOut = fanOut;
  }

  CompletionStage<PutNodeResult> putNode(NodeManifest manifest) {
    return gate.writing(() -> put(manifest));
  }

  private CompletionStage<PutNodeResult> put(NodeManifest manifest) {
    List<FieldError> errors = NodeStatusCalculator.validateManifest(manifest);
    if (!errors.isEmpty()) {
      return CompletableFuture.failedFuture(ServiceException.invalid(errors));
    }
    String name = manifest.name();
    Map<String, String> labels = manifest.labels() == null ? Map.of() : manifest.labels();
    String model = labels.getOrDefault("nvidia.com/gpu.product", RuntimeSettings.DEFAULT_GPU_MODEL);
    long memory = RuntimeSettings.DEFAULT_GPU_MEMORY_MIB;
    String memoryLabel = labels.get("nvidia.com/gpu.memory");
    if (memoryLabel != null) {
      try {
        memory = Long.parseLong(memoryLabel);
      } catch (NumberFormatException e) {
        return CompletableFuture.failedFuture(
            ServiceException.invalid(
                List.of(
                    new FieldError(
                        "metadata.labels[nvidia.com/gpu.memory]",
                        memoryLabel,
                        "metadata.labels[nvidia.com/gpu.memory] is \""
                            + memoryLabel
                            + "\"; want the GPU memory in MiB, a whole number"))));
      }
    }
    long memoryMiB = memory;
    return asks.nodeRecord(name)
        .thenCompose(
            before -> {
              int gpus = gpuCount(manifest);
              return shrinkConflict(name, before, gpus)
                  .thenCompose(d -> register(manifest, model, memoryMiB))
                  .thenCompose(d -> reads.nodeView(name))
                  .thenApply(view -> new PutNodeResult(!before.registered(), view));
            });
  }

  /** Removing GPUs that hold shares would strand pods: refuse. */
  private CompletionStage<Done> shrinkConflict(String name, NodeActor.Record before, int gpus) {
    if (!before.registered() || gpus >= before.gpus().size()) {
      return done();
    }
    return asks.book(name)
        .thenApply(
            view -> {
              for (var e : view.book().holdings().entrySet()) {
                if (e.getValue().gpu() >= gpus) {
                  throw new ServiceException(
                      Kind.CONFLICT,
                      "status.capacity[nvidia.com/gpu] is \""
                          + gpus
                          + "\" but GPU "
                          + e.getValue().gpu()
                          + " of node "
                          + name
                          + " is held by "
                          + view.book().members().get(e.getKey()).key().ref()
                          + "; free it first or keep at least "
                          + (e.getValue().gpu() + 1)
                          + " GPUs",
                      List.of(
                          new FieldError(
                              "status.capacity[nvidia.com/gpu]",
                              Integer.toString(gpus),
                              "GPU " + e.getValue().gpu() + " is in use")));
                }
              }
              return Done.getInstance();
            });
  }

  /** Registers the node (listed in the directory first) with GPUs of {@code model}. */
  CompletionStage<NodeActor.Record> register(NodeManifest manifest, String model, long memoryMiB) {
    String name = manifest.name();
    List<GpuDevice> devices = GpuBackends.fromCapacity(name, gpuCount(manifest), model, memoryMiB);
    return entities
        .directory()
        .<Done>ask(r -> new NodeDirectory.Add(name, r), timeout)
        .thenCompose(
            d ->
                entities
                    .node(name)
                    .<NodeActor.Record>ask(
                        r -> new NodeActor.Register(manifest, devices, r), timeout))
        .thenCompose(record -> syncArbiter(name, record).thenApply(d -> record))
        .whenComplete((r, e) -> fanOut.nodeChanged(name));
  }

  /** GPUs described to their actors, the arbiter told the GPUs and the config in force. */
  CompletionStage<Done> syncArbiter(String node, NodeActor.Record record) {
    if (!record.registered()) {
      return done();
    }
    List<CompletionStage<Done>> describes = new ArrayList<>();
    List<ShareBook.GpuSlot> slots = new ArrayList<>();
    for (GpuDevice d : record.gpus()) {
      describes.add(entities.gpu(node, d.uuid()).ask(r -> new GpuActor.Describe(d, r), timeout));
      slots.add(new ShareBook.GpuSlot(d.index(), d.uuid(), record.healthy(d.uuid())));
    }
    return all(describes)
        .thenCompose(d -> asks.decide(node, r -> new NodeArbiter.SetGpus(slots, r)))
        .thenCompose(
            o ->
                asks.decide(
                    node,
                    r ->
                        new NodeArbiter.ApplyPolicy(
                            record.config().active(), record.config().activeQos(), r)))
        .thenApply(o -> Done.getInstance());
  }

  CompletionStage<NodeView> patchNode(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return gate.writing(() -> patch(name, labels, annotations));
  }

  private CompletionStage<NodeView> patch(
      String name, Map<String, String> labels, Map<String, String> annotations) {
    return reads
        .knownNode(name)
        .thenCompose(
            d ->
                entities
                    .node(name)
                    .<NodeActor.Record>ask(
                        r -> new NodeActor.Patch(labels, annotations, r), timeout))
        .thenCompose(record -> syncArbiter(name, record))
        .whenComplete((r, e) -> fanOut.nodeChanged(name))
        .thenCompose(d -> reads.nodeView(name));
  }

  /** A GPU's health, set through the API (simulated GPUs) or from the driver (real ones). */
  CompletionStage<NodeView> setGpuHealth(String node, int index, boolean healthy) {
    return gate.writing(() -> gpuHealth(node, index, healthy));
  }

  private CompletionStage<NodeView> gpuHealth(String node, int index, boolean healthy) {
    return reads
        .knownNode(node)
        .thenCompose(d -> asks.nodeRecord(node))
        .thenCompose(
            before -> {
              GpuDevice device =
                  before.gpus().stream()
                      .filter(g -> g.index() == index)
                      .findFirst()
                      .orElseThrow(() -> NodeReads.noSuchGpu(node, index, before.gpus().size()));
              return entities
                  .gpu(node, device.uuid())
                  .<Done>ask(r -> new GpuActor.SetHealth(healthy, r), timeout)
                  .thenCompose(
                      d ->
                          entities
                              .node(node)
                              .<NodeActor.Record>ask(
                                  r -> new NodeActor.SetGpuHealth(device.uuid(), healthy, r),
                                  timeout));
            })
        .thenCompose(record -> syncArbiter(node, record))
        .whenComplete((r, e) -> fanOut.nodeChanged(node))
        .thenCompose(d -> reads.nodeView(node));
  }

  private static int gpuCount(NodeManifest manifest) {
    // validateManifest checked it: a whole quantity from 0 to MAX_GPUS ("2", "2.0", "+2", "2e0")
    return Quantity.parse(manifest.capacity().get("nvidia.com/gpu")).value().intValueExact();
  }
}
