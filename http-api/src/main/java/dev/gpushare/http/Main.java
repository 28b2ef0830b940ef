package dev.gpushare.http;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.gpushare.arbiter.ArbiterClock;
import dev.gpushare.arbiter.ManualClock;
import dev.gpushare.arbiter.SharePolicy;
import dev.gpushare.gpu.GpuBackend;
import dev.gpushare.gpu.GpuBackendUnavailable;
import dev.gpushare.gpu.GpuBackends;
import dev.gpushare.gpu.proc.ProcessPods;
import dev.gpushare.http.admission.AdmissionRoutes;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.http.auth.Access;
import dev.gpushare.http.auth.AdminToken;
import dev.gpushare.http.auth.AnyOf;
import dev.gpushare.http.auth.KubernetesAccess;
import dev.gpushare.http.extender.SchedulerExtenderServer;
import dev.gpushare.http.launch.ClockFile;
import dev.gpushare.http.launch.ClockMode;
import dev.gpushare.http.launch.EmbeddedConfig;
import dev.gpushare.http.launch.ExitStatus;
import dev.gpushare.http.launch.JournalAccess;
import dev.gpushare.http.launch.JournalConfig;
import dev.gpushare.http.launch.LaunchException;
import dev.gpushare.http.launch.LauncherOptions;
import dev.gpushare.http.launch.PodSideSettings;
import dev.gpushare.http.server.HttpLimits;
import dev.gpushare.http.server.UnixSocketBridge;
import dev.gpushare.http.tls.ServerTls;
import dev.gpushare.http.tools.InitSchemaCommand;
import dev.gpushare.node.GpuSettings;
import dev.gpushare.node.GpuShareRuntime;
import dev.gpushare.node.RuntimeSettings;
import dev.gpushare.node.api.GpuShareMetrics;
import dev.gpushare.node.api.GpuShareService;
import dev.gpushare.node.api.JournalStatus;
import dev.gpushare.node.cluster.ClusterFormation;
import dev.gpushare.node.cluster.ClusterTransport;
import dev.gpushare.node.kube.KubeWriter;
import dev.gpushare.node.kube.KubernetesMode;
import dev.gpushare.persistence.DataDirectory;
import dev.gpushare.persistence.JdbcJournalInspector;
import dev.gpushare.persistence.JournalHealth;
import dev.gpushare.persistence.JournalInspector;
import dev.gpushare.persistence.JournalSettings;
import dev.gpushare.persistence.SchemaSetup;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.BindFailedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The launcher ({@code java -jar gpushare.jar}): embedded mode with simulated GPU-HPN nodes and an
 * H2 journal under {@code --data}.
 *
 * <p>Startup: flags ({@link LauncherOptions}) → configuration ({@link EmbeddedConfig}) → data
 * directory → actor system {@code gpushare} (the configuration over the embedded H2 persistence
 * profile over the runtime's own settings) → GPU backend ({@code gpushare.gpu.backend}, {@link
 * #gpuBackend}) → journal schema → arbiter runtime → HTTP binding; then exactly one line goes to
 * stdout, {@code gpushare listening on http://HOST:PORT}. Logs go to stderr. A bad flag, key or
 * data directory ends the process with status 2 and one message naming the flag or key, the value
 * and what is accepted; any other startup failure with status 1. SIGTERM runs Pekko's coordinated
 * shutdown: the binding stops accepting, in-flight requests finish, the actors stop.
 *
 * <p>The journal is the embedded H2 file under {@code --data} unless {@code gpushare.journal}
 * selects PostgreSQL ({@link JournalConfig}); the schema step follows {@link
 * InitSchemaCommand#atStart}. The commands {@code init-schema} and {@code journal} ({@link
 * LauncherCommands}) use the same configuration without starting a server.
 *
 * <p>The data directory is the owner's alone ({@link DataDirectory}: 0700, its files 0600). A
 * directory that served before (it holds {@code admin-token}) whose H2 journal is missing or empty
 * is not taken for a new cluster: the launcher refuses it (status 1) unless {@code --fresh-start}
 * says so. While the H2 journal cannot write ({@link JournalHealth}: too little free space, a
 * failed write) writing requests fail at once with the reason and {@code /readyz} answers 503; once
 * H2 has closed the database after a write error, the process exits with {@link
 * ExitStatus#JOURNAL_CLOSED} so that its supervisor starts it again, and the new process recovers
 * every acknowledged decision from the file.
 *
 * <p>With {@code --webhook-port} the admission webhook ({@link AdmissionRoutes}) also listens, over
 * HTTPS with the PEM pair of {@code --tls-cert}/{@code --tls-key}, which are read and checked
 * before anything starts (status 2 when they are unusable); its address is logged, stdout keeps its
 * one line. It completes sharing pods as {@code gpushare.pod-side} says ({@link PodSideSettings});
 * with {@code inject = on} (the default) it needs {@code gpushare.pod-side.socket}, else the
 * launcher stops with status 2 naming that key.
 *
 * <p>With {@code gpushare.pod-side.socket} set, the data plane is also served on that Unix socket
 * (mode 0666), where {@code libgpushare.so} in a pod reaches its member: a second binding of the
 * same API (same service, same access) on {@code 127.0.0.1:0}, its watches capped per client at
 * {@code max-watches} (every socket client shows as 127.0.0.1), and a {@link UnixSocketBridge} from
 * the socket to it, bound after the main binding ({@code data plane listening on unix:PATH} is
 * logged) and stopped by coordinated shutdown, which removes the socket file. The socket's
 * directory must exist and nothing but a socket file may be at the path (status 2 otherwise).
 */
public final class Main {
  /**
   * Set once H2 has closed the journal database: the process exits with ExitStatus.JOURNAL_CLOSED.
   */
  private static volatile boolean journalClosed;

  /** How long the shutdown after a closed journal may take before the process halts. */
  private static final Duration JOURNAL_CLOSED_SHUTDOWN = Duration.ofSeconds(60);

  private static final Logger LOG = LoggerFactory.getLogger(Main.class);
  private static final Duration UNBIND_DEADLINE = Duration.ofSeconds(10);

  /**
   * How long recovery and reconciliation may take before the launcher gives up: a start that never
   * completes must not leave a process that neither listens nor exits.
   */
  private static final Duration STARTUP_DEADLINE = Duration.ofMinutes(5);

  private Main() {}

  public static void main(String[] args) {
    int status = launch(args, System.out, System.err);
    if (status >= 0) {
      System.exit(status);
    }
  }

  /**
   * Starts the server, or fails; answers {@code -1} when the server runs (the actor system keeps
   * the process alive), else the exit status after printing why on {@code err}.
   */
  static int launch(String[] args, PrintStream out, PrintStream err) {
    if (LauncherCommands.isCommand(args)) {
      return LauncherCommands.run(args, out, err);
    }
    Prepared prepared;
    try {
      LauncherOptions options = LauncherOptions.parse(Arrays.asList(args));
      if (options.help()) {
        out.print(LauncherOptions.usage());
        out.flush();
        return 0;
      }
      prepared = prepare(options);
    } catch (Refused e) {
      err.println("gpushare: " + e.getMessage());
      err.flush();
      return ExitStatus.FAILED;
    } catch (LaunchException | IllegalArgumentException | UncheckedIOException e) {
      err.println("gpushare: " + e.getMessage());
      err.println("gpushare: run with --help for the flags and the configuration format");
      err.flush();
      return ExitStatus.USAGE;
    }
    return start(prepared, out, err);
  }

  /** A start refused for what the data directory holds, not for a flag or key: status 1. */
  private static final class Refused extends RuntimeException {
    Refused(String message) {
      super(message, null, false, false);
    }
  }

  /** Everything checked before anything starts. */
  private record Prepared(
      LauncherOptions options,
      Path data,
      EmbeddedConfig embedded,
      Config systemConfig,
      ArbiterClock clock,
      Consumer<Instant> clockAdvanced,
      Optional<ServerTls> webhookTls,
      ClusterFormation formation,
      Optional<ServerTls> extenderTls) {}

  private static Prepared prepare(LauncherOptions options) {
    Config loaded = EmbeddedConfig.load(options.config());
    EmbeddedConfig embedded =
        EmbeddedConfig.from(EmbeddedConfig.resolve(loaded, ConfigFactory.load()));
    checkPodSide(options, embedded.podSide());
    Optional<ServerTls> webhookTls =
        options.webhook().enabled()
            ? Optional.of(
                ServerTls.load(
                    "webhook",
                    options.webhook().tlsCert().orElseThrow(),
                    options.webhook().tlsKey().orElseThrow()))
            : Optional.empty();
    Optional<ServerTls> extenderTls =
        options.extender().enabled()
            ? Optional.of(
                ServerTls.mutual(
                    "scheduler extender",
                    options.webhook().tlsCert().orElseThrow(),
                    options.webhook().tlsKey().orElseThrow(),
                    options.extender().clientCa().orElseThrow()))
            : Optional.empty();
    Path data = DataDirectory.prepare(options.data(), LOG::warn);
    if (embedded.journal() instanceof JournalSettings.H2) {
      checkJournalFile(data, options.freshStart());
    } else if (options.freshStart()) {
      LOG.warn(
          "--fresh-start: ignored, the journal is {}'s, not a file under --data",
          embedded.journal().kind());
    }
    // Kubernetes mode inside a pod forms the cluster with bootstrap and says which node this
    // member runs on (role node:$NODE_NAME); elsewhere a member joins the configured seed nodes,
    // or itself.
    ClusterFormation formation =
        options.kubernetes()
            ? ClusterFormation.fromEnvironment(System::getenv)
            : ClusterFormation.embedded();
    Config systemConfig =
        EmbeddedConfig.resolve(
            loaded,
            embedded
                .journal()
                .profile(data)
                .withFallback(formation.config())
                .withFallback(GpuShareRuntime.config())
                .withFallback(ConfigFactory.load()));
    // Remoting beyond loopback only with mutual TLS, and only with its certificate files there.
    ClusterTransport.check(systemConfig);
    ClockMode mode = options.clock().orElse(embedded.clock());
    if (mode == ClockMode.SYSTEM) {
      return new Prepared(
          options,
          data,
          embedded,
          systemConfig,
          ArbiterClock.system(),
          now -> {},
          webhookTls,
          formation,
          extenderTls);
    }
    ClockFile clockFile = new ClockFile(data);
    Instant start =
        clockFile
            .read()
            .filter(recorded -> recorded.isAfter(embedded.manualClockStart()))
            .orElse(embedded.manualClockStart());
    clockFile.record(start);
    return new Prepared(
        options,
        data,
        embedded,
        systemConfig,
        new ManualClock(start),
        clockFile::record,
        webhookTls,
        formation,
        extenderTls);
  }

  /**
   * The pod side's settings against the flags, before anything starts: a webhook that injects needs
   * the data-plane socket, and the socket's place must be usable (its directory there, nothing but
   * a stale socket file at the path).
   */
  static void checkPodSide(LauncherOptions options, PodSideSettings podSide) {
    if (options.webhook().enabled() && podSide.inject() && podSide.socket().isEmpty()) {
      throw new LaunchException(
          "gpushare.pod-side.socket: off, with --webhook-port "
              + options.webhook().port()
              + " and gpushare.pod-side.inject = on; the webhook would complete sharing pods to"
              + " reach this member on the data-plane socket, which is not served: set"
              + " gpushare.pod-side.socket to the socket's absolute path (deploy/ uses \""
              + PodSideSettings.DEPLOY_SOCKET
              + "\"), or gpushare.pod-side.inject = off");
    }
    if (podSide.socket().isPresent()) {
      String why = UnixSocketBridge.unusable(Path.of(podSide.socket().get()));
      if (why != null) {
        throw new LaunchException("gpushare.pod-side.socket: " + why);
      }
    }
  }

  /**
   * The H2 journal of a data directory that served before (its {@code admin-token} is there) must
   * be there and not empty: else every node, pod and decision would be silently forgotten, and the
   * server would start as a new cluster. {@code --fresh-start} lets it start so. A journal that is
   * absent is created here, empty and the owner's alone (H2 takes an empty file for a new
   * database), so that it never has the umask's mode.
   */
  static void checkJournalFile(Path data, boolean freshStart) {
    Path journal = data.resolve(JournalAccess.H2_FILE);
    Path token = data.resolve(AdminToken.FILE);
    long size;
    try {
      size = Files.exists(journal, LinkOption.NOFOLLOW_LINKS) ? Files.size(journal) : -1;
    } catch (IOException e) {
      throw new Refused(
          "--data " + data + ": the journal " + journal + " cannot be read (" + e + ")");
    }
    if (size > 0) {
      if (freshStart) {
        LOG.warn(
            "--fresh-start: ignored, the journal {} holds data ({} bytes); leave the flag out",
            journal,
            size);
      }
      return;
    }
    String state = size < 0 ? "is missing" : "is empty (0 bytes)";
    if (Files.exists(token, LinkOption.NOFOLLOW_LINKS)) {
      if (!freshStart) {
        throw new Refused(
            "--data "
                + data
                + ": the journal "
                + journal
                + " "
                + state
                + ", but "
                + token
                + " shows that this directory has served before; starting now would begin an"
                + " empty journal and forget every node, pod and decision. Restore "
                + JournalAccess.H2_FILE
                + " (e.g. from a backup, with the server stopped), or start once with"
                + " --fresh-start to begin anew on purpose");
      }
      LOG.warn(
          "--fresh-start: the journal {} {}; starting with an empty journal (no nodes, pods or"
              + " decisions)",
          journal,
          state);
    }
    if (size < 0) {
      try {
        DataDirectory.createPrivateFile(journal);
      } catch (IOException e) {
        throw new Refused(
            "--data " + data + ": the journal " + journal + " cannot be created (" + e + ")");
      }
    }
  }

  private static int start(Prepared prepared, PrintStream out, PrintStream err) {
    LauncherOptions options = prepared.options();
    ActorSystem<Void> system =
        ActorSystem.create(Behaviors.empty(), "gpushare", prepared.systemConfig());
    boolean h2 = prepared.embedded().journal() instanceof JournalSettings.H2;
    try {
      JournalStatus journal =
          h2
              ? watchJournal(
                  system, prepared.data(), (JournalSettings.H2) prepared.embedded().journal(), err)
              : JournalStatus.WRITABLE;
      RuntimeSettings settings = prepared.embedded().settings();
      if (options.kubernetes()) {
        // Nodes come from the API server; simulated nodes have no place beside them.
        settings =
            new RuntimeSettings(
                List.of(), settings.reservedPerGpu(), settings.askTimeout(), settings.gpu());
      }
      RuntimeSettings runtimeSettings = settings;
      Optional<GpuBackend> ownNodeBackend =
          gpuBackend(system, settings.gpu(), prepared.formation().node());
      GpuShareService service =
          prepared
              .formation()
              .start(system)
              .thenCompose(
                  up -> {
                    logClusterPhase(system, prepared.formation());
                    return InitSchemaCommand.atStart(
                        system, prepared.embedded().journal(), options.config());
                  })
              .thenApply(
                  done -> {
                    if (h2) {
                      restrictFiles(prepared.data());
                    }
                    LOG.info(
                        "journal: {} {}",
                        prepared.embedded().journal().kind(),
                        SchemaSetup.databaseUrl(prepared.systemConfig()));
                    return done;
                  })
              .thenCompose(
                  done ->
                      GpuShareRuntime.start(
                          system, runtimeSettings, prepared.clock(), ownNodeBackend, journal))
              .thenApply(
                  started -> {
                    LOG.info(
                        "nodes: {} configured{}",
                        runtimeSettings.nodes().size(),
                        runtimeSettings.nodes().isEmpty()
                            ? ""
                            : " ("
                                + String.join(
                                    ", ",
                                    runtimeSettings.nodes().stream()
                                        .map(n -> n.manifest().name())
                                        .toList())
                                + ")");
                    return started;
                  })
              .toCompletableFuture()
              .get(STARTUP_DEADLINE.toSeconds(), TimeUnit.SECONDS);
      watchDataDirectory(
          service,
          prepared.data(),
          h2 ? ((JournalSettings.H2) prepared.embedded().journal()) : null);
      KubernetesClient kubeClient = null;
      if (options.kubernetes()) {
        kubeClient = startKubernetesMode(system, service, prepared.embedded());
      }
      List<String> afterReady = new ArrayList<>();
      Access access =
          access(
              system,
              options,
              kubeClient,
              prepared.embedded().podSide().tokenAudience(),
              afterReady::add);
      JournalInspector inspector = JdbcJournalInspector.create(system);
      HttpApi api =
          new HttpApi(
              service, inspector, prepared.clockAdvanced(), access, prepared.embedded().http());
      ServerBinding binding =
          api.bind(system, options.host(), options.port()).toCompletableFuture().get();
      binding.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
      if (prepared.embedded().podSide().socket().isPresent()) {
        bindDataPlaneSocket(
            system,
            Path.of(prepared.embedded().podSide().socket().get()),
            new HttpApi(
                service,
                inspector,
                prepared.clockAdvanced(),
                access,
                socketLimits(prepared.embedded().http())),
            prepared.embedded().http().maxConnections());
      }
      if (prepared.webhookTls().isPresent()) {
        bindWebhook(system, options, prepared.embedded().podSide(), prepared.webhookTls().get());
      }
      if (prepared.extenderTls().isPresent()) {
        ServerBinding extender =
            SchedulerExtenderServer.bind(
                    system,
                    service,
                    options.host(),
                    options.extender().port(),
                    prepared.extenderTls().get())
                .toCompletableFuture()
                .get();
        extender.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
        LOG.info(
            "scheduler extender listening on https://{}:{} (mutual TLS)",
            urlHost(options.host()),
            extender.localAddress().getPort());
      }
      String url = "http://" + urlHost(options.host()) + ":" + binding.localAddress().getPort();
      LOG.info(
          "gpushare ready: {} clock, data {}, {} journal {}, {} configured node(s)",
          prepared.clock().manual() ? "manual" : "system",
          options.data().toAbsolutePath().normalize(),
          prepared.embedded().journal().kind(),
          SchemaSetup.databaseUrl(prepared.systemConfig()),
          prepared.embedded().settings().nodes().size());
      out.println("gpushare listening on " + url);
      afterReady.forEach(out::println); // the ready line stays the first line
      out.flush();
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return fail(system, err, "startup interrupted");
    } catch (TimeoutException e) {
      return fail(
          system,
          err,
          "startup did not complete within "
              + STARTUP_DEADLINE.toMinutes()
              + " minutes (journal recovery and reconciliation); see the log above");
    } catch (ExecutionException | RuntimeException | LinkageError e) {
      LOG.debug("startup failed", e);
      return fail(system, err, describe(e, options));
    }
  }

  /** The start-up phase line of the cluster: this member's address and how it joined. */
  private static void logClusterPhase(ActorSystem<?> system, ClusterFormation formation) {
    List<String> seeds = system.settings().config().getStringList("pekko.cluster.seed-nodes");
    LOG.info(
        "cluster: member {} up ({})",
        system.address(),
        formation.bootstrap()
            ? "Kubernetes cluster bootstrap"
            : seeds.isEmpty()
                ? "embedded: a cluster of its own"
                : "seed nodes " + String.join(", ", seeds));
  }

  /**
   * Files in the data directory with the umask's mode once the journal is open (one that H2 made
   * itself, rather than opening the file {@link #checkJournalFile} made), now the owner's alone.
   */
  private static void restrictFiles(Path data) {
    List<String> tightened = DataDirectory.restrictFiles(data);
    if (!tightened.isEmpty()) {
      LOG.info(
          "--data {}: files made readable by their owner only (0600): {}",
          data,
          String.join(", ", tightened));
    }
  }

  /**
   * The data directory in the metrics: its file system's space at each scrape ({@link
   * DataDirectory#space}, what the journal's free-space check reads) and, for the H2 journal, the
   * minimum under which it refuses writes, so that an alert can come before the refusal.
   */
  private static void watchDataDirectory(
      GpuShareService service, Path data, JournalSettings.H2 h2) {
    service
        .metrics()
        .dataDirectory(
            () -> {
              try {
                DataDirectory.Space space = DataDirectory.space(data);
                return Optional.of(new GpuShareMetrics.DiskSpace(space.usable(), space.total()));
              } catch (IOException | RuntimeException e) {
                LOG.debug(
                    "--data {}: its file system's space cannot be read: {}", data, e.toString());
                return Optional.empty();
              }
            },
            h2 == null ? 0 : h2.minFreeSpace());
  }

  /**
   * The H2 journal's health ({@link JournalHealth}) as the service sees it: free space watched
   * ({@code gpushare.journal.min-free-space}), failed writes heard at once. Once H2 has closed the
   * database this process can never write again: it stops and exits with {@link
   * ExitStatus#JOURNAL_CLOSED}, so that its supervisor (Kubernetes, systemd) starts it again, which
   * recovers from the file.
   */
  private static JournalStatus watchJournal(
      ActorSystem<Void> system, Path data, JournalSettings.H2 settings, PrintStream err) {
    JournalHealth health = JournalHealth.get(system);
    health.listen(
        new JournalHealth.Listener() {
          @Override
          public void databaseClosed(String reason) {
            exitForClosedJournal(system, data, reason, err);
          }
        });
    health.watchFreeSpace(data, settings.minFreeSpace());
    return new JournalStatus() {
      @Override
      public Optional<String> unwritable() {
        return health.unwritable();
      }

      @Override
      public void onWriteFailure(Consumer<String> listener) {
        health.listen(
            new JournalHealth.Listener() {
              @Override
              public void writeFailed(String reason) {
                listener.accept(reason);
              }
            });
      }
    };
  }

  /**
   * Coordinated shutdown (the HTTP binding answers what is in flight, then stops), then exit with
   * {@link ExitStatus#JOURNAL_CLOSED}; a shutdown that hangs is cut short by halting.
   */
  private static void exitForClosedJournal(
      ActorSystem<Void> system, Path data, String reason, PrintStream err) {
    journalClosed = true;
    Thread exit =
        new Thread(
            () -> {
              String message =
                  reason
                      + "; exiting with status "
                      + ExitStatus.JOURNAL_CLOSED
                      + ": start the server again on --data "
                      + data
                      + " (once the file system has room) and it recovers every acknowledged"
                      + " decision from "
                      + data.resolve(JournalAccess.H2_FILE);
              err.println("gpushare: " + message);
              err.flush();
              Thread halt =
                  new Thread(
                      () -> {
                        try {
                          Thread.sleep(JOURNAL_CLOSED_SHUTDOWN.multipliedBy(2).toMillis());
                        } catch (InterruptedException e) {
                          return;
                        }
                        Runtime.getRuntime().halt(ExitStatus.JOURNAL_CLOSED);
                      },
                      "gpushare-journal-closed-halt");
              halt.setDaemon(true);
              halt.start();
              try {
                CoordinatedShutdown.get(system)
                    .runAll(JournalClosed.INSTANCE)
                    .toCompletableFuture()
                    .get(JOURNAL_CLOSED_SHUTDOWN.toSeconds(), TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              } catch (ExecutionException | TimeoutException e) {
                LOG.warn(
                    "the shutdown after the journal closed did not complete: {}", e.toString());
              }
              System.exit(ExitStatus.JOURNAL_CLOSED);
            },
            "gpushare-journal-closed");
    exit.start();
  }

  /** Coordinated shutdown's reason when H2 has closed the journal database. */
  private static final class JournalClosed implements CoordinatedShutdown.Reason {
    static final JournalClosed INSTANCE = new JournalClosed();

    @Override
    public String toString() {
      return "H2 closed the journal database after a write error";
    }
  }

  /**
   * Chooses the GPU backend ({@code gpushare.gpu.backend}, {@link GpuBackends#select}) and logs the
   * one line that says which and why (a warning when {@code auto} falls back to the simulated
   * backend). NVML serves the node this member runs on ({@code NODE_NAME}), and is closed by
   * coordinated shutdown; a member on no node has no GPUs of its own, so NVML is closed at once.
   * Simulated GPUs need no backend here: the runtime shapes them from each node's registered GPUs.
   *
   * @throws GpuBackendUnavailable for {@code backend = nvml} when NVML cannot be used
   */
  static Optional<GpuBackend> gpuBackend(
      ActorSystem<?> system, GpuSettings gpu, Optional<String> node) {
    ProcessPods hostProcesses = new ProcessPods(gpu.hostProc());
    GpuBackends.Selected selected =
        GpuBackends.select(
            gpu.backend(),
            () ->
                GpuBackends.simulated(
                    node.orElse("simulated"),
                    0,
                    RuntimeSettings.DEFAULT_GPU_MODEL,
                    RuntimeSettings.DEFAULT_GPU_MEMORY_MIB),
            line -> {},
            hostProcesses);
    GpuBackend backend = selected.backend();
    boolean simulated = backend.scriptable().isPresent();
    if (simulated && gpu.backend() == GpuBackends.Mode.AUTO) {
      LOG.warn("{}", selected.why());
    } else {
      LOG.info("{}", selected.why());
    }
    if (simulated) {
      return Optional.empty();
    }
    if (hostProcesses.isOwnNamespace() && GpuBackend.SYSTEM_PROCESSES.podOf(1).isPresent()) {
      LOG.warn(
          "gpushare.gpu.host-proc = {} is this member's own PID namespace, a container's (no"
              + " hostPID): NVML names GPU processes by their host PIDs, which cannot be mapped to"
              + " pods from here, so pods' compute limits, in-pod utilisation, ungranted use and"
              + " idle release cannot see their processes. Mount the host's /proc read-only and set"
              + " gpushare.gpu.host-proc to it (deploy/daemonset.yaml: /host/proc)",
          hostProcesses.procRoot());
    } else {
      LOG.info(
          "NVML's processes (host PIDs) are mapped to pods through {}/<pid>/cgroup",
          hostProcesses.procRoot());
    }
    if (node.isEmpty()) {
      LOG.info(
          "NVML found {} GPU(s), but this member runs on no node (NODE_NAME is not set, or not in"
              + " Kubernetes mode): they are not used",
          backend.devices().size());
      close(backend);
      return Optional.empty();
    }
    CoordinatedShutdown.get(system)
        .addTask(
            CoordinatedShutdown.PhaseBeforeActorSystemTerminate(),
            "gpushare-close-gpu-backend",
            () -> {
              close(backend);
              return CompletableFuture.completedFuture(Done.getInstance());
            });
    return Optional.of(backend);
  }

  private static void close(GpuBackend backend) {
    if (backend instanceof AutoCloseable closeable) {
      try {
        closeable.close();
      } catch (Exception e) {
        LOG.warn("closing the {} GPU backend failed: {}", backend.name(), e.toString());
      }
    }
  }

  /**
   * The limits of the data-plane socket's loopback binding: every client of the socket shows as
   * 127.0.0.1, so the per-client watch cap is the cap of all ({@code max-watches}).
   */
  static HttpLimits socketLimits(HttpLimits limits) {
    return new HttpLimits(
        limits.headerReadTimeout(),
        limits.maxConnections(),
        limits.maxWatches(),
        limits.maxWatches());
  }

  /**
   * The data plane on the Unix socket {@code socket}: {@code api} bound on {@code 127.0.0.1:0} and
   * a {@link UnixSocketBridge} from the socket to it, holding at most {@code maxConnections}.
   * Coordinated shutdown stops accepting and removes the socket file when the service unbinds, lets
   * requests in flight finish with the loopback binding, then ends what is left.
   */
  private static void bindDataPlaneSocket(
      ActorSystem<Void> system, Path socket, HttpApi api, int maxConnections)
      throws InterruptedException, ExecutionException {
    ServerBinding loopback = api.bind(system, "127.0.0.1", 0).toCompletableFuture().get();
    loopback.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
    InetSocketAddress target =
        new InetSocketAddress("127.0.0.1", loopback.localAddress().getPort());
    UnixSocketBridge bridge;
    try {
      bridge = UnixSocketBridge.open(socket, target, maxConnections);
    } catch (IOException e) {
      throw new IllegalStateException("gpushare.pod-side.socket: " + e.getMessage(), e);
    }
    CoordinatedShutdown shutdown = CoordinatedShutdown.get(system);
    shutdown.addTask(
        CoordinatedShutdown.PhaseServiceUnbind(),
        "gpushare-data-plane-socket-unbind",
        () -> {
          bridge.stopAccepting();
          return CompletableFuture.completedFuture(Done.getInstance());
        });
    shutdown.addTask(
        CoordinatedShutdown.PhaseServiceStop(),
        "gpushare-data-plane-socket-close",
        () ->
            CompletableFuture.supplyAsync(
                () -> {
                  bridge.close();
                  return Done.getInstance();
                }));
    LOG.info("data plane listening on unix:{}", bridge.socket());
  }

  /** The admission webhook's HTTPS listener, stopped by coordinated shutdown like the API's. */
  private static void bindWebhook(
      ActorSystem<Void> system, LauncherOptions options, PodSideSettings podSide, ServerTls tls)
      throws InterruptedException, ExecutionException {
    int port = options.webhook().port();
    ServerBinding webhook;
    try {
      webhook =
          new AdmissionRoutes(podSide)
              .bindHttps(system, options.host(), port, tls)
              .toCompletableFuture()
              .get();
    } catch (ExecutionException e) {
      if (!isBindFailure(e)) {
        throw e;
      }
      throw new IllegalStateException(
          "cannot listen on "
              + options.host()
              + ":"
              + port
              + " (--host "
              + options.host()
              + ", --webhook-port "
              + port
              + "): "
              + e.getCause().getMessage()
              + "; give a free port for the webhook");
    }
    webhook.addToCoordinatedShutdown(UNBIND_DEADLINE, system);
    LOG.info(
        "admission webhook listening on https://{}:{} ({}, {}), certificate {}",
        urlHost(options.host()),
        webhook.localAddress().getPort(),
        AdmissionRoutes.MUTATE_PATH,
        AdmissionRoutes.VALIDATE_PATH,
        tls.certificate().getSubjectX500Principal().getName());
  }

  /**
   * Kubernetes mode: the client from the usual sources (in-cluster service account, {@code
   * KUBECONFIG}, {@code kubernetes.*} system properties) without its own retries, the informers and
   * the KubeSync singleton; {@code NODE_NAME} (downward API) limits a DaemonSet member to its own
   * node, {@code POD_NAME} names the Events' reporting instance.
   */
  /**
   * Who may use the API: the member's admin token (made in the data directory on first start, its
   * path printed once) and, in Kubernetes mode, any token the API server's TokenReview accepts,
   * with RBAC (SubjectAccessReview) deciding what it may do and a pod's own token its own pod.
   */
  private static Access access(
      ActorSystem<Void> system,
      LauncherOptions options,
      KubernetesClient client,
      String podAudience,
      java.util.function.Consumer<String> say) {
    AdminToken admin =
        AdminToken.inDataDirectory(
            options.data(),
            file ->
                say.accept(
                    "gpushare admin token written to "
                        + file.toAbsolutePath().normalize()
                        + " (send it as \"Authorization: Bearer <token>\"; it is kept across"
                        + " restarts)"));
    if (client == null) {
      return admin;
    }
    return new AnyOf(
        admin,
        new KubernetesAccess(
            client,
            system.dispatchers().lookup(DispatcherSelector.blocking()),
            java.time.Clock.systemUTC(),
            Duration.ofSeconds(10),
            podAudience));
  }

  private static KubernetesClient startKubernetesMode(
      ActorSystem<Void> system, GpuShareService service, EmbeddedConfig embedded)
      throws InterruptedException, ExecutionException, TimeoutException {
    KubernetesClient client =
        new KubernetesClientBuilder()
            .withConfig(
                KubeWriter.clientConfig(io.fabric8.kubernetes.client.Config.autoConfigure(null)))
            .build();
    Optional<String> nodeName = env("NODE_NAME");
    String instance = env("POD_NAME").orElse("gpushare");
    KubernetesMode mode =
        KubernetesMode.start(
                system, service, client, nodeName, embedded.kubernetes().settings(instance))
            .toCompletableFuture()
            .get(STARTUP_DEADLINE.toSeconds(), TimeUnit.SECONDS);
    CoordinatedShutdown.get(system)
        .addTask(
            CoordinatedShutdown.PhaseBeforeServiceUnbind(),
            "kubernetes-informers",
            () -> {
              mode.close();
              client.close();
              return CompletableFuture.completedFuture(Done.getInstance());
            });
    LOG.info(
        "Kubernetes mode: API server {}, {}",
        client.getMasterUrl(),
        nodeName
            .map(n -> "node " + n + " only")
            .orElse("every node labelled " + SharePolicy.LABEL));
    return client;
  }

  private static Optional<String> env(String name) {
    return Optional.ofNullable(System.getenv(name)).map(String::strip).filter(v -> !v.isEmpty());
  }

  private static String describe(Throwable cause, LauncherOptions options) {
    Throwable root = cause;
    while ((root instanceof CompletionException || root instanceof ExecutionException)
        && root.getCause() != null) {
      root = root.getCause();
    }
    if (isBindFailure(cause)) {
      return "cannot listen on "
          + options.host()
          + ":"
          + options.port()
          + " (--host "
          + options.host()
          + ", --port "
          + options.port()
          + "): "
          + root.getMessage()
          + "; give a free port, or --port 0 to pick one";
    }
    String message = root.getMessage() == null ? root.toString() : root.getMessage();
    return "startup failed: " + message;
  }

  private static boolean isBindFailure(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof BindException || t instanceof BindFailedException) {
        return true;
      }
    }
    return false;
  }

  private static int fail(ActorSystem<Void> system, PrintStream err, String message) {
    err.println("gpushare: " + message);
    err.flush();
    system.terminate();
    try {
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      LOG.warn("the actor system did not stop cleanly: {}", e.toString());
    }
    // A start that failed because H2 closed the journal ends as any closed journal does.
    return journalClosed ? ExitStatus.JOURNAL_CLOSED : ExitStatus.FAILED;
  }

  /** An IPv6 literal goes in brackets in a URL. */
  static String urlHost(String host) {
    return host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
  }
}
