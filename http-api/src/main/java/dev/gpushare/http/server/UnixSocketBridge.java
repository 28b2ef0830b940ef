package dev.gpushare.http.server;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The data plane on a node-local Unix socket: accepts connections on {@code socket} and pumps their
 * bytes both ways to a TCP listener ({@code target}, the member's loopback binding of the same
 * API), so that {@code libgpushare.so} in a pod reaches its member without TLS and without the
 * network (SPEC §10). The socket file is made {@code 0666}: any pod UID may connect, the bearer
 * token authenticates each request.
 *
 * <p>One thread runs a selector over non-blocking channels; each connection has a bounded buffer
 * per direction, and a side that cannot take more is not read from (no memory grows with a slow
 * peer). A client that shuts its output down (half-close) still gets every byte the server sends
 * until the server closes; the server closing ends the connection once its last bytes reached the
 * client (an HTTP server that closes has nothing more to read). At most {@code maxConnections} are
 * held; more wait in the socket's accept queue.
 *
 * <p>At start a socket file left at the path (by a member that stopped without removing it) is
 * replaced; any other file there is an error naming the path, as is a missing directory (it is
 * never created: it is the host directory mounted into the pods). {@link #stopAccepting()} removes
 * the file (only if it is still this bridge's: a newer member may have replaced it) and accepts no
 * more connections while those open keep going; {@link #close()} also ends every connection.
 */
public final class UnixSocketBridge implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(UnixSocketBridge.class);

  /**
   * Each direction of a connection buffers at most this much: data-plane requests and events are
   * small, and 4,096 connections then hold 128 MiB at most.
   */
  static final int BUFFER_BYTES = 16 * 1024;

  private static final Duration JOIN = Duration.ofSeconds(10);
  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  private final Path socket;
  private final InetSocketAddress target;
  private final int maxConnections;
  private final Selector selector;
  private final ServerSocketChannel server;
  private final SelectionKey acceptKey;
  private final Object fileKey;
  private final Thread thread;
  private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
  private final List<Pair> pairs = new ArrayList<>();
  private final AtomicInteger open = new AtomicInteger();
  private volatile boolean accepting = true;
  private volatile boolean closed;
  private volatile Throwable failure;

  private UnixSocketBridge(
      Path socket,
      InetSocketAddress target,
      int maxConnections,
      Selector selector,
      ServerSocketChannel server,
      Object fileKey)
      throws ClosedChannelException {
    this.socket = socket;
    this.target = target;
    this.maxConnections = maxConnections;
    this.selector = selector;
    this.server = server;
    this.fileKey = fileKey;
    this.acceptKey = server.register(selector, SelectionKey.OP_ACCEPT);
    this.thread = new Thread(this::loop, "gpushare-unix-socket-bridge");
    this.thread.setDaemon(true);
  }

  /**
   * Listens on {@code socket} (mode {@code 0666}) and bridges each connection to {@code target}.
   *
   * @param maxConnections connections held at once (the API's {@code max-connections})
   * @throws IOException naming the path: its directory is missing or not a directory, a file that
   *     is not a socket is there, or binding failed
   */
  public static UnixSocketBridge open(Path socket, InetSocketAddress target, int maxConnections)
      throws IOException {
    Objects.requireNonNull(target, "target");
    if (maxConnections < 1) {
      throw new IllegalArgumentException("maxConnections must be at least 1: " + maxConnections);
    }
    Path path = socket.toAbsolutePath();
    checkPlace(path);
    if (Files.exists(path, LinkOption.NOFOLLOW_LINKS)) {
      boolean live = answers(path);
      Files.delete(path);
      if (live) {
        LOG.warn(
            "{}: replaced a socket another process still listened on (a member starting beside"
                + " the one it replaces); new connections come here",
            path);
      } else {
        LOG.info("{}: replaced the socket file a stopped member left behind", path);
      }
    }
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    Selector selector = null;
    try {
      server.bind(UnixDomainSocketAddress.of(path), 1024);
      Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw-rw-"));
      Object fileKey =
          Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
              .fileKey();
      server.configureBlocking(false);
      selector = Selector.open();
      UnixSocketBridge bridge =
          new UnixSocketBridge(path, target, maxConnections, selector, server, fileKey);
      bridge.thread.start();
      return bridge;
    } catch (IOException e) {
      release(server, selector, path);
      throw new IOException(path + ": cannot listen there: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      release(server, selector, path);
      throw e;
    }
  }

  private static void release(ServerSocketChannel server, Selector selector, Path path)
      throws IOException {
    server.close();
    if (selector != null) {
      selector.close();
    }
    Files.deleteIfExists(path);
  }

  /**
   * Checks, without changing anything, that a bridge could listen on {@code socket}: its directory
   * exists, and nothing but a socket file is at the path. Answers why not, or {@code null}.
   */
  public static String unusable(Path socket) {
    Path path = socket.toAbsolutePath();
    try {
      checkPlace(path);
      return null;
    } catch (IOException e) {
      return e.getMessage();
    }
  }

  private static void checkPlace(Path path) throws IOException {
    Path dir = path.getParent();
    if (dir == null) {
      throw new IOException(path + ": not a file path");
    }
    if (!Files.isDirectory(dir)) {
      throw new IOException(
          Files.exists(dir)
              ? "the socket's directory " + dir + " is not a directory"
              : "the socket's directory "
                  + dir
                  + " does not exist; create it (it is not created here: deploy/ mounts it from"
                  + " the host, and the same directory is mounted into the pods)");
    }
    if (Files.exists(path, LinkOption.NOFOLLOW_LINKS) && !isSocket(path)) {
      throw new IOException(
          path
              + " exists and is not a socket; remove it or choose another path (only a socket file"
              + " left by an earlier member is replaced)");
    }
  }

  private static boolean isSocket(Path path) throws IOException {
    try {
      int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
      return (mode & S_IFMT) == S_IFSOCK;
    } catch (UnsupportedOperationException | IllegalArgumentException e) {
      return Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
          .isOther();
    }
  }

  /** Whether a process listens on the socket file at {@code path}. */
  private static boolean answers(Path path) {
    try (SocketChannel probe = SocketChannel.open(UnixDomainSocketAddress.of(path))) {
      return probe.isConnected();
    } catch (IOException e) {
      return false;
    }
  }

  /** The socket's path. */
  public Path socket() {
    return socket;
  }

  /** Connections open now (client side). */
  public int connections() {
    return open.get();
  }

  /**
   * Accepts no more connections and removes the socket file (if it is still this bridge's); the
   * open connections keep going until they end or {@link #close()}. Idempotent.
   */
  public void stopAccepting() {
    if (!accepting) {
      return;
    }
    accepting = false;
    command(this::closeServer);
  }

  /**
   * Stops accepting, removes the socket file (if still this bridge's), ends every connection and
   * waits for the selector thread. Idempotent.
   */
  @Override
  public void close() {
    accepting = false;
    closed = true;
    selector.wakeup();
    if (Thread.currentThread() != thread) {
      try {
        thread.join(JOIN.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** What stopped the selector thread, if it failed. */
  Throwable failure() {
    return failure;
  }

  private void command(Runnable command) {
    commands.add(command);
    selector.wakeup();
  }

  private void loop() {
    try {
      while (!closed) {
        selector.select(TimeUnit.SECONDS.toMillis(1));
        for (Runnable c; (c = commands.poll()) != null; ) {
          c.run();
        }
        if (closed) {
          break;
        }
        var keys = selector.selectedKeys().iterator();
        while (keys.hasNext()) {
          SelectionKey key = keys.next();
          keys.remove();
          if (!key.isValid()) {
            continue;
          }
          if (key == acceptKey) {
            accept();
          } else {
            ((Side) key.attachment()).ready(key);
          }
        }
        if (acceptKey.isValid()) {
          acceptKey.interestOps(
              accepting && pairs.size() < maxConnections ? SelectionKey.OP_ACCEPT : 0);
        }
      }
    } catch (IOException | RuntimeException e) {
      failure = e;
      LOG.error("the data-plane socket {} stopped: {}", socket, e.toString(), e);
    } finally {
      closeServer();
      for (Pair pair : List.copyOf(pairs)) {
        pair.close();
      }
      try {
        selector.close();
      } catch (IOException e) {
        // nothing is left to release
      }
    }
  }

  private void closeServer() {
    if (!server.isOpen()) {
      return;
    }
    try {
      server.close();
    } catch (IOException e) {
      LOG.debug("closing {} failed: {}", socket, e.toString());
    }
    removeFile();
  }

  /** Removes the socket file unless another member has put its own there since. */
  private void removeFile() {
    try {
      Object now =
          Files.readAttributes(socket, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
              .fileKey();
      if (fileKey == null || fileKey.equals(now)) {
        Files.deleteIfExists(socket);
      }
    } catch (java.nio.file.NoSuchFileException e) {
      // already gone
    } catch (IOException e) {
      LOG.warn("{}: could not remove the socket file: {}", socket, e.toString());
    }
  }

  private void accept() throws IOException {
    if (!server.isOpen() || pairs.size() >= maxConnections) {
      return;
    }
    SocketChannel client;
    while ((client = server.accept()) != null) {
      SocketChannel upstream = null;
      try {
        client.configureBlocking(false);
        upstream = SocketChannel.open();
        upstream.configureBlocking(false);
        upstream.setOption(java.net.StandardSocketOptions.TCP_NODELAY, true);
        boolean connected = upstream.connect(target);
        Pair pair = new Pair(client, upstream);
        pairs.add(pair);
        open.incrementAndGet();
        if (connected) {
          pair.connected();
        } else {
          pair.upstream.key = upstream.register(selector, SelectionKey.OP_CONNECT, pair.upstream);
        }
      } catch (IOException e) {
        LOG.warn("data-plane socket: cannot reach the API on {}: {}", target, e.toString());
        closeQuietly(client);
        closeQuietly(upstream);
      }
      if (pairs.size() >= maxConnections) {
        return;
      }
    }
  }

  private static void closeQuietly(SocketChannel channel) {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException e) {
        // closing
      }
    }
  }

  /** One end of a bridged connection: reads into {@code inbound}, writes what the other read. */
  private final class Side {
    final Pair pair;
    final SocketChannel channel;

    /** What this side has read and the other side is to write (fill mode). */
    final ByteBuffer inbound = ByteBuffer.allocate(BUFFER_BYTES);

    SelectionKey key;
    Side peer;
    boolean eof;
    boolean outputShut;

    Side(Pair pair, SocketChannel channel) {
      this.pair = pair;
      this.channel = channel;
    }

    void ready(SelectionKey k) {
      try {
        if (k.isConnectable()) {
          channel.finishConnect();
          pair.connected();
          return;
        }
        if (k.isReadable()) {
          read();
        }
        if (k.isValid() && k.isWritable()) {
          peer.flushTo(this);
        }
        pair.update();
      } catch (IOException | java.nio.channels.CancelledKeyException e) {
        LOG.debug("data-plane socket: a connection ended: {}", e.toString());
        pair.close();
      }
    }

    /** Reads what there is room for; at EOF, passes the end on once the rest is written. */
    void read() throws IOException {
      while (inbound.hasRemaining()) {
        int n = channel.read(inbound);
        if (n < 0) {
          eof = true;
          break;
        }
        if (n == 0) {
          break;
        }
      }
      flushTo(peer);
    }

    /** Writes this side's {@code inbound} to {@code to} as far as it takes it. */
    void flushTo(Side to) throws IOException {
      inbound.flip();
      try {
        while (inbound.hasRemaining() && to.channel.write(inbound) > 0) {
          // until written or the socket's buffer is full
        }
      } finally {
        inbound.compact();
      }
    }

    boolean pending() {
      return inbound.position() > 0;
    }

    int interest() {
      int ops = 0;
      if (!eof && inbound.hasRemaining()) {
        ops |= SelectionKey.OP_READ;
      }
      if (peer.pending() && !outputShut) {
        ops |= SelectionKey.OP_WRITE;
      }
      return ops;
    }
  }

  /** A client on the socket and its connection to the API. */
  private final class Pair {
    final Side client;
    final Side upstream;
    boolean closed;

    Pair(SocketChannel client, SocketChannel upstream) {
      this.client = new Side(this, client);
      this.upstream = new Side(this, upstream);
      this.client.peer = this.upstream;
      this.upstream.peer = this.client;
    }

    void connected() throws IOException {
      client.key = client.channel.register(selector, SelectionKey.OP_READ, client);
      if (upstream.key == null) {
        upstream.key = upstream.channel.register(selector, SelectionKey.OP_READ, upstream);
      }
      update();
    }

    /** The half-close rules, then what each side waits for. */
    void update() throws IOException {
      if (closed) {
        return;
      }
      if (upstream.eof && !upstream.pending()) {
        // the server closed and everything it sent has reached the client
        close();
        return;
      }
      if (client.eof && !client.pending() && !upstream.outputShut) {
        upstream.channel.shutdownOutput();
        upstream.outputShut = true;
      }
      client.key.interestOps(client.interest());
      upstream.key.interestOps(upstream.interest());
    }

    void close() {
      if (closed) {
        return;
      }
      closed = true;
      pairs.remove(this);
      open.decrementAndGet();
      closeQuietly(client.channel);
      closeQuietly(upstream.channel);
    }
  }
}
