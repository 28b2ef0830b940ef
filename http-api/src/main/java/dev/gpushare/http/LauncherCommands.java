package dev.gpushare.http;

import dev.gpushare.http.tools.InitSchemaCommand;
import dev.gpushare.http.tools.InstallLibraryCommand;
import dev.gpushare.http.tools.JournalCommand;
import dev.gpushare.http.tools.ReplayCommand;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * The launcher's commands, chosen by the first argument: {@code java -jar gpushare.jar init-schema
 * …} ({@link InitSchemaCommand}), {@code java -jar gpushare.jar journal …} ({@link
 * JournalCommand}), {@code replay} ({@link ReplayCommand}) and {@code install-library DIR} ({@link
 * InstallLibraryCommand}, the webhook's init container). Without one of them the launcher starts
 * the server.
 */
final class LauncherCommands {

  private LauncherCommands() {}

  static boolean isCommand(String[] args) {
    return args.length > 0
        && (args[0].equals(InitSchemaCommand.NAME)
            || args[0].equals(JournalCommand.NAME)
            || args[0].equals(ReplayCommand.NAME)
            || args[0].equals(InstallLibraryCommand.NAME));
  }

  /** Runs the command; answers its exit status. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    List<String> rest = Arrays.asList(args).subList(1, args.length);
    return switch (args[0]) {
      case InitSchemaCommand.NAME -> InitSchemaCommand.run(rest, out, err);
      case JournalCommand.NAME -> JournalCommand.run(rest, out, err);
      case ReplayCommand.NAME -> ReplayCommand.run(rest, out, err);
      case InstallLibraryCommand.NAME -> InstallLibraryCommand.run(rest, out, err);
      default -> throw new IllegalArgumentException("not a command: " + args[0]);
    };
  }
}
