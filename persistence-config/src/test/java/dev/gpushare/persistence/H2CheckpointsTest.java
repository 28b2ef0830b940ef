package dev.gpushare.persistence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import scala.concurrent.ExecutionContext;
import scala.concurrent.Future;
import scala.concurrent.Promise;
import scala.runtime.BoxedUnit;
import scala.util.Failure;
import scala.util.Success;

/** Grouped checkpoints: each write waits for a checkpoint that started after it, and no more. */
class H2CheckpointsTest {
  private static final ExecutionContext NOW = ExecutionContext.fromExecutor(Runnable::run);

  private final List<Promise<BoxedUnit>> started = new ArrayList<>();
  private final H2Checkpoints checkpoints =
      new H2Checkpoints(
          () -> {
            Promise<BoxedUnit> p = Promise.apply();
            started.add(p);
            return p.future();
          },
          NOW,
          H2Checkpoints.Listener.NONE);

  private void finish(int i) {
    started.get(i).complete(new Success<>(BoxedUnit.UNIT));
  }

  @Test
  void writesDuringACheckpointShareTheNextOne() {
    Future<BoxedUnit> first = checkpoints.afterNow();
    assertEquals(1, started.size(), "a write with none running starts one");
    Future<BoxedUnit> second = checkpoints.afterNow();
    Future<BoxedUnit> third = checkpoints.afterNow();
    assertSame(second, third, "writes during a checkpoint wait for the same next one");
    assertEquals(1, started.size(), "the next one waits for the running one to end");

    finish(0);
    assertTrue(first.isCompleted());
    assertFalse(second.isCompleted(), "the running checkpoint may have missed their commits");
    assertEquals(2, started.size(), "the waiting one starts when the running one ends");

    finish(1);
    assertTrue(second.isCompleted());
    assertEquals(2, started.size(), "nothing waits: no third checkpoint");

    checkpoints.afterNow();
    assertEquals(3, started.size(), "idle again: the next write starts one at once");
  }

  @Test
  void aFailedCheckpointFailsItsWritesAndTheNextOneStillRuns() {
    Future<BoxedUnit> first = checkpoints.afterNow();
    Future<BoxedUnit> second = checkpoints.afterNow();
    started.get(0).complete(new Failure<>(new IllegalStateException("disk full")));
    assertTrue(first.value().get().isFailure(), "not acknowledged");
    assertEquals(2, started.size());
    finish(1);
    assertTrue(second.value().get().isSuccess());
  }
}
