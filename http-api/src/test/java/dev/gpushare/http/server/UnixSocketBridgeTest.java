package dev.gpushare.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gpushare.http.api.FakeGpuShareServiceAccess;
import dev.gpushare.http.api.HttpApi;
import dev.gpushare.http.auth.Access;
import dev.gpushare.node.api.Views.PodView;
import dev.gpushare.node.fake.FakeGpuShareService;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.stream.javadsl.Source;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The data plane on a Unix socket: a real API server (the HTTP API over a fake service) reached
 * through the bridge by raw HTTP/1.1 over a {@link SocketChannel}, as {@code libgpushare.so} speaks
 * it: requests answered, keep-alive, a watch streaming beside other requests, half-close, many
 * connections at once, and the socket file's life (mode, stale file replaced, other files refused,
 * removed at stop).
 */
class UnixSocketBridgeTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  /** The fake service, with a watch that never ends: one view every 100 ms. */
  static final class EndlessWatch extends FakeGpuShareService {
    @Override
    public Source<PodView, NotUsed> watch(String namespace, String name) {
      PodView now = pods.get(namespace + "/" + name);
      return Source.repeat(now).throttle(1, Duration.ofMillis(100));
    }
  }

  private static final EndlessWatch SERVICE = new EndlessWatch();
  private static ActorTestKit kit;
  private static ServerBinding binding;
  private static InetSocketAddress target;

  @TempDir Path dir;
  private Path socket;
  private final List<UnixSocketBridge> bridges = new ArrayList<>();

  @BeforeAll
  static void startServer() throws Exception {
    kit = ActorTestKit.create("UnixSocketBridgeTest");
    binding =
        new HttpApi(SERVICE, FakeGpuShareServiceAccess.journal(), i -> {}, Access.NONE)
            .bind(kit.system(), "127.0.0.1", 0)
            .toCompletableFuture()
            .get();
    target = new InetSocketAddress("127.0.0.1", binding.localAddress().getPort());
  }

  @AfterAll
  static void stopServer() throws Exception {
    binding.unbind().toCompletableFuture().get();
    kit.shutdownTestKit();
  }

  @BeforeEach
  void pods() {
    SERVICE.reset();
    SERVICE.addPod("default", "a", "node-1");
    socket = dir.resolve("gpushare.sock");
  }

  @AfterEach
  void closeBridges() {
    bridges.forEach(UnixSocketBridge::close);
  }

  private UnixSocketBridge bridge(Path path, InetSocketAddress to, int max) throws IOException {
    UnixSocketBridge bridge = UnixSocketBridge.open(path, to, max);
    bridges.add(bridge);
    return bridge;
  }

  private UnixSocketBridge bridge() throws IOException {
    return bridge(socket, target, 4096);
  }

  @Test
  void aGetIsAnsweredOverTheSocketWhichAnyUserMayOpen() throws Exception {
    UnixSocketBridge bridge = bridge();
    assertEquals(socket, bridge.socket());
    assertEquals(
        "rw-rw-rw-",
        PosixFilePermissions.toString(
            Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)));
    assertTrue(
        Files.readAttributes(socket, java.nio.file.attribute.BasicFileAttributes.class).isOther(),
        "a socket, not a regular file");
    try (Client c = new Client(socket)) {
      Response r = c.get("/v1/namespaces/default/pods/a");
      assertEquals(200, r.status(), r.toString());
      assertTrue(r.body().contains("\"name\":\"a\""), r.body());
      assertEquals(List.of("pod default/a"), SERVICE.calls);
    }
  }

  @Test
  void oneConnectionCarriesManyRequestsAlsoPipelined() throws Exception {
    bridge();
    try (Client c = new Client(socket)) {
      for (int i = 0; i < 5; i++) {
        assertEquals(200, c.get("/healthz").status());
        assertEquals(200, c.get("/v1/namespaces/default/pods/a").status());
      }
      c.send(request("/healthz") + request("/v1/namespaces/default/pods/a") + request("/nope"));
      assertEquals(200, c.response().status());
      assertEquals(200, c.response().status());
      assertEquals(404, c.response().status());
      assertEquals(1, bridgeOf().connections(), "one connection all along");
    }
  }

  @Test
  void aLargeRequestBodyArrivesWhole() throws Exception {
    bridge();
    String json = "{\"pad\":\"" + "x".repeat(200_000) + "\"}";
    try (Client c = new Client(socket)) {
      c.send(
          "PUT /v1/nodes/big HTTP/1.1\r\nHost: gpushare\r\n"
              + "Content-Type: application/json\r\nContent-Length: "
              + json.getBytes(StandardCharsets.UTF_8).length
              + "\r\n\r\n"
              + json);
      Response r = c.response();
      assertEquals(422, r.status(), "the API read all of it, parsed it and refused it: " + r);
      assertTrue(r.body().contains("\"field\":\"kind\""), r.body());
      assertEquals(200, c.get("/healthz").status(), "and the connection goes on");
    }
  }

  @Test
  void aWatchStreamsWhileAnotherRequestGoesThrough() throws Exception {
    UnixSocketBridge bridge = bridge();
    try (Client watch = new Client(socket)) {
      watch.send(request("/v1/namespaces/default/pods/a/watch"));
      String head = watch.readUntil("\r\n\r\n");
      assertTrue(head.startsWith("HTTP/1.1 200 OK"), head);
      assertTrue(head.toLowerCase().contains("content-type: text/event-stream"), head);
      assertTrue(watch.readUntilCount("data: {", 2).contains("\"state\":\"Hibernation\""));
      try (Client other = new Client(socket)) {
        assertEquals(200, other.get("/v1/namespaces/default/pods/a").status());
        assertEquals(200, other.get("/healthz").status());
      }
      watch.readUntilCount("data: {", 3);
      assertEquals(1, bridge.connections(), "the other connection is gone");
    }
    await(() -> bridge.connections() == 0, "the watch's connection ended with its client");
  }

  @Test
  void aClientThatShutsItsOutputStillGetsTheAnswer() throws Exception {
    UnixSocketBridge bridge = bridge();
    try (Client c = new Client(socket)) {
      c.send(request("/v1/namespaces/default/pods/a"));
      c.channel.shutdownOutput();
      String all = c.readToEnd();
      assertTrue(all.startsWith("HTTP/1.1 200 OK"), all);
      assertTrue(all.contains("\"name\":\"a\""), all);
    }
    await(() -> bridge.connections() == 0, "the connection ended");
  }

  @Test
  void manyConnectionsAtOnce() throws Exception {
    UnixSocketBridge bridge = bridge();
    int n = 64;
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      List<Client> clients = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        clients.add(new Client(socket));
      }
      await(() -> bridge.connections() == n, "every connection accepted");
      List<Future<Integer>> answers = new ArrayList<>();
      for (Client c : clients) {
        Callable<Integer> call =
            () -> {
              int ok = 0;
              for (int i = 0; i < 3; i++) {
                ok += c.get("/v1/namespaces/default/pods/a").status() == 200 ? 1 : 0;
              }
              return ok;
            };
        answers.add(pool.submit(call));
      }
      for (Future<Integer> a : answers) {
        assertEquals(3, a.get(30, TimeUnit.SECONDS));
      }
      for (Client c : clients) {
        c.close();
      }
      await(() -> bridge.connections() == 0, "every connection ended");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void beyondMaxConnectionsAClientWaitsForAPlace() throws Exception {
    UnixSocketBridge bridge = bridge(socket, target, 2);
    try (Client a = new Client(socket);
        Client b = new Client(socket)) {
      assertEquals(200, a.get("/healthz").status());
      assertEquals(200, b.get("/healthz").status());
      try (Client c = new Client(socket)) {
        c.send(request("/healthz"));
        assertFalse(c.readsWithin(Duration.ofMillis(500)), "the third waits in the queue");
        assertEquals(2, bridge.connections());
        a.close();
        assertEquals(200, c.response().status(), "and is served once a place is free");
      }
    }
  }

  @Test
  void stoppingRemovesTheFileAndEndsTheConnections() throws Exception {
    UnixSocketBridge bridge = bridge();
    try (Client c = new Client(socket)) {
      assertEquals(200, c.get("/healthz").status());
      bridge.close();
      assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed");
      assertEquals("", c.readToEnd(), "the open connection is closed");
      assertEquals(0, bridge.connections());
    }
    assertThrows(IOException.class, () -> new Client(socket).close());
    bridge.close(); // again: nothing happens
  }

  @Test
  void stopAcceptingLetsOpenConnectionsFinish() throws Exception {
    UnixSocketBridge bridge = bridge();
    try (Client c = new Client(socket)) {
      assertEquals(200, c.get("/healthz").status());
      bridge.stopAccepting();
      await(() -> !Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the file goes at once");
      assertThrows(IOException.class, () -> new Client(socket).close());
      assertEquals(200, c.get("/v1/namespaces/default/pods/a").status(), "the open one goes on");
    }
  }

  @Test
  void aStaleSocketFileIsReplaced() throws Exception {
    try (ServerSocketChannel old = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      old.bind(UnixDomainSocketAddress.of(socket));
    }
    assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "a socket file left behind");
    bridge();
    try (Client c = new Client(socket)) {
      assertEquals(200, c.get("/healthz").status());
    }
  }

  @Test
  void aNewerBridgeKeepsThePathWhenTheOlderStops() throws Exception {
    UnixSocketBridge older = bridge();
    UnixSocketBridge newer = bridge();
    older.close();
    assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the newer one's file stays");
    try (Client c = new Client(socket)) {
      assertEquals(200, c.get("/healthz").status());
    }
    newer.close();
    assertFalse(Files.exists(socket, LinkOption.NOFOLLOW_LINKS));
  }

  @Test
  void aFileThatIsNotASocketIsRefusedNamingThePath() throws Exception {
    Files.writeString(socket, "keep me");
    IOException e = assertThrows(IOException.class, () -> bridge());
    assertTrue(e.getMessage().startsWith(socket + " exists and is not a socket"), e.getMessage());
    assertEquals(e.getMessage(), UnixSocketBridge.unusable(socket));
    assertEquals("keep me", Files.readString(socket), "left as it was");
    Path directory = Files.createDirectory(dir.resolve("a-directory"));
    assertTrue(UnixSocketBridge.unusable(directory).contains("is not a socket"));
  }

  @Test
  void aMissingDirectoryIsRefusedNamingItAndNotCreated() {
    Path missing = dir.resolve("no-such-dir");
    Path path = missing.resolve("gpushare.sock");
    IOException e = assertThrows(IOException.class, () -> bridge(path, target, 10));
    assertTrue(
        e.getMessage().startsWith("the socket's directory " + missing + " does not exist"),
        e.getMessage());
    assertFalse(Files.exists(missing), "not created");
    assertEquals(null, UnixSocketBridge.unusable(socket), "a free path in a directory is usable");
  }

  @Test
  void aClientIsClosedWhenTheApiCannotBeReached() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    UnixSocketBridge bridge = bridge(socket, new InetSocketAddress("127.0.0.1", closedPort), 10);
    try (Client c = new Client(socket)) {
      try {
        c.send(request("/healthz"));
      } catch (IOException e) {
        // closed before the request went out: the same answer
      }
      assertEquals("", c.readToEnd(), "closed, with nothing said");
    }
    await(() -> bridge.connections() == 0, "nothing is held");
  }

  // ---- a raw HTTP/1.1 client over the Unix socket ----

  private UnixSocketBridge bridgeOf() {
    return bridges.get(bridges.size() - 1);
  }

  private static String request(String path) {
    return "GET " + path + " HTTP/1.1\r\nHost: gpushare\r\n\r\n";
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + WAIT + ": " + what);
      }
      Thread.sleep(10);
    }
  }

  record Response(int status, String head, String body) {}

  /** A non-blocking channel read with a deadline, so that a test that fails does not hang. */
  static final class Client implements AutoCloseable {
    final SocketChannel channel;
    private final Selector selector;
    private final StringBuilder received = new StringBuilder();
    private boolean eof;

    Client(Path socket) throws IOException {
      channel = SocketChannel.open(UnixDomainSocketAddress.of(socket));
      channel.configureBlocking(false);
      selector = Selector.open();
      channel.register(selector, SelectionKey.OP_READ);
    }

    void send(String text) throws IOException {
      ByteBuffer b = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (b.hasRemaining()) {
        if (channel.write(b) == 0) {
          if (System.nanoTime() > deadline) {
            throw new AssertionError("the bridge took no more bytes within " + WAIT);
          }
          fill(Duration.ofMillis(5)); // read what comes meanwhile; the other side may wait for it
        }
      }
    }

    Response get(String path) throws IOException {
      send(request(path));
      return response();
    }

    /** One response: Content-Length or chunked. */
    Response response() throws IOException {
      String head = readUntil("\r\n\r\n");
      int status = Integer.parseInt(head.substring(9, 12));
      String lower = head.toLowerCase();
      String body;
      int length = lower.indexOf("content-length: ");
      if (length >= 0) {
        int n = Integer.parseInt(lower.substring(length + 16, lower.indexOf("\r\n", length)));
        body = take(n);
      } else if (lower.contains("transfer-encoding: chunked")) {
        StringBuilder b = new StringBuilder();
        while (true) {
          int size = Integer.parseInt(readUntil("\r\n").strip(), 16);
          b.append(take(size));
          readUntil("\r\n");
          if (size == 0) {
            break;
          }
        }
        body = b.toString();
      } else {
        body = "";
      }
      return new Response(status, head, body);
    }

    /** Everything up to and with {@code end}. */
    String readUntil(String end) throws IOException {
      int at;
      long deadline = System.nanoTime() + WAIT.toNanos();
      while ((at = received.indexOf(end)) < 0) {
        if (eof || System.nanoTime() > deadline) {
          throw new AssertionError("no '" + end.strip() + "' within " + WAIT + ": " + received);
        }
        fill(Duration.ofMillis(100));
      }
      String head = received.substring(0, at + end.length());
      received.delete(0, at + end.length());
      return head;
    }

    /** What has come, once it holds {@code text} {@code count} times (kept for the next read). */
    String readUntilCount(String text, int count) throws IOException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (occurrences(received.toString(), text) < count) {
        if (eof || System.nanoTime() > deadline) {
          throw new AssertionError(
              count + " × '" + text + "' not within " + WAIT + ": " + received);
        }
        fill(Duration.ofMillis(100));
      }
      String all = received.toString();
      received.setLength(0);
      return all;
    }

    private static int occurrences(String in, String text) {
      int n = 0;
      for (int i = in.indexOf(text); i >= 0; i = in.indexOf(text, i + 1)) {
        n++;
      }
      return n;
    }

    String take(int n) throws IOException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (received.length() < n) {
        if (eof || System.nanoTime() > deadline) {
          throw new AssertionError(n + " characters not within " + WAIT + ": " + received);
        }
        fill(Duration.ofMillis(100));
      }
      String s = received.substring(0, n);
      received.delete(0, n);
      return s;
    }

    /** Everything until the other side closes. */
    String readToEnd() throws IOException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (!eof) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("not closed within " + WAIT + ": " + received);
        }
        fill(Duration.ofMillis(100));
      }
      String all = received.toString();
      received.setLength(0);
      return all;
    }

    /** Whether a byte arrives within {@code wait}. */
    boolean readsWithin(Duration wait) throws IOException {
      long deadline = System.nanoTime() + wait.toNanos();
      while (received.length() == 0 && !eof && System.nanoTime() < deadline) {
        fill(Duration.ofMillis(20));
      }
      return received.length() > 0;
    }

    private void fill(Duration wait) throws IOException {
      selector.select(Math.max(1, wait.toMillis()));
      selector.selectedKeys().clear();
      ByteBuffer b = ByteBuffer.allocate(16 * 1024);
      int n;
      try {
        n = channel.read(b);
      } catch (IOException e) {
        n = -1; // reset by the other side: the end, as far as this client is concerned
      }
      if (n < 0) {
        eof = true;
      } else if (n > 0) {
        received.append(new String(b.array(), 0, n, StandardCharsets.ISO_8859_1));
      }
    }

    @Override
    public void close() throws IOException {
      selector.close();
      channel.close();
    }
  }
}
