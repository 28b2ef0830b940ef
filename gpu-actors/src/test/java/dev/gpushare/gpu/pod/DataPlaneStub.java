package dev.gpushare.gpu.pod;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.gpushare.gpu.proc.ProcessPods;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.URLDecoder;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A fake of the node's data plane (http-api's DataPlaneRoutes) on 127.0.0.1 and a random port, for
 * driving libgpushare.so in unit tests; the end-to-end tests (src-test) use the real server. Under
 * {@code /v1/namespaces/{ns}/pods/{name}}: {@code POST demand}, {@code DELETE demand}, {@code GET
 * grant?timeoutSeconds=N} (a long poll until the pod is Running), {@code GET} (the PodView) and
 * {@code GET watch} (Server-Sent Events: the view at once and at each change, {@code :}
 * heartbeats). Errors are {@code application/problem+json}, as the real server's.
 *
 * <p>The test scripts it: {@link #pod} gives a pod whose state it sets at any time (every watch
 * sees the change), {@link StubPod#onDemand} says what a demand does, {@link #requests()} lists
 * every request, and switches make it refuse ({@link #failWith}), talk nonsense ({@link #garbage}),
 * hang up ({@link #closeConnections}, {@link #dropWatches}), cut answers short ({@link #cut}), hold
 * them ({@link #hold}) or go quiet ({@link #silenceWatches}).
 *
 * <pre>{@code
 * try (DataPlaneStub stub = DataPlaneStub.start()) {
 *   StubPod a = stub.pod("default", "a").grantOnDemand(1);
 *   ... start a process with PodProcess.builder("workload").pod(a) ...
 *   stub.awaitRequest("POST", "/demand", Duration.ofSeconds(10));
 *   a.ready(2).waiting(30);
 * }
 * }</pre>
 */
public final class DataPlaneStub implements AutoCloseable {
  /** One request as it came: method, path with query, Authorization header (or null), when. */
  public record Request(String method, String path, String authorization, Instant at) {
    /** The same method and a path that ends with {@code suffix} (before the query). */
    public boolean is(String method, String suffix) {
      return this.method.equals(method) && pathOnly().endsWith(suffix);
    }

    public String pathOnly() {
      int q = path.indexOf('?');
      return q < 0 ? path : path.substring(0, q);
    }

    @Override
    public String toString() {
      return at
          + " "
          + method
          + " "
          + path
          + (authorization == null ? "" : " [" + authorization + "]");
    }
  }

  /** An answer of the test's own (see {@link #intercept}); {@link #CLOSE} hangs up instead. */
  public record Answer(int status, String contentType, String body) {
    public static final Answer CLOSE = new Answer(-1, null, null);

    public static Answer json(int status, String body) {
      return new Answer(status, "application/json", body);
    }

    public static Answer problem(int status, String title, String detail) {
      return new Answer(status, "application/problem+json", problemJson(status, title, detail));
    }
  }

  /** The UUID the fake NVML gives GPU {@code index} (gpu-check/fake-nvml/fake_nvml.c). */
  public static String uuidOf(int index) {
    return String.format("GPU-fa4e0000-0000-4000-8000-%012d", index);
  }

  private static final Pattern POD_PATH =
      Pattern.compile(
          "/v1/namespaces/([^/]+)/pods/([^/]+)(?:/(demand|grant|watch|compute|processes))?/?");

  private final HttpServer server;
  private final ExecutorService executor;
  private final Path dir;
  private final Map<String, StubPod> pods = new LinkedHashMap<>();
  private final List<Request> requests = new ArrayList<>();
  private String token;
  private Path tokenFile;
  private Duration heartbeat = Duration.ofSeconds(15);
  private Duration delay = Duration.ZERO;
  private int failStatus;
  private boolean garbage;
  private boolean closeConnections;
  private boolean silent;
  private long dropGeneration;
  private long endGeneration;
  private int watchers;
  private Function<Request, Answer> interceptor = r -> null;
  private final List<CutRule> cuts = new ArrayList<>();
  private Predicate<Request> holding = r -> false;

  /** How {@link #cut} cuts an answer short. */
  public enum Cut {
    /** Content-Length says the whole body, half of it comes, then the connection closes. */
    SHORT_BODY,
    /** Chunked: a chunk's size line and half its bytes, then the connection closes. */
    CUT_CHUNK
  }

  private record CutRule(Predicate<Request> which, Cut how, int[] left) {}

  private ServerSocketChannel unix;

  private DataPlaneStub() throws IOException {
    dir = Files.createTempDirectory("gpushare-stub");
    executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "data-plane-stub");
              t.setDaemon(true);
              return t;
            });
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  /** A stub listening on 127.0.0.1 and a free port, requiring no token. */
  public static DataPlaneStub start() {
    try {
      return new DataPlaneStub();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code http://127.0.0.1:PORT}, what GPUSHARE_SERVER holds. */
  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /**
   * The same data plane on a Unix socket too ({@code unix:/path}, for GPUSHARE_SERVER): a relay to
   * the TCP port, so requests are recorded as usual. Made at the first call.
   */
  public synchronized String unixSocket() {
    Path socket = dir.resolve("dp.sock");
    if (unix == null) {
      try {
        unix = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        unix.bind(UnixDomainSocketAddress.of(socket));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      executor.execute(this::relay);
    }
    return "unix:" + socket;
  }

  /** A temporary folder of this stub's own (deleted at {@link #close}). */
  public Path dir() {
    return dir;
  }

  // ---- the switches ----

  /**
   * Requires {@code Authorization: Bearer <token>} (401 otherwise); {@link #tokenFile()} holds it.
   * Null: no token needed.
   */
  public synchronized DataPlaneStub requireToken(String token) {
    this.token = token;
    if (token == null) {
      tokenFile = null;
    } else {
      try {
        tokenFile = Files.writeString(dir.resolve("token"), token + "\n");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return this;
  }

  /** The file holding the required token (for GPUSHARE_TOKEN_FILE), or null when none is. */
  public synchronized Path tokenFile() {
    return tokenFile;
  }

  /** How often an idle watch gets a {@code :} comment (the real server: 15 s). */
  public synchronized DataPlaneStub heartbeat(Duration every) {
    heartbeat = every;
    notifyAll();
    return this;
  }

  /** Waits this long before answering any request (a watch: before its first event). */
  public synchronized DataPlaneStub delay(Duration delay) {
    this.delay = delay;
    return this;
  }

  /** Answers every request with this status as a problem (0: answer normally again). */
  public synchronized DataPlaneStub failWith(int status) {
    failStatus = status;
    return this;
  }

  /** Answers every request with 200 and {@code {not json} (a watch: {@code data: {not json}). */
  public synchronized DataPlaneStub garbage(boolean on) {
    garbage = on;
    return this;
  }

  /** Hangs up on every request without answering. */
  public synchronized DataPlaneStub closeConnections(boolean on) {
    closeConnections = on;
    return this;
  }

  /** Watches get neither events nor heartbeats while on (as a stalled server). */
  public synchronized DataPlaneStub silenceWatches(boolean on) {
    silent = on;
    notifyAll();
    return this;
  }

  /** Cuts every open watch, abruptly: no end of stream (as a crash). */
  public synchronized DataPlaneStub dropWatches() {
    dropGeneration++;
    notifyAll();
    return this;
  }

  /** Ends every open watch cleanly (as the server does when the pod is deleted). */
  public synchronized DataPlaneStub endWatches() {
    endGeneration++;
    notifyAll();
    return this;
  }

  /**
   * Asks {@code f} first for every request (after it is recorded): null answers as usual, an {@link
   * Answer} answers that instead, {@link Answer#CLOSE} hangs up.
   */
  public synchronized DataPlaneStub intercept(Function<Request, Answer> f) {
    interceptor = f == null ? r -> null : f;
    return this;
  }

  /**
   * Cuts the next {@code times} answers to requests that match short (a watch too: its headers,
   * then the cut event), as a server that crashes or a proxy that drops the connection mid-answer.
   */
  public synchronized DataPlaneStub cut(Predicate<Request> which, Cut how, int times) {
    cuts.add(new CutRule(which, how, new int[] {times}));
    return this;
  }

  /**
   * Holds every request that matches (after recording it) until {@link #release()}: an answer that
   * takes as long as the test wants.
   */
  public synchronized DataPlaneStub hold(Predicate<Request> which) {
    holding = which;
    return this;
  }

  /** Answers the held requests and holds no more. */
  public synchronized DataPlaneStub release() {
    holding = r -> false;
    notifyAll();
    return this;
  }

  // ---- pods ----

  /** The pod, made (share-pool, Hibernation, 50 % core and memory) at the first call. */
  public synchronized StubPod pod(String namespace, String name) {
    return pods.computeIfAbsent(namespace + "/" + name, k -> new StubPod(namespace, name));
  }

  /** The pod is gone: its watches end, requests for it get 404. */
  public synchronized void remove(String namespace, String name) {
    StubPod p = pods.remove(namespace + "/" + name);
    if (p != null) {
      p.removed = true;
      notifyAll();
    }
  }

  // ---- what came ----

  /** Every request so far, in order. */
  public synchronized List<Request> requests() {
    return List.copyOf(requests);
  }

  /** The requests of that method whose path ends with {@code suffix}. */
  public synchronized List<Request> requests(String method, String suffix) {
    return requests.stream().filter(r -> r.is(method, suffix)).toList();
  }

  /** How many watches are open now. */
  public synchronized int watchers() {
    return watchers;
  }

  /** The first request that matches, waiting for it up to {@code timeout}. */
  public Request awaitRequest(Predicate<Request> which, Duration timeout) {
    return awaitRequests(which, 1, timeout).get(0);
  }

  public Request awaitRequest(String method, String suffix, Duration timeout) {
    return awaitRequests(r -> r.is(method, suffix), 1, timeout).get(0);
  }

  /** The first {@code n} requests that match, once there are that many, within {@code timeout}. */
  public synchronized List<Request> awaitRequests(
      Predicate<Request> which, int n, Duration timeout) {
    long end = System.nanoTime() + timeout.toNanos();
    while (true) {
      List<Request> found = requests.stream().filter(which).limit(n).toList();
      if (found.size() == n) {
        return found;
      }
      long left = end - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(
            "expected " + n + " matching request(s) within " + timeout + "; got: " + requests);
      }
      waitNanos(left);
    }
  }

  /** Waits until {@code n} watches are open. */
  public synchronized void awaitWatchers(int n, Duration timeout) {
    long end = System.nanoTime() + timeout.toNanos();
    while (watchers != n) {
      long left = end - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(
            "expected " + n + " open watch(es) within " + timeout + ", have " + watchers);
      }
      waitNanos(left);
    }
  }

  @Override
  public void close() {
    synchronized (this) {
      endGeneration++;
      notifyAll();
      if (unix != null) {
        try {
          unix.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    }
    server.stop(0);
    executor.shutdownNow();
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException ignored) {
      // a temporary folder
    }
  }

  // ---- a pod ----

  /** One pod's state as the data plane reports it; every setter is seen by the watches at once. */
  public final class StubPod {
    private final String namespace;
    private final String name;
    private String uid;
    private String node = "node-1";
    private String policy = "share-pool";
    private final java.util.Map<String, String> workloadEnv = new java.util.TreeMap<>();
    private String computeMode;
    private final List<String> computeReports = new ArrayList<>();
    private List<Long> hostPids = List.of();
    private List<ProcessPods.Identity> identities = List.of();
    private Integer smPercent;
    private String state = "Hibernation";
    private int requestCore = 50;
    private int requestMemory = 50;
    private int limitCore = 50;
    private int limitMemory = 50;
    private Integer gpu;
    private String uuid;
    private Integer position;
    private Long waiting;
    private Long running;
    private String checkpointPhase;
    private int checkpointGpu;
    private long checkpointBytes;
    private Integer grantOnDemand;
    private Consumer<StubPod> onDemand;
    private Consumer<StubPod> onRelease;
    private Path stateDir;
    private long version;
    private boolean removed;

    StubPod(String namespace, String name) {
      this.namespace = namespace;
      this.name = name;
      this.uid = "uid-" + namespace + "-" + name;
      this.onDemand = StubPod::defaultDemand;
      this.onRelease = StubPod::hibernate;
    }

    public String namespace() {
      return namespace;
    }

    public String name() {
      return name;
    }

    /** The stub this pod is on. */
    public DataPlaneStub stub() {
      return DataPlaneStub.this;
    }

    /**
     * A folder of this pod's own for GPUSHARE_STATE_DIR, so that the pod's processes share it and
     * no other test's pod does (deleted with the stub).
     */
    public Path stateDir() {
      synchronized (DataPlaneStub.this) {
        if (stateDir == null) {
          try {
            stateDir = Files.createDirectories(dir.resolve("state-" + namespace + "-" + name));
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
        return stateDir;
      }
    }

    /** Sets the state word as is ("Hibernation", "Ready", "Running"); nothing else changes. */
    public StubPod state(String state) {
      return change(() -> this.state = state);
    }

    public String state() {
      synchronized (DataPlaneStub.this) {
        return state;
      }
    }

    /** Ready at that 1-based position, waiting 0 s unless set, no GPU. */
    public StubPod ready(int position) {
      return change(
          () -> {
            state = "Ready";
            this.position = position;
            waiting = waiting == null ? 0L : waiting;
            gpu = null;
            uuid = null;
            running = null;
          });
    }

    /** Running on GPU {@code index} (its fake-NVML UUID), out of the queue. */
    public StubPod running(int index) {
      return running(index, uuidOf(index));
    }

    public StubPod running(int index, String uuid) {
      return change(
          () -> {
            state = "Running";
            gpu = index;
            this.uuid = uuid;
            position = null;
            waiting = null;
            running = 0L;
          });
    }

    /** Hibernation: no GPU, no queue (a held checkpoint stays). */
    public StubPod hibernate() {
      return change(
          () -> {
            state = "Hibernation";
            gpu = null;
            uuid = null;
            position = null;
            waiting = null;
            running = null;
          });
    }

    public StubPod position(Integer position) {
      return change(() -> this.position = position);
    }

    public StubPod waiting(Long seconds) {
      return change(() -> waiting = seconds);
    }

    public StubPod waiting(long seconds) {
      return waiting(Long.valueOf(seconds));
    }

    public StubPod runningSeconds(Long seconds) {
      return change(() -> running = seconds);
    }

    /** The GPU field alone (null: none), without touching the state. */
    public StubPod gpu(Integer index) {
      return change(
          () -> {
            gpu = index;
            uuid = index == null ? null : uuidOf(index);
          });
    }

    public StubPod gpu(int index, String uuid) {
      return change(
          () -> {
            gpu = index;
            this.uuid = uuid;
          });
    }

    /** "share-pool" or "static". */
    public StubPod policy(String policy) {
      return change(() -> this.policy = policy);
    }

    public StubPod requests(int core, int memory) {
      return change(
          () -> {
            requestCore = core;
            requestMemory = memory;
          });
    }

    public StubPod limits(int core, int memory) {
      return change(
          () -> {
            limitCore = core;
            limitMemory = memory;
          });
    }

    /** The view's {@code computeLimit.mode} ("library", "mps", "off"); null: no such field. */
    public StubPod computeMode(String mode) {
      return change(() -> computeMode = mode);
    }

    /**
     * What {@code GET …/processes} answers, as a member's telemetry would have seen the pod: the
     * host PIDs of its processes (none by default: no sample yet) and its SM percent of the GPU
     * (null by default: not reported).
     */
    public StubPod hostPids(List<Long> pids, Integer smPercent) {
      return change(
          () -> {
            this.hostPids = List.copyOf(pids);
            this.smPercent = smPercent;
            this.identities = List.of();
          });
    }

    /**
     * The member's view with how each process knows itself (its PID in its own namespace, its start
     * time), as the member reads them in the host's /proc: what lets a process of the pod find its
     * own host PID.
     */
    public StubPod hostProcesses(List<ProcessPods.Identity> processes, Integer smPercent) {
      return change(
          () -> {
            this.hostPids = processes.stream().map(ProcessPods.Identity::hostPid).toList();
            this.smPercent = smPercent;
            this.identities = List.copyOf(processes);
          });
    }

    /** {@code GET …/processes}'s body: the member's view of the pod's processes. */
    String processesJson() {
      synchronized (DataPlaneStub.this) {
        StringBuilder b = new StringBuilder("{\"namespace\":").append(quote(namespace));
        b.append(",\"name\":").append(quote(name)).append(",\"gpu\":");
        b.append(gpu == null ? "null" : "{\"index\":" + gpu + ",\"uuid\":" + quote(uuid) + "}");
        b.append(",\"hostPids\":[");
        for (int i = 0; gpu != null && i < hostPids.size(); i++) {
          b.append(i == 0 ? "" : ",").append(hostPids.get(i));
        }
        b.append("],\"smPercent\":").append(smPercent == null ? "null" : smPercent);
        b.append(",\"nsPids\":[");
        for (int i = 0; gpu != null && i < identities.size(); i++) {
          b.append(i == 0 ? "" : ",").append(identities.get(i).nsPid());
        }
        b.append("],\"startTimes\":[");
        for (int i = 0; gpu != null && i < identities.size(); i++) {
          b.append(i == 0 ? "" : ",").append(identities.get(i).startTime());
        }
        return b.append("]}").toString();
      }
    }

    /** The bodies of the library's {@code POST …/compute} reports, oldest first. */
    public List<String> computeReports() {
      synchronized (stub()) {
        return List.copyOf(computeReports);
      }
    }

    /** An entry of the view's {@code workload.env} (as a Running pod's view carries it). */
    public StubPod workloadEnv(String name, String value) {
      return change(() -> workloadEnv.put(name, value));
    }

    public StubPod uid(String uid) {
      return change(() -> this.uid = uid);
    }

    /** The pod's uid as its view gives it ({@code uid-NS-NAME} unless {@link #uid(String)}). */
    public String uid() {
      synchronized (DataPlaneStub.this) {
        return uid;
      }
    }

    public StubPod node(String node) {
      return change(() -> this.node = node);
    }

    /** A checkpoint in that phase ("checkpointing", "held", "restoring") for GPU {@code gpu}. */
    public StubPod checkpoint(String phase, int gpu, long bytes) {
      return change(
          () -> {
            checkpointPhase = phase;
            checkpointGpu = gpu;
            checkpointBytes = bytes;
          });
    }

    public StubPod noCheckpoint() {
      return change(() -> checkpointPhase = null);
    }

    /** A demand from Hibernation grants GPU {@code index} at once (null: it queues instead). */
    public StubPod grantOnDemand(Integer index) {
      synchronized (DataPlaneStub.this) {
        grantOnDemand = index;
      }
      return this;
    }

    /**
     * What {@code POST demand} does to the pod (run under the stub's lock; the answer is the view
     * after it). Default: from Hibernation, Running on the {@link #grantOnDemand} GPU if set, else
     * Ready at position 1; otherwise nothing.
     */
    public StubPod onDemand(Consumer<StubPod> action) {
      synchronized (DataPlaneStub.this) {
        onDemand = action;
      }
      return this;
    }

    /** What {@code DELETE demand} does. Default: {@link #hibernate()}. */
    public StubPod onRelease(Consumer<StubPod> action) {
      synchronized (DataPlaneStub.this) {
        onRelease = action;
      }
      return this;
    }

    /** The PodView as the stub answers it now. */
    public String json() {
      synchronized (DataPlaneStub.this) {
        StringBuilder b = new StringBuilder(512);
        b.append("{\"namespace\":").append(quote(namespace));
        b.append(",\"name\":").append(quote(name));
        b.append(",\"uid\":").append(quote(uid));
        b.append(",\"node\":").append(quote(node));
        b.append(",\"policy\":").append(quote(policy));
        b.append(",\"state\":").append(quote(state));
        b.append(",\"requests\":{\"core\":").append(requestCore);
        b.append(",\"memory\":").append(requestMemory).append('}');
        b.append(",\"limits\":{\"core\":").append(limitCore);
        b.append(",\"memory\":").append(limitMemory).append('}');
        b.append(",\"gpu\":");
        if (gpu == null) {
          b.append("null");
        } else {
          b.append("{\"index\":").append(gpu).append(",\"uuid\":").append(quote(uuid)).append('}');
        }
        b.append(",\"queuePosition\":").append(position);
        b.append(",\"waitingSeconds\":").append(waiting);
        b.append(",\"runningSeconds\":").append(running);
        b.append(",\"conditions\":[],\"events\":[],\"usage\":null,\"workload\":");
        if (workloadEnv.isEmpty()) {
          b.append("null");
        } else {
          b.append("{\"env\":{");
          String sep = "";
          for (var e : workloadEnv.entrySet()) {
            b.append(sep).append(quote(e.getKey())).append(':').append(quote(e.getValue()));
            sep = ",";
          }
          b.append("}}");
        }
        if (computeMode != null) {
          b.append(",\"computeLimit\":{\"mode\":").append(quote(computeMode));
          b.append(",\"aimPercent\":")
              .append(computeMode.equals("library") ? String.valueOf(limitCore) : "null");
          b.append('}');
        }
        b.append(",\"checkpoint\":");
        if (checkpointPhase == null) {
          b.append("null");
        } else {
          b.append("{\"phase\":").append(quote(checkpointPhase));
          b.append(",\"gpu\":").append(checkpointGpu);
          b.append(",\"bytes\":").append(checkpointBytes);
          b.append(",\"since\":\"2026-01-01T00:00:00Z\"}");
        }
        return b.append('}').toString();
      }
    }

    @Override
    public String toString() {
      return namespace + "/" + name + " " + json();
    }

    private void defaultDemand() {
      if (state.equals("Hibernation")) {
        if (grantOnDemand != null) {
          running(grantOnDemand);
        } else {
          ready(1);
        }
      }
    }

    private StubPod change(Runnable r) {
      synchronized (DataPlaneStub.this) {
        r.run();
        version++;
        DataPlaneStub.this.notifyAll();
      }
      return this;
    }
  }

  // ---- serving ----

  private static final class Hangup extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Hangup() {
      super("the stub hangs up", null, false, false);
    }
  }

  /**
   * A {@link Hangup} leaves the exchange open and goes up to the JDK's server, which then closes
   * the connection as it is: no answer, or a stream without its end.
   */
  private void handle(HttpExchange ex) {
    try {
      serve(ex);
    } catch (IOException e) {
      // the client went away
    }
    ex.close();
  }

  private void serve(HttpExchange ex) throws IOException {
    String method = ex.getRequestMethod();
    String path = ex.getRequestURI().getRawPath();
    String query = ex.getRequestURI().getRawQuery();
    Request request =
        new Request(
            method,
            query == null ? path : path + "?" + query,
            ex.getRequestHeaders().getFirst("Authorization"),
            Instant.now());
    byte[] body = ex.getRequestBody().readAllBytes();
    Duration wait;
    Answer intercepted;
    Cut cut = null;
    synchronized (this) {
      requests.add(request);
      notifyAll();
      wait = delay;
      intercepted = interceptor.apply(request);
      for (CutRule c : cuts) {
        if (c.left()[0] > 0 && c.which().test(request)) {
          c.left()[0]--;
          cut = c.how();
          break;
        }
      }
      while (holding.test(request)) {
        waitNanos(Duration.ofSeconds(1).toNanos());
      }
    }
    sleep(wait);
    if (intercepted == null) {
      intercepted = switches(request);
    }
    if (intercepted != null) {
      if (intercepted == Answer.CLOSE) {
        throw new Hangup();
      }
      send(ex, intercepted);
      return;
    }

    Matcher m = POD_PATH.matcher(path);
    if (!m.matches()) {
      send(ex, Answer.problem(404, "Not Found", "no route " + method + " " + path));
      return;
    }
    String ns = URLDecoder.decode(m.group(1), StandardCharsets.UTF_8);
    String name = URLDecoder.decode(m.group(2), StandardCharsets.UTF_8);
    String what = m.group(3) == null ? "" : m.group(3);
    StubPod pod;
    synchronized (this) {
      pod = pods.get(ns + "/" + name);
    }
    if (pod == null) {
      send(ex, notFound(ns, name));
      return;
    }
    if (cut != null) {
      sendCut(
          ex,
          what.equals("watch") ? "data: " + pod.json() + "\n\n" : pod.json(),
          what.equals("watch") ? "text/event-stream" : "application/json",
          cut);
    }
    switch (what + " " + method) {
      case " GET" -> send(ex, Answer.json(200, pod.json()));
      case "demand POST" -> send(ex, act(pod, true));
      case "demand DELETE" -> send(ex, act(pod, false));
      case "grant GET" -> grant(ex, pod, query);
      case "watch GET" -> watch(ex, pod);
      case "processes GET" -> send(ex, Answer.json(200, pod.processesJson()));
      case "compute POST" -> {
        synchronized (this) {
          pod.computeReports.add(new String(body, StandardCharsets.UTF_8));
          notifyAll();
        }
        send(ex, Answer.json(200, pod.json()));
      }
      default ->
          send(
              ex, Answer.problem(405, "Method Not Allowed", method + " is not allowed on " + path));
    }
  }

  /** The switches' answer for this request, or null to answer normally. */
  private synchronized Answer switches(Request r) {
    if (closeConnections) {
      return Answer.CLOSE;
    }
    if (token != null && !("Bearer " + token).equals(r.authorization())) {
      return Answer.problem(
          401,
          "Unauthorized",
          r.authorization() == null
              ? "no bearer token: send Authorization: Bearer <token>"
              : "the bearer token proves no identity");
    }
    if (failStatus != 0) {
      return Answer.problem(failStatus, "Stub Failure", "the stub answers " + failStatus);
    }
    if (garbage && !r.pathOnly().endsWith("/watch")) {
      return Answer.json(200, "{not json");
    }
    return null;
  }

  private Answer act(StubPod pod, boolean demand) {
    synchronized (this) {
      if (pod.removed) {
        return notFound(pod.namespace, pod.name);
      }
      (demand ? pod.onDemand : pod.onRelease).accept(pod);
      pod.version++;
      notifyAll();
      return Answer.json(200, pod.json());
    }
  }

  private void grant(HttpExchange ex, StubPod pod, String query) throws IOException {
    long seconds = 30;
    Matcher t =
        Pattern.compile("(?:^|&)timeoutSeconds=([^&]*)").matcher(query == null ? "" : query);
    if (t.find()) {
      try {
        seconds = Long.parseLong(t.group(1));
      } catch (NumberFormatException e) {
        seconds = -1;
      }
      if (seconds < 0 || seconds > 300) {
        send(
            ex,
            Answer.problem(
                400, "Bad Request", "timeoutSeconds: '" + t.group(1) + "' is not 0..300"));
        return;
      }
    }
    Answer answer;
    synchronized (this) {
      long end = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
      while (!pod.removed && !pod.state.equals("Running") && System.nanoTime() < end) {
        waitNanos(end - System.nanoTime());
      }
      answer = pod.removed ? notFound(pod.namespace, pod.name) : Answer.json(200, pod.json());
    }
    send(ex, answer);
  }

  private void watch(HttpExchange ex, StubPod pod) throws IOException {
    ex.getResponseHeaders().set("Content-Type", "text/event-stream");
    ex.getResponseHeaders().set("Cache-Control", "no-cache");
    ex.sendResponseHeaders(200, 0);
    OutputStream out = ex.getResponseBody();
    long seen = -1;
    long drop;
    long end;
    synchronized (this) {
      drop = dropGeneration;
      end = endGeneration;
      watchers++;
      notifyAll();
    }
    try {
      while (true) {
        String chunk;
        synchronized (this) {
          long beat = System.nanoTime() + heartbeat.toNanos();
          while (true) {
            if (dropGeneration != drop) {
              throw new Hangup();
            }
            if (pod.removed || endGeneration != end) {
              return;
            }
            if (!silent && pod.version != seen) {
              seen = pod.version;
              chunk = "data: " + (garbage ? "{not json" : pod.json()) + "\n\n";
              break;
            }
            long left = beat - System.nanoTime();
            if (!silent && left <= 0) {
              chunk = ":\n\n";
              break;
            }
            waitNanos(silent ? heartbeat.toNanos() : left);
          }
        }
        out.write(chunk.getBytes(StandardCharsets.UTF_8));
        out.flush();
      }
    } finally {
      synchronized (this) {
        watchers--;
        notifyAll();
      }
    }
  }

  private static void send(HttpExchange ex, Answer a) throws IOException {
    byte[] body = a.body() == null ? new byte[0] : a.body().getBytes(StandardCharsets.UTF_8);
    if (a.contentType() != null) {
      ex.getResponseHeaders().set("Content-Type", a.contentType());
    }
    ex.sendResponseHeaders(a.status(), body.length == 0 ? -1 : body.length);
    if (body.length > 0) {
      ex.getResponseBody().write(body);
    }
  }

  /** A 200 with half of {@code body}, then the connection closed (a {@link Hangup}). */
  private static void sendCut(HttpExchange ex, String body, String contentType, Cut how)
      throws IOException {
    byte[] whole = body.getBytes(StandardCharsets.UTF_8);
    byte[] half = java.util.Arrays.copyOf(whole, whole.length / 2);
    ex.getResponseHeaders().set("Content-Type", contentType);
    OutputStream out;
    if (how == Cut.SHORT_BODY) {
      ex.sendResponseHeaders(200, whole.length);
      out = ex.getResponseBody();
      out.write(half);
    } else {
      // the chunked framing written here, so that a chunk can stop in its middle
      byte[] size = (Integer.toHexString(whole.length) + "\r\n").getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Transfer-Encoding", "chunked");
      ex.sendResponseHeaders(200, size.length + half.length);
      out = ex.getResponseBody();
      out.write(size);
      out.write(half);
    }
    out.flush();
    throw new Hangup();
  }

  private static Answer notFound(String ns, String name) {
    return Answer.problem(404, "Not Found", "pod " + ns + "/" + name + " is not known");
  }

  static String problemJson(int status, String title, String detail) {
    return "{\"type\":\"about:blank\",\"title\":"
        + quote(title)
        + ",\"status\":"
        + status
        + ",\"detail\":"
        + quote(detail)
        + "}";
  }

  static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  /** Under the lock: waits up to {@code nanos} for a change. */
  private void waitNanos(long nanos) {
    try {
      long ms = Math.max(1, Math.min(nanos / 1_000_000, 1000));
      wait(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Hangup();
    }
  }

  private static void sleep(Duration d) {
    if (d.isZero()) {
      return;
    }
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // ---- the Unix socket relay ----

  private void relay() {
    ServerSocketChannel listening;
    synchronized (this) {
      listening = unix;
    }
    while (listening.isOpen()) {
      SocketChannel client;
      try {
        client = listening.accept();
      } catch (IOException e) {
        return;
      }
      try {
        SocketChannel tcp =
            SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port()));
        executor.execute(() -> pump(client, tcp));
        executor.execute(() -> pump(tcp, client));
      } catch (IOException e) {
        close(client);
      }
    }
  }

  private static void pump(SocketChannel from, SocketChannel to) {
    ByteBuffer buf = ByteBuffer.allocate(8192);
    try {
      while (from.read(buf) >= 0) {
        buf.flip();
        while (buf.hasRemaining()) {
          to.write(buf);
        }
        buf.clear();
      }
      to.shutdownOutput();
    } catch (IOException e) {
      close(from);
      close(to);
    }
  }

  private static void close(SocketChannel c) {
    try {
      c.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }
}
