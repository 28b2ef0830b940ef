package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.PodKey;
import dev.gpushare.node.PodIndex.Claim;
import dev.gpushare.node.PodIndex.Claimed;
import dev.gpushare.node.PodIndex.Command;
import dev.gpushare.node.PodIndex.Entry;
import dev.gpushare.node.PodIndex.Event;
import dev.gpushare.node.PodIndex.Get;
import dev.gpushare.node.PodIndex.Release;
import dev.gpushare.node.PodIndex.Released;
import java.util.List;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.persistence.testkit.javadsl.EventSourcedBehaviorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PodIndexTest {
  static final PodKey FIRST = new PodKey("default", "nb", "uid-1");
  static final PodKey SECOND = new PodKey("default", "nb", "uid-2");
  static ActorTestKit testKit;
  static EventSourcedBehaviorTestKit<Command, Event, Entry> kit;

  @BeforeAll
  static void start() {
    testKit =
        ActorTestKit.create(
            "pod-index-test",
            ConfigFactory.parseString(
                    "pekko.loglevel = WARNING\n"
                        + "pekko.actor.serialization-bindings {\n"
                        + "  \"dev.gpushare.arbiter.JsonSerializable\" = jackson-json\n"
                        + "}\n")
                .withFallback(EventSourcedBehaviorTestKit.config()));
    kit = EventSourcedBehaviorTestKit.create(testKit.system(), PodIndex.create("default/nb"));
  }

  @AfterAll
  static void stop() {
    testKit.shutdownTestKit();
  }

  @BeforeEach
  void clear() {
    kit.clear();
  }

  @Test
  void the_first_claim_wins_and_a_repeat_of_it_persists_nothing() {
    var claimed = kit.<Entry>runCommand(r -> new Claim("n1", FIRST, false, r));
    assertEquals(new Entry("n1", FIRST), claimed.reply());
    assertEquals(List.of(new Claimed("n1", FIRST)), claimed.events());
    assertTrue(kit.<Entry>runCommand(r -> new Claim("n1", FIRST, false, r)).hasNoEvents());
  }

  @Test
  void a_second_pod_of_the_same_name_is_answered_with_the_holder_unless_it_takes_over() {
    kit.<Entry>runCommand(r -> new Claim("n1", FIRST, false, r));
    var refused = kit.<Entry>runCommand(r -> new Claim("n2", SECOND, false, r));
    assertEquals(new Entry("n1", FIRST), refused.reply());
    assertTrue(refused.hasNoEvents());
    var takenOver = kit.<Entry>runCommand(r -> new Claim("n2", SECOND, true, r));
    assertEquals(new Entry("n2", SECOND), takenOver.reply());
  }

  @Test
  void only_the_holder_releases_the_name_and_it_survives_a_restart() {
    kit.<Entry>runCommand(r -> new Claim("n1", FIRST, false, r));
    assertTrue(kit.<Done>runCommand(r -> new Release("uid-other", r)).hasNoEvents());
    kit.restart();
    assertEquals(new Entry("n1", FIRST), kit.<Entry>runCommand(Get::new).reply());
    var released = kit.<Done>runCommand(r -> new Release("uid-1", r));
    assertEquals(List.of(new Released("uid-1")), released.events());
    assertTrue(kit.<Entry>runCommand(Get::new).reply().free());
  }
}
