package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.NodeCondition;
import dev.gpushare.arbiter.NodeManifest;
import dev.gpushare.arbiter.NodeSharing.SharingConfig;
import dev.gpushare.arbiter.NodeStatus;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.arbiter.PodNotes.EventNote;
import dev.gpushare.arbiter.PodSharing;
import dev.gpushare.arbiter.QosConfig;
import dev.gpushare.arbiter.Refusal;
import dev.gpushare.arbiter.ReservedPerGpu;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.GpuDevice;
import dev.gpushare.node.NodeActor.Bind;
import dev.gpushare.node.NodeActor.BindReply;
import dev.gpushare.node.NodeActor.Command;
import dev.gpushare.node.NodeActor.ConfigResolved;
import dev.gpushare.node.NodeActor.Event;
import dev.gpushare.node.NodeActor.GetRecord;
import dev.gpushare.node.NodeActor.NodeEventRecorded;
import dev.gpushare.node.NodeActor.Patch;
import dev.gpushare.node.NodeActor.Patched;
import dev.gpushare.node.NodeActor.PodBound;
import dev.gpushare.node.NodeActor.PodUnbound;
import dev.gpushare.node.NodeActor.Record;
import dev.gpushare.node.NodeActor.Register;
import dev.gpushare.node.NodeActor.Registered;
import dev.gpushare.node.NodeActor.Unbind;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One node's sharing config, conditions, Events and pod admission (SPEC §2, §3). */
class NodeActorTest {
  static final String NODE = "gpu-node-1";
  static final String POLICY = "alibabacloud.com/gpu-share-policy";
  static final String QOS = "alibabacloud.com/gpu-share-qos-config";
  static final String POLICY_FIELD = "metadata.labels[alibabacloud.com/gpu-share-policy]";
  static final String REFERENCE_QOS =
      "{\"preemptEnabled\": true, \"podMaxDurationMinutes\": 120,"
          + " \"reservedEphemeralStorage\": \"1.5Ti\"}";
  static final String VALID_MESSAGE = "gpu share policy config is valid.";

  static final Config CONFIG =
      ConfigFactory.parseString(
              "pekko.loglevel = WARNING\n"
                  + "pekko.actor.serialization-bindings {\n"
                  + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                  + "}\n")
          .withFallback(EventSourcedBehaviorTestKit.config());

  static ActorTestKit testKit;
  static final ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
  static EventSourcedBehaviorTestKit<Command, Event, Record> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("node-actor-test", CONFIG);
    kit =
        EventSourcedBehaviorTestKit.create(
            testKit.system(), NodeActor.create(NODE, ReservedPerGpu.DEFAULT, clock));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void freshNode() {
    kit.clear();
  }

  // ---- registration and the config in force ----

  @Test
  void registerResolvesThePolicyAndQosFromTheLabelAndAnnotation() {
    Instant now = clock.now();
    NodeManifest manifest = manifest(16, Map.of(POLICY, "share-pool"), Map.of(QOS, REFERENCE_QOS));

    CommandResultWithReply<Command, Event, Record, Record> result =
        kit.runCommand(r -> new Register(manifest, gpus(16), r));

    SharingConfig config =
        new SharingConfig(
            SharePolicy.SHARE_POOL,
            new QosConfig(true, 120, "1.5Ti"),
            SharePolicy.SHARE_POOL,
            "Valid",
            VALID_MESSAGE);
    List<NodeCondition> conditions =
        List.of(
            new NodeCondition("GPUSharePolicyValid", "True", "Valid", VALID_MESSAGE, now, now),
            new NodeCondition(
                "GPUSharePolicy",
                "True",
                "share-pool",
                "gpu share policy is share-pool.",
                now,
                now));
    assertEquals(
        List.of(
            new Registered(manifest, gpus(16)),
            new ConfigResolved(config, conditions),
            new NodeEventRecorded(
                new EventNote(
                    "Normal", "GPUSharePolicyChanged", "gpu share policy is share-pool.", now))),
        result.events());
    assertEquals(result.state(), result.reply());
    assertTrue(result.reply().registered());
    assertEquals(config, result.reply().config());
    assertEquals(conditions, result.reply().conditions());

    clock.advance(Duration.ofMinutes(1));
    CommandResultWithReply<Command, Event, Record, Record> again =
        kit.runCommand(r -> new Register(manifest, gpus(16), r));
    assertTrue(again.hasNoEvents(), "the same node again: nothing users see changed");
    assertEquals(result.state(), again.reply());
  }

  @Test
  void conditionTransitionTimesMoveOnlyWhenStatusOrReasonChange() {
    Instant t0 = clock.now();
    register(2, Map.of(POLICY, "share-pool"), Map.of());

    Instant t1 = clock.advance(Duration.ofMinutes(1));
    Record broken = patch(Map.of(), Map.of(QOS, "{")).reply();
    assertEquals(
        new NodeCondition(
            "GPUSharePolicyValid",
            "False",
            "InvalidQoSConfig",
            broken.config().validMessage(),
            t1,
            t1),
        broken.conditions().get(0));
    assertEquals(
        new NodeCondition(
            "GPUSharePolicy", "True", "share-pool", "gpu share policy is share-pool.", t1, t0),
        broken.conditions().get(1),
        "status and reason unchanged: the transition time stays");

    Instant t2 = clock.advance(Duration.ofMinutes(1));
    CommandResultWithReply<Command, Event, Record, Record> otherError =
        patch(Map.of(), Map.of(QOS, "{\"preemptEnabled\": 1}"));
    NodeCondition valid = otherError.reply().conditions().get(0);
    assertEquals("InvalidQoSConfig", valid.reason());
    assertFalse(valid.message().equals(broken.config().validMessage()), "a new message");
    assertEquals(t2, valid.lastHeartbeatTime());
    assertEquals(t1, valid.lastTransitionTime(), "same status and reason: same transition");

    Instant t3 = clock.advance(Duration.ofMinutes(1));
    Record fixed = patch(Map.of(), Map.of(QOS, REFERENCE_QOS)).reply();
    assertEquals(
        new NodeCondition("GPUSharePolicyValid", "True", "Valid", VALID_MESSAGE, t3, t3),
        fixed.conditions().get(0));
    assertEquals(t0, fixed.conditions().get(1).lastTransitionTime());

    clock.advance(Duration.ofMinutes(1));
    CommandResultWithReply<Command, Event, Record, Record> unrelated =
        patch(Map.of("team", "ml"), Map.of());
    assertEquals(1, unrelated.events().size(), "only the label: " + unrelated.events());
    assertTrue(unrelated.events().get(0) instanceof Patched);
    assertEquals(fixed.conditions(), unrelated.reply().conditions(), "no condition rewritten");
  }

  @Test
  void aBadPolicyLabelKeepsTheLastValidPolicyAndRecordsAWarningEvent() {
    Instant t0 = clock.now();
    register(2, Map.of(POLICY, "share-pool"), Map.of());
    Instant t1 = clock.advance(Duration.ofMinutes(1));

    CommandResultWithReply<Command, Event, Record, Record> bad =
        patch(Map.of(POLICY, "shared-pool"), Map.of());

    String message =
        POLICY_FIELD
            + " is \"shared-pool\"; want one of share-pool, static, none (absent means none);"
            + " share-pool stays active.";
    SharingConfig config =
        new SharingConfig(
            SharePolicy.SHARE_POOL,
            QosConfig.DEFAULT,
            SharePolicy.SHARE_POOL,
            "InvalidPolicy",
            message);
    assertEquals(config, bad.reply().config());
    assertEquals(3, bad.events().size(), "patched, resolved, Warning: " + bad.events());
    assertEquals(new Patched(Map.of(POLICY, "shared-pool"), Map.of()), bad.events().get(0));
    assertEquals(
        new NodeEventRecorded(new EventNote("Warning", "InvalidPolicy", message, t1)),
        bad.events().get(2));
    assertEquals(
        new NodeCondition("GPUSharePolicyValid", "False", "InvalidPolicy", message, t1, t1),
        bad.reply().conditions().get(0));
    assertEquals(
        new NodeCondition(
            "GPUSharePolicy", "True", "share-pool", "gpu share policy is share-pool.", t1, t0),
        bad.reply().conditions().get(1));
    assertEquals("shared-pool", bad.reply().manifest().labels().get(POLICY), "kept as written");

    assertTrue(patch(Map.of(POLICY, "shared-pool"), Map.of()).hasNoEvents(), "no second Warning");

    Record fixed = patch(Map.of(POLICY, "static"), Map.of()).reply();
    assertEquals(SharePolicy.STATIC, fixed.config().active());
    assertTrue(fixed.config().valid());
    assertEquals(
        new EventNote("Normal", "GPUSharePolicyChanged", "gpu share policy is static.", t1),
        fixed.events().get(fixed.events().size() - 1));
  }

  @Test
  void badQosJsonKeepsTheLastValidQosAndRecordsAWarningEvent() {
    register(2, Map.of(POLICY, "share-pool"), Map.of(QOS, REFERENCE_QOS));
    Instant now = clock.advance(Duration.ofMinutes(1));

    CommandResultWithReply<Command, Event, Record, Record> bad =
        patch(Map.of(), Map.of(QOS, "{\"preemptEnabled\": tru"));

    SharingConfig config = bad.reply().config();
    assertEquals("InvalidQoSConfig", config.validReason());
    assertEquals(new QosConfig(true, 120, "1.5Ti"), config.activeQos(), "the last valid QoS");
    assertEquals(SharePolicy.SHARE_POOL, config.active());
    assertTrue(
        config.validMessage().startsWith("metadata.annotations[" + QOS + "] is not valid JSON"),
        config.validMessage());
    EventNote warning = bad.reply().events().get(bad.reply().events().size() - 1);
    assertEquals(new EventNote("Warning", "InvalidQoSConfig", config.validMessage(), now), warning);
  }

  @Test
  void removingTheQosAnnotationFallsBackToTheDefaults() {
    register(2, Map.of(POLICY, "share-pool"), Map.of(QOS, REFERENCE_QOS));
    Map<String, String> remove = new TreeMap<>();
    remove.put(QOS, null);

    Record record = patch(Map.of(), remove).reply();

    assertFalse(record.manifest().annotations().containsKey(QOS));
    assertEquals(QosConfig.DEFAULT, record.config().activeQos());
    assertTrue(record.config().valid());
  }

  // ---- admission ----

  @Test
  void aPodOfAnotherPolicyIsRefusedWithTheFieldOfThePolicyLabel() {
    register(2, Map.of(POLICY, "share-pool"), Map.of());

    CommandResultWithReply<Command, Event, Record, BindReply> bind = bind("s", staticPod(10));

    assertEquals(Refusal.Kind.INVALID, bind.reply().refusal().kind());
    assertEquals(
        new FieldError(
            POLICY_FIELD,
            "static",
            "the pod's gpu-share-policy static must equal the policy in force on node"
                + " gpu-node-1, which is share-pool"),
        bind.reply().refusal().reason());
    assertTrue(bind.hasNoEvents());
    assertTrue(bind.state().bound().isEmpty());
  }

  @Test
  void requestsBeyondOneHundredPercentPerGpuAreRefused() {
    register(2, Map.of(POLICY, "share-pool"), Map.of());
    assertNull(bind("p1", poolPod(100)).reply().refusal());
    CommandResultWithReply<Command, Event, Record, BindReply> p2 = bind("p2", poolPod(90));
    assertNull(p2.reply().refusal());
    assertEquals(List.of(new PodBound(key("p2"), poolPod(90))), p2.events());

    CommandResultWithReply<Command, Event, Record, BindReply> p3 = bind("p3", poolPod(20));
    assertEquals(Refusal.Kind.CONFLICT, p3.reply().refusal().kind());
    assertEquals("spec.containers.resources.requests", p3.reply().refusal().field());
    assertEquals("core 20%, memory 20%", p3.reply().refusal().reason().value());
    assertTrue(
        p3.reply()
            .refusal()
            .detail()
            .contains(
                "has only core 10%, memory 10% of its core 200%, memory 200% allocatable left"),
        p3.reply().refusal().detail());
    assertTrue(p3.hasNoEvents());

    CommandResultWithReply<Command, Event, Record, BindReply> p4 = bind("p4", poolPod(10));
    assertNull(p4.reply().refusal(), "exactly full fits");
    assertEquals(new Share(200, 200), p4.reply().record().requested());
  }

  @Test
  void bindingTheSamePodTwiceIsHarmless() {
    register(2, Map.of(POLICY, "share-pool"), Map.of());
    bind("p1", poolPod(60));

    CommandResultWithReply<Command, Event, Record, BindReply> again = bind("p1", poolPod(60));

    assertNull(again.reply().refusal());
    assertTrue(again.hasNoEvents());
    assertEquals(new Share(60, 60), again.state().requested(), "counted once");
  }

  @Test
  void anExclusivePodIsRefusedOnASharingNode() {
    register(2, Map.of(POLICY, "static"), Map.of());

    CommandResultWithReply<Command, Event, Record, BindReply> bind =
        bind("train", PodSharing.exclusive(1));

    assertEquals(Refusal.Kind.CONFLICT, bind.reply().refusal().kind());
    assertEquals(
        "spec.containers.resources.limits[nvidia.com/gpu]", bind.reply().refusal().field());
    assertEquals("1", bind.reply().refusal().reason().value());
    assertTrue(bind.hasNoEvents());
  }

  @Test
  void anExclusivePodOnANoneNodeKeepsSharingOffWhenTheLabelAsksForIt() {
    register(2, Map.of(), Map.of());
    CommandResultWithReply<Command, Event, Record, BindReply> train =
        bind("train", PodSharing.exclusive(2));
    assertNull(train.reply().refusal());
    assertEquals(List.of(new PodBound(key("train"), PodSharing.exclusive(2))), train.events());
    assertEquals(
        Refusal.Kind.CONFLICT,
        bind("more", PodSharing.exclusive(1)).reply().refusal().kind(),
        "both whole GPUs are taken");
    Instant now = clock.advance(Duration.ofMinutes(1));

    CommandResultWithReply<Command, Event, Record, Record> on =
        patch(Map.of(POLICY, "share-pool"), Map.of());

    String message =
        "gpu share policy share-pool cannot take effect while pods hold exclusive GPUs"
            + " (nvidia.com/gpu): default/train; sharing stays off until they are gone.";
    assertEquals(
        new SharingConfig(
            SharePolicy.NONE,
            QosConfig.DEFAULT,
            SharePolicy.SHARE_POOL,
            "ExclusiveGPUPodsPresent",
            message),
        on.reply().config());
    assertEquals(
        List.of("False|ExclusiveGPUPodsPresent", "False|none"),
        on.reply().conditions().stream().map(c -> c.status() + "|" + c.reason()).toList());
    assertEquals(
        new NodeEventRecorded(new EventNote("Warning", "ExclusiveGPUPodsPresent", message, now)),
        on.events().get(on.events().size() - 1));
    assertEquals(
        Refusal.Kind.INVALID,
        bind("nb", poolPod(10)).reply().refusal().kind(),
        "share-pool is not in force yet");

    CommandResultWithReply<Command, Event, Record, Record> gone =
        kit.runCommand(r -> new Unbind(key("train"), r));
    assertEquals(new PodUnbound(key("train")), gone.events().get(0));
    assertEquals(SharePolicy.SHARE_POOL, gone.reply().config().active());
    assertTrue(gone.reply().config().valid());
    assertEquals(
        new NodeEventRecorded(
            new EventNote(
                "Normal", "GPUSharePolicyChanged", "gpu share policy is share-pool.", now)),
        gone.events().get(gone.events().size() - 1));
  }

  @Test
  void aPodCannotBeBoundToAnUnregisteredNode() {
    CommandResultWithReply<Command, Event, Record, BindReply> bind = bind("p", poolPod(10));

    assertEquals(Refusal.Kind.CONFLICT, bind.reply().refusal().kind());
    assertEquals("spec.nodeName", bind.reply().refusal().field());
    assertTrue(bind.hasNoEvents());
  }

  // ---- policy changes ----

  @Test
  void changingTheModelWhileSharedPodsAreBoundWaitsUntilTheyAreGone() {
    register(2, Map.of(POLICY, "share-pool"), Map.of());
    bind("a", poolPod(10));

    CommandResultWithReply<Command, Event, Record, Record> pending =
        patch(Map.of(POLICY, "static"), Map.of());
    SharingConfig config = pending.reply().config();
    assertEquals(SharePolicy.SHARE_POOL, config.active(), "the old policy stays");
    assertEquals(SharePolicy.STATIC, config.desired());
    assertEquals("PolicyChangePending", config.validReason());
    assertEquals(
        "gpu share policy static is wanted, but share-pool stays active until the shared pods"
            + " bound to the node are gone: default/a.",
        config.validMessage());
    assertEquals(
        List.of("False|PolicyChangePending", "True|share-pool"),
        pending.reply().conditions().stream().map(c -> c.status() + "|" + c.reason()).toList());

    assertEquals(Refusal.Kind.INVALID, bind("s", staticPod(10)).reply().refusal().kind());
    assertNull(bind("b", poolPod(10)).reply().refusal(), "share-pool pods still bind");

    Record stillPending = kit.<Record>runCommand(r -> new Unbind(key("a"), r)).reply();
    assertEquals(SharePolicy.SHARE_POOL, stillPending.config().active());
    assertTrue(stillPending.config().validMessage().endsWith("gone: default/b."));

    Instant now = clock.now();
    CommandResultWithReply<Command, Event, Record, Record> done =
        kit.runCommand(r -> new Unbind(key("b"), r));
    assertEquals(SharePolicy.STATIC, done.reply().config().active());
    assertTrue(done.reply().config().valid());
    assertEquals(
        new EventNote("Normal", "GPUSharePolicyChanged", "gpu share policy is static.", now),
        done.reply().events().get(done.reply().events().size() - 1));
    assertNull(bind("s", staticPod(10)).reply().refusal(), "static pods bind now");
  }

  @Test
  void unbindingAPodThatIsNotBoundChangesNothing() {
    register(2, Map.of(POLICY, "share-pool"), Map.of());

    assertTrue(kit.<Record>runCommand(r -> new Unbind(key("ghost"), r)).hasNoEvents());
  }

  // ---- status ----

  @Test
  void theNodeStatusReproducesTheReferenceFiguresOnAndOff() {
    register(16, Map.of(POLICY, "share-pool"), Map.of(QOS, REFERENCE_QOS));
    Instant now = clock.now();

    NodeStatus on = kit.getState().status(ReservedPerGpu.DEFAULT, now);
    assertEquals(
        Map.of(
            "alibabacloud.com/gpu-core.percentage", "1600",
            "alibabacloud.com/gpu-memory.percentage", "1600",
            "cpu", "176",
            "memory", "1800Gi",
            "nvidia.com/gpu", "16",
            "ephemeral-storage", "6Ti"),
        on.capacity());
    assertEquals(
        Map.of(
            "alibabacloud.com/gpu-core.percentage", "1600",
            "alibabacloud.com/gpu-memory.percentage", "1600",
            "cpu", "144",
            "memory", "1640Gi",
            "nvidia.com/gpu", "16",
            "ephemeral-storage", "4608Gi"),
        on.allocatable());
    assertEquals(
        List.of(
            "GPUSharePolicyValid|True|Valid|gpu share policy config is valid.",
            "GPUSharePolicy|True|share-pool|gpu share policy is share-pool."),
        summary(on.conditions()));

    patch(Map.of(POLICY, "none"), Map.of());
    NodeStatus off = kit.getState().status(ReservedPerGpu.DEFAULT, now);
    assertEquals(
        Map.of(
            "cpu", "176",
            "memory", "1800Gi",
            "nvidia.com/gpu", "16",
            "ephemeral-storage", "6Ti"),
        off.capacity());
    assertEquals(
        Map.of(
            "cpu", "176",
            "memory", "1800Gi",
            "nvidia.com/gpu", "16",
            "ephemeral-storage", "4608Gi"),
        off.allocatable());
    assertEquals(
        List.of(
            "GPUSharePolicyValid|True|Valid|gpu share policy config is valid.",
            "GPUSharePolicy|False|none|gpu share policy is none."),
        summary(off.conditions()));
  }

  // ---- recovery ----

  @Test
  void aRestartKeepsTheConfigConditionsPodsAndEvents() {
    register(2, Map.of(POLICY, "share-pool"), Map.of(QOS, REFERENCE_QOS));
    bind("a", poolPod(30));
    clock.advance(Duration.ofMinutes(1));
    patch(Map.of(POLICY, "static"), Map.of());
    patch(Map.of(), Map.of(QOS, "not json"));
    Record before = kit.getState();

    Record after = kit.restart().state();

    assertEquals(before, after);
    assertEquals(
        "InvalidQoSConfig", after.config().validReason(), "reported before PolicyChangePending");
    assertEquals(SharePolicy.SHARE_POOL, after.config().active());
    assertEquals(SharePolicy.STATIC, after.config().desired());
    assertEquals(List.of(key("a").entityId()), List.copyOf(after.bound().keySet()));
    assertTrue(
        kit.<Record>runCommand(r -> new GetRecord(r)).hasNoEvents(), "answers after recovery");
  }

  /** Invariant 5: a Patch for a node never registered is answered, and changes nothing. */
  @Test
  void aPatchBeforeRegisterIsAnsweredAndPersistsNothing() {
    CommandResultWithReply<Command, Event, Record, Record> patch =
        patch(Map.of(POLICY, "share-pool"), Map.of());
    assertFalse(patch.reply().registered());
    assertTrue(patch.hasNoEvents());
  }

  // ---- helpers ----

  private static Record register(
      int gpus, Map<String, String> labels, Map<String, String> annotations) {
    NodeManifest manifest = manifest(gpus, labels, annotations);
    return kit.<Record>runCommand(r -> new Register(manifest, gpus(gpus), r)).reply();
  }

  private static CommandResultWithReply<Command, Event, Record, Record> patch(
      Map<String, String> labels, Map<String, String> annotations) {
    return kit.runCommand(r -> new Patch(labels, annotations, r));
  }

  private static CommandResultWithReply<Command, Event, Record, BindReply> bind(
      String name, PodSharing spec) {
    return kit.runCommand(r -> new Bind(key(name), spec, r));
  }

  /**
   * The reference GPU-HPN node (deploy/examples/node-status-reference.yaml) with {@code gpus} GPUs.
   */
  static NodeManifest manifest(
      int gpus, Map<String, String> labels, Map<String, String> annotations) {
    return new NodeManifest(
        NODE,
        labels,
        annotations,
        Map.of(
            "cpu", "176",
            "memory", "1800Gi",
            "nvidia.com/gpu", Integer.toString(gpus),
            "ephemeral-storage", "6Ti"),
        Map.of(
            "cpu", "176",
            "memory", "1800Gi",
            "nvidia.com/gpu", Integer.toString(gpus),
            "ephemeral-storage", "4608Gi"));
  }

  static List<GpuDevice> gpus(int count) {
    return GpuBackends.fromCapacity(NODE, count, "NVIDIA H20", 97_871);
  }

  static PodKey key(String name) {
    return new PodKey("default", name, "uid-" + name);
  }

  static PodSharing poolPod(int request) {
    return PodSharing.shared(
        SharePolicy.SHARE_POOL, new Share(request, request), new Share(100, 100), "main");
  }

  static PodSharing staticPod(int request) {
    return PodSharing.shared(
        SharePolicy.STATIC, new Share(request, request), new Share(100, 100), "main");
  }

  static List<String> summary(List<NodeCondition> conditions) {
    return conditions.stream()
        .map(c -> c.type() + "|" + c.status() + "|" + c.reason() + "|" + c.message())
        .toList();
  }
}
