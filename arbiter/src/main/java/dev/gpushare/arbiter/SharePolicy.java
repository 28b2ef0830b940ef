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
