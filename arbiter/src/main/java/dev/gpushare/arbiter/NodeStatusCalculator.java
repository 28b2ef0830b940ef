package dev.gpushare.arbiter;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The node status Kubernetes should show for a node's sharing config (SPEC §2, reproducing {@code
 * deploy/examples/node-status-reference.yaml}): a pure {@code desired…()} builder, separate from
 * whoever writes it.
 *
 * <p>While share-pool or static is active, capacity and allocatable gain both percentage resources
 * ({@code 100 × healthy GPUs}); allocatable CPU and memory lose what the sharing module reserves
 * per GPU (floored at 0); under share-pool, allocatable ephemeral storage is at most capacity minus
 * the QoS config's {@code reservedEphemeralStorage}. While sharing is off, the node's own values
 * stand. The two conditions {@code GPUSharePolicyValid} and {@code GPUSharePolicy} follow.
 */
public final class NodeStatusCalculator {
  private NodeStatusCalculator() {}

  public static final String CONDITION_VALID = "GPUSharePolicyValid";
  public static final String CONDITION_POLICY = "GPUSharePolicy";

  public static final String CPU = "cpu";
  public static final String MEMORY = "memory";
  public static final String EPHEMERAL_STORAGE = "ephemeral-storage";

  /** Kubernetes' own limit on devices per node is far above this; real GPU-HPN nodes have 16. */
  public static final int MAX_GPUS = 64;

  /**
   * The status to show.
   *
   * @param node a manifest that passed {@link #validateManifest}; its capacity and allocatable are
   *     the node's own (any percentage resources in them are ignored)
   * @param healthyGpus how many of the node's GPUs can take shares now
   * @param previous the conditions shown so far (others than ours are ignored), to keep their
   *     transition times
   * @throws IllegalArgumentException when the manifest holds a value that is not a quantity
   */
  public static NodeStatus desired(
      NodeManifest node,
      int healthyGpus,
      NodeSharing.SharingConfig config,
      ReservedPerGpu reserved,
      List<NodeCondition> previous,
      Instant now) {
    if (healthyGpus < 0) {
      throw new IllegalArgumentException(
          "healthyGpus is " + healthyGpus + "; want a count of at least 0");
    }
    Map<String, String> capacity = own(node.capacity());
    Map<String, String> allocatable = new TreeMap<>(capacity);
    allocatable.putAll(own(node.allocatable()));

    SharePolicy active = config.active();
    if (active.sharing()) {
      String percent = String.valueOf(NodeAdmission.allocatable(healthyGpus).core());
      for (Map<String, String> resources : List.of(capacity, allocatable)) {
        resources.put(ShareRequestRules.CORE, percent);
        resources.put(ShareRequestRules.MEMORY, percent);
      }
      long gpus = gpuCount(capacity);
      withhold(allocatable, CPU, Quantity.parse(reserved.cpu()).times(gpus));
      withhold(allocatable, MEMORY, Quantity.parse(reserved.memory()).times(gpus));
      String storage = capacity.get(EPHEMERAL_STORAGE);
      if (active == SharePolicy.SHARE_POOL && storage != null) {
        Quantity ceiling =
            floor(
                Quantity.parse(storage)
                    .minus(Quantity.parse(config.activeQos().reservedEphemeralStorage())));
        Quantity own = Quantity.parse(allocatable.get(EPHEMERAL_STORAGE));
        allocatable.put(EPHEMERAL_STORAGE, own.min(ceiling).format());
      }
    }
    return new NodeStatus(capacity, allocatable, conditions(config, previous, now));
  }

  /**
   * What is wrong with a node manifest, every field at once: the name must be a DNS-1123 subdomain;
   * capacity must hold {@code nvidia.com/gpu} as an integer from 0 to {@value #MAX_GPUS}; every
   * capacity and allocatable value must be a quantity, and no allocatable value may exceed its
   * capacity.
   */
  public static List<FieldError> validateManifest(NodeManifest node) {
    List<FieldError> errors = new ArrayList<>();
    if (!KubernetesNames.isDns1123Subdomain(node.name())) {
      errors.add(
          FieldErrors.of("metadata.name", node.name(), KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED));
    }
    Map<String, String> capacity =
        node.capacity() == null ? Map.of() : new TreeMap<>(node.capacity());
    Map<String, Quantity> capacities = new TreeMap<>();
    String gpus = capacity.get(ShareRequestRules.EXCLUSIVE_GPU);
    if (!isGpuCount(gpus)) {
      errors.add(
          FieldErrors.of(
              "status.capacity[" + ShareRequestRules.EXCLUSIVE_GPU + "]",
              gpus,
              "the node's GPU count, an integer from 0 to " + MAX_GPUS));
    }
    capacity.forEach(
        (resource, text) -> {
          if (resource.equals(ShareRequestRules.EXCLUSIVE_GPU)) {
            if (isGpuCount(text)) {
              capacities.put(resource, Quantity.parse(text));
            }
            return;
          }
          Quantity q = quantity("status.capacity[" + resource + "]", text, errors);
          if (q != null) {
            capacities.put(resource, q);
          }
        });
    Map<String, String> allocatable =
        node.allocatable() == null ? Map.of() : new TreeMap<>(node.allocatable());
    allocatable.forEach(
        (resource, text) -> {
          String field = "status.allocatable[" + resource + "]";
          Quantity q = quantity(field, text, errors);
          Quantity ceiling = capacities.get(resource);
          if (q == null || ceiling == null && capacity.containsKey(resource)) {
            return;
          }
          if (ceiling == null) {
            errors.add(
                FieldErrors.of(
                    field,
                    text,
                    "no allocatable value for "
                        + resource
                        + ", or a capacity for it: allocatable is part of capacity"));
          } else if (q.compareTo(ceiling) > 0) {
            errors.add(
                FieldErrors.of(
                    field,
                    text,
                    "at most the capacity status.capacity["
                        + resource
                        + "], "
                        + capacity.get(resource)));
          }
        });
    return errors;
  }

  private static boolean isGpuCount(String text) {
    try {
      BigDecimal count = Quantity.parse(text).value();
      return count.stripTrailingZeros().scale() <= 0
          && count.compareTo(BigDecimal.valueOf(MAX_GPUS)) <= 0;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static Quantity quantity(String field, String text, List<FieldError> errors) {
    try {
      return Quantity.parse(text);
    } catch (IllegalArgumentException e) {
      errors.add(FieldErrors.of(field, text, Quantity.ACCEPTED));
      return null;
    }
  }

  private static List<NodeCondition> conditions(
      NodeSharing.SharingConfig config, List<NodeCondition> previous, Instant now) {
    SharePolicy active = config.active();
    return List.of(
        condition(
            CONDITION_VALID,
            config.valid() ? "True" : "False",
            config.validReason(),
            config.validMessage(),
            previous,
            now),
        condition(
            CONDITION_POLICY,
            active.sharing() ? "True" : "False",
            active.label(),
            "gpu share policy is " + active.label() + ".",
            previous,
            now));
  }

  /** The transition time moves only when status or reason changes (SPEC §2). */
  private static NodeCondition condition(
      String type,
      String status,
      String reason,
      String message,
      List<NodeCondition> previous,
      Instant now) {
    Instant transition =
        previous.stream()
            .filter(c -> type.equals(c.type()))
            .filter(c -> status.equals(c.status()) && Objects.equals(reason, c.reason()))
            .map(NodeCondition::lastTransitionTime)
            .filter(Objects::nonNull)
            .findFirst()
            .orElse(now);
    return new NodeCondition(type, status, reason, message, now, transition);
  }

  /** The node's own resources, without any percentage resources a status write left there. */
  private static Map<String, String> own(Map<String, String> resources) {
    Map<String, String> own = resources == null ? new TreeMap<>() : new TreeMap<>(resources);
    own.remove(ShareRequestRules.CORE);
    own.remove(ShareRequestRules.MEMORY);
    return own;
  }

  private static long gpuCount(Map<String, String> capacity) {
    String gpus = capacity.get(ShareRequestRules.EXCLUSIVE_GPU);
    return gpus == null ? 0 : Quantity.parse(gpus).value().longValue();
  }

  private static void withhold(Map<String, String> allocatable, String resource, Quantity amount) {
    String own = allocatable.get(resource);
    if (own != null) {
      allocatable.put(resource, floor(Quantity.parse(own).minus(amount)).format());
    }
  }

  private static Quantity floor(Quantity q) {
    return q.isNegative() ? Quantity.ZERO : q;
  }
}
