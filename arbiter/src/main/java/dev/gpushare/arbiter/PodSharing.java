package dev.gpushare.arbiter;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.fasterxml.jackson.databind.util.StdConverter;

/**
 * How a valid pod uses GPUs (SPEC §3), as decided by {@link ShareRequestRules#validate}: it shares
 * one GPU ({@link Shared}), holds whole GPUs ({@link Exclusive}) or uses none ({@link Plain}). Each
 * kind carries only what it has; read it with a {@code switch} or {@code instanceof} pattern.
 *
 * <p>In events and cluster messages a pod's sharing keeps the one JSON object it has been written
 * as since 0.1, {@link Wire}: {@code {"kind":"SHARED","policy":…,"requests":…,"limits":…,
 * "exclusiveGpus":0,"container":…}}, with {@code null} (or 0) for what its kind does not have. A
 * shared pod that asks to be checkpointed adds a last field {@code "preemption":"checkpoint"}; the
 * default {@link PreemptionMode#SIGNAL} writes no such field, so every pod that does not ask keeps
 * the old text byte for byte, and a text without the field reads as {@code SIGNAL}. Journals
 * written before the sealed family read back as the same values (PodSharingJsonTest, and src-test
 * UpgradeTest over the journal recorded by 0.1).
 */
@JsonSerialize(converter = PodSharing.ToWire.class)
@JsonDeserialize(converter = PodSharing.FromWire.class)
public sealed interface PodSharing extends JsonSerializable
    permits PodSharing.Shared, PodSharing.Exclusive, PodSharing.Plain {

  /** The kinds, for counting and filtering pods by kind. */
  enum Kind {
    /** Asks for the two percentage resources: one share of one GPU. */
    SHARED,
    /** Asks for {@code nvidia.com/gpu}: whole GPUs, which rule sharing out on its node. */
    EXCLUSIVE,
    /** Asks for no GPU at all. */
    PLAIN
  }

  Kind kind();

  /**
   * A pod that shares one GPU.
   *
   * @param policy the pod's {@code gpu-share-policy} label
   * @param requests what decides how many pods fit a node
   * @param limits the ceiling of use, from the limit annotations when the admission webhook wrote
   *     them
   * @param container the name of the one container that shares a GPU
   * @param preemption what preemption or an idle release does to the pod's processes, from the
   *     annotation {@link PreemptionMode#ANNOTATION}; {@code null} means {@link
   *     PreemptionMode#SIGNAL}
   */
  record Shared(
      SharePolicy policy, Share requests, Share limits, String container, PreemptionMode preemption)
      implements PodSharing {
    public Shared {
      preemption = preemption == null ? PreemptionMode.SIGNAL : preemption;
      if (policy == null || requests == null || limits == null) {
        throw new IllegalArgumentException(
            "a shared pod needs a policy, requests and limits; got policy="
                + policy
                + ", requests="
                + requests
                + ", limits="
                + limits);
      }
    }

    /** A pod signalled at preemption ({@link PreemptionMode#SIGNAL}), as every pod before. */
    public Shared(SharePolicy policy, Share requests, Share limits, String container) {
      this(policy, requests, limits, container, PreemptionMode.SIGNAL);
    }

    @Override
    public Kind kind() {
      return Kind.SHARED;
    }

    /** What this pod holds on its GPU: {@link SharePolicy#held} of its model. */
    public Share held() {
      return policy.held(requests, limits);
    }
  }

  /**
   * A pod that holds whole GPUs.
   *
   * @param gpus the {@code nvidia.com/gpu} count over all containers, at least 1
   */
  record Exclusive(int gpus) implements PodSharing {
    public Exclusive {
      if (gpus < 1) {
        throw new IllegalArgumentException(
            "an exclusive pod holds at least 1 whole GPU; got " + gpus);
      }
    }

    @Override
    public Kind kind() {
      return Kind.EXCLUSIVE;
    }
  }

  /** A pod that uses no GPU. */
  record Plain() implements PodSharing {
    @Override
    public Kind kind() {
      return Kind.PLAIN;
    }
  }

  PodSharing PLAIN = new Plain();

  static Shared shared(SharePolicy policy, Share requests, Share limits, String container) {
    return new Shared(policy, requests, limits, container);
  }

  static Shared shared(
      SharePolicy policy,
      Share requests,
      Share limits,
      String container,
      PreemptionMode preemption) {
    return new Shared(policy, requests, limits, container, preemption);
  }

  static Exclusive exclusive(int gpus) {
    return new Exclusive(gpus);
  }

  /** The whole GPUs this pod holds: {@link Exclusive#gpus}, else 0. */
  static int wholeGpus(PodSharing pod) {
    return pod instanceof Exclusive e ? e.gpus() : 0;
  }

  /**
   * The JSON form of every kind, as written since 0.1 (field order and nulls included): what its
   * kind does not have is {@code null}, {@code exclusiveGpus} 0 unless {@code EXCLUSIVE}. {@code
   * preemption}, added after 0.1, is left out unless a shared pod asks for {@link
   * PreemptionMode#CHECKPOINT}: {@code null} (not written) means {@link PreemptionMode#SIGNAL}.
   */
  record Wire(
      Kind kind,
      SharePolicy policy,
      Share requests,
      Share limits,
      int exclusiveGpus,
      String container,
      @JsonInclude(JsonInclude.Include.NON_NULL) PreemptionMode preemption) {

    static Wire of(PodSharing pod) {
      if (pod instanceof Shared s) {
        return new Wire(
            Kind.SHARED,
            s.policy(),
            s.requests(),
            s.limits(),
            0,
            s.container(),
            s.preemption() == PreemptionMode.SIGNAL ? null : s.preemption());
      }
      if (pod instanceof Exclusive e) {
        return new Wire(Kind.EXCLUSIVE, null, null, null, e.gpus(), null, null);
      }
      return new Wire(Kind.PLAIN, null, null, null, 0, null, null);
    }

    PodSharing value() {
      if (kind == null) {
        throw new IllegalArgumentException(
            "a pod's sharing needs \"kind\": one of SHARED, EXCLUSIVE, PLAIN");
      }
      return switch (kind) {
        case SHARED -> new Shared(policy, requests, limits, container, preemption);
        case EXCLUSIVE -> new Exclusive(exclusiveGpus);
        case PLAIN -> PLAIN;
      };
    }
  }

  /** Writes a pod's sharing as its {@link Wire} form. */
  final class ToWire extends StdConverter<PodSharing, Wire> {
    @Override
    public Wire convert(PodSharing value) {
      return Wire.of(value);
    }
  }

  /** Reads a pod's sharing from its {@link Wire} form. */
  final class FromWire extends StdConverter<Wire, PodSharing> {
    @Override
    public PodSharing convert(Wire value) {
      return value.value();
    }
  }
}
