package dev.gpushare.http.tools;

import dev.gpushare.http.launch.CommandArgs;
import dev.gpushare.http.launch.ExitStatus;
import dev.gpushare.http.launch.JournalAccess;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.persistence.JournalSettings;
import dev.gpushare.persistence.SchemaSetup;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * {@code java -jar gpushare.jar init-schema [--config FILE] [--data DIR]}: creates the journal,
 * tag, snapshot and durable-state tables of the configured journal ({@code gpushare.journal}) where
 * they are missing, widens {@code persistence_id} columns made by an older schema (VARCHAR(255)) to
 * {@value SchemaSetup#PERSISTENCE_ID_WIDTH} characters keeping their rows, prints what it found and
 * did, and exits 0. Safe to run again: it then changes nothing. Exit status 2 for a bad flag or
 * configuration, 1 when the database cannot be used.
 *
 * <p>Also the schema policy of a server start ({@link #atStart}): H2, and PostgreSQL with {@code
 * create-schema = true}, create missing tables and widen narrow columns; PostgreSQL otherwise only
 * checks them and names this command when tables are missing or too narrow.
 */
public final class InitSchemaCommand {

  public static final String NAME = "init-schema";

  private static final String FLAGS = "--config FILE, --data DIR, --help";
  private static final long DEADLINE_SECONDS = 120;

  private InitSchemaCommand() {}

  static String usage() {
    return """
        Usage: java -jar gpushare.jar init-schema [--config FILE] [--data DIR]

        Creates the tables of the configured journal (gpushare.journal in --config FILE, else
        the built-in embedded configuration) where they are missing: event_journal, event_tag,
        snapshot and durable_state, with their indexes. Widens persistence_id columns made by
        an older schema (VARCHAR(255)) to VARCHAR(512), keeping every row: persistence ids hold
        Kubernetes names of up to 253 characters. Prints what existed, what it created and
        what it widened. Idempotent: a second run changes nothing.

        On PostgreSQL (gpushare.journal.kind = postgres) the DDL is gpushare's copy of
        pekko-persistence-jdbc's schema (gpushare-postgres-schema.sql), applied in one
        transaction; the configured user needs the right to create tables. A server on
        PostgreSQL does not create them itself unless gpushare.journal.postgres.create-schema
        = true. On H2 (the default) the server creates them at every start anyway.

        Flags:
          --config FILE   HOCON file over the built-in configuration (as for the server)
          --data DIR      the H2 data directory (kind = h2 only); default ./data
          --help          this text

        Exit status: 0 when the tables exist afterwards, 2 for a bad flag or configuration,
        1 when the database cannot be used.
        """;
  }

  public static int run(List<String> args, PrintStream out, PrintStream err) {
    Optional<Path> config;
    Path data;
    try {
      CommandArgs parsed =
          CommandArgs.parse(args, Set.of("--config", "--data"), Set.of("--help"), FLAGS);
      if (parsed.has("--help")) {
        out.print(usage());
        out.flush();
        return 0;
      }
      if (!parsed.positional().isEmpty()) {
        throw new LaunchException(
            "unexpected argument '"
                + parsed.positional().get(0)
                + "'; every value follows its flag: "
                + FLAGS);
      }
      config = parsed.path("--config");
      data = parsed.path("--data").orElse(LauncherOptions.DEFAULT_DATA);
    } catch (LaunchException e) {
      return usageError(err, e.getMessage());
    }
    JournalAccess journal;
    try {
      journal = JournalAccess.open("gpushare-init-schema", config, data, false);
    } catch (LaunchException | IllegalArgumentException | UncheckedIOException e) {
      return usageError(err, e.getMessage());
    }
    try (journal) {
      SchemaSetup.Report report =
          SchemaSetup.create(journal.system())
              .toCompletableFuture()
              .get(DEADLINE_SECONDS, TimeUnit.SECONDS);
      out.println(
          NAME
              + ": "
              + journal.settings().kind()
              + " journal database "
              + report.database()
              + ", schema script "
              + report.script());
      out.println("  created:         " + listed(report.created()));
      out.println("  already present: " + listed(report.present()));
      out.println(
          "  widened:         "
              + (report.widened().isEmpty()
                  ? "(none)"
                  : String.join(", ", report.widened())
                      + " (to VARCHAR("
                      + SchemaSetup.PERSISTENCE_ID_WIDTH
                      + "), every row kept)"));
      out.println(
          report.created().isEmpty() && report.widened().isEmpty()
              ? "  nothing to do: every table exists"
              : "  done: "
                  + report.created().size()
                  + " table(s) created, "
                  + report.widened().size()
                  + " column(s) widened");
      out.flush();
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
      return failure(err, message(e));
    }
  }

  /**
   * The schema step of a server start: create missing tables (H2; PostgreSQL with {@code
   * create-schema = true}) or check them (PostgreSQL), failing with a message that names this
   * command and {@code configFile}.
   */
  public static CompletionStage<Done> atStart(
      ActorSystem<?> system, JournalSettings journal, Optional<Path> configFile) {
    if (journal.createsSchemaAtStart()) {
      return SchemaSetup.ensure(system);
    }
    String file = configFile.map(Path::toString).orElse("FILE");
    return SchemaSetup.verifyWritable(system)
        .exceptionally(
            error -> {
              Throwable cause = unwrap(error);
              if (cause instanceof SchemaSetup.NarrowColumnsException narrow) {
                throw new IllegalStateException(
                    "journal database "
                        + narrow.database()
                        + " has an older gpushare schema: columns "
                        + narrow.narrow()
                        + " are narrower than the "
                        + SchemaSetup.PERSISTENCE_ID_WIDTH
                        + " characters that persistence ids of Kubernetes names need, and"
                        + " gpushare.journal.postgres.create-schema is false; run `java -jar"
                        + " gpushare.jar init-schema --config "
                        + file
                        + "` once (it widens them in place and keeps every row), or set"
                        + " gpushare.journal.postgres.create-schema = true");
              }
              if (cause instanceof SchemaSetup.MissingTablesException missing) {
                throw new IllegalStateException(
                    "journal database "
                        + missing.database()
                        + " has no gpushare schema: tables "
                        + missing.missing()
                        + " are missing, and gpushare.journal.postgres.create-schema is false"
                        + " (operators own the DDL of a PostgreSQL journal); run `java -jar"
                        + " gpushare.jar init-schema --config "
                        + file
                        + "` once, or set gpushare.journal.postgres.create-schema = true");
              }
              throw cause instanceof RuntimeException r ? r : new CompletionException(cause);
            });
  }

  private static String listed(List<String> tables) {
    return tables.isEmpty() ? "(none)" : String.join(", ", tables);
  }

  static Throwable unwrap(Throwable error) {
    Throwable cause = error;
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  static String message(Throwable error) {
    Throwable cause = unwrap(error);
    return cause.getMessage() == null ? cause.toString() : cause.getMessage();
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
