package dev.gpushare.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.Share;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerEntry;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerReply;
import dev.gpushare.arbiter.actor.ArbiterPeers.LedgerSnapshot;
import dev.gpushare.gpu.GpuActor.Command;
import dev.gpushare.gpu.GpuActor.Describe;
import dev.gpushare.gpu.GpuActor.Discovered;
import dev.gpushare.gpu.GpuActor.Event;
import dev.gpushare.gpu.GpuActor.Free;
import dev.gpushare.gpu.GpuActor.Freed;
import dev.gpushare.gpu.GpuActor.GetLedger;
import dev.gpushare.gpu.GpuActor.GetState;
import dev.gpushare.gpu.GpuActor.HealthChanged;
import dev.gpushare.gpu.GpuActor.Reserve;
import dev.gpushare.gpu.GpuActor.Reserved;
import dev.gpushare.gpu.GpuActor.SetHealth;
import dev.gpushare.gpu.GpuActor.State;
import java.util.List;
import java.util.Map;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit.CommandResultWithReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One GPU's ledger: the 100 % invariant enforced where the resource lives. */
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
  void emptyLedger() {
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
  }

  @Test
  void aReservationWithinCapacityIsRecordedUnderItsDecisionId() {
    describe();
    CommandResultWithReply<Command, Event, State, LedgerReply> reserve =
        reserve("n#1", "pod-a", new Share(60, 40));

    assertEquals(LedgerReply.RESERVED, reserve.reply());
    assertEquals(List.of(new Reserved("n#1", "pod-a", new Share(60, 40))), reserve.events());
    assertEquals(
        Map.of("n#1", new LedgerEntry("pod-a", new Share(60, 40))), reserve.state().reservations());
    assertEquals(new Share(60, 40), reserve.state().used());
  }

  @Test
  void reservingTheSameDecisionAgainIsHarmless() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));

    CommandResultWithReply<Command, Event, State, LedgerReply> again =
        reserve("n#1", "pod-a", new Share(60, 40));
    assertEquals(LedgerReply.RESERVED, again.reply());
    assertTrue(again.hasNoEvents());
    assertEquals(new Share(60, 40), again.state().used(), "not counted twice");
  }

  @Test
  void aReservationThatWouldTakeCoreAbove100PercentIsRefused() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));

    CommandResultWithReply<Command, Event, State, LedgerReply> refused =
        reserve("n#2", "pod-b", new Share(50, 10));
    assertFalse(refused.reply().reserved());
    assertEquals(
        "reserving core 50%, memory 10% beside core 60%, memory 40% in use would exceed 100% of"
            + " GPU 3",
        refused.reply().reason());
    assertTrue(refused.hasNoEvents());
    assertEquals(new Share(60, 40), refused.state().used());
  }

  @Test
  void aReservationThatWouldTakeMemoryAbove100PercentIsRefused() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));

    CommandResultWithReply<Command, Event, State, LedgerReply> refused =
        reserve("n#2", "pod-b", new Share(10, 61));
    assertFalse(refused.reply().reserved());
    assertTrue(refused.reply().reason().contains("exceed 100%"), refused.reply().reason());
    assertTrue(refused.hasNoEvents());
  }

  @Test
  void aReservationThatFillsTheGpuExactlyIsAccepted() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));

    CommandResultWithReply<Command, Event, State, LedgerReply> full =
        reserve("n#2", "pod-b", new Share(40, 60));
    assertEquals(LedgerReply.RESERVED, full.reply());
    assertEquals(Share.WHOLE, full.state().used());
  }

  @Test
  void aPodThatHoldsTheGpuCannotReserveItAgainUnderAnotherDecision() {
    describe();
    reserve("n#1", "pod-a", new Share(10, 10));

    CommandResultWithReply<Command, Event, State, LedgerReply> twice =
        reserve("n#2", "pod-a", new Share(10, 10));
    assertFalse(twice.reply().reserved());
    assertEquals("pod pod-a already holds this GPU under decision n#1", twice.reply().reason());
    assertTrue(twice.hasNoEvents());
  }

  @Test
  void freeingIsHarmlessTwiceAndForUnknownDecisions() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));

    CommandResultWithReply<Command, Event, State, Done> free =
        kit.<Done>runCommand(r -> new Free("n#1", r));
    assertEquals(Done.getInstance(), free.reply());
    assertEquals(List.of(new Freed("n#1")), free.events());
    assertEquals(Map.of(), free.state().reservations());

    CommandResultWithReply<Command, Event, State, Done> again =
        kit.<Done>runCommand(r -> new Free("n#1", r));
    assertEquals(Done.getInstance(), again.reply());
    assertTrue(again.hasNoEvents());

    assertTrue(kit.<Done>runCommand(r -> new Free("never-reserved", r)).hasNoEvents());

    assertEquals(LedgerReply.RESERVED, reserve("n#2", "pod-b", Share.WHOLE).reply());
  }

  @Test
  void getLedgerAndGetStateShowTheReservationsAndHealth() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));
    reserve("n#2", "pod-b", new Share(20, 20));

    CommandResultWithReply<Command, Event, State, LedgerSnapshot> ledger =
        kit.runCommand(GetLedger::new);
    assertEquals(
        new LedgerSnapshot(
            UUID,
            true,
            Map.of(
                "n#1", new LedgerEntry("pod-a", new Share(60, 40)),
                "n#2", new LedgerEntry("pod-b", new Share(20, 20)))),
        ledger.reply());
    assertEquals(new Share(80, 60), ledger.reply().used());
    assertTrue(ledger.hasNoEvents());

    CommandResultWithReply<Command, Event, State, State> state = kit.runCommand(GetState::new);
    assertEquals(kit.getState(), state.reply());
    assertEquals(DEVICE, state.reply().device());
  }

  @Test
  void setHealthPersistsOnlyAChange() {
    describe();
    CommandResultWithReply<Command, Event, State, Done> down =
        kit.<Done>runCommand(r -> new SetHealth(false, r));
    assertEquals(Done.getInstance(), down.reply());
    assertEquals(List.of(new HealthChanged(false)), down.events());
    assertFalse(down.state().healthy());
    assertFalse(kit.<LedgerSnapshot>runCommand(GetLedger::new).reply().healthy());

    assertTrue(kit.<Done>runCommand(r -> new SetHealth(false, r)).hasNoEvents());

    CommandResultWithReply<Command, Event, State, Done> up =
        kit.runCommand(r -> new SetHealth(true, r));
    assertEquals(List.of(new HealthChanged(true)), up.events());
    assertTrue(up.state().healthy());
  }

  @Test
  void aRestartKeepsTheLedgerTheDeviceAndItsHealth() {
    describe();
    reserve("n#1", "pod-a", new Share(60, 40));
    reserve("n#2", "pod-b", new Share(30, 30));
    kit.<Done>runCommand(r -> new Free("n#1", r));
    kit.<Done>runCommand(r -> new SetHealth(false, r));
    State before = kit.getState();

    State after = kit.restart().state();

    assertEquals(before, after);
    assertEquals(Map.of("n#2", new LedgerEntry("pod-b", new Share(30, 30))), after.reservations());
    assertFalse(after.healthy());
    assertEquals(DEVICE, after.device());
    assertFalse(
        reserve("n#3", "pod-c", new Share(71, 10)).reply().reserved(),
        "the recovered ledger still guards the 100 %");
  }

  // ---- helpers ----

  private static void describe() {
    kit.<Done>runCommand(r -> new Describe(DEVICE, r));
  }

  private static CommandResultWithReply<Command, Event, State, LedgerReply> reserve(
      String decisionId, String pod, Share share) {
    return kit.runCommand(r -> new Reserve(decisionId, pod, share, r));
  }
}
