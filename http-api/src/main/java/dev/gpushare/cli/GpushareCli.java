package dev.gpushare.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code gpushare}, the command line of the HTTP API (API.md), also installed as the kubectl plugin
 * {@code kubectl-gpushare}: look at nodes, queues, pods and the journal, raise and release a pod's
 * demand, and run a workload under the arbiter ({@code run}, {@link WorkloadRunner}). It ships in
 * the server's jar ({@code java -cp gpushare.jar dev.gpushare.cli.GpushareCli}; the scripts in
 * {@code http-api/src/main/scripts} do that).
 *
 * <p>Exit status: 0 done; 1 the server refused ({@code error: <detail>} and each field at fault) or
 * could not be reached; 2 bad usage; 3 not authenticated (401) or not allowed (403); {@code run}
 * exits with its command's status.
 */
@Command(
    name = "gpushare",
    mixinStandardHelpOptions = true,
    versionProvider = GpushareCli.Version.class,
    sortOptions = false,
    description = {
      "The gpushare arbiter from the command line: nodes, ready queues, pods, a pod's history,"
          + " the journal, and a pod's workload (run).",
    },
    subcommands = {
      ViewCommands.Nodes.class,
      ViewCommands.Node.class,
      ViewCommands.Queue.class,
      ViewCommands.Pods.class,
      ViewCommands.Pod.class,
      ViewCommands.History.class,
      ViewCommands.Journal.class,
      ViewCommands.Demand.class,
      ViewCommands.Release.class,
      RunCommand.class,
      CommandLine.HelpCommand.class
    },
    footer = {
      "",
      "Connection: --server, else $GPUSHARE_SERVER, else "
          + GpushareCli.DEFAULT_SERVER
          + ": an http:// or https:// URL, or unix:/PATH (the node's data-plane socket).",
      "Token (sent as Authorization: Bearer): --token or --token-file, else $GPUSHARE_TOKEN or"
          + " $GPUSHARE_TOKEN_FILE, else ./data/admin-token (an embedded server's admin token),"
          + " else the pod's ServiceAccount token. A token from a file under /var/run/secrets/"
          + " (a pod's credential) is never sent over plain http:// to a host that is not"
          + " loopback.",
      "",
      "Exit status: 0 done; 1 the server refused or could not be reached; 2 bad usage;"
          + " 3 not authenticated or not allowed; run: its command's status."
    })
public final class GpushareCli implements Callable<Integer> {

  static final String DEFAULT_SERVER = "http://127.0.0.1:8080";
  static final String SERVER_ENV = "GPUSHARE_SERVER";
  static final int FAILURE = 1;
  static final int USAGE = 2;
  static final int AUTH = 3;

  @Option(
      names = "--server",
      paramLabel = "URL",
      scope = ScopeType.INHERIT,
      description =
          "the gpushare API: http(s)://HOST:PORT or unix:/PATH; default $GPUSHARE_SERVER, else "
              + DEFAULT_SERVER)
  String server;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      scope = ScopeType.INHERIT,
      description = "bearer token (default: see below)")
  String token;

  @Option(
      names = "--token-file",
      paramLabel = "FILE",
      scope = ScopeType.INHERIT,
      description = "file holding the bearer token")
  Path tokenFile;

  @Spec CommandSpec spec;

  private final Map<String, String> env;
  private final Path workingDir;
  private final Path serviceAccountToken;
  private final List<Path> podSecrets;
  private final Signals signals;
  private ApiClient client;

  GpushareCli(
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken,
      List<Path> podSecrets,
      Signals signals) {
    this.env = Map.copyOf(env);
    this.workingDir = workingDir;
    this.serviceAccountToken = serviceAccountToken;
    this.podSecrets = List.copyOf(podSecrets);
    this.signals = signals;
  }

  public static void main(String[] args) {
    PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
    PrintWriter err = new PrintWriter(System.err, true, StandardCharsets.UTF_8);
    int status =
        execute(
            args,
            System.getenv(),
            Path.of("").toAbsolutePath(),
            TokenLookup.SERVICE_ACCOUNT_TOKEN,
            Signals.posix(),
            out,
            err);
    out.flush();
    err.flush();
    System.exit(status);
  }

  /** Runs one command line; answers its exit status. */
  static int execute(
      String[] args,
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken,
      Signals signals,
      PrintWriter out,
      PrintWriter err) {
    return execute(
        args, env, workingDir, serviceAccountToken, TokenLookup.POD_SECRETS, signals, out, err);
  }

  /** As above, with the directories whose token files are pod credentials. */
  static int execute(
      String[] args,
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken,
      List<Path> podSecrets,
      Signals signals,
      PrintWriter out,
      PrintWriter err) {
    CommandLine cl = commandLine(env, workingDir, serviceAccountToken, podSecrets, signals);
    cl.setOut(out);
    cl.setErr(err);
    return cl.execute(args);
  }

  static CommandLine commandLine(
      Map<String, String> env, Path workingDir, Path serviceAccountToken, Signals signals) {
    return commandLine(env, workingDir, serviceAccountToken, TokenLookup.POD_SECRETS, signals);
  }

  static CommandLine commandLine(
      Map<String, String> env,
      Path workingDir,
      Path serviceAccountToken,
      List<Path> podSecrets,
      Signals signals) {
    GpushareCli root = new GpushareCli(env, workingDir, serviceAccountToken, podSecrets, signals);
    CommandLine cl = new CommandLine(root);
    cl.setCommandName(System.getProperty("gpushare.cli.name", "gpushare"));
    cl.setCaseInsensitiveEnumValuesAllowed(true);
    cl.getSubcommands().get("run").setStopAtPositional(true);
    cl.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> failed(e, commandLine.getErr(), root.client));
    return cl;
  }

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return USAGE;
  }

  /** The client of this command line's server and token, made on first use. */
  ApiClient client() {
    if (client == null) {
      Transport transport;
      if (server != null) {
        transport = Transport.of(server, "--server");
      } else {
        String fromEnv = env.get(SERVER_ENV);
        transport =
            fromEnv == null || fromEnv.isBlank()
                ? Transport.of(DEFAULT_SERVER, "the default server")
                : Transport.of(fromEnv, "$" + SERVER_ENV);
      }
      TokenLookup.Credentials credentials =
          TokenLookup.find(token, tokenFile, env, workingDir, serviceAccountToken, podSecrets);
      refuseClearText(transport, credentials);
      client = new ApiClient(transport, credentials);
    }
    return client;
  }

  /**
   * A pod's credential (a token file under /var/run/secrets/: the projected token of audience
   * gpushare, the ServiceAccount token) never goes over plain http:// to a host that is not
   * loopback, where it would cross the network in clear text (as libgpushare.so refuses it). Tokens
   * of one's own (--token, $GPUSHARE_TOKEN, files elsewhere) are the user's to send.
   */
  static void refuseClearText(Transport transport, TokenLookup.Credentials credentials) {
    if (!credentials.podCredential() || credentials.token().isEmpty()) {
      return;
    }
    transport
        .clearTextHost()
        .ifPresent(
            host -> {
              throw new CliException(
                  "will not send the pod's token (from "
                      + credentials.source()
                      + ") to "
                      + transport.server()
                      + ": plain http to "
                      + host
                      + ", which is not loopback, would carry it across the network in clear"
                      + " text; use the node's data-plane socket (--server"
                      + " unix:/run/gpushare/data-plane/gpushare.sock, what the webhook sets in"
                      + " $GPUSHARE_SERVER) or an https:// server");
            });
  }

  Map<String, String> env() {
    return env;
  }

  Signals signals() {
    return signals;
  }

  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  PrintWriter err() {
    return spec.commandLine().getErr();
  }

  /** A failure's message on stderr, and its exit status. */
  static int failed(Exception e, PrintWriter err, ApiClient client) {
    int status;
    if (e instanceof ApiException a) {
      if (a.status() == 401) {
        err.println("error: not authenticated: " + a.detail() + tokenHint(client));
        status = AUTH;
      } else if (a.status() == 403) {
        err.println("error: not allowed: " + a.detail() + tokenHint(client));
        status = AUTH;
      } else {
        err.println("error: " + a.detail());
        for (ApiException.FieldProblem f : a.errors()) {
          StringBuilder line = new StringBuilder("  ").append(f.field());
          if (!f.message().isEmpty()) {
            line.append(": ").append(f.message());
          }
          if (f.value() != null) {
            line.append(" (given: ").append(f.value()).append(')');
          }
          err.println(line);
        }
        status = FAILURE;
      }
    } else if (e instanceof UnreachableException u) {
      err.println(
          "error: cannot reach the gpushare server at " + u.server() + ": " + u.getMessage());
      status = FAILURE;
    } else if (e instanceof CliException) {
      err.println("error: " + e.getMessage());
      status = USAGE;
    } else if (e instanceof UncheckedIOException) {
      err.println("error: " + e.getMessage());
      status = FAILURE;
    } else {
      err.println("error: " + e);
      status = FAILURE;
    }
    err.flush();
    return status;
  }

  /** Where the token came from, for an authentication failure's message. */
  static String tokenHint(ApiClient client) {
    if (client == null) {
      return "";
    }
    TokenLookup.Credentials c = client.credentials();
    return c.token().isPresent() ? " (token from " + c.source() + ")" : " (" + c.source() + ")";
  }

  /** The version of the jar this runs from (Maven's pom.properties), or "unknown". */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      Properties p = new Properties();
      try (InputStream in =
          GpushareCli.class.getResourceAsStream(
              "/META-INF/maven/dev.gpushare/http-api/pom.properties")) {
        if (in != null) {
          p.load(in);
        }
      } catch (IOException e) {
        // no version then
      }
      return new String[] {"gpushare CLI " + p.getProperty("version", "(development build)")};
    }
  }
}
