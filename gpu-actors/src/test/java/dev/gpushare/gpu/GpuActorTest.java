package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.gpu.GpuActor.Command;
import dev.gpushare.gpu.GpuActor.Describe;
import dev.gpushare.gpu.GpuActor.Discovered;
import dev.gpushare.gpu.GpuActor.Event;
import dev.gpushare.gpu.GpuActor.Freed;
import dev.gpushare.gpu.GpuActor.GetState;
import dev.gpushare.gpu.GpuActor.HealthChanged;
import dev.gpushare.gpu.GpuActor.Reserved;
import dev.gpushare.gpu.GpuActor.SetHealth;
import dev.gpushare.gpu.GpuActor.State;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One GPU's own facts: its identity and health, persisted only when they change, and journals of
 * the ledger this actor kept before 0.2 still readable.
 */
class GpuActorTest {
  static final String NODE = "gpu-node-1";
  static final String UUID = SimulatedGpuBackend.uuidOf(NODE, 3);
  static final GpuDevice DEVICE = new GpuDevice(3, UUID, "NVIDIA H20", 97_871);

  static final Config CONFIG =
      ConfigFactory.parseString(
              "pekko.loglevel = WARNING\n"
                  + "pekko.actor.serialization-bindings {\n"
                  + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                  + "}\n")
          .withFallback(EventSourcedBehaviorTestKit.config());

  static ActorTestKit testKit;
  static EventSourcedBehaviorTestKit<Command, Event, State> kit;

  @BeforeAll
  static void startSystem() {
    testKit = ActorTestKit.create("gpu-actor-test", CONFIG);
    kit = EventSourcedBehaviorTestKit.create(testKit.system(), GpuActor.create(NODE, UUID));
  }

  @AfterAll
  static void stopSystem() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void fresh() {
    kit.clear();
  }

  @Test
  void describeRecordsTheDeviceOnce() {
    CommandResultWithReply<Command, Event, State, Done> describe =
        kit.runCommand(r -> new Describe(DEVICE, r));
    assertEquals(Done.getInstance(), describe.reply());
    assertEquals(List.of(new Discovered(DEVICE)), describe.events());
    assertEquals(DEVICE, describe.state().device());
    assertTrue(describe.state().healthy(), "a new GPU is healthy");

    CommandResultWithReply<Command, Event, State, Done> again =
        kit.runCommand(r -> new Describe(DEVICE, r));
    assertEquals(Done.getInstance(), again.reply());
    assertTrue(again.hasNoEvents());

    CommandResultWithReply<Command, Event, State, State> state = kit.runCommand(GetState::new);
    assertEquals(new State(DEVICE, true), state.reply());
    assertTrue(state.hasNoEvents());
  }

  @Test
  void setHealthPersistsOnlyAChange() {
    describe();
    CommandResultWithReply<Command, Event, State, Done> down =
        kit.<Done>runCommand(r -> new SetHealth(false, r));
    assertEquals(Done.getInstance(), down.reply());
    assertEquals(List.of(new HealthChanged(false)), down.events());
    assertFalse(down.state().healthy());

    assertTrue(kit.<Done>runCommand(r -> new SetHealth(false, r)).hasNoEvents());

    CommandResultWithReply<Command, Event, State, Done> up =
        kit.runCommand(r -> new SetHealth(true, r));
    assertEquals(List.of(new HealthChanged(true)), up.events());
    assertTrue(up.state().healthy());
  }

  @Test
  void aRestartKeepsTheDeviceAndItsHealth() {
    describe();
    kit.<Done>runCommand(r -> new SetHealth(false, r));
    State before = kit.getState();

    State after = kit.restart().state();

    assertEquals(before, after);
    assertFalse(after.healthy());
    assertEquals(DEVICE, after.device());
  }

  /** What 0.1 wrote (its ledger) reads back as the facts alone. */
  @Test
  void theLedgerEventsAndSnapshotsOfOlderReleasesAreReadAndIgnored() throws Exception {
    Serialization serialization = SerializationExtension.get(testKit.system());
    int id = serialization.serializerFor(Reserved.class).identifier();
    Object reserved =
        serialization
            .deserialize(
                "{\"decisionId\":\"n#1\",\"pod\":\"default/a/u\",\"share\":{\"core\":50,\"memory\":50}}"
                    .getBytes(StandardCharsets.UTF_8),
                id,
                Reserved.class.getName())
            .get();
    assertTrue(reserved instanceof Reserved, reserved.toString());
    Object freed =
        serialization
            .deserialize(
                "{\"decisionId\":\"n#1\"}".getBytes(StandardCharsets.UTF_8),
                id,
                Freed.class.getName())
            .get();
    assertEquals(new Freed("n#1"), freed);
    Object snapshot =
        serialization
            .deserialize(
                ("{\"device\":{\"index\":3,\"uuid\":\""
                        + UUID
                        + "\",\"model\":\"NVIDIA H20\",\"memoryMiB\":97871},\"healthy\":false,"
                        + "\"reservations\":{\"n#1\":{\"pod\":\"default/a/u\",\"share\":{\"core\":50,"
                        + "\"memory\":50}}}}")
                    .getBytes(StandardCharsets.UTF_8),
                id,
                State.class.getName())
            .get();
    assertEquals(new State(DEVICE, false), snapshot);

    describe();
    kit.<Done>runCommand(r -> new SetHealth(false, r));
    State facts = kit.getState();
    EventSourcedBehaviorTestKit<Command, Event, State> old =
        EventSourcedBehaviorTestKit.create(testKit.system(), GpuActor.create(NODE, UUID + "-old"));
    old.initialize(facts, (Event) reserved, (Event) freed);
    assertEquals(facts, old.getState(), "the ledger events change nothing");
    assertEquals(facts, old.restart().state());
  }

  // ---- helpers ----

  private static void describe() {
    kit.<Done>runCommand(r -> new Describe(DEVICE, r));
  }
}
