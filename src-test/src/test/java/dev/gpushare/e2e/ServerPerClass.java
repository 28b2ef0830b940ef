package dev.gpushare.e2e;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * One server process for all tests of a class (they use distinct nodes and pods), started on a
 * fresh data directory with the manual clock, stopped after the last test.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ServerPerClass {

  protected ServerProcess server;
  protected Api api;

  @BeforeAll
  void startServer(@TempDir Path dir) {
    server = ServerProcess.start(getClass().getSimpleName(), dir.resolve("data"));
    api = server.api();
  }

  @AfterAll
  void stopServer() {
    if (server != null) {
      server.stop();
    }
  }
}
