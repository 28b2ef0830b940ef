package dev.gpushare.node;

import static dev.gpushare.node.ServiceAsks.all;
import static dev.gpushare.node.ServiceAsks.done;

import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.FieldError;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.actor.NodeArbiter;
import dev.gpushare.node.api.ServiceException;
import dev.gpushare.node.api.ServiceException.Kind;
import dev.gpushare.node.api.Views.ClockView;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;

/**
 * The simulation clock (API.md "Simulation clock"): time moved by hand when the server runs with a
 * manual clock. Timers due on the way fire in order: time stops at each, and every arbiter looks.
 */
final class ServiceClock {
  private final ArbiterClock clock;
  private final WriteGate gate;
  private final ServiceAsks asks;

  ServiceClock(ArbiterClock clock, WriteGate gate, ServiceAsks asks) {
    this.clock = clock;
    this.gate = gate;
    this.asks = asks;
  }

  ClockView clock() {
    return new ClockView(clock.now(), clock.manual());
  }

  CompletionStage<ClockView> advance(Duration by) {
    if (!(clock instanceof ManualClock manual)) {
      return CompletableFuture.failedFuture(
          new ServiceException(
              Kind.CONFLICT,
              "the clock is the system clock; start the server with --clock manual to move time"
                  + " by hand"));
    }
    if (by.isNegative()) {
      return CompletableFuture.failedFuture(
          ServiceException.of(
              Kind.INVALID,
              new FieldError("seconds", Long.toString(by.toSeconds()), "seconds must be ≥ 0")));
    }
    Instant target = manual.now().plus(by);
    return gate.writing(() -> advanceTo(manual, target));
  }

  private CompletionStage<ClockView> advanceTo(ManualClock manual, Instant target) {
    return fireTimersUntil(manual, target)
        .thenCompose(
            d -> {
              manual.advanceTo(target);
              return tickAll();
            })
        .thenApply(d -> clock());
  }

  /** Timers due before {@code target} fire in order: time stops at each, every arbiter looks. */
  private CompletionStage<Done> fireTimersUntil(ManualClock manual, Instant target) {
    return asks.nodeNames()
        .thenCompose(names -> all(names.stream().map(asks::book).toList()))
        .thenCompose(
            books -> {
              Optional<Instant> next =
                  books.stream()
                      .map(NodeArbiter.BookView::nextTimer)
                      .filter(t -> t != null && !t.isAfter(target))
                      .min(Comparator.naturalOrder());
              if (next.isEmpty()) {
                return done();
              }
              manual.advanceTo(next.get());
              return tickAll().thenCompose(d -> fireTimersUntil(manual, target));
            });
  }

  private CompletionStage<Done> tickAll() {
    return asks.nodeNames()
        .thenCompose(
            names -> all(names.stream().map(n -> asks.decide(n, NodeArbiter.Tick::new)).toList()))
        .thenApply(x -> Done.getInstance());
  }
}
