package dev.gpushare.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.arbiter.PodKey;
import dev.gpushare.node.ServiceAsks.Placed;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The member's memory of where pods live: a remembered place spares the index's ask, a stale one
 * (the pod was deleted, its name perhaps taken by a new pod) is found out by the node's NOT_FOUND
 * and the request runs once more on the index's answer, and nothing else is ever retried.
 */
class PodPlacesTest {

  /** The index as a map; counts its asks. */
  final Map<String, Placed> index = new HashMap<>();

  int asks;

  /** What the nodes hold: a request for any other key is NOT_FOUND there. */
  final Map<String, Placed> nodes = new HashMap<>();

  final List<Placed> ran = new ArrayList<>();

  final PodPlaces places =
      new PodPlaces(
          ref -> {
            asks++;
            return CompletableFuture.completedFuture(Optional.ofNullable(index.get(ref)));
          },
          3);

  static Placed placed(String node, String name, String uid) {
    return new Placed(node, new PodKey("default", name, uid));
  }

  void create(Placed p) {
    index.put(p.key().ref(), p);
    nodes.put(p.key().entityId(), p);
  }

  void deleteElsewhere(Placed p) {
    index.remove(p.key().ref());
    nodes.remove(p.key().entityId());
  }

  /** The node's answer to a request for {@code p}: its uid, or NOT_FOUND as the arbiter says. */
  final Function<Placed, CompletionStage<String>> op =
      p -> {
        ran.add(p);
        return nodes.containsKey(p.key().entityId())
            ? CompletableFuture.completedFuture(p.key().uid())
            : CompletableFuture.supplyAsync(
                () -> {
                  throw new ServiceException(Kind.NOT_FOUND, "pod is not bound to the node");
                });
      };

  static ServiceException notFound() {
    return new ServiceException(Kind.NOT_FOUND, "pod not found (index)");
  }

  String run(String name) throws Exception {
    return places.onPod("default/" + name, PodPlacesTest::notFound, op).toCompletableFuture().get();
  }

  static ServiceException failure(Executable e) {
    ExecutionException thrown = assertThrows(ExecutionException.class, e::run);
    return assertInstanceOf(ServiceException.class, thrown.getCause());
  }

  interface Executable {
    void run() throws Exception;
  }

  @Test
  void aRememberedPlaceSparesTheIndex() throws Exception {
    create(placed("n1", "a", "u1"));
    assertEquals("u1", run("a"));
    assertEquals("u1", run("a"));
    assertEquals("u1", run("a"));
    assertEquals(1, asks, "only the first request asks the index");
  }

  @Test
  void aPlaceRememberedAtCreateIsUsedAtOnce() throws Exception {
    Placed a = placed("n1", "a", "u1");
    create(a);
    places.remember(a);
    assertEquals("u1", run("a"));
    assertEquals(0, asks);
  }

  @Test
  void aNameTakenByANewPodIsFoundOutAndAskedAgain() throws Exception {
    Placed old = placed("n1", "a", "u1");
    create(old);
    assertEquals("u1", run("a"));
    // Deleted and created again on another node by another member: this member still remembers u1.
    deleteElsewhere(old);
    create(placed("n2", "a", "u2"));
    assertEquals("u2", run("a"));
    assertEquals(List.of("u1", "u1", "u2"), ran.stream().map(p -> p.key().uid()).toList());
    assertEquals("n2", ran.get(2).node());
    assertEquals(2, asks);
    assertEquals("u2", run("a"));
    assertEquals(2, asks, "the new place is remembered");
  }

  @Test
  void aDeletedPodIsTheIndexsNotFound() throws Exception {
    Placed old = placed("n1", "a", "u1");
    create(old);
    run("a");
    deleteElsewhere(old);
    ServiceException e = failure(() -> run("a"));
    assertEquals("pod not found (index)", e.getMessage());
    assertEquals(0, places.size(), "forgotten");
  }

  @Test
  void aNotFoundOnTheIndexsOwnAnswerIsNotRetried() throws Exception {
    // Named in the index, not yet (or no longer) held by its node: a create or a delete half-way.
    Placed half = placed("n1", "a", "u1");
    index.put(half.key().ref(), half);
    assertEquals(Kind.NOT_FOUND, failure(() -> run("a")).kind());
    assertEquals(1, ran.size());
    assertEquals(1, asks);
  }

  @Test
  void otherFailuresAreNotRetried() throws Exception {
    Placed a = placed("n1", "a", "u1");
    create(a);
    places.remember(a);
    ServiceException conflict = new ServiceException(Kind.CONFLICT, "conflict");
    ExecutionException thrown =
        assertThrows(
            ExecutionException.class,
            () ->
                places
                    .onPod(
                        "default/a",
                        PodPlacesTest::notFound,
                        p -> {
                          ran.add(p);
                          return CompletableFuture.<String>failedFuture(conflict);
                        })
                    .toCompletableFuture()
                    .get());
    assertSame(conflict, thrown.getCause());
    assertEquals(1, ran.size());
    assertEquals(0, asks);
  }

  @Test
  void forgettingOnePodKeepsAnotherOfTheSameName() throws Exception {
    Placed u2 = placed("n2", "a", "u2");
    places.remember(u2);
    places.forget(placed("n1", "a", "u1").key());
    assertEquals(1, places.size());
    places.forget(u2.key());
    assertEquals(0, places.size());
  }

  @Test
  void theMemoryIsBounded() throws Exception {
    for (int i = 0; i < 10; i++) {
      create(placed("n1", "p" + i, "u" + i));
      assertEquals("u" + i, run("p" + i));
      assertTrue(places.size() <= 3, "never more than 3: " + places.size());
    }
    assertEquals(10, asks);
  }
}
