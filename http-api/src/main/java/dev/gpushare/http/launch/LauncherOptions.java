package dev.gpushare.http.launch;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The launcher's command line, parsed without side effects. Flags take their value as the next
 * argument or after {@code =} ({@code --port 0}, {@code --port=0}); each may be given once.
 *
 * @param host interface to listen on, default {@code 127.0.0.1}
 * @param port TCP port, default 8080; {@code 0} picks a free port
 * @param data the data directory (journal, {@code clock.txt}), default {@code ./data}
 * @param clock the clock chosen by {@code --clock}; when empty, {@code gpushare.clock} decides
 * @param config a HOCON file layered over the built-in embedded configuration
 * @param help whether {@code --help} was asked for (the other fields are then defaults)
 * @param webhook the admission webhook's HTTPS listener, off unless {@code --webhook-port} is given
 * @param kubernetes {@code --kubernetes}: nodes and pods come from the API server (informers), and
 *     node status, pod annotations, conditions and Events are written back to it
 * @param freshStart {@code --fresh-start}: the operator says that a data directory which served
 *     before (it has an {@code admin-token}) but whose H2 journal is missing or empty may start
 *     with an empty journal; without it such a start is refused
 */
public record LauncherOptions(
    String host,
    int port,
    Path data,
    Optional<ClockMode> clock,
    Optional<Path> config,
    boolean help,
    Webhook webhook,
    boolean kubernetes,
    Extender extender,
    boolean freshStart) {

  /** Without {@code --fresh-start}. */
  public LauncherOptions(
      String host,
      int port,
      Path data,
      Optional<ClockMode> clock,
      Optional<Path> config,
      boolean help,
      Webhook webhook,
      boolean kubernetes,
      Extender extender) {
    this(host, port, data, clock, config, help, webhook, kubernetes, extender, false);
  }

  /** Without the scheduler extender's listener. */
  public LauncherOptions(
      String host,
      int port,
      Path data,
      Optional<ClockMode> clock,
      Optional<Path> config,
      boolean help,
      Webhook webhook,
      boolean kubernetes) {
    this(host, port, data, clock, config, help, webhook, kubernetes, Extender.OFF);
  }

  /** The options of the embedded mode. */
  public LauncherOptions(
      String host,
      int port,
      Path data,
      Optional<ClockMode> clock,
      Optional<Path> config,
      boolean help,
      Webhook webhook) {
    this(host, port, data, clock, config, help, webhook, false);
  }

  /** The options without the admission webhook. */
  public LauncherOptions(
      String host,
      int port,
      Path data,
      Optional<ClockMode> clock,
      Optional<Path> config,
      boolean help) {
    this(host, port, data, clock, config, help, Webhook.OFF);
  }

  /**
   * The admission webhook's HTTPS listener ({@code --webhook-port}, {@code --tls-cert}, {@code
   * --tls-key}): on {@code --host}, its own port; the three flags go together.
   *
   * @param port {@code 0} when the webhook is off (the default)
   * @param tlsCert PEM serving certificate (then intermediates); present exactly when {@code port >
   *     0}
   * @param tlsKey PEM private key of that certificate; present exactly when {@code port > 0}
   */
  public record Webhook(int port, Optional<Path> tlsCert, Optional<Path> tlsKey) {
    public static final Webhook OFF = new Webhook(0, Optional.empty(), Optional.empty());

    public boolean enabled() {
      return port > 0;
    }
  }

  /**
   * The scheduler extender's mutual-TLS listener ({@code --extender-port}, {@code
   * --extender-client-ca}; deploy/scheduler-extender): on {@code --host}, its own port, serving
   * with the webhook's certificate and key ({@code --tls-cert}, {@code --tls-key}), accepting only
   * clients whose certificate the given CA issued.
   *
   * @param port {@code 0} when off (the default)
   */
  public record Extender(int port, Optional<Path> clientCa) {
    public static final Extender OFF = new Extender(0, Optional.empty());

    public boolean enabled() {
      return port > 0;
    }
  }

  public static final String DEFAULT_HOST = "127.0.0.1";
  public static final int DEFAULT_PORT = 8080;
  public static final Path DEFAULT_DATA = Path.of("data");

  private static final String FLAGS =
      "--port N, --host H, --data DIR, --clock system|manual, --config FILE, --webhook-port N,"
          + " --tls-cert FILE, --tls-key FILE, --extender-port N, --extender-client-ca FILE,"
          + " --kubernetes, --fresh-start, --help";

  /** The defaults, as if no flag were given. */
  public static LauncherOptions defaults() {
    return new LauncherOptions(
        DEFAULT_HOST, DEFAULT_PORT, DEFAULT_DATA, Optional.empty(), Optional.empty(), false);
  }

  /** Parses the arguments; a {@link LaunchException} names the flag, the value and the rule. */
  public static LauncherOptions parse(List<String> args) {
    if (args.contains("--help") || args.contains("-h")) {
      return new LauncherOptions(
          DEFAULT_HOST, DEFAULT_PORT, DEFAULT_DATA, Optional.empty(), Optional.empty(), true);
    }
    String host = DEFAULT_HOST;
    int port = DEFAULT_PORT;
    Path data = DEFAULT_DATA;
    Optional<ClockMode> clock = Optional.empty();
    Optional<Path> config = Optional.empty();
    int webhookPort = 0;
    Optional<Path> tlsCert = Optional.empty();
    Optional<Path> tlsKey = Optional.empty();
    boolean kubernetes = false;
    boolean freshStart = false;
    int extenderPort = 0;
    Optional<Path> extenderCa = Optional.empty();
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < args.size(); i++) {
      String arg = args.get(i);
      if (!arg.startsWith("-")) {
        throw new LaunchException(
            "unexpected argument '" + arg + "'; every value follows its flag: " + FLAGS);
      }
      int eq = arg.indexOf('=');
      String flag = eq < 0 ? arg : arg.substring(0, eq);
      if (flag.equals("--kubernetes") || flag.equals("--fresh-start")) {
        if (eq >= 0) {
          throw new LaunchException(
              flag + ": takes no value, '" + arg.substring(eq + 1) + "' given");
        }
        if (!seen.add(flag)) {
          throw new LaunchException(flag + ": given more than once; give it once");
        }
        if (flag.equals("--kubernetes")) {
          kubernetes = true;
        } else {
          freshStart = true;
        }
        continue;
      }
      if (!List.of(
              "--port",
              "--host",
              "--data",
              "--clock",
              "--config",
              "--webhook-port",
              "--tls-cert",
              "--tls-key",
              "--extender-port",
              "--extender-client-ca")
          .contains(flag)) {
        throw new LaunchException("unknown flag '" + flag + "'; accepted: " + FLAGS);
      }
      if (!seen.add(flag)) {
        throw new LaunchException(flag + ": given more than once; give it once");
      }
      String value;
      if (eq >= 0) {
        value = arg.substring(eq + 1);
      } else if (i + 1 < args.size() && !args.get(i + 1).startsWith("--")) {
        value = args.get(++i);
      } else {
        throw new LaunchException(flag + ": missing value; expected " + expected(flag));
      }
      switch (flag) {
        case "--port" -> port = port(flag, value);
        case "--host" -> host = nonBlank(flag, value);
        case "--data" -> data = path(flag, value);
        case "--clock" ->
            clock =
                Optional.of(
                    ClockMode.parse(value)
                        .orElseThrow(
                            () ->
                                new LaunchException(
                                    "--clock: '" + value + "' given; expected " + expected(flag))));
        case "--config" -> config = Optional.of(path(flag, value));
        case "--webhook-port" -> webhookPort = port(flag, value);
        case "--tls-cert" -> tlsCert = Optional.of(path(flag, value));
        case "--tls-key" -> tlsKey = Optional.of(path(flag, value));
        case "--extender-port" -> extenderPort = port(flag, value);
        case "--extender-client-ca" -> extenderCa = Optional.of(path(flag, value));
        default -> throw new IllegalStateException("unhandled flag " + flag);
      }
    }
    return new LauncherOptions(
        host,
        port,
        data,
        clock,
        config,
        false,
        webhook(port, webhookPort, tlsCert, tlsKey),
        kubernetes,
        extender(port, webhookPort, extenderPort, extenderCa),
        freshStart);
  }

  /** The extender needs its client CA and the webhook's TLS pair, on a port of its own. */
  private static Extender extender(
      int apiPort, int webhookPort, int port, Optional<Path> clientCa) {
    if (port == 0) {
      if (clientCa.isPresent()) {
        throw new LaunchException(
            "--extender-client-ca: given without --extender-port; give --extender-port N (e.g."
                + " 8444) too, or leave it out");
      }
      return Extender.OFF;
    }
    if (clientCa.isEmpty()) {
      throw new LaunchException(
          "--extender-port "
              + port
              + ": --extender-client-ca missing; the extender accepts only clients whose"
              + " certificate that CA issued (mutual TLS), so give --extender-client-ca FILE (PEM)");
    }
    if (webhookPort == 0) {
      throw new LaunchException(
          "--extender-port "
              + port
              + ": needs --webhook-port, --tls-cert and --tls-key; the extender serves HTTPS with"
              + " the webhook's certificate and key");
    }
    if (port == apiPort || port == webhookPort) {
      throw new LaunchException(
          "--extender-port "
              + port
              + ": already taken by "
              + (port == apiPort ? "--port" : "--webhook-port")
              + "; give the extender a port of its own (e.g. 8444)");
    }
    return new Extender(port, clientCa);
  }

  /** The webhook flags go together: a port needs a certificate and a key, and they a port. */
  private static Webhook webhook(
      int apiPort, int port, Optional<Path> tlsCert, Optional<Path> tlsKey) {
    if (port == 0) {
      if (tlsCert.isPresent() || tlsKey.isPresent()) {
        throw new LaunchException(
            (tlsCert.isPresent() ? "--tls-cert" : "--tls-key")
                + ": given without --webhook-port; the certificate and key serve the admission"
                + " webhook only, so also give --webhook-port N (e.g. 8443), or leave them out");
      }
      return Webhook.OFF;
    }
    if (tlsCert.isEmpty() || tlsKey.isEmpty()) {
      throw new LaunchException(
          "--webhook-port "
              + port
              + ": "
              + (tlsCert.isEmpty() ? "--tls-cert" : "--tls-key")
              + " missing; the webhook serves HTTPS only (Kubernetes calls webhooks over TLS),"
              + " so give --tls-cert FILE and --tls-key FILE (PEM, e.g. tls.crt and tls.key of a"
              + " kubernetes.io/tls Secret)");
    }
    if (port == apiPort) {
      throw new LaunchException(
          "--webhook-port "
              + port
              + ": the same port as --port; give the webhook a port of its own, e.g. 8443");
    }
    return new Webhook(port, tlsCert, tlsKey);
  }

  /** The text {@code --help} prints. */
  public static String usage() {
    return """
        Usage: java -jar gpushare.jar [flags]
               java -jar gpushare.jar init-schema [--config FILE] [--data DIR]
               java -jar gpushare.jar journal (PERSISTENCE_ID | --ids) [--from N] [--limit N]
                                      [--config FILE] [--data DIR]
               java -jar gpushare.jar replay TRACE_DIR [--trace NAME|all] [--policies LIST]
                                      [--seeds 1..10] [--order creation_time|shuffled] [--csv FILE]
               java -jar gpushare.jar install-library DIR
               java -cp gpushare.jar dev.gpushare.cli.GpushareCli COMMAND…   (the gpushare CLI)

        Starts the GPU-share arbiter in embedded mode (simulated GPU-HPN nodes; the H2 journal
        under --data, or PostgreSQL when the config's gpushare.journal says so) and serves the
        HTTP API of API.md. Prints one line, "gpushare listening on http://HOST:PORT", once it
        is ready.

        init-schema creates the journal's tables (needed once on PostgreSQL); journal prints
        an entity's events or the persistence ids; install-library copies the pod-side
        libgpushare.so into DIR (the webhook's init container). `java -jar gpushare.jar
        COMMAND --help` tells more.

        Flags:
          --port N                 TCP port, 0 to 65535 (0 picks a free port); default 8080
          --host H                 interface to listen on; default 127.0.0.1
          --data DIR               journal and state files; created if absent; default ./data
          --clock system|manual    the clock; default: config key gpushare.clock, else system.
                                   A manual clock moves only by POST /v1/clock/advance and
                                   resumes where it stopped after a restart on the same DIR.
          --config FILE            HOCON file over the built-in embedded configuration
                                   (simulated nodes, reserved CPU/memory per GPU, ask timeout,
                                   the journal: gpushare.journal.kind = h2 | postgres, the
                                   GPUs: gpushare.gpu.backend = auto | nvml | simulated,
                                   the API server's limits: gpushare.http.max-watches,
                                   the pod side: gpushare.pod-side.socket = PATH, ...);
                                   its gpushare.nodes replaces the built-in node list
          --webhook-port N         HTTPS port of the admission webhook (POST /admission/mutate,
                                   POST /admission/validate) on --host, 0 to 65535; default 0:
                                   off. Any other port needs --tls-cert and --tls-key.
          --tls-cert FILE          PEM certificate the webhook serves (then any intermediates)
          --tls-key FILE           PEM private key of that certificate (PKCS#8, PKCS#1 RSA or
                                   SEC1 EC, unencrypted); both files are read again when they
                                   change, e.g. when cert-manager renews the Secret
          --kubernetes             Kubernetes mode: nodes labelled
                                   alibabacloud.com/gpu-share-policy and the pods bound to them
                                   come from the API server (in-cluster service account, or
                                   KUBECONFIG / kubernetes.* system properties); node status, pod
                                   annotations, conditions and Events are written back. With
                                   NODE_NAME set, only that node (the DaemonSet member's own).
                                   No simulated nodes are registered.
          --fresh-start            allow a start on a --data directory that has served before
                                   (it holds admin-token) but whose journal.mv.db is missing or
                                   empty: the server then begins with an empty journal, i.e. a
                                   new cluster that knows no node, pod or decision. Without it
                                   such a start is refused (status 1). Ignored when the journal
                                   holds data; give it for that one start only
          --help                   this text

        Exit status: 0 after --help, 2 for a bad flag, configuration or data directory,
        1 when startup fails otherwise (e.g. gpushare.gpu.backend = nvml without the NVIDIA
        driver's libnvidia-ml.so.1, or a lost journal without --fresh-start), 3 when H2 closed
        the journal database after a write error (a full disk): start the server again to
        recover from the file. SIGTERM stops the server gracefully.
        """;
  }

  private static String expected(String flag) {
    return switch (flag) {
      case "--port" -> "an integer from 0 to 65535 (0 picks a free port)";
      case "--host" -> "a host name or IP address to listen on, e.g. 127.0.0.1 or 0.0.0.0";
      case "--data" -> "a directory path";
      case "--clock" -> ClockMode.accepted();
      case "--config" -> "the path of a HOCON file";
      case "--webhook-port" -> "an integer from 0 to 65535 (0 turns the webhook off)";
      case "--tls-cert" -> "the path of a PEM certificate file";
      case "--tls-key" -> "the path of a PEM private key file";
      default -> "a value";
    };
  }

  private static int port(String flag, String value) {
    try {
      int port = Integer.parseInt(value);
      if (port >= 0 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException e) {
      // reported below with the accepted range
    }
    throw new LaunchException(flag + ": '" + value + "' given; expected " + expected(flag));
  }

  private static String nonBlank(String flag, String value) {
    if (value.isBlank()) {
      throw new LaunchException(flag + ": empty value given; expected " + expected(flag));
    }
    return value.strip();
  }

  private static Path path(String flag, String value) {
    String text = nonBlank(flag, value);
    try {
      return Path.of(text);
    } catch (InvalidPathException e) {
      throw new LaunchException(
          flag + ": '" + value + "' given; not a valid path (" + e.getReason() + ")");
    }
  }
}
