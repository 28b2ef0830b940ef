package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.HistoryTags;
import dev.gpushare.arbiter.JsonSerializable;
import dev.gpushare.persistence.JournalInspector.HistoryEntry;
import dev.gpushare.persistence.JournalInspector.HistoryPage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * A pod's history on a real journal (H2 in {@code HistoryQueryTest}, PostgreSQL in {@code
 * PostgresJournalTest}): two lifetimes of {@code default/a} on two nodes, the first written before
 * tags (its record found through the name's index), a preemption naming another pod, and pods with
 * the longest names Kubernetes accepts.
 */
final class HistoryScenario {
  /** A 63-character namespace and a 253-character name: the tag is hashed. */
  static final String LONG_NS = "n".repeat(63);

  static final String LONG_NAME = ("p".repeat(62) + ".").repeat(4) + "q";

  /** The longest name whose tag is readable in the longest namespace: exactly 256 characters. */
  static final String EDGE_NAME = "e".repeat(188);

  private final ActorTestKit kit;
  private final Map<String, ActorRef<Journaled.Append>> entities = new HashMap<>();

  HistoryScenario(ActorTestKit kit) {
    this.kit = kit;
  }

  /** Writes the journal and checks every history read from it. */
  void run() throws Exception {
    assertEquals(253, LONG_NAME.length());
    // The first lifetime of default/a, on n1, before tags: nothing of it is tagged.
    write("PodIndex|default/a", null, claimed("n1", "default", "a", "u0"));
    write("Pod|default/a/u0", null, new Journaled.Note("u0 spec seen"));
    write("NodeArbiter|n1", null, new Journaled.Note("u0 granted (untagged decision)"));
    write("PodIndex|default/a", null, new PodIndex.Released("u0"));
    // The second, on n2, with tags; a preemption of default/b for it.
    write("PodIndex|default/a", null, claimed("n2", "default", "a", "u1"));
    write("NodeArbiter|n2", null, decision("u1 added", "default/a/u1"));
    write("Pod|default/a/u1", tag("default", "a"), new Journaled.Note("u1 spec seen"));
    write("Pod|default/b/u9", tag("default", "b"), new Journaled.Note("u9 spec seen"));
    write("NodeArbiter|n2", null, decision("u1 preempts u9", "default/b/u9", "default/a/u1"));
    write("Pod|default/b/u9", tag("default", "b"), new Journaled.Note("u9 preempted"));
    write("Pod|default/a/u0", null, new Journaled.Note("u0 late line, untagged"));
    write("NodeArbiter|n2", null, decision("u1 released", "default/a/u1"));
    write("Pod|default/ab/u5", tag("default", "ab"), new Journaled.Note("ab is not a"));

    JournalInspector inspector = JdbcJournalInspector.create(kit.system());
    HistoryPage a = await(inspector.history("default", "a", 0, 100));
    assertEquals(
        List.of(
            "Pod|default/a/u0 u0 spec seen",
            "NodeArbiter|n2 u1 added",
            "Pod|default/a/u1 u1 spec seen",
            "NodeArbiter|n2 u1 preempts u9",
            "Pod|default/a/u0 u0 late line, untagged",
            "NodeArbiter|n2 u1 released"),
        lines(a.items()),
        "both lifetimes, in journal order; the untagged decision of n1 is not found");
    assertNull(a.next(), "nothing more");
    assertIncreasing(a.items());
    HistoryEntry preemption = a.items().get(3);
    assertEquals("Journaled.Decision", preemption.type());
    assertEquals(2, preemption.sequenceNr());
    assertTrue(preemption.timestamp().toEpochMilli() > 0);

    HistoryPage b = await(inspector.history("default", "b", 0, 100));
    assertEquals(
        List.of(
            "Pod|default/b/u9 u9 spec seen",
            "NodeArbiter|n2 u1 preempts u9",
            "Pod|default/b/u9 u9 preempted"),
        lines(b.items()),
        "the victim's history holds the same preemption");
    assertEquals(
        preemption.cursor(), b.items().get(1).cursor(), "one event, one place in the journal");

    // Paging: a walk two at a time gives the one-shot list, and says where to go on.
    for (int size = 1; size <= 7; size++) {
      List<HistoryEntry> walked = new ArrayList<>();
      long after = 0;
      for (int pages = 0; pages < 20; pages++) {
        HistoryPage page = await(inspector.history("default", "a", after, size));
        assertTrue(page.items().size() <= size);
        walked.addAll(page.items());
        if (page.next() == null) {
          break;
        }
        assertEquals(size, page.items().size(), "a page with a next is full");
        assertEquals(page.items().get(page.items().size() - 1).cursor(), page.next());
        after = page.next();
      }
      assertEquals(a.items(), walked, "pages of " + size);
    }
    long last = a.items().get(a.items().size() - 1).cursor();
    HistoryPage after = await(inspector.history("default", "a", last, 100));
    assertEquals(List.of(), after.items());
    assertNull(after.next());
    HistoryPage exact = await(inspector.history("default", "a", 0, a.items().size()));
    assertEquals(a.items(), exact.items());
    assertNull(exact.next(), "a page that ends with the history has no next");
    HistoryPage fromPreemption =
        await(inspector.history("default", "a", preemption.cursor() - 1, 1));
    assertEquals(List.of(preemption), fromPreemption.items());

    assertEquals(
        List.of(), await(inspector.history("default", "nobody", 0, 10)).items(), "no history");
    assertInvalid(inspector.history("default", "a", -1, 10), "after -1");
    assertInvalid(inspector.history("default", "a", 0, 0), "limit 0");
    assertInvalid(inspector.history("", "a", 0, 10), "namespace");
    assertInvalid(inspector.history("default", "a/b", 0, 10), "name a/b");

    // The longest names: a hashed tag, and a readable tag exactly as wide as the column.
    String longTag = tag(LONG_NS, LONG_NAME);
    assertTrue(longTag.startsWith("pod-sha256:") && longTag.length() == 75, longTag);
    String edgeTag = tag(LONG_NS, EDGE_NAME);
    assertEquals("pod:" + LONG_NS + "/" + EDGE_NAME, edgeTag);
    assertEquals(HistoryTags.MAX_LENGTH, edgeTag.length());
    String longRef = LONG_NS + "/" + LONG_NAME;
    String edgeRef = LONG_NS + "/" + EDGE_NAME;
    write("NodeArbiter|" + "m".repeat(253), null, decision("long added", longRef + "/" + uid()));
    write("Pod|" + longRef + "/" + uid(), longTag, new Journaled.Note("long spec seen"));
    write("Pod|" + edgeRef + "/" + uid(), edgeTag, new Journaled.Note("edge spec seen"));
    assertEquals(
        List.of("long added", "long spec seen"),
        texts(await(inspector.history(LONG_NS, LONG_NAME, 0, 10)).items()));
    assertEquals(
        List.of("edge spec seen"),
        texts(await(inspector.history(LONG_NS, EDGE_NAME, 0, 10)).items()));
  }

  /** A 128-character uid, the longest the API takes. */
  static String uid() {
    return "u".repeat(128);
  }

  static String tag(String namespace, String name) {
    return HistoryTags.of(namespace, name);
  }

  private static PodIndex.Claimed claimed(String node, String ns, String name, String uid) {
    return new PodIndex.Claimed(node, new PodIndex.Key(ns, name, uid));
  }

  private static Journaled.Decision decision(String what, String... pods) {
    return new Journaled.Decision(what, List.of(pods));
  }

  private void write(String persistenceId, String recordTag, JsonSerializable event) {
    ActorRef<Journaled.Append> entity =
        entities.computeIfAbsent(persistenceId, id -> kit.spawn(Journaled.create(id, recordTag)));
    TestProbe<Done> probe = kit.createTestProbe();
    entity.tell(new Journaled.Append(event, probe.ref()));
    probe.receiveMessage(JournalTestKits.TIMEOUT);
  }

  private static List<String> lines(List<HistoryEntry> items) {
    List<String> lines = new ArrayList<>();
    for (HistoryEntry e : items) {
      lines.add(e.persistenceId() + " " + text(e));
    }
    return lines;
  }

  private static List<String> texts(List<HistoryEntry> items) {
    return items.stream().map(HistoryScenario::text).toList();
  }

  private static String text(HistoryEntry e) {
    return e.event().has("what")
        ? e.event().path("what").asText()
        : e.event().path("text").asText();
  }

  private static void assertIncreasing(List<HistoryEntry> items) {
    for (int i = 1; i < items.size(); i++) {
      assertTrue(items.get(i - 1).cursor() < items.get(i).cursor(), items.toString());
    }
  }

  private static void assertInvalid(CompletionStage<?> stage, String naming) {
    ExecutionException e =
        assertThrows(
            ExecutionException.class, () -> stage.toCompletableFuture().get(30, TimeUnit.SECONDS));
    assertInstanceOf(IllegalArgumentException.class, e.getCause());
    assertTrue(e.getCause().getMessage().startsWith(naming), e.getCause().getMessage());
  }

  private static <T> T await(CompletionStage<T> stage) throws Exception {
    return stage.toCompletableFuture().get(JournalTestKits.TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }
}
