package dev.gpushare.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher with {@code gpushare.pod-side.socket}: the data plane is served on the Unix socket
 * as on the TCP port (same API, same access), the stale socket file a killed member left is
 * replaced, the start is logged, and SIGTERM removes the file. Run as a child JVM (the server keeps
 * its actor system alive), stopped with SIGTERM.
 */
class MainDataPlaneSocketTest {
  @TempDir Path dir;

  @Test
  @Timeout(180)
  void theDataPlaneIsServedOnTheSocketUntilTheMemberStops() throws Exception {
    Path sockets = Files.createDirectory(dir.resolve("data-plane"));
    Path socket = sockets.resolve("gpushare.sock");
    try (ServerSocketChannel stale = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      stale.bind(UnixDomainSocketAddress.of(socket)); // left behind when closed
    }
    Path conf = dir.resolve("socket.conf");
    Files.writeString(
        conf, "gpushare.gpu.backend = simulated\ngpushare.pod-side.socket = \"" + socket + "\"\n");
    Path data = dir.resolve("data");
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
    // the launcher's own logging (its INFO lines), not the tests' (WARN)
    command.add("-Dlogback.configurationFile=logback.xml");
    command.addAll(
        List.of(
            "dev.gpushare.http.Main",
            "--port",
            "0",
            "--data",
            data.toString(),
            "--config",
            conf.toString()));
    Process process = new ProcessBuilder(command).start();
    StringBuffer err = new StringBuffer();
    CompletableFuture<Void> errDrained = CompletableFuture.runAsync(() -> drain(process, err));
    try (BufferedReader out =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String first = out.readLine();
      assertTrue(
          first != null && first.startsWith("gpushare listening on http://127.0.0.1:"),
          "the ready line, got " + first + "; stderr:\n" + err);
      assertEquals(
          "rw-rw-rw-",
          PosixFilePermissions.toString(
              Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)));
      String token = Files.readString(data.resolve("admin-token")).strip();

      String health = exchange(socket, "GET /healthz HTTP/1.1\r\nHost: x\r\n");
      assertTrue(health.startsWith("HTTP/1.1 200 OK"), health);
      String anonymous = exchange(socket, "GET /v1/nodes HTTP/1.1\r\nHost: x\r\n");
      assertTrue(
          anonymous.startsWith("HTTP/1.1 401 Unauthorized"), "the same access: " + anonymous);
      String nodes =
          exchange(
              socket,
              "GET /v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n");
      assertTrue(nodes.startsWith("HTTP/1.1 200 OK"), nodes);
      assertTrue(nodes.contains("\"node-1\""), "the same service: " + nodes);
    } finally {
      process.destroy();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
      errDrained.get(10, TimeUnit.SECONDS);
    }
    assertTrue(
        err.toString().contains("data plane listening on unix:" + socket),
        "the start is logged: " + err);
    assertTrue(
        err.toString().contains(socket + ": replaced the socket file a stopped member left behind"),
        "the stale file was replaced: " + err);
    assertFalse(err.toString().contains(" ERROR "), "no error at start or stop: " + err);
    assertEquals(143, process.exitValue(), "stopped by SIGTERM: " + err);
    assertFalse(
        Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the socket file is removed: " + err);
    assertTrue(Files.isDirectory(sockets), "its directory stays");
  }

  /** One request with {@code Connection: close}; the whole answer. */
  private static String exchange(Path socket, String head) throws Exception {
    return CompletableFuture.supplyAsync(
            () -> {
              try (SocketChannel c = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
                c.write(
                    ByteBuffer.wrap(
                        (head + "Connection: close\r\n\r\n").getBytes(StandardCharsets.UTF_8)));
                ByteArrayOutputStream all = new ByteArrayOutputStream();
                ByteBuffer b = ByteBuffer.allocate(8192);
                while (c.read(b) >= 0) {
                  all.write(b.array(), 0, b.position());
                  b.clear();
                }
                return all.toString(StandardCharsets.UTF_8);
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            })
        .get(20, TimeUnit.SECONDS);
  }

  private static void drain(Process process, StringBuffer into) {
    try (BufferedReader err =
        new BufferedReader(
            new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
      for (String line = err.readLine(); line != null; line = err.readLine()) {
        into.append(line).append('\n');
      }
    } catch (IOException e) {
      into.append("(stderr: ").append(e).append(")\n");
    }
  }
}
