package dev.gpushare.http.tools;

import dev.gpushare.arbiter.KubernetesNames;
import dev.gpushare.http.launch.CommandArgs;
import dev.gpushare.http.launch.ExitStatus;
import dev.gpushare.http.launch.JournalAccess;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.persistence.JdbcJournalInspector;
import dev.gpushare.persistence.JournalInspector;
import dev.gpushare.persistence.JournalInspector.HistoryEntry;
import dev.gpushare.persistence.JournalInspector.HistoryPage;
import dev.gpushare.persistence.JournalInspector.JournalEntry;
import dev.gpushare.persistence.JournalSettings;
import dev.gpushare.persistence.SchemaSetup;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code java -jar gpushare.jar journal PERSISTENCE_ID [--from N] [--limit N] [--config FILE]
 * [--data DIR]} prints one entity's events as a timeline, one line per event: sequence number,
 * write time, event type and the event as compact JSON, separated by two spaces ({@link #line}).
 * {@code journal --pod NS/NAME [--after CURSOR] [--limit N]} prints a pod's whole history ({@link
 * JournalInspector#history}, as {@code GET /v1/namespaces/NS/pods/NAME/history}), one line per
 * entry ({@link #printHistory}); when {@code --limit} cut it short, the cursor to go on after is
 * said on stderr. {@code journal --ids} lists the persistence ids, one per line. Both read the
 * configured journal ({@code gpushare.journal}) through {@link JdbcJournalInspector}, exactly as
 * the server's {@code /v1/journal} endpoints do.
 *
 * <p>PostgreSQL can be read at any time. The embedded H2 file is locked by the server that uses it,
 * so on H2 the command works while that server is stopped and otherwise says so. Exit status: 0
 * (also when there are no events), 2 for a bad flag, configuration or {@code --data}, 1 when the
 * journal cannot be read.
 */
public final class JournalCommand {

  public static final String NAME = "journal";

  private static final String FLAGS =
      "PERSISTENCE_ID, --ids or --pod NS/NAME, --from N, --after CURSOR, --limit N, --config FILE,"
          + " --data DIR, --help";
  private static final long DEADLINE_SECONDS = 120;
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  private JournalCommand() {}

  static String usage() {
    return """
        Usage: java -jar gpushare.jar journal PERSISTENCE_ID [--from N] [--limit N]
                                              [--config FILE] [--data DIR]
               java -jar gpushare.jar journal --pod NS/NAME [--after CURSOR] [--limit N]
                                              [--config FILE] [--data DIR]
               java -jar gpushare.jar journal --ids [--config FILE] [--data DIR]

        Prints the events of one entity from the configured journal as a timeline, one line
        per event:

          SEQUENCE_NR  WRITE_TIME (UTC, ISO-8601)  TYPE  EVENT_AS_COMPACT_JSON

        With --pod, a pod's whole history: its own records (Pod|NS/NAME/UID) and every
        decision about it by every node's arbiter (NodeArbiter|NODE), every pod that went by
        the name, in journal order (as GET /v1/namespaces/NS/pods/NAME/history), one line each:

          CURSOR  WRITE_TIME  PERSISTENCE_ID  SEQUENCE_NR  TYPE  EVENT_AS_COMPACT_JSON

        With --ids, lists the persistence ids (Node|…, Gpu|…, Pod|…), one per line, sorted.
        Quote ids in a shell: they contain '|'.

        The journal is the one the server uses: gpushare.journal in --config FILE (PostgreSQL
        can be read at any time), else the embedded H2 file under --data, which the running
        server locks: stop the server first, or read it over HTTP while it runs
        (GET /v1/journal/persistence-ids, GET /v1/journal/events?persistenceId=…).

        Flags:
          --ids           list the persistence ids instead of events
          --pod NS/NAME   the history of the pod NAME in namespace NS instead
          --from N        first sequence number, 1 or more; default 1
          --after CURSOR  --pod: the entries after this cursor, 0 or more; default 0 (all)
          --limit N       at most N events, 1 or more; default: all
          --config FILE   HOCON file over the built-in configuration (as for the server)
          --data DIR      the H2 data directory (kind = h2 only); default ./data
          --help          this text

        Exit status: 0 (also when there are no events), 2 for a bad flag, configuration or
        --data, 1 when the journal cannot be read.
        """;
  }

  public static int run(List<String> args, PrintStream out, PrintStream err) {
    Optional<Path> config;
    Path data;
    boolean ids;
    String persistenceId = null;
    String[] pod = null;
    long from;
    long after;
    int limit;
    try {
      CommandArgs parsed =
          CommandArgs.parse(
              args,
              Set.of("--from", "--after", "--pod", "--limit", "--config", "--data"),
              Set.of("--ids", "--help"),
              FLAGS);
      if (parsed.has("--help")) {
        out.print(usage());
        out.flush();
        return 0;
      }
      ids = parsed.has("--ids");
      List<String> positional = parsed.positional();
      Optional<String> podFlag = parsed.value("--pod");
      if (podFlag.isPresent()) {
        if (ids) {
          throw new LaunchException("--pod and --ids: give one of them");
        }
        if (!positional.isEmpty()) {
          throw new LaunchException(
              "--pod reads a pod's history; give it without a PERSISTENCE_ID ('"
                  + positional.get(0)
                  + "' given)");
        }
        if (parsed.value("--from").isPresent()) {
          throw new LaunchException(
              "--from: a sequence number of one entity, not of a pod's history; give --after"
                  + " CURSOR");
        }
        pod = podRef(podFlag.get());
      } else if (parsed.value("--after").isPresent()) {
        throw new LaunchException("--after: applies to --pod NS/NAME; give --from N for an entity");
      }
      if (pod != null) {
        // checked above
      } else if (ids) {
        if (!positional.isEmpty()) {
          throw new LaunchException(
              "--ids lists every persistence id; give it without a PERSISTENCE_ID ('"
                  + positional.get(0)
                  + "' given)");
        }
        for (String flag : List.of("--from", "--limit")) {
          if (parsed.value(flag).isPresent()) {
            throw new LaunchException(flag + ": applies to events, not to --ids; leave it out");
          }
        }
      } else if (positional.isEmpty()) {
        throw new LaunchException(
            "missing PERSISTENCE_ID; give the id of an entity (list them with `journal --ids`)");
      } else if (positional.size() > 1) {
        throw new LaunchException(
            "unexpected argument '"
                + positional.get(1)
                + "'; give one PERSISTENCE_ID (quote it: ids contain '|')");
      } else {
        persistenceId = positional.get(0);
        if (persistenceId.isBlank()) {
          throw new LaunchException("PERSISTENCE_ID: empty; give the id of an entity");
        }
      }
      from = parsed.number("--from", 1, Long.MAX_VALUE, "a sequence number, 1 or more").orElse(1L);
      after =
          parsed
              .number(
                  "--after",
                  0,
                  Long.MAX_VALUE,
                  "a cursor, 0 or more (0: from the start; else a CURSOR printed before)")
              .orElse(0L);
      limit =
          parsed
              .number("--limit", 1, Integer.MAX_VALUE, "a number of events, 1 or more")
              .orElse((long) Integer.MAX_VALUE)
              .intValue();
      config = parsed.path("--config");
      data = parsed.path("--data").orElse(LauncherOptions.DEFAULT_DATA);
    } catch (LaunchException e) {
      return usageError(err, e.getMessage());
    }
    JournalAccess journal;
    try {
      journal = JournalAccess.open("gpushare-journal", config, data, true);
    } catch (LaunchException | IllegalArgumentException | UncheckedIOException e) {
      return usageError(err, e.getMessage());
    }
    try (journal) {
      SchemaSetup.verify(journal.system())
          .toCompletableFuture()
          .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
      JournalInspector inspector = JdbcJournalInspector.create(journal.system());
      if (pod != null) {
        HistoryPage page = await(inspector.history(pod[0], pod[1], after, limit));
        printHistory(page.items(), out);
        if (page.items().isEmpty()) {
          err.println(
              "gpushare "
                  + NAME
                  + ": no history for pod "
                  + pod[0]
                  + "/"
                  + pod[1]
                  + (after > 0 ? " after cursor " + after : "")
                  + " in "
                  + journal.database());
        } else if (page.next() != null) {
          err.println(
              "gpushare "
                  + NAME
                  + ": more after cursor "
                  + page.next()
                  + " (give --after "
                  + page.next()
                  + ")");
        }
      } else if (ids) {
        for (String id : await(inspector.persistenceIds())) {
          out.println(id);
        }
      } else {
        List<JournalEntry> events = await(inspector.events(persistenceId, from, limit));
        print(events, out);
        if (events.isEmpty()) {
          err.println(
              "gpushare "
                  + NAME
                  + ": no events for "
                  + persistenceId
                  + (from > 1 ? " from sequence number " + from : "")
                  + " in "
                  + journal.database()
                  + " (list the ids with `journal --ids`)");
        }
      }
      out.flush();
      err.flush();
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return failure(err, "interrupted");
    } catch (TimeoutException e) {
      return failure(
          err,
          "journal database "
              + journal.database()
              + " did not answer within "
              + DEADLINE_SECONDS
              + " s; check that it is reachable");
    } catch (ExecutionException | RuntimeException e) {
      return failure(err, describe(e, journal));
    }
  }

  /** {@code NS/NAME}, each a Kubernetes name; else a usage error saying what is accepted. */
  static String[] podRef(String value) {
    int slash = value.indexOf('/');
    if (slash <= 0 || slash == value.length() - 1 || value.indexOf('/', slash + 1) >= 0) {
      throw new LaunchException(
          "--pod '" + value + "': give the pod as NAMESPACE/NAME, e.g. default/my-notebook");
    }
    String ns = value.substring(0, slash);
    String name = value.substring(slash + 1);
    if (!KubernetesNames.isDns1123Label(ns)) {
      throw new LaunchException(
          "--pod '"
              + value
              + "': namespace '"
              + ns
              + "' is not "
              + KubernetesNames.DNS1123_LABEL_ACCEPTED);
    }
    if (!KubernetesNames.isDns1123Subdomain(name)) {
      throw new LaunchException(
          "--pod '"
              + value
              + "': name '"
              + name
              + "' is not "
              + KubernetesNames.DNS1123_SUBDOMAIN_ACCEPTED);
    }
    return new String[] {ns, name};
  }

  /**
   * Prints a pod's history, columns two spaces apart and aligned: {@code CURSOR WRITE_TIME
   * PERSISTENCE_ID SEQUENCE_NR TYPE JSON}.
   */
  public static void printHistory(List<HistoryEntry> entries, PrintStream out) {
    int cursorWidth = 1;
    int idWidth = 1;
    int seqWidth = 1;
    int typeWidth = 1;
    for (HistoryEntry e : entries) {
      cursorWidth = Math.max(cursorWidth, Long.toString(e.cursor()).length());
      idWidth = Math.max(idWidth, e.persistenceId().length());
      seqWidth = Math.max(seqWidth, Long.toString(e.sequenceNr()).length());
      typeWidth = Math.max(typeWidth, e.type().length());
    }
    for (HistoryEntry e : entries) {
      out.println(
          String.format(
              "%"
                  + cursorWidth
                  + "d  %s  %-"
                  + idWidth
                  + "s  %"
                  + seqWidth
                  + "d  %-"
                  + typeWidth
                  + "s  %s",
              e.cursor(),
              TIME.format(e.timestamp()),
              e.persistenceId(),
              e.sequenceNr(),
              e.type(),
              e.event().toString()));
    }
  }

  /** Prints the timeline, columns aligned. */
  public static void print(List<JournalEntry> events, PrintStream out) {
    int seqWidth = 1;
    int typeWidth = 1;
    for (JournalEntry entry : events) {
      seqWidth = Math.max(seqWidth, Long.toString(entry.sequenceNr()).length());
      typeWidth = Math.max(typeWidth, entry.type().length());
    }
    for (JournalEntry entry : events) {
      out.println(line(entry, seqWidth, typeWidth));
    }
  }

  /**
   * {@code SEQ TIME TYPE JSON}: the sequence number right-aligned, the write time in UTC to the
   * millisecond, the type padded to {@code typeWidth}, the event as compact JSON.
   */
  public static String line(JournalEntry entry, int seqWidth, int typeWidth) {
    return String.format(
        "%" + seqWidth + "d  %s  %-" + typeWidth + "s  %s",
        entry.sequenceNr(),
        TIME.format(entry.timestamp()),
        entry.type(),
        entry.event().toString());
  }

  private static String describe(Throwable error, JournalAccess journal) {
    Throwable cause = InitSchemaCommand.unwrap(error);
    if (SchemaSetup.isDatabaseInUse(cause)) {
      return "journal database "
          + journal.database()
          + " is in use by another process: the embedded H2 journal is locked while the gpushare"
          + " server that uses this --data directory runs; stop that server and run the command"
          + " again, or read the journal over HTTP while it runs (GET /v1/journal/persistence-ids,"
          + " GET /v1/journal/events?persistenceId=…)";
    }
    if (cause instanceof SchemaSetup.MissingTablesException missing) {
      return "journal database "
          + missing.database()
          + " has no gpushare journal: tables "
          + missing.missing()
          + " are missing"
          + (journal.settings() instanceof JournalSettings.Postgres
              ? "; create them with `java -jar gpushare.jar init-schema --config FILE`, or check"
                  + " gpushare.journal.postgres.url"
              : "");
    }
    return InitSchemaCommand.message(cause);
  }

  private static <T> T await(java.util.concurrent.CompletionStage<T> stage)
      throws InterruptedException, ExecutionException, TimeoutException {
    return stage.toCompletableFuture().get(DEADLINE_SECONDS, TimeUnit.SECONDS);
  }

  private static int usageError(PrintStream err, String message) {
    err.println("gpushare " + NAME + ": " + message);
    err.println("gpushare " + NAME + ": run `java -jar gpushare.jar " + NAME + " --help`");
    err.flush();
    return ExitStatus.USAGE;
  }

  private static int failure(PrintStream err, String message) {
    err.println("gpushare " + NAME + ": " + message);
    err.flush();
    return ExitStatus.FAILED;
  }
}
