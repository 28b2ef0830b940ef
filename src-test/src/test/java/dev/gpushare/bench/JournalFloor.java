package dev.gpushare.bench;

import dev.gpushare.arbiter.JsonSerializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;

/**
 * The raw floor of the journal in use, measured in the same actor system, on the same journal
 * profile and database as the runtime beside it: persistent entities that each persist one event of
 * about 230 bytes at a time (the size of an arbiter's {@code Granted}), awaiting each write before
 * the next — one entity alone (the latency floor of one decision), and N at once (the throughput
 * floor of N nodes' arbiters). Nothing of gpushare runs in it but the serializer binding.
 *
 * <p>{@link #measureOpen} is the floor of an open loop: the same entities, each still persisting
 * one event at a time, sent events at a fixed rate (round robin) in the system as it is during the
 * load's window — its nodes registered, its telemetry sampling, nothing deciding. A latency is
 * counted from the moment the event was due, as the load's are, so the floor at 100/s pays what a
 * write pays on a machine that is idle between writes (threads parked, caches cold), which the
 * closed loop of one entity never does.
 */
final class JournalFloor {
  private JournalFloor() {}

  /** What one measurement found: latency of one persist, and persists per second in all. */
  record Floor(int entities, double p50Ms, double p99Ms, double perSecond, int failed) {
    @Override
    public String toString() {
      return String.format(
              Locale.ROOT,
              "%d entit%s: p50 %.2f ms, p99 %.2f ms, %,.0f persists/s",
              entities,
              entities == 1 ? "y" : "ies",
              p50Ms,
              p99Ms,
              perSecond)
          + (failed == 0 ? "" : String.format(Locale.ROOT, ", %,d failed", failed));
    }
  }

  record Persist(ActorRef<Long> replyTo) implements JsonSerializable {}

  /** An event the size of an arbiter decision. */
  record Written(String payload) implements JsonSerializable {}

  private static final String PAYLOAD = "x".repeat(214);

  private static final class Entity extends EventSourcedBehavior<Persist, Written, Long> {
    Entity(String id) {
      super(PersistenceId.ofUniqueId(id));
    }

    @Override
    public Long emptyState() {
      return 0L;
    }

    @Override
    public CommandHandler<Persist, Written, Long> commandHandler() {
      return newCommandHandlerBuilder()
          .forAnyState()
          .onCommand(
              Persist.class,
              (s, c) -> Effect().persist(new Written(PAYLOAD)).thenReply(c.replyTo(), n -> n))
          .build();
    }

    @Override
    public EventHandler<Long, Written> eventHandler() {
      return newEventHandlerBuilder().forAnyState().onAnyEvent((n, e) -> n + 1);
    }
  }

  private static int runs;

  /**
   * {@code entities} entities, each persisting one event at a time for {@code warmup} then {@code
   * seconds} seconds; only the second part is measured.
   */
  static Floor measure(ActorSystem<?> system, int entities, int warmup, int seconds) {
    List<ActorRef<Persist>> refs = spawn(system, entities);
    ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
    long start = System.nanoTime();
    long measureFrom = start + TimeUnit.SECONDS.toNanos(warmup);
    long end = measureFrom + TimeUnit.SECONDS.toNanos(seconds);
    AtomicInteger failed = new AtomicInteger();
    List<CompletableFuture<Void>> loops = new ArrayList<>();
    for (ActorRef<Persist> ref : refs) {
      CompletableFuture<Void> done = new CompletableFuture<>();
      loop(system, ref, measureFrom, end, latencies, failed, done);
      loops.add(done);
    }
    CompletableFuture.allOf(loops.toArray(CompletableFuture[]::new)).join();
    return floor(entities, latencies, failed.get(), seconds);
  }

  /**
   * {@code entities} entities sent {@code rate} events per second in all, round robin, for {@code
   * warmup} then {@code seconds} seconds; only the second part is measured, each event from the
   * moment it was due.
   */
  static Floor measureOpen(ActorSystem<?> system, int entities, int rate, int warmup, int seconds) {
    List<ActorRef<Persist>> refs = spawn(system, entities);
    ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
    long interval = 1_000_000_000L / rate;
    long start = System.nanoTime();
    long measureFrom = start + TimeUnit.SECONDS.toNanos(warmup);
    long end = measureFrom + TimeUnit.SECONDS.toNanos(seconds);
    List<CompletableFuture<Long>> sent = new ArrayList<>();
    AtomicInteger failed = new AtomicInteger();
    long next = start;
    int i = 0;
    while (next < end) {
      long now = System.nanoTime();
      if (now < next) {
        LockSupport.parkNanos(next - now);
        continue;
      }
      long due = next;
      ActorRef<Persist> ref = refs.get(i++ % refs.size());
      CompletableFuture<Long> done =
          AskPattern.<Persist, Long>ask(
                  ref, Persist::new, Duration.ofSeconds(30), system.scheduler())
              .toCompletableFuture();
      if (due >= measureFrom) {
        // A write that fails or times out is counted, with the time it took to say so in the
        // latencies (leaving it out would hide the slowest), and not as a persist.
        sent.add(
            done.handle(
                (n, e) -> {
                  latencies.add(System.nanoTime() - due);
                  if (e != null) {
                    failed.incrementAndGet();
                  }
                  return n;
                }));
      }
      next += interval;
    }
    CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).join();
    return floor(entities, latencies, failed.get(), seconds);
  }

  /** {@code entities} new floor entities (new persistence ids: nothing to recover). */
  private static List<ActorRef<Persist>> spawn(ActorSystem<?> system, int entities) {
    int run = ++runs;
    List<ActorRef<Persist>> refs = new ArrayList<>();
    for (int i = 0; i < entities; i++) {
      Behavior<Persist> b = new Entity("Floor|" + run + "-" + i);
      refs.add(system.systemActorOf(b, "journal-floor-" + run + "-" + i, Props.empty()));
    }
    return refs;
  }

  private static Floor floor(
      int entities, ConcurrentLinkedQueue<Long> latencies, int failed, int seconds) {
    long[] lat = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
    return new Floor(
        entities,
        BenchSupport.percentile(lat, 0.50) / 1e6,
        BenchSupport.percentile(lat, 0.99) / 1e6,
        (lat.length - failed) / (double) seconds,
        failed);
  }

  private static void loop(
      ActorSystem<?> system,
      ActorRef<Persist> ref,
      long measureFrom,
      long end,
      ConcurrentLinkedQueue<Long> latencies,
      AtomicInteger failed,
      CompletableFuture<Void> done) {
    long sent = System.nanoTime();
    if (sent >= end) {
      done.complete(null);
      return;
    }
    AskPattern.<Persist, Long>ask(ref, Persist::new, Duration.ofSeconds(30), system.scheduler())
        .whenCompleteAsync(
            (n, e) -> {
              long now = System.nanoTime();
              if (sent >= measureFrom && now <= end) {
                latencies.add(now - sent);
                if (e != null) {
                  failed.incrementAndGet();
                }
              }
              loop(system, ref, measureFrom, end, latencies, failed, done);
            },
            system.executionContext());
  }
}
