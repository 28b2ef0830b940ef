package dev.gpushare.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link UnixTransport}, the CLI's HTTP/1.1 client on a Unix socket, against a raw server that
 * writes answers byte by byte as a test says: the request's head, bodies framed by Content-Length
 * (the connection left open), chunked (extensions, trailers, the connection left open) or read to
 * the close, interim answers, a stream read as it comes, the request timeout, an interrupt, broken
 * answers, and connecting to no socket or to a file.
 */
class UnixTransportTest {
  static final long DEADLINE_SECONDS = 30;

  @TempDir Path dir;
  Path socket;
  ServerSocketChannel server;
  final BlockingQueue<String> heads = new LinkedBlockingQueue<>();
  final CountDownLatch end = new CountDownLatch(1);
  Thread acceptor;

  /** What the raw server does with one connection once it has read the request's head. */
  interface Script {
    void play(SocketChannel c) throws Exception;
  }

  @BeforeEach
  void listen() throws IOException {
    socket = dir.resolve("api.sock");
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
  }

  @AfterEach
  void stop() throws Exception {
    end.countDown();
    server.close();
    if (acceptor != null) {
      acceptor.join(TimeUnit.SECONDS.toMillis(DEADLINE_SECONDS));
    }
  }

  /** Serves one connection: records its head, then plays {@code script}; closes at the end. */
  void serveOne(Script script) {
    acceptor =
        new Thread(
            () -> {
              try (SocketChannel c = server.accept()) {
                heads.add(readHead(c));
                script.play(c);
              } catch (Exception e) {
                // the test ended, or the client went away
              }
            },
            "raw-unix-server");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  static String readHead(SocketChannel c) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    ByteBuffer one = ByteBuffer.allocate(1);
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      one.clear();
      if (c.read(one) < 0) {
        break;
      }
      head.write(one.array()[0]);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

  static void write(SocketChannel c, String text) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
    while (b.hasRemaining()) {
      c.write(b);
    }
  }

  /** Writes, then keeps the connection open until the test ends. */
  Script answerAndHold(String text) {
    return c -> {
      write(c, text);
      end.await();
    };
  }

  static Transport.Call call(String method, String path, Optional<String> token) {
    return new Transport.Call(
        method, path, token, "application/json", new byte[0], Duration.ofSeconds(30));
  }

  UnixTransport transport() {
    return new UnixTransport(socket);
  }

  static String chunk(String data) {
    return Integer.toHexString(data.getBytes(StandardCharsets.UTF_8).length)
        + "\r\n"
        + data
        + "\r\n";
  }

  @Test
  void aPostIsOneHttp11RequestWithHostTokenAndAnEmptyBodyAndTheLengthFramesTheAnswer()
      throws Exception {
    serveOne(answerAndHold("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\":\"b c\"}"));
    Transport.Answer a =
        transport().send(call("POST", "/v1/namespaces/ns/pods/p/demand", Optional.of("t0k")));
    assertEquals(200, a.status());
    assertEquals("{\"a\":\"b c\"}", a.body());
    assertEquals(
        "POST /v1/namespaces/ns/pods/p/demand HTTP/1.1\r\n"
            + "Host: localhost\r\n"
            + "Authorization: Bearer t0k\r\n"
            + "Accept: application/json\r\n"
            + "Content-Length: 0\r\n"
            + "Connection: close\r\n\r\n",
        heads.poll(DEADLINE_SECONDS, TimeUnit.SECONDS));
  }

  @Test
  void aGetWithoutTokenHasNoAuthorizationAndNoLength() throws Exception {
    serveOne(answerAndHold("HTTP/1.1 204 No Content\r\n\r\n"));
    Transport.Answer a = transport().send(call("GET", "/v1/nodes?x=a%2Fb", Optional.empty()));
    assertEquals(204, a.status());
    assertEquals("", a.body());
    assertEquals(
        "GET /v1/nodes?x=a%2Fb HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
            + "Connection: close\r\n\r\n",
        heads.poll(DEADLINE_SECONDS, TimeUnit.SECONDS));
  }

  @Test
  void aChunkedAnswerAfterAnInterimOneEndsAtItsLastChunkWithExtensionsAndTrailers()
      throws Exception {
    String big = "x".repeat(40_000); // more than the client's buffer
    serveOne(
        answerAndHold(
            "HTTP/1.1 100 Continue\r\n\r\n"
                + "HTTP/1.1 422 Unprocessable Entity\r\n"
                + "Content-Type: application/problem+json\r\n"
                + "transfer-encoding: Chunked\r\n\r\n"
                + "4;name=value\r\n{\"a\"\r\n"
                + chunk(":\"" + big)
                + chunk("\"}")
                + "0\r\nX-Trailer: y\r\n\r\n"));
    Transport.Answer a = transport().send(call("GET", "/", Optional.empty()));
    assertEquals(422, a.status());
    assertEquals("{\"a\":\"" + big + "\"}", a.body());
  }

  @Test
  void anAnswerWithoutLengthIsReadUntilTheServerCloses() throws Exception {
    serveOne(c -> write(c, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n[1,2,3]"));
    Transport.Answer a = transport().send(call("GET", "/", Optional.empty()));
    assertEquals(new Transport.Answer(200, "[1,2,3]"), a);
  }

  @Test
  void aStreamIsReadAsItComes() throws Exception {
    CountDownLatch firstRead = new CountDownLatch(1);
    serveOne(
        c -> {
          write(
              c,
              "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  + "Transfer-Encoding: chunked\r\n\r\n"
                  + chunk("data: {\"n\":1}\n\n"));
          firstRead.await();
          write(c, chunk(": keep-alive\n") + chunk("data: {\"n\":2}\n\n") + "0\r\n\r\n");
          end.await();
        });
    Transport.Call stream =
        new Transport.Call("GET", "/w", Optional.of("t"), "text/event-stream", new byte[0], null);
    Transport.Opened o = transport().open(stream);
    assertEquals(200, o.status());
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(o.body(), StandardCharsets.UTF_8))) {
      assertEquals("data: {\"n\":1}", r.readLine());
      assertEquals("", r.readLine());
      firstRead.countDown(); // the second event is written only now
      assertEquals(": keep-alive", r.readLine());
      assertEquals("data: {\"n\":2}", r.readLine());
      assertEquals("", r.readLine());
      assertNull(r.readLine(), "the last chunk ends the stream");
    }
    assertTrue(
        heads.poll(DEADLINE_SECONDS, TimeUnit.SECONDS).contains("Accept: text/event-stream\r\n"));
  }

  @Test
  void noAnswerInTimeIsARequestTimeout() throws Exception {
    serveOne(c -> end.await());
    Transport.Call quick =
        new Transport.Call(
            "GET", "/", Optional.empty(), "application/json", new byte[0], Duration.ofMillis(200));
    HttpTimeoutException e =
        assertThrows(HttpTimeoutException.class, () -> transport().send(quick));
    assertEquals("request timed out", e.getMessage());
    UnreachableException u = new UnreachableException("unix:" + socket, e);
    assertEquals("no answer in time (request timed out)", u.getMessage());
  }

  @Test
  void anInterruptEndsARequestThatWaits() throws Exception {
    serveOne(c -> end.await());
    CompletableFuture<Throwable> failure = new CompletableFuture<>();
    Thread caller =
        new Thread(
            () -> {
              try {
                transport().send(call("GET", "/grant", Optional.empty()));
                failure.complete(null);
              } catch (Throwable t) {
                failure.complete(t);
              }
            });
    caller.start();
    heads.poll(DEADLINE_SECONDS, TimeUnit.SECONDS); // the request is there, the answer is not
    caller.interrupt();
    assertTrue(
        failure.get(DEADLINE_SECONDS, TimeUnit.SECONDS) instanceof InterruptedException,
        () -> String.valueOf(failure.join()));
  }

  @Test
  void sendAsyncAnswersOnAnotherThread() throws Exception {
    serveOne(answerAndHold("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
    assertEquals(
        new Transport.Answer(200, "{}"),
        transport()
            .sendAsync(call("GET", "/", Optional.empty()))
            .get(DEADLINE_SECONDS, TimeUnit.SECONDS));
  }

  @Test
  void brokenAnswersAreIoErrors() throws Exception {
    serveOne(c -> write(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\""));
    IOException cut =
        assertThrows(IOException.class, () -> transport().send(call("GET", "/", Optional.empty())));
    assertEquals("the server closed the connection before the answer's end", cut.getMessage());
    acceptor.join();

    serveOne(c -> write(c, "SSH-2.0-OpenSSH\r\n\r\n"));
    IOException notHttp =
        assertThrows(IOException.class, () -> transport().send(call("GET", "/", Optional.empty())));
    assertEquals("not an HTTP/1.1 answer: SSH-2.0-OpenSSH", notHttp.getMessage());
    acceptor.join();

    serveOne(c -> {});
    IOException none =
        assertThrows(IOException.class, () -> transport().send(call("GET", "/", Optional.empty())));
    assertEquals("the server closed the connection without an answer", none.getMessage());
    acceptor.join();

    serveOne(c -> write(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"));
    IOException badChunk =
        assertThrows(IOException.class, () -> transport().send(call("GET", "/", Optional.empty())));
    assertEquals("a malformed chunk size: zz", badChunk.getMessage());
  }

  @Test
  void noSocketOrAFileThatIsNoSocketIsAConnectionNotMade() throws Exception {
    ConnectException missing =
        assertThrows(
            ConnectException.class,
            () ->
                new UnixTransport(dir.resolve("none.sock"))
                    .send(call("GET", "/", Optional.empty())));
    assertEquals("no such file or directory", missing.getMessage());
    Path file = Files.writeString(dir.resolve("file.sock"), "not a socket");
    ConnectException refused =
        assertThrows(
            ConnectException.class,
            () -> new UnixTransport(file).send(call("GET", "/", Optional.empty())));
    assertEquals("connection refused", refused.getMessage());
    assertEquals(
        "connection refused",
        new UnreachableException("unix:" + file, refused).getMessage(),
        "as the TCP path says it");
  }

  @Test
  void theServerIsNamedUnixPathAndNeverCarriesATokenAcrossANetwork() {
    UnixTransport t = new UnixTransport(Path.of("/run/gpushare/data-plane/gpushare.sock"));
    assertEquals("unix:/run/gpushare/data-plane/gpushare.sock", t.server());
    assertFalse(t.clearTextHost().isPresent());
  }

  @Test
  void theApiClientOverTheSocketTurnsAnswersIntoJsonAndProblems() throws Exception {
    String problem = "{\"type\":\"about:blank\",\"status\":404,\"detail\":\"no pod x/y\"}";
    serveOne(
        answerAndHold(
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/problem+json\r\n"
                + "Content-Length: "
                + problem.length()
                + "\r\n\r\n"
                + problem));
    ApiClient api =
        new ApiClient(new UnixTransport(socket), TokenLookup.Credentials.none("no token"));
    ExecutionException e =
        assertThrows(
            ExecutionException.class,
            () ->
                api.sendAsync("GET", "/v1/namespaces/x/pods/y", Duration.ofSeconds(5))
                    .get(DEADLINE_SECONDS, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof ApiException, e::toString);
    assertEquals(
        List.of(404, "no pod x/y"),
        List.of(((ApiException) e.getCause()).status(), ((ApiException) e.getCause()).detail()));
  }
}
