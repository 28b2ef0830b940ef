package dev.gpushare.arbiter;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which sharing policy and QoS config are in force on a node (SPEC §2), resolved from the node's
 * label and annotation and the pods bound to it. Pure: the caller supplies the previous result and
 * keeps the new one.
 *
 * <p>What is wanted does not always take effect at once: an invalid label or QoS config keeps the
 * last valid one; exclusive-GPU pods keep sharing off; shared pods keep the old policy until they
 * are gone. Each of these is explained by the {@code GPUSharePolicyValid} reason, and when several
 * apply the first of InvalidPolicy, InvalidQoSConfig, ExclusiveGPUPodsPresent, PolicyChangePending
 * is reported.
 */
public final class NodeSharing {
  private NodeSharing() {}

  public static final String VALID = "Valid";
  public static final String INVALID_POLICY = "InvalidPolicy";
  public static final String INVALID_QOS_CONFIG = "InvalidQoSConfig";
  public static final String EXCLUSIVE_GPU_PODS_PRESENT = "ExclusiveGPUPodsPresent";
  public static final String POLICY_CHANGE_PENDING = "PolicyChangePending";
  public static final String VALID_MESSAGE = "gpu share policy config is valid.";

  public static final String POLICY_FIELD = "metadata.labels[" + SharePolicy.LABEL + "]";

  /**
   * The sharing config in force on a node.
   *
   * @param active the policy in force
   * @param activeQos the last valid QoS config; it matters only while share-pool is active
   * @param desired the last valid policy the label asked for
   * @param validReason {@code Valid}, or why the config is not (fully) in force
   * @param validMessage what a user reads in the {@code GPUSharePolicyValid} condition
   */
  public record SharingConfig(
      SharePolicy active,
      QosConfig activeQos,
      SharePolicy desired,
      String validReason,
      String validMessage)
      implements JsonSerializable {

    /** A node before any label was seen: sharing off, valid. */
    public static final SharingConfig INITIAL =
        new SharingConfig(
            SharePolicy.NONE, QosConfig.DEFAULT, SharePolicy.NONE, VALID, VALID_MESSAGE);

    public boolean valid() {
      return VALID.equals(validReason);
    }
  }

  /**
   * A resolved config and the input errors behind it: the bad label, or every bad field of the QoS
   * config, for the Event that tells the user; empty unless the reason is InvalidPolicy or
   * InvalidQoSConfig.
   */
  public record Resolution(SharingConfig config, List<FieldError> configErrors) {
    public Resolution {
      configErrors = List.copyOf(configErrors);
    }
  }

  /**
   * The config in force after the node's labels and annotations changed, or pods came or went.
   *
   * @param sharedPodsBound pods ({@code ns/name}) bound to the node that use shared GPU resources
   * @param exclusivePodsBound pods ({@code ns/name}) bound to the node that hold {@code
   *     nvidia.com/gpu}
   */
  public static SharingConfig resolve(
      SharingConfig previous,
      Map<String, String> labels,
      Map<String, String> annotations,
      List<String> sharedPodsBound,
      List<String> exclusivePodsBound) {
    return resolveWithErrors(previous, labels, annotations, sharedPodsBound, exclusivePodsBound)
        .config();
  }

  /**
   * {@link #resolve}, with the input errors behind an invalid label or QoS config, for a node whose
   * capacity is not known (nothing is checked against it).
   */
  public static Resolution resolveWithErrors(
      SharingConfig previous,
      Map<String, String> labels,
      Map<String, String> annotations,
      List<String> sharedPodsBound,
      List<String> exclusivePodsBound) {
    return resolveWithErrors(
        previous, labels, annotations, Map.of(), sharedPodsBound, exclusivePodsBound);
  }

  /**
   * {@link #resolve}, with the input errors behind an invalid label or QoS config; {@code capacity}
   * is the node's own {@code status.capacity}: a QoS config that reserves more ephemeral storage
   * than the node has is invalid (InvalidQoSConfig), like any other out-of-range value.
   */
  public static Resolution resolveWithErrors(
      SharingConfig previous,
      Map<String, String> labels,
      Map<String, String> annotations,
      Map<String, String> capacity,
      List<String> sharedPodsBound,
      List<String> exclusivePodsBound) {
    String label = labels == null ? null : labels.get(SharePolicy.LABEL);
    Optional<SharePolicy> wanted =
        label == null ? Optional.of(SharePolicy.NONE) : SharePolicy.fromLabel(label);
    if (wanted.isEmpty()) {
      FieldError error =
          FieldErrors.of(
              POLICY_FIELD, label, "one of " + SharePolicy.accepted() + " (absent means none)");
      String message = error.message() + "; " + previous.active() + " stays active.";
      return new Resolution(
          new SharingConfig(
              previous.active(), previous.activeQos(), previous.desired(), INVALID_POLICY, message),
          List.of(error));
    }
    SharePolicy desired = wanted.get();

    String qosText = annotations == null ? null : annotations.get(QosConfig.ANNOTATION);
    Parsed<QosConfig> qos =
        withinCapacity(
            qosText == null ? Parsed.ok(QosConfig.DEFAULT) : QosConfig.parse(qosText), capacity);
    QosConfig activeQos = qos.ok() ? qos.value() : previous.activeQos();

    SharePolicy active;
    String reason;
    String message;
    if (desired.sharing() && !exclusivePodsBound.isEmpty()) {
      active = SharePolicy.NONE;
      reason = EXCLUSIVE_GPU_PODS_PRESENT;
      message =
          "gpu share policy "
              + desired
              + " cannot take effect while pods hold exclusive GPUs ("
              + ShareRequestRules.EXCLUSIVE_GPU
              + "): "
              + sorted(exclusivePodsBound)
              + "; sharing stays off until they are gone.";
    } else if (desired != previous.active() && !sharedPodsBound.isEmpty()) {
      active = previous.active();
      reason = POLICY_CHANGE_PENDING;
      message =
          "gpu share policy "
              + desired
              + " is wanted, but "
              + previous.active()
              + " stays active until the shared pods bound to the node are gone: "
              + sorted(sharedPodsBound)
              + ".";
    } else {
      active = desired;
      reason = VALID;
      message = VALID_MESSAGE;
    }

    boolean qosMatters = desired == SharePolicy.SHARE_POOL || active == SharePolicy.SHARE_POOL;
    if (!qos.ok() && qosMatters) {
      return new Resolution(
          new SharingConfig(active, activeQos, desired, INVALID_QOS_CONFIG, qos.errorSummary()),
          qos.errors());
    }
    return new Resolution(
        new SharingConfig(active, activeQos, desired, reason, message), List.of());
  }

  /**
   * The QoS config, or why it cannot hold on this node: {@code reservedEphemeralStorage} is at most
   * the node's {@code status.capacity[ephemeral-storage]} (a node without that capacity reserves
   * from nothing, so nothing is checked).
   */
  private static Parsed<QosConfig> withinCapacity(
      Parsed<QosConfig> qos, Map<String, String> capacity) {
    String storage = capacity == null ? null : capacity.get(NodeStatusCalculator.EPHEMERAL_STORAGE);
    if (!qos.ok() || storage == null) {
      return qos;
    }
    String reserved = qos.value().reservedEphemeralStorage();
    Quantity ceiling;
    try {
      ceiling = Quantity.parse(storage);
    } catch (IllegalArgumentException e) {
      return qos; // the manifest's own check reports a capacity that is not a quantity
    }
    if (Quantity.parse(reserved).compareTo(ceiling) <= 0) {
      return qos;
    }
    String field = QosConfig.FIELD + ".reservedEphemeralStorage";
    return Parsed.failed(
        List.of(
            FieldErrors.of(
                field,
                reserved,
                "at most the node's ephemeral-storage capacity, status.capacity["
                    + NodeStatusCalculator.EPHEMERAL_STORAGE
                    + "] = "
                    + storage
                    + ": the sharing module cannot withhold more than the node has")));
  }

  private static String sorted(List<String> pods) {
    return String.join(", ", pods.stream().sorted().toList());
  }
}
