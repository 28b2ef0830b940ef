package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/** The sharing model of a node, from the node label {@code alibabacloud.com/gpu-share-policy}. */
public enum SharePolicy {
  SHARE_POOL("share-pool"),
  STATIC("static"),
  NONE("none");

  public static final String LABEL = "alibabacloud.com/gpu-share-policy";

  private final String label;

  SharePolicy(String label) {
    this.label = label;
  }

  /** The label value, as users write it. */
  @JsonValue
  public String label() {
    return label;
  }

  public boolean sharing() {
    return this != NONE;
  }

  /**
   * What a pod of this model holds on its GPU (SPEC §5, §6): share-pool reserves its limits (pods
   * on one GPU never compete beyond them), static reserves its requests. The one home of that rule:
   * the arbiter's book, the scheduler extender's fit and scores all ask here.
   */
  public <T> T held(T requests, T limits) {
    return this == STATIC ? requests : limits;
  }

  public static Optional<SharePolicy> fromLabel(String value) {
    return Arrays.stream(values()).filter(p -> p.label.equals(value)).findFirst();
  }

  /** {@code share-pool, static, none}: for error messages. */
  public static String accepted() {
    return Arrays.stream(values()).map(SharePolicy::label).collect(Collectors.joining(", "));
  }

  @Override
  public String toString() {
    return label;
  }
}
