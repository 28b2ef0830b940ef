package dev.gpushare.persistence;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.JsonSerializable;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.persistence.typed.javadsl.CommandHandler;
import org.apache.pekko.persistence.typed.javadsl.EventHandler;
import org.apache.pekko.persistence.typed.javadsl.EventSourcedBehavior;

/**
 * Child process of {@link CrashDurabilityTest} and {@link PostgresCrashDurabilityTest}: opens the
 * embedded H2 journal in {@code args[0]}, or with {@code --postgres URL} the PostgreSQL journal at
 * {@code URL} (as {@link PostgresServer#USER}), and lets {@value #WRITERS} entities persist without
 * pause, writer {@code i} in batches of {@code i + 1} events. It prints {@code READY} once the
 * schema is set up and {@code ACK <persistenceId> <sequenceNr>} for every event whose persist the
 * journal has acknowledged, and nothing else to stdout. It exits when stdin closes (the test is
 * gone) or after {@value #MAX_SECONDS} seconds, so it cannot outlive a failed test for long.
 */
public final class CrashWriter {

  static final int WRITERS = 3;
  static final String ENTITY_TYPE = "Writer";
  private static final int MAX_SECONDS = 120;

  private CrashWriter() {}

  public static void main(String[] args) throws Exception {
    exitWhenStdinCloses();
    Config profile =
        args[0].equals("--postgres")
            ? PersistenceProfiles.postgres(args[1], PostgresServer.USER, PostgresServer.PASSWORD)
            : PersistenceProfiles.embeddedH2(DataDirectory.prepare(Path.of(args[0])));
    Config config = profile.withFallback(ConfigFactory.load());
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "crash-writer", config);
    system
        .scheduler()
        .scheduleOnce(
            Duration.ofSeconds(MAX_SECONDS),
            () -> Runtime.getRuntime().halt(3),
            system.executionContext());
    try {
      SchemaSetup.ensure(system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (Exception e) {
      e.printStackTrace();
      Runtime.getRuntime().halt(2);
    }
    System.out.println("READY");
    System.out.flush();
    for (int i = 0; i < WRITERS; i++) {
      system.systemActorOf(Writer.create(i), "writer-" + i, Props.empty()).tell(Write.INSTANCE);
    }
  }

  /** The test never writes to stdin; end of input means it has closed the pipe or died. */
  private static void exitWhenStdinCloses() {
    Thread watchdog =
        new Thread(
            () -> {
              try {
                while (System.in.read() >= 0) {
                  continue;
                }
              } catch (IOException e) {
                System.err.println("stdin failed: " + e);
              }
              Runtime.getRuntime().halt(3);
            },
            "crash-writer-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  enum Write {
    INSTANCE
  }

  record Written(int writer, long n) implements JsonSerializable {}

  /** Persists batches forever; prints each acknowledged sequence number. */
  static final class Writer extends EventSourcedBehavior<Write, Written, Long> {

    private final ActorContext<Write> context;
    private final int index;

    static Behavior<Write> create(int index) {
      return Behaviors.setup(context -> new Writer(context, index));
    }

    private Writer(ActorContext<Write> context, int index) {
      super(PersistenceId.of(ENTITY_TYPE, "w-" + index));
      this.context = context;
      this.index = index;
    }

    @Override
    public Long emptyState() {
      return 0L;
    }

    @Override
    public CommandHandler<Write, Written, Long> commandHandler() {
      return newCommandHandlerBuilder()
          .forAnyState()
          .onCommand(
              Write.class,
              (written, write) -> {
                List<Written> batch = new ArrayList<>();
                for (int i = 1; i <= index + 1; i++) {
                  batch.add(new Written(index, written + i));
                }
                return Effect()
                    .persist(batch)
                    .thenRun(
                        total -> {
                          StringBuilder acks = new StringBuilder();
                          for (long n = written + 1; n <= total; n++) {
                            acks.append("ACK ")
                                .append(persistenceId().id())
                                .append(' ')
                                .append(n)
                                .append('\n');
                          }
                          System.out.print(acks);
                          System.out.flush();
                          context.getSelf().tell(Write.INSTANCE);
                        });
              })
          .build();
    }

    @Override
    public EventHandler<Long, Written> eventHandler() {
      return newEventHandlerBuilder().forAnyState().onEvent(Written.class, (n, e) -> n + 1).build();
    }
  }
}
