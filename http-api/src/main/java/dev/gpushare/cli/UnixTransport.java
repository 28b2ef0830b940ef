package dev.gpushare.cli;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code unix:/path}: HTTP/1.1 over a Unix socket, the member's node-local data plane (the same API
 * as on TCP). One connection per request ({@code Connection: close}): the request line, {@code
 * Host: localhost}, {@code Authorization: Bearer}, {@code Accept}, a {@code Content-Length} body (0
 * for a body-less POST or DELETE); the answer's body by {@code Content-Length}, chunked, or read
 * until the server closes; interim 1xx answers are skipped. Connecting may take {@link
 * ApiClient#CONNECT_TIMEOUT}; a request with a timeout gets its whole answer within it, else an
 * {@link HttpTimeoutException} as the JDK's client throws; a stream ({@link #open}) has no limit
 * (its reader watches for silence). Blocking channels: interrupting the caller ends its request.
 */
final class UnixTransport implements Transport {
  private static final int MAX_LINE = 16 * 1024;
  private static final int MAX_HEADERS = 256;

  private static final ScheduledExecutorService TIMER = timer();
  private static final ExecutorService ASYNC =
      Executors.newCachedThreadPool(daemon("gpushare-unix-http"));

  private final Path socket;
  private final Duration connectTimeout;

  UnixTransport(Path socket) {
    this(socket, ApiClient.CONNECT_TIMEOUT);
  }

  UnixTransport(Path socket, Duration connectTimeout) {
    this.socket = socket;
    this.connectTimeout = connectTimeout;
  }

  Path socket() {
    return socket;
  }

  @Override
  public String server() {
    return "unix:" + socket;
  }

  @Override
  public Optional<String> clearTextHost() {
    return Optional.empty(); // a Unix socket never leaves the node's kernel
  }

  @Override
  public Answer send(Call call) throws IOException, InterruptedException {
    Connection c = connect();
    Limit limit = call.timeout() == null ? null : Limit.after(call.timeout(), c);
    try {
      c.write(call);
      Head head = c.readHead();
      byte[] body = c.body(head, call.method()).readAllBytes();
      return new Answer(head.status(), new String(body, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw c.translate(e, limit);
    } finally {
      if (limit != null) {
        limit.cancel();
      }
      c.close();
    }
  }

  @Override
  public CompletableFuture<Answer> sendAsync(Call call) {
    CompletableFuture<Answer> answer = new CompletableFuture<>();
    ASYNC.execute(
        () -> {
          try {
            answer.complete(send(call));
          } catch (Throwable t) {
            answer.completeExceptionally(t);
          }
        });
    return answer;
  }

  @Override
  public Opened open(Call call) throws IOException, InterruptedException {
    Connection c = connect();
    Limit limit = call.timeout() == null ? null : Limit.after(call.timeout(), c);
    try {
      c.write(call);
      Head head = c.readHead();
      if (limit != null) {
        limit.cancel();
      }
      return new Opened(head.status(), c.body(head, call.method()));
    } catch (IOException e) {
      c.close();
      throw c.translate(e, limit);
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  // ------------------------------------------------------------------ the connection

  private Connection connect() throws IOException, InterruptedException {
    SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
    Connection c = new Connection(channel);
    Limit limit = Limit.after(connectTimeout, c);
    try {
      channel.connect(UnixDomainSocketAddress.of(socket));
    } catch (ClosedByInterruptException e) {
      c.close();
      throw new InterruptedException("interrupted while connecting");
    } catch (IOException e) {
      c.close();
      if (limit.fired) {
        HttpConnectTimeoutException t = new HttpConnectTimeoutException("connection timed out");
        t.initCause(e);
        throw t;
      }
      if (e instanceof SocketException && !(e instanceof ConnectException)) {
        // "No such file or directory", "Permission denied": say it as a refused connection
        String m = e.getMessage();
        ConnectException refused =
            new ConnectException(
                m == null || m.isEmpty()
                    ? null
                    : m.substring(0, 1).toLowerCase(Locale.ROOT) + m.substring(1));
        refused.initCause(e);
        throw refused;
      }
      if (e instanceof ConnectException && e.getMessage() != null) {
        ConnectException refused = new ConnectException(e.getMessage().toLowerCase(Locale.ROOT));
        refused.initCause(e);
        throw refused;
      }
      throw e;
    } finally {
      limit.cancel();
    }
    return c;
  }

  /** An answer's status line and header fields (names lower-cased). */
  record Head(int status, Map<String, String> fields) {}

  /** One connection: the channel, buffered reading, the request written, the answer parsed. */
  private static final class Connection {
    private final SocketChannel channel;
    private final ByteBuffer in = ByteBuffer.allocate(16 * 1024).flip();
    private volatile boolean closed;

    Connection(SocketChannel channel) {
      this.channel = channel;
    }

    void close() {
      closed = true;
      try {
        channel.close();
      } catch (IOException e) {
        // closing
      }
    }

    void write(Call call) throws IOException {
      StringBuilder head = new StringBuilder();
      head.append(call.method()).append(' ').append(call.path()).append(" HTTP/1.1\r\n");
      head.append("Host: localhost\r\n");
      call.token().ifPresent(t -> head.append("Authorization: Bearer ").append(t).append("\r\n"));
      head.append("Accept: ").append(call.accept()).append("\r\n");
      byte[] body = call.body();
      if (body.length > 0) {
        head.append("Content-Type: application/json\r\n");
      }
      if (body.length > 0 || !(call.method().equals("GET") || call.method().equals("HEAD"))) {
        head.append("Content-Length: ").append(body.length).append("\r\n");
      }
      head.append("Connection: close\r\n\r\n");
      byte[] h = head.toString().getBytes(StandardCharsets.UTF_8);
      ByteBuffer out = ByteBuffer.allocate(h.length + body.length).put(h).put(body).flip();
      while (out.hasRemaining()) {
        channel.write(out);
      }
    }

    /** The answer's head, after any interim (1xx) answers. */
    Head readHead() throws IOException {
      while (true) {
        String statusLine = line();
        if (statusLine == null) {
          throw new IOException("the server closed the connection without an answer");
        }
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2
            || !parts[0].startsWith("HTTP/1.")
            || !parts[1].matches("[1-5][0-9][0-9]")) {
          throw new IOException("not an HTTP/1.1 answer: " + abbreviate(statusLine));
        }
        int status = Integer.parseInt(parts[1]);
        Map<String, String> fields = new HashMap<>();
        for (int n = 0; ; n++) {
          String field = line();
          if (field == null) {
            throw new IOException("the server closed the connection in the answer's head");
          }
          if (field.isEmpty()) {
            break;
          }
          int colon = field.indexOf(':');
          if (colon <= 0 || n >= MAX_HEADERS) {
            throw new IOException("a malformed answer head: " + abbreviate(field));
          }
          String name = field.substring(0, colon).strip().toLowerCase(Locale.ROOT);
          String value = field.substring(colon + 1).strip();
          fields.merge(name, value, (a, b) -> a + ", " + b);
        }
        if (status >= 200 || status == 101) {
          return new Head(status, fields);
        }
      }
    }

    /** The body as the head says: none, {@code Content-Length}, chunked, or until closed. */
    InputStream body(Head head, String method) throws IOException {
      if (method.equals("HEAD") || head.status() == 204 || head.status() == 304) {
        return new Body(0);
      }
      String coding = head.fields().get("transfer-encoding");
      if (coding != null && coding.toLowerCase(Locale.ROOT).strip().endsWith("chunked")) {
        return new Chunked();
      }
      String length = head.fields().get("content-length");
      if (length != null) {
        if (!length.matches("[0-9]{1,18}")) {
          throw new IOException("a malformed Content-Length: " + abbreviate(length));
        }
        return new Body(Long.parseLong(length));
      }
      return new Body(-1);
    }

    /** A line of the head or of the chunked framing, without its CRLF (or LF); null at the end. */
    String line() throws IOException {
      StringBuilder s = new StringBuilder();
      while (true) {
        if (!fill()) {
          return s.length() == 0 ? null : s.toString();
        }
        byte b = in.get();
        if (b == '\n') {
          int end = s.length();
          if (end > 0 && s.charAt(end - 1) == '\r') {
            s.setLength(end - 1);
          }
          return s.toString();
        }
        if (s.length() >= MAX_LINE) {
          throw new IOException("a line of the answer is longer than " + MAX_LINE + " bytes");
        }
        s.append((char) (b & 0xff));
      }
    }

    /** Something to read in the buffer: false at the end of the stream. */
    boolean fill() throws IOException {
      if (in.hasRemaining()) {
        return true;
      }
      in.clear();
      int n;
      try {
        do {
          n = channel.read(in);
        } while (n == 0);
      } finally {
        in.flip();
      }
      return n > 0;
    }

    /** At most {@code len} bytes of what is there (one read if the buffer is empty), or -1. */
    int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (!fill()) {
        return -1;
      }
      int n = Math.min(len, in.remaining());
      in.get(b, off, n);
      return n;
    }

    IOException translate(IOException e, Limit limit) throws InterruptedException {
      if (limit != null && limit.fired) {
        HttpTimeoutException t = new HttpTimeoutException("request timed out");
        t.initCause(e);
        return t;
      }
      if (e instanceof ClosedByInterruptException) {
        throw new InterruptedException("interrupted");
      }
      return e;
    }

    /** A body of {@code length} bytes, or (-1) until the server closes. */
    private final class Body extends InputStream {
      private long left;

      Body(long length) {
        this.left = length;
      }

      @Override
      public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        if (left == 0) {
          return -1;
        }
        int n = Connection.this.read(b, off, left < 0 ? len : (int) Math.min(len, left));
        if (n < 0 && left > 0) {
          throw new IOException("the server closed the connection before the answer's end");
        }
        if (n > 0 && left > 0) {
          left -= n;
        }
        return n;
      }

      @Override
      public void close() {
        Connection.this.close();
      }
    }

    /** {@code Transfer-Encoding: chunked}: chunk sizes in hex, extensions and trailers skipped. */
    private final class Chunked extends InputStream {
      private long left;
      private boolean started;
      private boolean done;

      @Override
      public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        if (done) {
          return -1;
        }
        if (len == 0) {
          return 0;
        }
        if (left == 0) {
          if (started && !"".equals(line())) {
            throw new IOException("a malformed chunked answer: no line end after a chunk");
          }
          started = true;
          String size = line();
          if (size == null) {
            throw new IOException("the server closed the connection before the answer's end");
          }
          int semicolon = size.indexOf(';');
          String hex = (semicolon < 0 ? size : size.substring(0, semicolon)).strip();
          if (!hex.matches("[0-9a-fA-F]{1,15}")) {
            throw new IOException("a malformed chunk size: " + abbreviate(size));
          }
          left = Long.parseLong(hex, 16);
          if (left == 0) {
            String trailer;
            do {
              trailer = line();
            } while (trailer != null && !trailer.isEmpty());
            done = true;
            return -1;
          }
        }
        int n = Connection.this.read(b, off, (int) Math.min(len, left));
        if (n < 0) {
          throw new IOException("the server closed the connection before the answer's end");
        }
        left -= n;
        return n;
      }

      @Override
      public void close() {
        Connection.this.close();
      }
    }
  }

  /** Closes a connection when its time is up; {@link #fired} says it did. */
  private static final class Limit {
    private volatile boolean fired;
    private ScheduledFuture<?> task;

    static Limit after(Duration timeout, Connection c) {
      Limit l = new Limit();
      l.task =
          TIMER.schedule(
              () -> {
                if (!c.closed) {
                  l.fired = true;
                  c.close();
                }
              },
              Math.max(1, timeout.toNanos()),
              TimeUnit.NANOSECONDS);
      return l;
    }

    void cancel() {
      task.cancel(false);
    }
  }

  private static String abbreviate(String s) {
    return s.length() > 200 ? s.substring(0, 200) + "…" : s;
  }

  private static ScheduledExecutorService timer() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, daemon("gpushare-timeout"));
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
